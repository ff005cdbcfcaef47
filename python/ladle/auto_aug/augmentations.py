"""The augmentations of AutoAugment, RandAugment and TrivialAugmentWide
(DALI's nvidia.dali.auto_aug.augmentations), made of ladle operators that
exist on the CPU and the GPU. Samples are uint8 images (HWC) or videos
(FHWC). Each is an Augmentation: call it with magnitude_bin and
num_magnitude_bins; ``aug.augmentation(mag_range=...)`` makes a variant."""

import numpy as np

from .. import fn, types
from .core import augmentation


def warp_x_param(magnitude):
    """[magnitude, 0]: a shear or translation along x."""
    return [magnitude, 0]


def warp_y_param(magnitude):
    """[0, magnitude]: a shear or translation along y."""
    return [0, magnitude]


def _warp(data, matrix, fill_value, interp_type):
    kw = dict(matrix=matrix, inverse_map=False)
    if fill_value is not None:
        kw["fill_value"] = fill_value  # None: the border pixels repeat (warp_affine without fill_value)
    if interp_type is not None:
        kw["interp_type"] = interp_type
    return fn.warp_affine(data, **kw)


@augmentation(mag_range=(0, 0.3), randomly_negate=True, mag_to_param=warp_x_param)
def shear_x(data, shear, fill_value=128, interp_type=None):
    return _warp(data, fn.transforms.shear(shear=shear), fill_value, interp_type)


@augmentation(mag_range=(0, 0.3), randomly_negate=True, mag_to_param=warp_y_param)
def shear_y(data, shear, fill_value=128, interp_type=None):
    return _warp(data, fn.transforms.shear(shear=shear), fill_value, interp_type)


@augmentation(mag_range=(0.0, 1.0), randomly_negate=True, mag_to_param=warp_x_param)
def translate_x(data, rel_offset, shape, fill_value=128, interp_type=None):
    """Shift by rel_offset * width; `shape` is (height, width) or a DataNode of it."""
    return _warp(data, fn.transforms.translation(offset=rel_offset * shape[1]), fill_value, interp_type)


@augmentation(mag_range=(0, 250), randomly_negate=True, mag_to_param=warp_x_param, name="translate_x")
def translate_x_no_shape(data, offset, fill_value=128, interp_type=None):
    return _warp(data, fn.transforms.translation(offset=offset), fill_value, interp_type)


@augmentation(mag_range=(0.0, 1.0), randomly_negate=True, mag_to_param=warp_y_param)
def translate_y(data, rel_offset, shape, fill_value=128, interp_type=None):
    """Shift by rel_offset * height; `shape` is (height, width) or a DataNode of it."""
    return _warp(data, fn.transforms.translation(offset=rel_offset * shape[0]), fill_value, interp_type)


@augmentation(mag_range=(0, 250), randomly_negate=True, mag_to_param=warp_y_param, name="translate_y")
def translate_y_no_shape(data, offset, fill_value=128, interp_type=None):
    return _warp(data, fn.transforms.translation(offset=offset), fill_value, interp_type)


@augmentation(mag_range=(0, 30), randomly_negate=True)
def rotate(data, angle, fill_value=128, interp_type=None, rotate_keep_size=True):
    kw = dict(angle=angle, keep_size=rotate_keep_size)
    if fill_value is not None:
        kw["fill_value"] = fill_value
    if interp_type is not None:
        kw["interp_type"] = interp_type
    return fn.rotate(data, **kw)


def shift_enhance_range(magnitude):
    """1 + magnitude: the enhance operations are neutral at 1 and take
    [0, 2]; their magnitudes are given in [0, 1] and negated at random."""
    return 1 + magnitude


@augmentation(mag_range=(0, 0.9), randomly_negate=True, mag_to_param=shift_enhance_range)
def brightness(data, parameter):
    return fn.brightness(data, brightness=parameter)


@augmentation(mag_range=(0, 0.9), randomly_negate=True, mag_to_param=shift_enhance_range)
def contrast(data, parameter):
    """Pillow's ImageEnhance.Contrast: blends with the image's mean grey
    level (0.299 R + 0.587 G + 0.114 B of the channel means)."""
    means = fn.reductions.mean(data, axis_names="HW", keep_dims=True)
    grey = fn.reductions.sum(means * types.Constant(np.array([0.299, 0.587, 0.114], np.float32)),
                             axis_names="C", keep_dims=True)
    return fn.cast(grey + (data - grey) * parameter, dtype=types.UINT8)


@augmentation(mag_range=(0, 0.9), randomly_negate=True, mag_to_param=shift_enhance_range)
def color(data, parameter):
    return fn.saturation(data, saturation=parameter)


def sharpness_kernel(magnitude):
    """The 3x3 filter of Pillow's ImageEnhance.Sharpness at factor
    1 + magnitude: (1 + m) * identity - m * smooth (smooth: 1 1 1 / 1 5 1 /
    1 1 1, over 13)."""
    smooth = np.array([[1, 1, 1], [1, 5, 1], [1, 1, 1]], np.float32) / 13
    identity = np.zeros((3, 3), np.float32)
    identity[1, 1] = 1
    return (1 + magnitude) * identity - magnitude * smooth


def sharpness_kernel_shifted(magnitude):
    """sharpness_kernel for a magnitude (factor) in [0, 2]."""
    return sharpness_kernel(magnitude - 1)


@augmentation(mag_range=(0, 0.9), randomly_negate=True, mag_to_param=sharpness_kernel, param_device="cpu")
def sharpness(data, kernel):
    """fn.filter with the per-sample kernel. Pillow leaves a 1-pixel border
    unfiltered; here the border is filtered too (reflect-101)."""
    return fn.filter(data, kernel)


def poster_mask_uint8(magnitude):
    """The uint8 mask keeping the top `magnitude` bits (rounded, 1..8: 0 bits
    would blank the image, so it keeps 1, as the RandAugment paper's code)."""
    bits = int(min(max(np.round(magnitude), 1), 8))
    return np.array(0xFF ^ ((1 << (8 - bits)) - 1), dtype=np.uint8)


@augmentation(mag_range=(0, 4), mag_to_param=poster_mask_uint8, param_device="auto")
def posterize(data, mask):
    return data & mask


@augmentation(mag_range=(256, 0), param_device="auto")
def solarize(data, threshold):
    """Inverts the values at or above the threshold."""
    keep = data < threshold
    return keep * data + (keep ^ True) * (types.Constant(255, dtype=types.UINT8) - data)


def solarize_add_shift(shift):
    if shift >= 128:
        raise Exception("solarize_add takes shifts below 128")
    return np.uint8(shift)


@augmentation(mag_range=(0, 110), param_device="auto", mag_to_param=solarize_add_shift)
def solarize_add(data, shift):
    """Adds the shift to the values below 128 (no overflow: both are below 128)."""
    low = data < types.Constant(128, dtype=types.UINT8)
    return low * (data + shift) + (low ^ True) * data


@augmentation
def invert(data, _):
    return types.Constant(255, dtype=types.UINT8) - data


@augmentation
def equalize(data, _):
    """fn.equalize: OpenCV's formula (DALI's); Pillow's rounds differently."""
    return fn.equalize(data)


@augmentation
def auto_contrast(data, _):
    """Stretches each channel to [0, 255] (channels of one value stay)."""
    lo = fn.reductions.min(data, axis_names="HW", keep_dims=True)
    hi = fn.reductions.max(data, axis_names="HW", keep_dims=True)
    spread = hi - lo
    stretch = spread > 0
    divisor = spread * stretch + types.Constant(255, dtype=types.UINT8) * (stretch ^ True)
    return fn.cast((data - lo * stretch) * (255 / divisor), dtype=types.UINT8)


@augmentation
def identity(data, _):
    return data
