"""The transform classes of ladle.torchvision and Compose, which turns a list
of them into one ladle pipeline."""

import math
import numbers
import threading

import numpy as np

from .. import _ladle
from .. import fn
from .. import types
from ..pipeline import Pipeline
from ..dynamic import _exec
from ._io import Inputs, InterpolationMode, assemble, interp_type
from ._color import gray_mean, hue_degrees, jitter_range, require_uint8

# --- torchvision's geometry, written out so that every sample's arguments can
# be computed on the host before the pipeline runs (ladle rounds sizes where
# torchvision truncates, and rounds half away from zero where Python's round()
# goes to even).


def size_pair(size, who):
    """(h, w) from an int, a 1-sequence (square) or an (h, w) sequence."""
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    size = list(size)
    if len(size) == 1:
        return int(size[0]), int(size[0])
    if len(size) != 2:
        raise _ladle.InvalidArgumentError(f"{who}: size must be an int or (h, w), got {size!r}")
    return int(size[0]), int(size[1])


def resized_shape(h, w, size, max_size, who="Resize"):
    """The output (h, w) of torchvision's resize: an int (or 1-sequence)
    sets the shorter side, the longer one follows the aspect ratio, truncated,
    and max_size caps it; (h, w) is taken as is; size None with max_size fits
    the longer side to max_size."""
    if size is None:
        if max_size is None:
            raise _ladle.InvalidArgumentError(f"{who}: give size, max_size or both")
        long_side = max(h, w)
        scale = max_size / long_side
        return (max_size, int(w * scale)) if h >= w else (int(h * scale), max_size)
    if isinstance(size, numbers.Number) or len(size) == 1:
        target = int(size) if isinstance(size, numbers.Number) else int(size[0])
        short, long = (w, h) if w <= h else (h, w)
        new_short, new_long = target, int(target * long / short)
        if max_size is not None:
            if max_size <= target:
                raise _ladle.InvalidArgumentError(f"{who}: max_size ({max_size}) must be larger than size ({target})")
            if new_long > max_size:
                new_short, new_long = int(max_size * new_short / new_long), max_size
        return (new_long, new_short) if w <= h else (new_short, new_long)
    if max_size is not None:
        raise _ladle.InvalidArgumentError(f"{who}: max_size applies only when size is an int")
    return size_pair(size, who)


def center_offset(extent, crop):
    """Where torchvision's center_crop starts along one axis (negative: it pads)."""
    if crop > extent:
        return -((crop - extent) // 2)
    return int(round((extent - crop) / 2.0))


def crop_position(offset, extent, crop):
    """ladle's crop_pos_* (offset = round(pos * (extent - crop))) for a wanted offset."""
    if extent == crop:
        if offset != 0:
            raise _ladle.UnsupportedError("a crop window of the image's size must start at 0")
        return 0.5
    pos = offset / (extent - crop)
    if not 0.0 <= pos <= 1.0:
        raise _ladle.UnsupportedError(
            f"a crop window at {offset} of extent {crop} in an image of extent {extent} cannot be expressed "
            "(ladle crops windows that cover the image or lie inside it)")
    return pos


# --- torchvision's affine warps (its tensor implementation): the inverse
# matrix it builds, about the image centre, turned into the destination-to-
# source matrix of ladle's warp_affine (origin at the top-left corner).


def inverse_affine(center, angle, translate, scale, shear):
    """torchvision's _get_inverse_affine_matrix: the output-to-input map
    [a, b, c, d, e, f] of rotation (degrees), scale, shear (x, y degrees) and
    translation about `center` (coordinates relative to the image centre)."""
    rot, sx, sy = math.radians(angle), math.radians(shear[0]), math.radians(shear[1])
    cx, cy = center
    tx, ty = translate
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    m = [x / scale for x in (d, -b, 0.0, -c, a, 0.0)]
    m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty) + cx
    m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty) + cy
    return m


def warp_matrix(inv, h, w, oh, ow):
    """ladle's warp_affine matrix for torchvision's centred inverse map: the
    output pixel centre x + 0.5 is x + 0.5 - ow / 2 about the output centre,
    and the input position found is taken back from the input centre."""
    a, b, c, d, e, f = inv
    return [a, b, a * (-ow * 0.5) + b * (-oh * 0.5) + c + w * 0.5,
            d, e, d * (-ow * 0.5) + e * (-oh * 0.5) + f + h * 0.5]


def expanded_size(inv, h, w):
    """torchvision's _compute_affine_output_size (float32, 1e-4 truncation): (h, w)."""
    f = np.float32
    pts = np.array([[-0.5 * w, -0.5 * h, 1.0], [-0.5 * w, 0.5 * h, 1.0], [0.5 * w, 0.5 * h, 1.0],
                    [0.5 * w, -0.5 * h, 1.0]], f)
    new = pts @ np.array(inv, f).reshape(2, 3).T
    lo, hi = new.min(axis=0) + np.array([w * 0.5, h * 0.5], f), new.max(axis=0) + np.array([w * 0.5, h * 0.5], f)
    tol = f(1e-4)
    size = np.ceil(np.trunc(hi / tol) * tol) - np.floor(np.trunc(lo / tol) * tol)
    return int(size[1]), int(size[0])


def centre_offset(center, h, w):
    """torchvision's centre argument (pixels from the top-left corner) as an offset from the image centre."""
    if center is None:
        return [0.0, 0.0]
    if len(center) != 2:
        raise _ladle.InvalidArgumentError(f"center must be (x, y), got {center!r}")
    return [float(center[0]) - w * 0.5, float(center[1]) - h * 0.5]


def warp_fill(fill, who):
    """ladle's fill_value for torchvision's fill (None: 0, as its zero padding)."""
    if fill is None:
        return 0.0
    if isinstance(fill, numbers.Number):
        return float(fill)
    values = [float(v) for v in fill]
    if not values or any(v != values[0] for v in values):
        raise _ladle.UnsupportedError(f"{who}: fill takes one value for all channels in ladle, got {fill!r}")
    return values[0]


def warp_interp(mode, who):
    """NN or LINEAR (torchvision's tensor warps have NEAREST and BILINEAR only)."""
    name = interp_type(mode, who)
    if name not in ("NN", "LINEAR"):
        raise _ladle.UnsupportedError(f"{who}: interpolation {mode!r} is not supported; use NEAREST or BILINEAR")
    return name


def value_range(value, who, name, center=0.0):
    """A number v (v >= 0) as (center - v, center + v), or a 2-sequence as is."""
    if isinstance(value, numbers.Number):
        if value < 0:
            raise _ladle.InvalidArgumentError(f"{who}: if {name} is a single number, it must be positive")
        return (center - float(value), center + float(value))
    value = [float(v) for v in value]
    if len(value) != 2:
        raise _ladle.InvalidArgumentError(f"{who}: {name} must be a number or a sequence of 2 numbers")
    return tuple(value)


# --- the transforms ---------------------------------------------------------


class Transform:
    """Base of the transform classes. Each takes ``device`` ("cpu", "gpu" or
    None: Compose's device). Transforms run inside a Compose only."""

    geometric = True
    random = False  # True: params(h, w, rng) draws the image's parameters on the host

    def __init__(self, device=None):
        if device is not None and str(device).lower() not in ("cpu", "gpu", "cuda"):
            raise _ladle.InvalidArgumentError(f"{type(self).__name__}: device must be 'cpu' or 'gpu', got {device!r}")
        self.device = None if device is None else ("gpu" if str(device).lower() in ("gpu", "cuda") else "cpu")

    def __call__(self, *args, **kwargs):
        raise _ladle.StateError(
            f"ladle.torchvision.{type(self).__name__} must be wrapped in Compose: "
            f"Compose([{type(self).__name__}(...), ...])(images); for a single call use "
            "ladle.torchvision.v2.functional")

    # Hooks of Compose (geometric transforms).
    def out_shape(self, h, w):
        return h, w

    def params(self, h, w, rng):
        return None

    def build(self, node, ctx):
        return node

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({fields})"


class Resize(Transform):
    """torchvision's Resize: ``size`` an int (the shorter side; the longer one
    keeps the aspect ratio, truncated as torchvision does) or (h, w);
    ``max_size`` caps the longer side. Filters: NEAREST, NEAREST_EXACT,
    BILINEAR, BICUBIC, LANCZOS; ``antialias`` widens the filter when
    downscaling (torchvision's antialias=True, PIL's behaviour)."""

    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True, device=None):
        super().__init__(device)
        self.size = size
        self.interpolation = interpolation
        self.max_size = max_size
        self.antialias = True if antialias is None else bool(antialias)
        self._interp = interp_type(interpolation, "Resize")
        resized_shape(100, 100, size, max_size)  # checks the arguments now

    def out_shape(self, h, w):
        return resized_shape(h, w, self.size, self.max_size)

    def build(self, node, ctx):
        rx = ctx.per_sample(lambda h, w: float(self.out_shape(h, w)[1]))
        ry = ctx.per_sample(lambda h, w: float(self.out_shape(h, w)[0]))
        return fn.resize(node, device=ctx.device, resize_x=rx, resize_y=ry, interp_type=self._interp, resampling="pil",
                         antialias=self.antialias)


class CenterCrop(Transform):
    """torchvision's CenterCrop: ``size`` an int or (h, w); an image smaller
    than the window is padded with zeros, centred as torchvision centres it."""

    def __init__(self, size, device=None):
        super().__init__(device)
        self.size = size
        self._hw = size_pair(size, "CenterCrop")

    def out_shape(self, h, w):
        return self._hw

    def build(self, node, ctx):
        ch, cw = self._hw
        px = ctx.per_sample(lambda h, w: crop_position(center_offset(w, cw), w, cw))
        py = ctx.per_sample(lambda h, w: crop_position(center_offset(h, ch), h, ch))
        return fn.crop(node, device=ctx.device, crop=[ch, cw], crop_pos_x=px, crop_pos_y=py,
                       out_of_bounds_policy="pad", fill_values=[0])


class RandomResizedCrop(Transform):
    """torchvision's RandomResizedCrop: a window of ``scale`` x the area and
    aspect ratio in ``ratio`` (log-uniform), resized to ``size``. The window
    is drawn by ladle's random_resized_crop (10 attempts, then the whole
    image centred), from the Compose's seed."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=InterpolationMode.BILINEAR, antialias=True, device=None):
        super().__init__(device)
        self.size = size
        self.scale = tuple(scale)
        self.ratio = tuple(ratio)
        self.interpolation = interpolation
        self.antialias = True if antialias is None else bool(antialias)
        self._hw = size_pair(size, "RandomResizedCrop")
        self._interp = interp_type(interpolation, "RandomResizedCrop")

    def out_shape(self, h, w):
        return self._hw

    def build(self, node, ctx):
        return fn.random_resized_crop(node, device=ctx.device, size=list(self._hw), random_area=list(self.scale),
                                      random_aspect_ratio=list(self.ratio), interp_type=self._interp, resampling="pil",
                                      antialias=self.antialias)


def pad_sides(padding, who):
    """torchvision's padding: an int (every side), (left/right, top/bottom) or
    (left, top, right, bottom); returns (left, top, right, bottom)."""
    if isinstance(padding, numbers.Number):
        p = [int(padding)] * 4
    else:
        p = [int(v) for v in padding]
        if len(p) == 1:
            p = p * 4
        elif len(p) == 2:
            p = [p[0], p[1], p[0], p[1]]
        elif len(p) != 4:
            raise _ladle.InvalidArgumentError(
                f"{who}: padding must be an int or a sequence of 1, 2 or 4 ints, got {padding!r}")
    return tuple(p)


def pad_fill(fill, padding_mode, who):
    """The fill values of slice for torchvision's fill (constant mode only)."""
    if padding_mode != "constant":
        raise _ladle.UnsupportedError(f"{who}: padding_mode={padding_mode!r} is not supported (only 'constant')")
    if fill is None:
        return [0.0]
    values = [float(fill)] if isinstance(fill, numbers.Number) else [float(v) for v in fill]
    if not values:
        raise _ladle.InvalidArgumentError(f"{who}: fill must be a number or one number per channel")
    return values


def padded_window(h, w, sides):
    """slice's start and shape (H, W) of the padded image."""
    left, top, right, bottom = sides
    return [-top, -left], [h + top + bottom, w + left + right]


class Pad(Transform):
    """torchvision's Pad: ``padding`` an int, (left/right, top/bottom) or
    (left, top, right, bottom) (negative values crop); ``fill`` a number or
    one per channel; ``padding_mode`` "constant" only (edge, reflect and
    symmetric are not implemented). Runs fn.slice with
    out_of_bounds_policy="pad"."""

    def __init__(self, padding, fill=0, padding_mode="constant", device=None):
        super().__init__(device)
        self.padding = padding
        self.fill = fill
        self.padding_mode = padding_mode
        self._sides = pad_sides(padding, "Pad")
        self._fill = pad_fill(fill, padding_mode, "Pad")

    def out_shape(self, h, w):
        return tuple(padded_window(h, w, self._sides)[1])

    def build(self, node, ctx):
        start = ctx.per_sample(lambda h, w: padded_window(h, w, self._sides)[0], ndim=1)
        shape = ctx.per_sample(lambda h, w: padded_window(h, w, self._sides)[1], ndim=1)
        return fn.slice(node, device=ctx.device, axes=[0, 1], start=start, shape=shape, out_of_bounds_policy="pad",
                        fill_values=self._fill)


class _RandomFlip(Transform):
    _horizontal = True

    def __init__(self, p=0.5, device=None):
        super().__init__(device)
        self.p = float(p)
        if not 0.0 <= self.p <= 1.0:
            raise _ladle.InvalidArgumentError(f"{type(self).__name__}: p must be in [0, 1], got {p}")

    def build(self, node, ctx):
        if self.p == 0.0:
            return node
        flip = 1 if self.p == 1.0 else fn.random.coin_flip(probability=self.p)
        h, v = (flip, 0) if self._horizontal else (0, flip)
        return fn.flip(node, device=ctx.device, horizontal=h, vertical=v)


class RandomHorizontalFlip(_RandomFlip):
    """torchvision's RandomHorizontalFlip: flips left-right with probability p."""

    _horizontal = True


class RandomVerticalFlip(_RandomFlip):
    """torchvision's RandomVerticalFlip: flips upside down with probability p."""

    _horizontal = False


class _RandomWarp(Transform):
    """Shared by RandomRotation and RandomAffine: per image, parameters drawn
    on the host by params(h, w, rng) (rng keyed by Compose's seed, the step
    and the image's index), a warp_affine with their matrix."""

    random = True
    _expand = False

    def out_shape(self, h, w, params=None):
        if params is None or not self._expand:
            return h, w
        return params["size"]

    def build(self, node, ctx):
        def matrix(h, w, p):
            oh, ow = self.out_shape(h, w, p)
            return warp_matrix(p["inverse"], h, w, oh, ow)

        args = dict(matrix=ctx.per_sample(matrix, ndim=1, with_params=True), fill_value=self._fill,
                    interp_type=self._interp)
        if self._expand:
            args["size"] = ctx.per_sample(lambda h, w, p: list(p["size"]), ndim=1, with_params=True)
        return fn.warp_affine(node, device=ctx.device, **args)


class RandomRotation(_RandomWarp):
    """torchvision's RandomRotation: an angle drawn uniformly from
    ``degrees`` ((-d, d) for a number), counter-clockwise, about ``center``
    (x, y; default the image centre); ``expand`` enlarges the canvas as
    torchvision does; ``fill`` one value (default 0); NEAREST or BILINEAR.
    Pixels follow torchvision's tensor implementation (see the notes)."""

    def __init__(self, degrees, interpolation=InterpolationMode.NEAREST, expand=False, center=None, fill=0,
                 device=None):
        super().__init__(device)
        self.degrees = value_range(degrees, "RandomRotation", "degrees")
        self.interpolation = interpolation
        self.expand = bool(expand)
        self.center = None if center is None else [float(c) for c in center]
        self.fill = fill
        if self.center is not None and len(self.center) != 2:
            raise _ladle.InvalidArgumentError("RandomRotation: center must be (x, y)")
        self._interp = warp_interp(interpolation, "RandomRotation")
        self._fill = warp_fill(fill, "RandomRotation")
        self._expand = self.expand

    def params(self, h, w, rng):
        angle = float(rng.uniform(self.degrees[0], self.degrees[1]))
        inv = inverse_affine(centre_offset(self.center, h, w), -angle, [0.0, 0.0], 1.0, [0.0, 0.0])
        return {"angle": angle, "inverse": inv, "size": expanded_size(inv, h, w) if self.expand else (h, w)}


class RandomAffine(_RandomWarp):
    """torchvision's RandomAffine: angle from ``degrees``, translation
    (tx, ty) = round(uniform(+-translate * (w, h))), scale from ``scale``,
    shear x (and y) from ``shear`` (a number s: (-s, s) in x; 2 values: x; 4:
    x and y), about ``center``; ``fill`` one value (default 0); NEAREST or
    BILINEAR. Parameters are drawn as torchvision draws them, from ladle's
    seed instead of torch's generator."""

    def __init__(self, degrees, translate=None, scale=None, shear=None, interpolation=InterpolationMode.NEAREST,
                 fill=0, center=None, device=None):
        super().__init__(device)
        who = "RandomAffine"
        self.degrees = value_range(degrees, who, "degrees")
        if translate is not None:
            translate = tuple(float(t) for t in translate)
            if len(translate) != 2 or not all(0.0 <= t <= 1.0 for t in translate):
                raise _ladle.InvalidArgumentError(f"{who}: translate must be 2 values in [0, 1], got {translate!r}")
        if scale is not None:
            scale = tuple(float(v) for v in scale)
            if len(scale) != 2 or not all(v > 0 for v in scale):
                raise _ladle.InvalidArgumentError(f"{who}: scale must be 2 positive values, got {scale!r}")
        if shear is not None:
            if isinstance(shear, numbers.Number):
                shear = value_range(shear, who, "shear")
            else:
                shear = tuple(float(v) for v in shear)
                if len(shear) not in (2, 4):
                    raise _ladle.InvalidArgumentError(f"{who}: shear must be a number or 2 or 4 values")
        self.translate, self.scale, self.shear = translate, scale, shear
        self.interpolation = interpolation
        self.fill = fill
        self.center = None if center is None else [float(c) for c in center]
        if self.center is not None and len(self.center) != 2:
            raise _ladle.InvalidArgumentError(f"{who}: center must be (x, y)")
        self._interp = warp_interp(interpolation, who)
        self._fill = warp_fill(fill, who)

    def params(self, h, w, rng):
        angle = float(rng.uniform(self.degrees[0], self.degrees[1]))
        tx = ty = 0
        if self.translate is not None:
            max_dx, max_dy = self.translate[0] * w, self.translate[1] * h
            tx, ty = int(round(rng.uniform(-max_dx, max_dx))), int(round(rng.uniform(-max_dy, max_dy)))
        scale = 1.0 if self.scale is None else float(rng.uniform(self.scale[0], self.scale[1]))
        shear = [0.0, 0.0]
        if self.shear is not None:
            shear[0] = float(rng.uniform(self.shear[0], self.shear[1]))
            if len(self.shear) == 4:
                shear[1] = float(rng.uniform(self.shear[2], self.shear[3]))
        inv = inverse_affine(centre_offset(self.center, h, w), angle, [float(tx), float(ty)], scale, shear)
        return {"angle": angle, "translate": (tx, ty), "scale": scale, "shear": tuple(shear), "inverse": inv,
                "size": (h, w)}


class GaussianBlur(Transform):
    """torchvision's GaussianBlur: ``kernel_size`` an odd int or (kx, ky)
    (width first, as torchvision); ``sigma`` a number or a (min, max) range
    from which each image draws one sigma (both axes), uniformly, with ladle's
    random.uniform. Borders reflect (reflect-101), as torchvision's
    padding_mode="reflect". Runs ladle's gaussian_blur."""

    def __init__(self, kernel_size, sigma=(0.1, 2.0), device=None):
        super().__init__(device)
        ks = [kernel_size, kernel_size] if isinstance(kernel_size, numbers.Number) else list(kernel_size)
        if len(ks) == 1:
            ks = ks * 2
        if len(ks) != 2 or any(int(k) != k or k <= 0 or k % 2 == 0 for k in ks):
            raise _ladle.InvalidArgumentError(f"GaussianBlur: kernel_size must be odd and positive, got {kernel_size!r}")
        sig = [sigma, sigma] if isinstance(sigma, numbers.Number) else list(sigma)
        if len(sig) != 2 or not 0 < sig[0] <= sig[1]:
            raise _ladle.InvalidArgumentError(f"GaussianBlur: sigma must be > 0 or a range (min, max), got {sigma!r}")
        self.kernel_size = tuple(int(k) for k in ks)
        self.sigma = (float(sig[0]), float(sig[1]))

    def build(self, node, ctx):
        lo, hi = self.sigma
        sigma = [lo] if lo == hi else fn.random.uniform(range=[lo, hi])
        kx, ky = self.kernel_size
        return fn.gaussian_blur(node, device=ctx.device, sigma=sigma, window_size=[ky, kx])


class RandomErasing(Transform):
    """torchvision's RandomErasing: with probability ``p`` erases one box of
    ``scale`` x the area and aspect ratio in ``ratio`` (log-uniform), 10
    attempts, nothing when none fits; ``value`` a number or one per channel
    ("random" is not supported). The box is drawn on the host by NumPy from
    the Compose's seed (torchvision's rule, not its numbers) and erased by
    ladle's erase. ``value`` is in the image's units at this step: uint8 when
    before ToDtype/Normalize, which ladle applies last (see the notes)."""

    def __init__(self, p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0, inplace=False, device=None):
        super().__init__(device)
        if not 0.0 <= float(p) <= 1.0:
            raise _ladle.InvalidArgumentError(f"RandomErasing: p must be in [0, 1], got {p}")
        if not (scale[0] <= scale[1] and ratio[0] <= ratio[1]):
            raise _ladle.InvalidArgumentError("RandomErasing: scale and ratio must be (min, max) ranges")
        if isinstance(value, str):
            raise _ladle.UnsupportedError("RandomErasing: value='random' is not supported")
        self.p = float(p)
        self.scale = tuple(float(v) for v in scale)
        self.ratio = tuple(float(v) for v in ratio)
        self.value = value
        self.inplace = inplace
        self._rng = None
        self._last = (0, 0, 0, 0)

    def box(self, h, w):
        """(top, left, height, width) as torchvision's get_params draws it; height 0: no erase."""
        rng = self._rng
        if rng.random() >= self.p:
            return 0, 0, 0, 0
        log_ratio = np.log(self.ratio)
        for _ in range(10):
            erase_area = h * w * rng.uniform(self.scale[0], self.scale[1])
            aspect = np.exp(rng.uniform(log_ratio[0], log_ratio[1]))
            eh = int(round(np.sqrt(erase_area * aspect)))
            ew = int(round(np.sqrt(erase_area / aspect)))
            if eh < h and ew < w:
                return int(rng.integers(0, h - eh + 1)), int(rng.integers(0, w - ew + 1)), eh, ew
        return 0, 0, 0, 0

    def _anchor(self, h, w):  # called before _shape for each image: draws the box
        self._last = self.box(h, w)
        return [float(self._last[0]), float(self._last[1])]

    def _shape(self, h, w):
        return [float(self._last[2]), float(self._last[3])]

    def build(self, node, ctx):
        self._rng = np.random.default_rng([ctx._compose.seed, ctx.step])
        anchor = ctx.per_sample(self._anchor, ndim=1)
        shape = ctx.per_sample(self._shape, ndim=1)
        fill = [float(v) for v in self.value] if isinstance(self.value, (list, tuple)) else [float(self.value)]
        return fn.erase(node, device=ctx.device, anchor=anchor, shape=shape, axis_names="HW", fill_value=fill)


class ToDtype(Transform):
    """torchvision's ToDtype for images: ``dtype`` torch.float32 or
    torch.float16 (or uint8: no change); ``scale=True`` maps 0..255 to
    0..1. Runs at the end of the pipeline, fused with Normalize into one
    crop_mirror_normalize: transforms after it see the uint8 image (so a
    resize after ToDtype rounds to uint8 first; see the package notes)."""

    geometric = False

    def __init__(self, dtype, scale=False, device=None):
        super().__init__(device)
        if isinstance(dtype, dict):
            raise _ladle.UnsupportedError("ToDtype: a dict of dtypes per input type is not supported")
        self.dtype = dtype
        self.scale = bool(scale)
        try:
            self._dtype = types.to_dtype(dtype)
        except ValueError as e:
            raise _ladle.InvalidArgumentError(f"ToDtype: {e}") from None
        if self._dtype not in (types.UINT8, types.FLOAT, types.FLOAT16):
            raise _ladle.UnsupportedError(f"ToDtype: {dtype} is not supported (use float32, float16 or uint8)")


class Normalize(Transform):
    """torchvision's Normalize: (x - mean) / std per channel, on the float
    image a ToDtype before it makes. Fused with that ToDtype into
    crop_mirror_normalize (mean*255, std*255 when ToDtype scales)."""

    geometric = False

    def __init__(self, mean, std, inplace=False, device=None):
        super().__init__(device)
        self.mean = [float(m) for m in mean]
        self.std = [float(s) for s in std]
        if any(s == 0 for s in self.std):
            raise _ladle.InvalidArgumentError("Normalize: std must not contain 0")


class PILToTensor(Transform):
    """torchvision's PILToTensor: PIL images become uint8 [C, H, W] tensors."""

    geometric = False


class ToPureTensor(Transform):
    """torchvision's ToPureTensor: a no-op here (outputs are plain tensors)."""

    geometric = False


# --- colour -----------------------------------------------------------------
# Colour transforms run in list order with the geometric ones (uint8 images
# only). Their random choices are drawn on the host, per image, from
# (Compose seed, step, image index), and reach ladle's colour operators as
# per-sample arguments.


class _ColorTransform(Transform):
    uint8_only = True

    def _rng(self, ctx_seed, step, index):
        return np.random.default_rng([ctx_seed & 0xFFFFFFFFFFFFFFFF, step, index])


class ColorJitter(_ColorTransform):
    """torchvision's ColorJitter: brightness, contrast, saturation (factors
    drawn uniformly from [max(0, 1 - v), 1 + v] or a given [min, max]) and
    hue (from [-v, v], v <= 0.5, or [min, max] in [-0.5, 0.5]), applied in a
    random order drawn per image, each step rounded to uint8 as
    torchvision's steps are. Steps: brightness -> ladle's brightness_contrast
    (contrast 1); contrast -> brightness_contrast around the image's mean grey
    (torchvision's grey, measured on the host); saturation and hue -> ladle's
    hsv (YIQ space, see the package notes)."""

    def __init__(self, brightness=None, contrast=None, saturation=None, hue=None, device=None):
        super().__init__(device)
        self.brightness = jitter_range(brightness, "brightness", "ColorJitter")
        self.contrast = jitter_range(contrast, "contrast", "ColorJitter")
        self.saturation = jitter_range(saturation, "saturation", "ColorJitter")
        self.hue = jitter_range(hue, "hue", "ColorJitter", center=0.0, bound=(-0.5, 0.5), clip_first_on_zero=False)

    def draw(self, rng):
        """torchvision's get_params: the order of the four adjustments and
        their factors (None: not applied)."""
        order = list(rng.permutation(4))
        factors = [None if r is None else float(rng.uniform(r[0], r[1]))
                   for r in (self.brightness, self.contrast, self.saturation, self.hue)]
        return order, factors

    def build(self, node, ctx):
        enabled = [k for k, r in enumerate((self.brightness, self.contrast, self.saturation, self.hue))
                   if r is not None]
        if not enabled:
            return node
        seed, step, cache = ctx.seed, ctx.step, {}

        def params(img, index):
            """Per slot: (brightness, contrast, contrast_center, saturation, hue)."""
            if index not in cache:
                if len(cache) > 4096:
                    cache.clear()
                order, f = self.draw(self._rng(seed, step, index))
                order = [k for k in order if f[k] is not None]
                center = gray_mean(img) if f[1] is not None else 0.0
                slots = []
                for k in order:
                    if k == 1 and f[0] is not None and order.index(0) < order.index(1):
                        center *= f[0]  # the brightness step before scaled the grey mean (up to rounding)
                    slots.append((f[0] if k == 0 else 1.0, f[1] if k == 1 else 1.0, center if k == 1 else 0.0,
                                  f[2] if k == 2 else 1.0, hue_degrees(f[3]) if k == 3 else 0.0))
                cache[index] = slots
            return cache[index]

        def arg(slot, j):
            return ctx.per_sample_image(lambda h, w, img, index: params(img, index)[slot][j])

        bc = self.brightness is not None or self.contrast is not None
        hs = self.saturation is not None or self.hue is not None
        for slot in range(len(enabled)):
            if bc:
                node = fn.brightness_contrast(node, device=ctx.device, brightness=arg(slot, 0), contrast=arg(slot, 1),
                                              contrast_center=arg(slot, 2))
            if hs:
                node = fn.hsv(node, device=ctx.device, saturation=arg(slot, 3), hue=arg(slot, 4), dtype=types.UINT8)
        return node


class Grayscale(_ColorTransform):
    """torchvision's Grayscale: 1 or 3 channels of luma (ladle's
    color_space_conversion RGB -> GRAY, and GRAY -> RGB for 3)."""

    def __init__(self, num_output_channels=1, device=None):
        super().__init__(device)
        if num_output_channels not in (1, 3):
            raise _ladle.InvalidArgumentError(
                f"Grayscale: num_output_channels must be 1 or 3, got {num_output_channels!r}")
        self.num_output_channels = num_output_channels

    def build(self, node, ctx):
        node = fn.color_space_conversion(node, device=ctx.device, image_type="RGB", output_type="GRAY")
        if self.num_output_channels == 3:
            node = fn.color_space_conversion(node, device=ctx.device, image_type="GRAY", output_type="RGB")
        return node


class RandomGrayscale(_ColorTransform):
    """torchvision's RandomGrayscale: with probability p an image becomes
    grey, keeping its 3 channels (ladle's saturation with 0 or 1 per image,
    drawn on the host from the Compose's seed)."""

    def __init__(self, p=0.1, device=None):
        super().__init__(device)
        self.p = float(p)
        if not 0.0 <= self.p <= 1.0:
            raise _ladle.InvalidArgumentError(f"RandomGrayscale: p must be in [0, 1], got {p}")

    def build(self, node, ctx):
        if self.p == 0.0:
            return node
        seed, step = ctx.seed, ctx.step
        s = ctx.per_sample_image(lambda h, w, img, index: 0.0 if self._rng(seed, step, index).random() < self.p
                                 else 1.0)
        return fn.saturation(node, device=ctx.device, saturation=s)


# --- Compose ----------------------------------------------------------------


class _BuildContext:
    """What a transform's build() sees: the device and a way to add a
    per-sample argument computed on the host from the image's (h, w) at
    that step."""

    def __init__(self, compose):
        self._compose = compose
        self.device = "cpu"
        self.step = 0
        self.seed = compose.seed

    def per_sample(self, value_of_shape, ndim=0, with_params=False):
        """value_of_shape(h, w) (with_params: (h, w, params), the transform's
        params() of this image) gives each image's value: a number (ndim 0)
        or a list (ndim 1)."""
        value_of = (lambda h, w, p, img, index: value_of_shape(h, w, p)) if with_params else \
            (lambda h, w, p, img, index: value_of_shape(h, w))
        return self._argument(value_of, ndim)

    def _argument(self, value_of, ndim=0):
        """value_of(h, w, params, image, index) per image."""
        name = f"arg{len(self._compose._args)}"
        self._compose._args.append((name, self.step, value_of))
        return fn.external_source(name=name, device="cpu", dtype=types.FLOAT, ndim=ndim)

    def per_sample_image(self, value_of):
        """A per-sample argument value_of(h, w, image, index): `image` is the
        HWC image as it entered the Compose (a NumPy array; for CUDA inputs an
        HWC view of the CUDA tensor, so value_of must compute on it with torch
        there, as gray_mean does) and `index` counts the images this Compose
        has been called on."""
        return self._argument(lambda h, w, p, img, index: value_of(h, w, img, index))


class Compose:
    """torchvision's Compose, run as one ladle pipeline: an external source
    fed the images, then the transforms.

    ``Compose(op_list, batch_size=16, num_threads=4, device="cpu", seed=None)``
    is called on a PIL image, a [C, H, W] or [N, C, H, W] torch tensor (uint8;
    float32 for transforms without ToDtype/Normalize), or a list of those; more
    images than batch_size run in several iterations. Results follow
    torchvision: a tensor in, a tensor out ([C, H, W]; [N, C, H, W] for a
    batch, or a list when Resize(int) leaves the images with different
    shapes); a list in, a list out; a PIL image in gives a PIL image while the
    transforms are geometric only (as in torchvision), else a tensor.

    ``device`` None (the default) runs where the images are: on the CPU for
    PIL images and host tensors, on the tensors' GPU for CUDA tensors.
    ``device="gpu"`` runs the transforms on the GPU (a transform's own device
    argument moves the pipeline to the GPU from that transform on) and
    returns CUDA tensors. CUDA tensors never travel through host memory: they
    enter the pipeline by DLPack on their own GPU (packed HWC there by
    torch), every transform runs there and the results are CUDA tensors on
    that device; ``device="cpu"`` (on Compose or a transform) with CUDA
    tensors raises InvalidArgumentError (move them with ``.cpu()`` if that is
    what is wanted).

    Random transforms draw from ``seed`` (default: the next seed of
    ladle.dynamic's, so ``ladle.dynamic.random.set_seed`` makes a program
    reproducible); image i of a call draws from (seed, transform, index of
    the call's first iteration * batch_size + i)."""

    def __init__(self, op_list, batch_size=16, num_threads=4, device=None, seed=None, **pipeline_kwargs):
        self.op_list = list(op_list)
        for t in self.op_list:
            if not isinstance(t, Transform):
                raise _ladle.InvalidArgumentError(
                    f"Compose: {t!r} is not a ladle.torchvision transform (torchvision's own transforms and "
                    "callables cannot run inside a ladle pipeline)")
        self.batch_size = int(batch_size)
        self.num_threads = int(num_threads)
        if device is not None and str(device).lower() not in ("cpu", "gpu", "cuda"):
            raise _ladle.InvalidArgumentError(f"Compose: device must be 'cpu', 'gpu' or None, got {device!r}")
        self.device = None if device is None else ("gpu" if str(device).lower() in ("gpu", "cuda") else "cpu")
        self.seed = _exec.next_seed() if seed is None else int(seed)
        self._pipeline_kwargs = pipeline_kwargs
        self._lock = threading.Lock()
        self._pipes = {}  # (input dtype, GPU of CUDA inputs or None) -> (pipeline, output info)
        self._iterations = {}  # the same keys -> iterations run (image indices for random draws)
        self._args = []
        self._plan()

    def _plan(self):
        """Splits the list into geometric steps and the final conversion."""
        self._geometric = []
        self._dtype = None
        self._scale = False
        self._normalize = None
        self._to_tensor = False
        for t in self.op_list:
            if isinstance(t, (PILToTensor, ToPureTensor)):
                self._to_tensor = True
            elif isinstance(t, ToDtype):
                if self._normalize is not None:
                    raise _ladle.UnsupportedError("Compose: ToDtype after Normalize is not supported")
                if t._dtype == types.UINT8:
                    if self._dtype not in (None, types.UINT8):
                        raise _ladle.UnsupportedError("Compose: ToDtype back to uint8 is not supported")
                else:
                    self._dtype, self._scale = t._dtype, t.scale
                self._to_tensor = True
            elif isinstance(t, Normalize):
                if self._dtype is None:
                    raise _ladle.InvalidArgumentError(
                        "Compose: Normalize needs a float image, as in torchvision: put "
                        "ToDtype(torch.float32, scale=True) before it")
                if self._normalize is not None:
                    raise _ladle.UnsupportedError("Compose: only one Normalize is supported")
                self._normalize = t
                self._to_tensor = True
            else:
                self._geometric.append(t)
        self._converts = self._dtype is not None

    def _device_of(self, t, current):
        want = t.device or self.device or current
        if current == "gpu" and want == "cpu":
            raise _ladle.InvalidArgumentError(
                f"Compose: {type(t).__name__}(device='cpu') follows a GPU transform; data cannot go back to the CPU")
        return want

    def _build(self, dtype, gpu_index):
        """The pipeline for images of `dtype`, fed in host memory (gpu_index
        None) or as CUDA tensors of GPU gpu_index (a device="gpu" source)."""
        on_gpu = gpu_index is not None or self.device == "gpu" or any(t.device == "gpu" for t in self.op_list)
        self._args = []
        device_id = gpu_index if gpu_index is not None else (_exec._gpu_device_id() if on_gpu else None)
        pipe = Pipeline(batch_size=self.batch_size, num_threads=self.num_threads, device_id=device_id,
                        seed=self.seed, prefetch_queue_depth=1, **self._pipeline_kwargs)
        try:
            with pipe:
                current = "cpu" if gpu_index is None else "gpu"
                node = fn.external_source(name="images", device=current, dtype=dtype, ndim=3, layout="HWC")
                ctx = _BuildContext(self)
                for step, t in enumerate(self._geometric):
                    device = self._device_of(t, current)
                    if device == "gpu" and current == "cpu":
                        node = node.gpu()
                    current = ctx.device = device
                    ctx.step = step
                    node = t.build(node, ctx)
                chw = False
                if self._converts:
                    last = self._normalize or next(t for t in reversed(self.op_list) if isinstance(t, ToDtype))
                    device = self._device_of(last, current)
                    if device == "gpu" and current == "cpu":
                        node = node.gpu()
                    factor = 255.0 if self._scale else 1.0
                    mean = [m * factor for m in self._normalize.mean] if self._normalize else [0.0]
                    std = [s * factor for s in self._normalize.std] if self._normalize else [factor]
                    node = fn.crop_mirror_normalize(node, device=device, dtype=self._dtype, output_layout="CHW",
                                                    mean=mean, std=std)
                    chw = True
                elif self.device == "gpu" and current == "cpu":
                    node = node.gpu()
                pipe.set_outputs(node)
        except BaseException:
            pipe.close()
            raise
        return pipe, chw

    def __call__(self, inpt):
        inputs = Inputs(inpt, "ladle.torchvision.Compose")
        if inputs.dtype != np.uint8 and self._converts:
            raise _ladle.UnsupportedError(
                "Compose: ToDtype and Normalize take uint8 images in ladle (its normalization kernel reads "
                f"uint8); got {inputs.dtype} images")
        if any(getattr(t, "uint8_only", False) for t in self.op_list):
            require_uint8(inputs.dtype, "ladle.torchvision.Compose")
        if inputs.cuda:
            on_cpu = [type(t).__name__ for t in self.op_list if t.device == "cpu"]
            if self.device == "cpu" or on_cpu:
                raise _ladle.InvalidArgumentError(
                    f"Compose: device='cpu' ({'Compose' if self.device == 'cpu' else on_cpu[0]}) cannot take CUDA "
                    "tensors: ladle does not copy their pixels to the host. Leave device out (they run on their "
                    "GPU) or pass tensors in host memory (.cpu())")
        dtype = types.to_dtype(inputs.dtype)
        key = (dtype, inputs.gpu_index)
        with self._lock:
            if key not in self._pipes:
                self._pipes[key] = self._build(dtype, inputs.gpu_index) + (list(self._args),)
            pipe, chw, args = self._pipes[key]
            samples, tls = [], []
            for start in range(0, len(inputs), self.batch_size):
                chunk = inputs.samples[start:start + self.batch_size]
                if inputs.cuda:
                    pipe.feed_input("images", inputs.gpu_batch(start, start + self.batch_size))
                else:
                    pipe.feed_input("images", chunk, layout="HWC")
                first = self._iterations.get(key, 0) * self.batch_size
                self._iterations[key] = self._iterations.get(key, 0) + 1
                for name, values in self._arg_values(chunk, args, first).items():
                    pipe.feed_input(name, values)
                tl = pipe.run()[0]
                tls.append(tl)
                samples += [tl._batch.sample(i) for i in range(len(tl))]
        torch_batch = None
        if inputs.kind == "batch" and len(tls) == 1 and tls[0].is_dense_tensor():
            import torch

            torch_batch = torch.from_dlpack(tls[0])
        as_pil = not self._to_tensor
        return assemble(inputs, samples, chw, as_pil, torch_batch)

    def _arg_values(self, chunk, args, first_index):
        """The per-sample arguments of every transform for these images;
        random transforms draw from (seed, step, image index)."""
        values = {name: [] for name, _, _ in args}
        for i, a in enumerate(chunk):
            h, w = a.shape[0], a.shape[1]
            for step, t in enumerate(self._geometric):
                p = t.params(h, w, np.random.default_rng([self.seed & 0xFFFFFFFFFFFFFFFF, step, first_index + i])) \
                    if t.random else None
                for name, s, value_of in args:
                    if s == step:
                        values[name].append(value_of(h, w, p, a, first_index + i))
                h, w = t.out_shape(h, w) if p is None else t.out_shape(h, w, p)
        # One [N] (or [N, k]) array: N samples of rank 0 (or 1).
        return {name: np.array(vs, dtype=np.float32) for name, vs in values.items()}

    def close(self):
        """Frees the pipelines (also done when the Compose is collected)."""
        with self._lock:
            pipes, self._pipes = self._pipes, {}
        for pipe, _, _ in pipes.values():
            pipe.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        body = "".join(f"\n    {t!r}," for t in self.op_list)
        return f"Compose([{body}\n], batch_size={self.batch_size}, device={self.device!r})"
