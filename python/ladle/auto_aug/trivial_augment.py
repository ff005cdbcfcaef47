"""TrivialAugment Wide (https://arxiv.org/abs/2103.10158) as DALI's
nvidia.dali.auto_aug.trivial_augment."""

from .. import fn, types
from . import augmentations as a
from .core import signed_bin
from .core._augmentation import forbid_unused_kwargs
from .core._utils import get_translations, pretty_select
from .rand_augment import _select_suite, _shape_kwargs


def trivial_augment_wide(data, num_magnitude_bins=31, shape=None, fill_value=128, interp_type=None,
                         max_translate_abs=None, max_translate_rel=None, seed=None, excluded=None):
    """One augmentation per sample from the wide suite at a random bin of
    num_magnitude_bins. shape / max_translate_* as in auto_augment
    (defaults: 32 pixels, or the whole extent); excluded: names to leave out."""
    suite = _select_suite(get_trivial_augment_wide_suite(shape is not None, max_translate_abs, max_translate_rel),
                          excluded, "TrivialAugmentWide")
    return apply_trivial_augment(suite, data, num_magnitude_bins=num_magnitude_bins, seed=seed,
                                 **_shape_kwargs(shape, fill_value, interp_type))


def apply_trivial_augment(augmentations, data, num_magnitude_bins=31, seed=None, **kwargs):
    """Each sample goes through one augmentation drawn uniformly from
    `augmentations`, at a magnitude bin drawn uniformly."""
    if isinstance(num_magnitude_bins, bool) or not isinstance(num_magnitude_bins, int) or num_magnitude_bins < 1:
        raise Exception(f"apply_trivial_augment: `num_magnitude_bins` must be a positive integer, got "
                        f"{num_magnitude_bins!r}")
    if not augmentations:
        raise Exception("apply_trivial_augment: the list of augmentations is empty")
    mag = fn.random.uniform(values=list(range(num_magnitude_bins)), dtype=types.INT32, seed=seed)
    if any(aug.randomly_negate for aug in augmentations):
        mag = signed_bin(mag, seed=seed)
    forbid_unused_kwargs(augmentations, kwargs, "apply_trivial_augment")
    op_idx = fn.random.uniform(values=list(range(len(augmentations))), dtype=types.INT32, seed=seed)
    return pretty_select(augmentations, op_idx,
                         dict(data=data, magnitude_bin=mag, num_magnitude_bins=num_magnitude_bins, **kwargs),
                         "apply_trivial_augment", "get_trivial_augment_wide_suite")


def get_trivial_augment_wide_suite(use_shape=False, max_translate_abs=None, max_translate_rel=None):
    """The 14 augmentations of TrivialAugment's wide space."""
    return get_translations(use_shape, 32, 1.0, max_translate_abs, max_translate_rel) + [
        a.shear_x.augmentation((0, 0.99), True),
        a.shear_y.augmentation((0, 0.99), True),
        a.rotate.augmentation((0, 135), True),
        a.brightness.augmentation((0.01, 0.99), True, a.shift_enhance_range),
        a.contrast.augmentation((0.01, 0.99), True, a.shift_enhance_range),
        a.color.augmentation((0.01, 0.99), True, a.shift_enhance_range),
        a.sharpness.augmentation((0.01, 0.99), True, a.sharpness_kernel),
        a.posterize.augmentation((8, 2), False, a.poster_mask_uint8),
        a.solarize.augmentation((256, 0)),  # a lower threshold is stronger
        a.equalize,
        a.auto_contrast,
        a.identity,
    ]
