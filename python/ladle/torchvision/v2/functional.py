"""ladle.torchvision.v2.functional: torchvision.transforms.v2.functional's
image functions, each call run eagerly by ladle.dynamic (stateless: no
Compose needed).

Colour functions (adjust_brightness, adjust_contrast, adjust_saturation,
adjust_hue, rgb_to_grayscale) run ladle's colour operators on uint8 images;
see ladle.torchvision's notes for how they differ from torchvision's.

Inputs: a PIL image, a [C, H, W] or [N, C, H, W] torch tensor, or a list of
those; results have the input's form (PIL in, PIL out for the geometric
functions). Every function takes ``device`` ("cpu" or "gpu"). Geometric
functions and to_dtype (uint8 -> float) run ladle operators; normalize, and
to_dtype from a float tensor, are plain torch arithmetic on the tensor
(ladle's only normalization kernel reads uint8 images)."""


from ... import _ladle
from ... import types
from ... import dynamic as _ldd
from .._io import Inputs, InterpolationMode, assemble, interp_type
from .._color import check_factor, check_hue, gray_mean, hue_degrees, require_uint8
from .._transforms import center_offset, crop_position, resized_shape, size_pair

__all__ = ["adjust_brightness", "adjust_contrast", "adjust_hue", "adjust_saturation", "center_crop", "crop",
           "horizontal_flip", "normalize", "resize", "resized_crop", "rgb_to_grayscale", "to_dtype", "vertical_flip"]


def _run(inpt, who, device, body, as_pil=True):
    """Runs body(batch, shapes) -> (Batch, chw) on the images of `inpt`."""
    inputs = Inputs(inpt, who)
    b = _ldd.batch(inputs.samples, layout="HWC")
    shapes = [a.shape[:2] for a in inputs.samples]
    out, chw = body(b, shapes, "gpu" if str(device).lower() in ("gpu", "cuda") else "cpu")
    if as_pil and out.device == "gpu" and (inputs.kind == "pil" or inputs.kinds and "pil" in inputs.kinds):
        out = out.cpu()
    torch_batch = None
    if inputs.kind == "batch" and out.is_dense():
        torch_batch = out.torch()
    return assemble(inputs, list(out.tensors), chw, as_pil, torch_batch)


def resize(inpt, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True, device="cpu"):
    """torchvision's resize (see ladle.torchvision.Resize)."""
    interp = interp_type(interpolation, "resize")

    def body(b, shapes, dev):
        out = [resized_shape(h, w, size, max_size, "resize") for h, w in shapes]
        return _ldd.resize(b, device=dev, resize_x=[float(w) for _, w in out], resize_y=[float(h) for h, _ in out],
                           interp_type=interp, antialias=True if antialias is None else bool(antialias)), False

    return _run(inpt, "resize", device, body)


def center_crop(inpt, output_size, device="cpu"):
    """torchvision's center_crop: pads with zeros where the window is larger."""
    ch, cw = size_pair(output_size, "center_crop")

    def body(b, shapes, dev):
        px = [crop_position(center_offset(w, cw), w, cw) for _, w in shapes]
        py = [crop_position(center_offset(h, ch), h, ch) for h, _ in shapes]
        return _ldd.crop(b, device=dev, crop=[ch, cw], crop_pos_x=px, crop_pos_y=py, out_of_bounds_policy="pad",
                         fill_values=[0]), False

    return _run(inpt, "center_crop", device, body)


def crop(inpt, top, left, height, width, device="cpu"):
    """torchvision's crop: the window at (top, left) of height x width. ladle
    expresses windows inside the image, or covering it (padded with zeros)."""

    def body(b, shapes, dev):
        px = [crop_position(int(left), w, int(width)) for _, w in shapes]
        py = [crop_position(int(top), h, int(height)) for h, _ in shapes]
        return _ldd.crop(b, device=dev, crop=[int(height), int(width)], crop_pos_x=px, crop_pos_y=py,
                         out_of_bounds_policy="pad", fill_values=[0]), False

    return _run(inpt, "crop", device, body)


def resized_crop(inpt, top, left, height, width, size, interpolation=InterpolationMode.BILINEAR, antialias=True,
                 device="cpu"):
    """torchvision's resized_crop: crop(top, left, height, width), then resize to `size`."""
    interp = interp_type(interpolation, "resized_crop")

    def body(b, shapes, dev):
        px = [crop_position(int(left), w, int(width)) for _, w in shapes]
        py = [crop_position(int(top), h, int(height)) for h, _ in shapes]
        window = _ldd.crop(b, device=dev, crop=[int(height), int(width)], crop_pos_x=px, crop_pos_y=py,
                           out_of_bounds_policy="pad", fill_values=[0])
        oh, ow = resized_shape(int(height), int(width), size, None, "resized_crop")
        return _ldd.resize(window, device=dev, resize_x=float(ow), resize_y=float(oh), interp_type=interp,
                           antialias=True if antialias is None else bool(antialias)), False

    return _run(inpt, "resized_crop", device, body)


def _flip(inpt, who, horizontal, device):
    def body(b, shapes, dev):
        return _ldd.flip(b, device=dev, horizontal=horizontal, vertical=1 - horizontal), False

    return _run(inpt, who, device, body)


def horizontal_flip(inpt, device="cpu"):
    """torchvision's horizontal_flip (left-right)."""
    return _flip(inpt, "horizontal_flip", 1, device)


def vertical_flip(inpt, device="cpu"):
    """torchvision's vertical_flip (upside down)."""
    return _flip(inpt, "vertical_flip", 0, device)


def _is_float_tensor(x):
    return type(x).__module__.startswith("torch") and hasattr(x, "is_floating_point") and x.is_floating_point()


def to_dtype(inpt, dtype=None, scale=False, device="cpu"):
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


def normalize(inpt, mean, std, inplace=False, device="cpu"):
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
    return _run(inpt, who, device, lambda b, shapes, dev: (op(b, dev, inputs.samples), False))


def adjust_brightness(inpt, brightness_factor, device="cpu"):
    """torchvision's adjust_brightness: brightness_factor * image, saturated
    (ladle's brightness operator; rounds where torchvision truncates)."""
    f = check_factor(brightness_factor, "brightness_factor", "adjust_brightness")
    return _color(inpt, "adjust_brightness", device, lambda b, dev, _: _ldd.brightness(b, device=dev, brightness=f))


def adjust_contrast(inpt, contrast_factor, device="cpu"):
    """torchvision's adjust_contrast: blends each image with its mean grey
    level (torchvision's, computed on the host) by contrast_factor."""
    f = check_factor(contrast_factor, "contrast_factor", "adjust_contrast")
    return _color(inpt, "adjust_contrast", device,
                  lambda b, dev, samples: _ldd.contrast(b, device=dev, contrast=f,
                                                        contrast_center=[gray_mean(a) for a in samples]))


def adjust_saturation(inpt, saturation_factor, device="cpu"):
    """torchvision's adjust_saturation: blends with the grey image by
    saturation_factor (ladle's saturation operator: the grey is the YIQ luma)."""
    f = check_factor(saturation_factor, "saturation_factor", "adjust_saturation")
    return _color(inpt, "adjust_saturation", device, lambda b, dev, _: _ldd.saturation(b, device=dev, saturation=f))


def adjust_hue(inpt, hue_factor, device="cpu"):
    """torchvision's adjust_hue: hue_factor in [-0.5, 0.5] turns of hue. ladle
    rotates the YIQ chroma plane (DALI's hue), not the HSV hue: see the
    package notes for the measured difference."""
    h = check_hue(hue_factor, "adjust_hue")
    return _color(inpt, "adjust_hue", device, lambda b, dev, _: _ldd.hue(b, device=dev, hue=hue_degrees(h)))


def rgb_to_grayscale(inpt, num_output_channels=1, device="cpu"):
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
