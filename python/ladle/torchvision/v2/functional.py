"""ladle.torchvision.v2.functional: torchvision.transforms.v2.functional's
image functions, each call run eagerly by ladle.dynamic (stateless: no
Compose needed).

Colour functions (adjust_brightness, adjust_contrast, adjust_saturation,
adjust_hue, rgb_to_grayscale) run ladle's colour operators on uint8 images;
see ladle.torchvision's notes for how they differ from torchvision's.
posterize, solarize, invert, autocontrast (torchvision's formulas, exact),
adjust_sharpness (its blend, within 1 level) and equalize (ladle's
equalize: OpenCV's formula, as DALI; torchvision's rounds differently) are
those ladle.torchvision's AutoAugment, RandAugment and TrivialAugmentWide
use (ladle/torchvision/_autoaug.py).

Inputs: a PIL image, a [C, H, W] or [N, C, H, W] torch tensor, or a list of
those; results have the input's form (PIL in, PIL out for the geometric
functions). Every function takes ``device`` ("cpu" or "gpu"; None, the
default: where the images are). CUDA tensors run on their GPU without a
trip through host memory, in a ladle.dynamic context of that GPU, and
give CUDA tensors on it (see ladle.torchvision's notes; device="cpu" with
them raises InvalidArgumentError). Geometric
functions and to_dtype (uint8 -> float) run ladle operators; normalize, and
to_dtype from a float tensor, are plain torch arithmetic on the tensor
(ladle's only normalization kernel reads uint8 images)."""


import threading

from ... import _ladle
from ... import types
from ... import dynamic as _ldd
from ...dynamic import _exec
from .._io import Inputs, InterpolationMode, assemble, interp_type
from .. import _autoaug as _aa
from .._color import check_factor, check_hue, gray_mean, hue_degrees, require_uint8
from .._transforms import (center_offset, centre_offset, crop_position, expanded_size, inverse_affine, pad_fill,
                           pad_sides, padded_window, resized_shape, size_pair, warp_fill, warp_interp, warp_matrix)

__all__ = ["adjust_brightness", "adjust_contrast", "adjust_hue", "adjust_saturation", "affine", "center_crop", "crop",
           "erase", "gaussian_blur", "horizontal_flip", "normalize", "pad", "resize", "resized_crop", "rgb_to_grayscale",
           "rotate", "to_dtype",
           "vertical_flip", "posterize", "solarize", "autocontrast", "equalize", "invert", "adjust_sharpness"]


_GPU_CONTEXTS = {}  # GPU ordinal -> the ladle.dynamic EvalContext its CUDA inputs run in
_GPU_LOCK = threading.Lock()


def _device(device, inputs, who):
    """The device a call runs on, "cpu" or "gpu": the given one, or (None)
    where the images are. CUDA tensors run on their GPU; device="cpu" with
    them is an error (ladle copies no pixels to the host behind the caller)."""
    if device is not None and str(device).lower() not in ("cpu", "gpu", "cuda"):
        raise _ladle.InvalidArgumentError(f"{who}: device must be 'cpu', 'gpu' or None, got {device!r}")
    dev = None if device is None else ("gpu" if str(device).lower() in ("gpu", "cuda") else "cpu")
    if inputs.cuda:
        if dev == "cpu":
            raise _ladle.InvalidArgumentError(
                f"{who}: device='cpu' cannot take CUDA tensors: ladle does not copy their pixels to the host. "
                "Leave device out (they run on their GPU) or pass tensors in host memory (.cpu())")
        return "gpu"
    return dev or "cpu"


def _gpu_context(index):
    """The ladle.dynamic context whose GPU is `index`: the current one when it
    is, else one kept per GPU (its built graphs are reused by later calls)."""
    ctx = _ldd.EvalContext.current()
    if _exec._gpu_device_id(ctx) == index:
        return ctx
    with _GPU_LOCK:
        if index not in _GPU_CONTEXTS:
            _GPU_CONTEXTS[index] = _ldd.EvalContext(device_id=index)
        return _GPU_CONTEXTS[index]


def _run(inpt, who, device, body, as_pil=True, inputs=None):
    """Runs body(batch, shapes, device) -> (Batch, chw) on the images of
    `inpt`. CUDA tensors go in by DLPack (packed HWC on their GPU), run in
    the dynamic context of that GPU and come back as CUDA tensors there."""
    inputs = inputs or Inputs(inpt, who)
    dev = _device(device, inputs, who)
    shapes = [tuple(a.shape[:2]) for a in inputs.samples]
    if not inputs.cuda:
        return _finish(inputs, *body(_ldd.batch(inputs.samples, layout="HWC"), shapes, dev), as_pil)
    with _gpu_context(inputs.gpu_index):
        return _finish(inputs, *body(_ldd.as_batch(inputs.gpu_batch()), shapes, dev), as_pil)


def _finish(inputs, out, chw, as_pil):
    if as_pil and out.device == "gpu" and (inputs.kind == "pil" or inputs.kinds and "pil" in inputs.kinds):
        out = out.cpu()  # PIL images were in host memory: the result goes back there as a PIL image
    torch_batch = None
    if inputs.kind == "batch" and out.is_dense():
        torch_batch = out.torch()
    return assemble(inputs, list(out.tensors), chw, as_pil, torch_batch)


def resize(inpt, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True, device=None):
    """torchvision's resize (see ladle.torchvision.Resize)."""
    interp = interp_type(interpolation, "resize")

    def body(b, shapes, dev):
        out = [resized_shape(h, w, size, max_size, "resize") for h, w in shapes]
        return _ldd.resize(b, device=dev, resize_x=[float(w) for _, w in out], resize_y=[float(h) for h, _ in out],
                           interp_type=interp, resampling="pil",
                           antialias=True if antialias is None else bool(antialias)), False

    return _run(inpt, "resize", device, body)


def center_crop(inpt, output_size, device=None):
    """torchvision's center_crop: pads with zeros where the window is larger."""
    ch, cw = size_pair(output_size, "center_crop")

    def body(b, shapes, dev):
        px = [crop_position(center_offset(w, cw), w, cw) for _, w in shapes]
        py = [crop_position(center_offset(h, ch), h, ch) for h, _ in shapes]
        return _ldd.crop(b, device=dev, crop=[ch, cw], crop_pos_x=px, crop_pos_y=py, out_of_bounds_policy="pad",
                         fill_values=[0]), False

    return _run(inpt, "center_crop", device, body)


def crop(inpt, top, left, height, width, device=None):
    """torchvision's crop: the window at (top, left) of height x width. ladle
    expresses windows inside the image, or covering it (padded with zeros)."""

    def body(b, shapes, dev):
        px = [crop_position(int(left), w, int(width)) for _, w in shapes]
        py = [crop_position(int(top), h, int(height)) for h, _ in shapes]
        return _ldd.crop(b, device=dev, crop=[int(height), int(width)], crop_pos_x=px, crop_pos_y=py,
                         out_of_bounds_policy="pad", fill_values=[0]), False

    return _run(inpt, "crop", device, body)


def resized_crop(inpt, top, left, height, width, size, interpolation=InterpolationMode.BILINEAR, antialias=True,
                 device=None):
    """torchvision's resized_crop: crop(top, left, height, width), then resize to `size`."""
    interp = interp_type(interpolation, "resized_crop")

    def body(b, shapes, dev):
        px = [crop_position(int(left), w, int(width)) for _, w in shapes]
        py = [crop_position(int(top), h, int(height)) for h, _ in shapes]
        window = _ldd.crop(b, device=dev, crop=[int(height), int(width)], crop_pos_x=px, crop_pos_y=py,
                           out_of_bounds_policy="pad", fill_values=[0])
        oh, ow = resized_shape(int(height), int(width), size, None, "resized_crop")
        return _ldd.resize(window, device=dev, resize_x=float(ow), resize_y=float(oh), interp_type=interp, resampling="pil",
                           antialias=True if antialias is None else bool(antialias)), False

    return _run(inpt, "resized_crop", device, body)


def pad(inpt, padding, fill=None, padding_mode="constant", device=None):
    """torchvision's pad (see ladle.torchvision.Pad): constant mode only."""
    import numpy as np

    sides = pad_sides(padding, "pad")
    fill_values = pad_fill(fill, padding_mode, "pad")

    def body(b, shapes, dev):
        windows = [padded_window(h, w, sides) for h, w in shapes]
        start = _ldd.batch([np.array(s, np.int32) for s, _ in windows])
        shape = _ldd.batch([np.array(e, np.int32) for _, e in windows])
        return _ldd.slice(b, device=dev, axes=[0, 1], start=start, shape=shape, out_of_bounds_policy="pad",
                          fill_values=fill_values), False

    return _run(inpt, "pad", device, body)


def _flip(inpt, who, horizontal, device):
    def body(b, shapes, dev):
        return _ldd.flip(b, device=dev, horizontal=horizontal, vertical=1 - horizontal), False

    return _run(inpt, who, device, body)


def horizontal_flip(inpt, device=None):
    """torchvision's horizontal_flip (left-right)."""
    return _flip(inpt, "horizontal_flip", 1, device)


def vertical_flip(inpt, device=None):
    """torchvision's vertical_flip (upside down)."""
    return _flip(inpt, "vertical_flip", 0, device)


def _warp(inpt, who, device, inverse_of, expand, interpolation, fill):
    """warp_affine with torchvision's inverse map inverse_of(h, w) per image."""
    interp = warp_interp(interpolation, who)
    fill_value = warp_fill(fill, who)

    def body(b, shapes, dev):
        mats, sizes = [], []
        for h, w in shapes:
            inv = inverse_of(h, w)
            oh, ow = expanded_size(inv, h, w) if expand else (h, w)
            mats.append(warp_matrix(inv, h, w, oh, ow))
            sizes.append([float(oh), float(ow)])
        return _ldd.warp_affine(b, device=dev, matrix=mats, size=sizes, fill_value=fill_value,
                                interp_type=interp), False

    return _run(inpt, who, device, body)


def rotate(inpt, angle, interpolation=InterpolationMode.NEAREST, expand=False, center=None, fill=None,
           device=None):
    """torchvision's rotate: ``angle`` degrees counter-clockwise about
    ``center`` (x, y from the top-left corner; default the image centre),
    ``expand`` to hold the whole rotated image; NEAREST or BILINEAR; ``fill``
    one value (None: 0, torchvision's zero padding)."""
    angle = float(angle)
    return _warp(inpt, "rotate", device,
                 lambda h, w: inverse_affine(centre_offset(center, h, w), -angle, [0.0, 0.0], 1.0, [0.0, 0.0]),
                 expand, interpolation, fill)


def affine(inpt, angle, translate, scale, shear, interpolation=InterpolationMode.NEAREST, fill=None, center=None,
           device=None):
    """torchvision's affine: rotation by ``angle`` degrees, ``translate``
    (tx, ty) pixels, ``scale``, ``shear`` (a number: x only; or (x, y)
    degrees) about ``center`` (default the image centre)."""
    if len(translate) != 2:
        raise _ladle.InvalidArgumentError("affine: translate must be (tx, ty)")
    if not float(scale) > 0:
        raise _ladle.InvalidArgumentError("affine: scale must be positive")
    shear = [float(shear), 0.0] if isinstance(shear, (int, float)) else [float(v) for v in shear]
    if len(shear) == 1:
        shear = shear * 2
    if len(shear) != 2:
        raise _ladle.InvalidArgumentError("affine: shear must be a number or (x, y)")
    translate = [float(t) for t in translate]
    angle, scale = float(angle), float(scale)
    return _warp(inpt, "affine", device,
                 lambda h, w: inverse_affine(centre_offset(center, h, w), angle, translate, scale, shear),
                 False, interpolation, fill)


def _is_float_tensor(x):
    return type(x).__module__.startswith("torch") and hasattr(x, "is_floating_point") and x.is_floating_point()


def to_dtype(inpt, dtype=None, scale=False, device=None):
    """torchvision's to_dtype for images. uint8 images to float32/float16 run
    ladle's crop_mirror_normalize (0..255 -> 0..1 with scale); a tensor that is
    already float is converted by torch."""
    import torch

    dtype = torch.float32 if dtype is None else dtype
    target = types.to_dtype(dtype)
    if _is_float_tensor(inpt):
        if target == types.UINT8 and scale:
            return inpt.mul(255).round_().clamp_(0, 255).to(torch.uint8)
        return inpt.to(dtype)
    if target == types.UINT8:
        return inpt
    if target not in (types.FLOAT, types.FLOAT16):
        raise _ladle.UnsupportedError(f"to_dtype: {dtype} is not supported (use float32, float16 or uint8)")

    def body(b, shapes, dev):
        return _ldd.crop_mirror_normalize(b, device=dev, dtype=target, output_layout="CHW", mean=[0.0],
                                          std=[255.0 if scale else 1.0]), True

    return _run(inpt, "to_dtype", device, body, as_pil=False)


def normalize(inpt, mean, std, inplace=False, device=None):
    """torchvision's normalize: (x - mean) / std per channel of a float
    [..., C, H, W] tensor, computed by torch on the tensor's device."""
    import torch

    if not _is_float_tensor(inpt):
        raise _ladle.InvalidArgumentError(
            "normalize: expects a float tensor, as torchvision does; convert with to_dtype(x, torch.float32, scale=True)")
    m = torch.as_tensor(mean, dtype=inpt.dtype, device=inpt.device).view(-1, 1, 1)
    s = torch.as_tensor(std, dtype=inpt.dtype, device=inpt.device).view(-1, 1, 1)
    if (s == 0).any():
        raise _ladle.InvalidArgumentError("normalize: std must not contain 0")
    return inpt.sub_(m).div_(s) if inplace else (inpt - m) / s


def _color(inpt, who, device, op):
    """Runs op(batch, dev, samples) -> Batch on uint8 images."""
    inputs = Inputs(inpt, who)
    require_uint8(inputs.dtype, who)
    return _run(inpt, who, device, lambda b, shapes, dev: (op(b, dev, inputs.samples), False), inputs=inputs)


def adjust_brightness(inpt, brightness_factor, device=None):
    """torchvision's adjust_brightness: brightness_factor * image, saturated
    (ladle's brightness operator; rounds where torchvision truncates)."""
    f = check_factor(brightness_factor, "brightness_factor", "adjust_brightness")
    return _color(inpt, "adjust_brightness", device, lambda b, dev, _: _ldd.brightness(b, device=dev, brightness=f))


def adjust_contrast(inpt, contrast_factor, device=None):
    """torchvision's adjust_contrast: blends each image with its mean grey
    level (torchvision's, computed on the host) by contrast_factor."""
    f = check_factor(contrast_factor, "contrast_factor", "adjust_contrast")
    return _color(inpt, "adjust_contrast", device,
                  lambda b, dev, samples: _ldd.contrast(b, device=dev, contrast=f,
                                                        contrast_center=[gray_mean(a) for a in samples]))


def adjust_saturation(inpt, saturation_factor, device=None):
    """torchvision's adjust_saturation: blends with the grey image by
    saturation_factor (ladle's saturation operator: the grey is the YIQ luma)."""
    f = check_factor(saturation_factor, "saturation_factor", "adjust_saturation")
    return _color(inpt, "adjust_saturation", device, lambda b, dev, _: _ldd.saturation(b, device=dev, saturation=f))


def adjust_hue(inpt, hue_factor, device=None):
    """torchvision's adjust_hue: hue_factor in [-0.5, 0.5] turns of hue. ladle
    rotates the YIQ chroma plane (DALI's hue), not the HSV hue: see the
    package notes for the measured difference."""
    h = check_hue(hue_factor, "adjust_hue")
    return _color(inpt, "adjust_hue", device, lambda b, dev, _: _ldd.hue(b, device=dev, hue=hue_degrees(h)))


def rgb_to_grayscale(inpt, num_output_channels=1, device=None):
    """torchvision's rgb_to_grayscale: 1 or 3 channels of luma
    (ladle's color_space_conversion RGB -> GRAY)."""
    if num_output_channels not in (1, 3):
        raise _ladle.InvalidArgumentError(
            f"rgb_to_grayscale: num_output_channels must be 1 or 3, got {num_output_channels!r}")

    def op(b, dev, _):
        g = _ldd.color_space_conversion(b, device=dev, image_type="RGB", output_type="GRAY")
        return g if num_output_channels == 1 else _ldd.color_space_conversion(g, device=dev, image_type="GRAY",
                                                                               output_type="RGB")

    return _color(inpt, "rgb_to_grayscale", device, op)


def gaussian_blur(inpt, kernel_size, sigma=None, device=None):
    """torchvision's gaussian_blur: ``kernel_size`` an odd int or (kx, ky),
    ``sigma`` a number or (sx, sy) (default, per axis: 0.3 * ((k - 1) * 0.5 -
    1) + 0.8, torchvision's rule and DALI's); reflect borders. ladle's
    gaussian_blur, on uint8 images: at most 1 level from torchvision."""
    ks = [kernel_size, kernel_size] if isinstance(kernel_size, (int, float)) else list(kernel_size)
    ks = ks * 2 if len(ks) == 1 else ks
    if len(ks) != 2 or any(int(k) != k or k <= 0 or k % 2 == 0 for k in ks):
        raise _ladle.InvalidArgumentError(f"gaussian_blur: kernel_size must be odd and positive, got {kernel_size!r}")
    if sigma is None:
        sig = [0.3 * ((k - 1) * 0.5 - 1) + 0.8 for k in ks]
    else:
        sig = [sigma, sigma] if isinstance(sigma, (int, float)) else list(sigma)
        sig = sig * 2 if len(sig) == 1 else sig
    if len(sig) != 2 or any(s <= 0 for s in sig):
        raise _ladle.InvalidArgumentError(f"gaussian_blur: sigma must be positive, got {sigma!r}")

    def body(b, shapes, dev):  # (kx, ky) -> ladle's (H, W) order
        return _ldd.gaussian_blur(b, device=dev, window_size=[int(ks[1]), int(ks[0])],
                                  sigma=[float(sig[1]), float(sig[0])]), False

    return _run(inpt, "gaussian_blur", device, body)


def erase(inpt, i, j, h, w, v, inplace=False, device=None):
    """torchvision's erase: the box (i, j, h, w) set to ``v`` (a number, or
    one per channel; a tensor is read as its values). ladle's erase."""
    try:
        values = [float(x) for x in (v.flatten().tolist() if hasattr(v, "flatten") else
                                     (v if isinstance(v, (list, tuple)) else [v]))]
    except (TypeError, ValueError):
        raise _ladle.InvalidArgumentError(f"erase: v must be a number or one per channel, got {v!r}") from None
    if len(set(values)) == 1:
        values = values[:1]

    def body(b, shapes, dev):
        return _ldd.erase(b, device=dev, anchor=[float(i), float(j)], shape=[float(h), float(w)], axis_names="HW",
                          fill_value=values), False

    return _run(inpt, "erase", device, body)


def _auto(inpt, who, device, op):
    def body(b, dev, _):
        return op(b.gpu() if dev == "gpu" else b)
    return _color(inpt, who, device, body)


def posterize(inpt, bits, device=None):
    """torchvision's posterize: keeps the top `bits` (0..8) bits of each value."""
    if not isinstance(bits, int) or not 0 <= bits <= 8:
        raise _ladle.InvalidArgumentError(f"posterize: bits must be an integer in [0, 8], got {bits!r}")
    return _auto(inpt, "posterize", device, lambda b: _aa.posterize(b, bits))


def solarize(inpt, threshold, device=None):
    """torchvision's solarize: 255 - x where x >= threshold."""
    if not 0 <= float(threshold) <= 255:
        raise _ladle.InvalidArgumentError(f"solarize: threshold must be in [0, 255] for uint8, got {threshold!r}")
    return _auto(inpt, "solarize", device, lambda b: _aa.solarize(b, float(threshold)))


def invert(inpt, device=None):
    """torchvision's invert: 255 - x."""
    return _auto(inpt, "invert", device, _aa.invert)


def autocontrast(inpt, device=None):
    """torchvision's autocontrast: each channel stretched to [0, 255], truncated (exact)."""
    return _auto(inpt, "autocontrast", device, _aa.autocontrast)


def equalize(inpt, device=None):
    """Histogram equalization per channel with ladle's equalize (OpenCV's and
    DALI's formula; torchvision's, like Pillow's, steps the cumulative
    histogram in integers: on 224x224 images within 3 levels)."""
    return _auto(inpt, "equalize", device, _aa.equalize)


def adjust_sharpness(inpt, sharpness_factor, device=None):
    """torchvision's adjust_sharpness: blends with the 3x3 smoothed image
    (its border kept), truncated; within 1 level of torchvision (the
    smoothing sums in another order)."""
    f = check_factor(sharpness_factor, "sharpness_factor", "adjust_sharpness")
    return _auto(inpt, "adjust_sharpness", device, lambda b: _aa.adjust_sharpness(b, f))
