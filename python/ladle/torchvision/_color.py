"""torchvision's colour adjustments in terms of ladle's colour operators:
argument checks, the grey mean adjust_contrast blends towards, and the hue
conversion shared by the transforms and the functional API."""

import numbers

import numpy as np

from .. import _ladle

# torchvision's hue factor is a fraction of a turn of the HSV hue; ladle's hue
# (DALI's) is degrees of rotation of the YIQ chroma plane, which turns the
# same way: hue_degrees = 360 * hue_factor (the sign measured against
# torchvision: the opposite sign is three times as far from it).
HUE_SIGN = 1.0


def hue_degrees(factor):
    return HUE_SIGN * 360.0 * float(factor)


def gray_mean(img):
    """The mean of torchvision's rgb_to_grayscale of a uint8 HWC image: the
    float32 luma truncated to uint8 (as torchvision's .to(uint8)), averaged
    exactly (an integer sum). `img` is a NumPy array, or a torch tensor (on a
    CUDA device the luma and sum are computed there and only the number
    comes to the host); both give the same number."""
    if not isinstance(img, np.ndarray):
        return _gray_mean_torch(img)
    if img.shape[2] == 1:
        return int(img.sum(dtype=np.int64)) / img.size
    x = img.astype(np.float32)
    gray = (np.float32(0.2989) * x[..., 0] + np.float32(0.587) * x[..., 1]) + np.float32(0.114) * x[..., 2]
    return int(gray.astype(np.uint8).sum(dtype=np.int64)) / gray.size


def _gray_mean_torch(img):
    import torch

    if img.shape[2] == 1:
        return int(img.sum(dtype=torch.int64).item()) / img.numel()
    x = img.to(torch.float32)
    c = [torch.tensor(v, dtype=torch.float32, device=img.device) for v in (0.2989, 0.587, 0.114)]
    gray = (c[0] * x[..., 0] + c[1] * x[..., 1]) + c[2] * x[..., 2]  # float32 steps, as NumPy's
    return int(gray.to(torch.uint8).sum(dtype=torch.int64).item()) / gray.numel()


def check_factor(value, name, who):
    if not isinstance(value, numbers.Number) or value < 0:
        raise _ladle.InvalidArgumentError(f"{who}: {name} must be a non-negative number, got {value!r}")
    return float(value)


def check_hue(value, who):
    if not isinstance(value, numbers.Number) or not -0.5 <= value <= 0.5:
        raise _ladle.InvalidArgumentError(f"{who}: hue_factor must be in [-0.5, 0.5], got {value!r}")
    return float(value)


def jitter_range(value, name, who, center=1.0, bound=(0.0, float("inf")), clip_first_on_zero=True):
    """torchvision's ColorJitter._check_input: a number v gives
    [center - v, center + v] (clipped at 0), a pair is taken as is; None or
    a range of one point (the centre) means the adjustment is not applied."""
    if value is None:
        return None
    if isinstance(value, numbers.Number):
        if value < 0:
            raise _ladle.InvalidArgumentError(f"{who}: if {name} is a single number, it must be non-negative")
        value = [center - float(value), center + float(value)]
        if clip_first_on_zero:
            value[0] = max(value[0], 0.0)
    elif isinstance(value, (tuple, list)) and len(value) == 2:
        value = [float(value[0]), float(value[1])]
    else:
        raise _ladle.InvalidArgumentError(f"{who}: {name} should be a single number or a list/tuple with length 2")
    if not bound[0] <= value[0] <= value[1] <= bound[1]:
        raise _ladle.InvalidArgumentError(f"{who}: {name} values should be between {list(bound)}, got {value}")
    if value[0] == value[1] == center:
        return None
    return tuple(value)


def require_uint8(dtype, who):
    if np.dtype(dtype) != np.uint8:
        raise _ladle.UnsupportedError(
            f"{who}: colour adjustments take uint8 images in ladle (its colour operators do not clamp float "
            f"images to [0, 1] as torchvision does); got {np.dtype(dtype)} images")
