"""RandAugment (https://arxiv.org/abs/1909.13719) as DALI's
nvidia.dali.auto_aug.rand_augment."""

import warnings

from .. import fn, types
from . import augmentations as a
from .core import signed_bin
from .core._augmentation import forbid_unused_kwargs
from .core._utils import get_translations, pretty_select


def _select_suite(suite, excluded, scheme):
    names = [aug.name for aug in suite]
    for name in excluded or []:
        if name not in names:
            raise Exception(f"`{name}` in `excluded` is not an augmentation of the {scheme} suite; it has: "
                            f"{', '.join(names)}")
    return [aug for aug in suite if aug.name not in (excluded or [])]


def _shape_kwargs(shape, fill_value, interp_type):
    kwargs = dict(fill_value=fill_value, interp_type=interp_type)
    if shape is not None:
        kwargs["shape"] = shape
    return kwargs


def rand_augment(data, n, m, num_magnitude_bins=31, shape=None, fill_value=128, interp_type=None,
                 max_translate_abs=None, max_translate_rel=None, seed=None, monotonic_mag=True, excluded=None):
    """n augmentations drawn per sample from the RandAugment suite, each at
    magnitude bin m of num_magnitude_bins. shape / max_translate_* as in
    auto_augment (defaults: 100 pixels, or 100/224 of the extent);
    monotonic_mag=False: the AutoAugment ranges for the colour operations;
    excluded: names of suite augmentations to leave out."""
    get = get_rand_augment_suite if monotonic_mag else get_rand_augment_non_monotonic_suite
    suite = _select_suite(get(shape is not None, max_translate_abs, max_translate_rel), excluded, "RandAugment")
    return apply_rand_augment(suite, data, n, m, num_magnitude_bins=num_magnitude_bins, seed=seed,
                              **_shape_kwargs(shape, fill_value, interp_type))


def apply_rand_augment(augmentations, data, n, m, num_magnitude_bins=31, seed=None, **kwargs):
    """Each sample goes through n augmentations drawn uniformly (with
    repetition) from `augmentations`, all at magnitude bin m."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise Exception(f"apply_rand_augment: `n` must be a non-negative integer, got {n!r}")
    if isinstance(num_magnitude_bins, bool) or not isinstance(num_magnitude_bins, int) or num_magnitude_bins < 1:
        raise Exception(f"apply_rand_augment: `num_magnitude_bins` must be a positive integer, got "
                        f"{num_magnitude_bins!r}")
    if isinstance(m, bool) or not isinstance(m, int) or not 0 <= m < num_magnitude_bins:
        raise Exception(f"apply_rand_augment: `m` must be an integer in [0, {num_magnitude_bins - 1}], got {m!r}")
    if n == 0:
        warnings.warn("apply_rand_augment with n=0 applies nothing", Warning)
        return data
    if not augmentations:
        raise Exception("apply_rand_augment: the list of augmentations is empty")
    shape = () if n == 1 else (n,)
    kw = dict(values=list(range(len(augmentations))), dtype=types.INT32, seed=seed)
    if shape:
        kw["shape"] = list(shape)
    op_idx = fn.random.uniform(**kw)
    signed = any(aug.randomly_negate for aug in augmentations)
    mag = signed_bin(m, seed=seed, shape=shape or None) if signed else m
    forbid_unused_kwargs(augmentations, kwargs, "apply_rand_augment")
    for k in range(n):
        level_mag = mag[k] if signed and n > 1 else mag
        data = pretty_select(augmentations, op_idx if n == 1 else op_idx[k],
                             dict(data=data, magnitude_bin=level_mag, num_magnitude_bins=num_magnitude_bins, **kwargs),
                             "apply_rand_augment", "get_rand_augment_suite")
    return data


def get_rand_augment_suite(use_shape=False, max_translate_abs=None, max_translate_rel=None):
    """The 14 RandAugment augmentations, each growing stronger with its bin."""
    return get_translations(use_shape, 100, 100 / 224, max_translate_abs, max_translate_rel) + [
        a.shear_x.augmentation((0, 0.3), True),
        a.shear_y.augmentation((0, 0.3), True),
        a.rotate.augmentation((0, 30), True),
        a.brightness.augmentation((0, 0.9), True, a.shift_enhance_range),
        a.contrast.augmentation((0, 0.9), True, a.shift_enhance_range),
        a.color.augmentation((0, 0.9), True, a.shift_enhance_range),
        a.sharpness.augmentation((0, 0.9), True, a.sharpness_kernel),
        a.posterize.augmentation((8, 4), False, a.poster_mask_uint8),
        a.solarize.augmentation((256, 0)),  # a lower threshold is stronger
        a.equalize,
        a.auto_contrast,
        a.identity,
    ]


def get_rand_augment_non_monotonic_suite(use_shape=False, max_translate_abs=None, max_translate_rel=None):
    """The RandAugment suite with AutoAugment's ranges for brightness,
    contrast, color, sharpness (0.1..1.9), posterize and solarize."""
    return get_translations(use_shape, 100, 100 / 224, max_translate_abs, max_translate_rel) + [
        a.shear_x.augmentation((0, 0.3), True),
        a.shear_y.augmentation((0, 0.3), True),
        a.rotate.augmentation((0, 30), True),
        a.brightness.augmentation((0.1, 1.9), False, None),
        a.contrast.augmentation((0.1, 1.9), False, None),
        a.color.augmentation((0.1, 1.9), False, None),
        a.sharpness.augmentation((0.1, 1.9), False, a.sharpness_kernel_shifted),
        a.posterize.augmentation((0, 4), False, a.poster_mask_uint8),
        a.solarize.augmentation((0, 256), False, None),
        a.equalize,
        a.auto_contrast,
        a.identity,
    ]
