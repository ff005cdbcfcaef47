"""What the three schemes share: the translation augmentations' ranges and
select with a helpful message when `shape` is missing."""

from .. import augmentations as a
from ._augmentation import MissingArgException
from ._select import select


def _pair(value):
    if isinstance(value, (tuple, list)):
        height, width = value
        return height, width
    return value, value


def get_translations(use_shape, default_translate_abs, default_translate_rel, max_translate_abs=None,
                     max_translate_rel=None):
    """[translate_x, translate_y] with magnitudes up to max_translate_rel of
    the image's extent (use_shape) or max_translate_abs pixels."""
    if not isinstance(use_shape, bool):
        raise Exception(f"`use_shape` must be True or False, got {use_shape!r}")
    if use_shape:
        if max_translate_abs is not None:
            raise Exception("`max_translate_abs` cannot be used with image shapes; use `max_translate_rel`")
        h, w = _pair(default_translate_rel if max_translate_rel is None else max_translate_rel)
        return [a.translate_x.augmentation((0, w), True), a.translate_y.augmentation((0, h), True)]
    if max_translate_rel is not None:
        raise Exception("`max_translate_rel` needs image shapes (`shape`); use `max_translate_abs`")
    h, w = _pair(default_translate_abs if max_translate_abs is None else max_translate_abs)
    return [a.translate_x_no_shape.augmentation((0, w), True), a.translate_y_no_shape.augmentation((0, h), True)]


def pretty_select(augmentations, aug_ids, op_kwargs, auto_aug_name, ref_suite_name):
    try:
        return select(augmentations, aug_ids, **op_kwargs)
    except MissingArgException as e:
        if e.missing_args != ["shape"] or e.augmentation.op not in (a.translate_x.op, a.translate_y.op):
            raise
        raise Exception(f"The augmentation `{e.augmentation.name}` needs the image shape (height, width): pass "
                        f"`shape` to `{auto_aug_name}` (for encoded images, fn.peek_image_shape gives it), or use "
                        f"translations by pixels (see `{ref_suite_name}` and its `use_shape`).") from None
