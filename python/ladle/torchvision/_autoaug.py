"""torchvision's automatic augmentations (AutoAugment, RandAugment,
TrivialAugmentWide), RandomApply and ConvertImageDtype for ladle's Compose,
and the image operations they share with v2.functional (posterize,
solarize, autocontrast, equalize, invert, adjust_sharpness). The operations
follow torchvision's tensor implementation on uint8 images: blends truncate
(floor) as its .to(uint8) does; see the package notes for where ladle
differs. Each operation takes a DataNode (pipelines) or a ladle.dynamic
Batch, and per-sample parameters as numbers, DataNodes or Batches."""

import enum
import math

import numpy as np

from .. import _ladle
from .. import fn
from .. import math as lmath
from .. import types
from ._io import InterpolationMode
from ._transforms import (Transform, ToDtype, _ColorTransform, centre_offset, inverse_affine, warp_fill,
                          warp_interp, warp_matrix)

_SMOOTH = np.ones((3, 3), np.float32)
_SMOOTH[1, 1] = 5.0
_SMOOTH /= np.float32(13.0)  # torchvision's kernel, divided in float32 as its kernel /= kernel.sum()
_ONES = np.ones((3, 3), np.float32)


def _api(x):
    from ..pipeline import DataNode

    if isinstance(x, DataNode):
        return fn
    from .. import dynamic

    return dynamic


def _filter_input(x, kernel):
    """The per-sample filter input of fn.filter: a constant node, or a batch of copies."""
    from ..pipeline import DataNode

    if isinstance(x, DataNode):
        return types.Constant(kernel)
    from .. import dynamic

    return dynamic.batch([kernel] * len(x))


def _to_uint8(x):
    return _api(x).cast(x, dtype=types.UINT8)


def _blend(img1, img2, ratio):
    """torchvision's _blend on uint8: (ratio * img1 + (1 - ratio) * img2), clamped, truncated. `ratio`:
    a number, or a pair (ratio, 1 - ratio) of per-sample values with 1 - ratio computed in double, as
    torchvision's Python float is, before both become float32."""
    ratio, rest = ratio if isinstance(ratio, tuple) else (ratio, 1.0 - ratio)
    return _to_uint8(lmath.floor(lmath.clamp(ratio * img1 + rest * img2, 0.0, 255.0)))


def _grey(x):
    """torchvision's rgb_to_grayscale of uint8 HWC: the float32 luma truncated, [H, W, 1]."""
    r, g, b = x[:, :, 0:1], x[:, :, 1:2], x[:, :, 2:3]
    return lmath.floor(0.2989 * r + 0.587 * g + 0.114 * b)


def adjust_brightness(x, factor):
    return _blend(x, 0.0, factor)


def adjust_saturation(x, factor):
    return _blend(x, _grey(x), factor)


def adjust_contrast(x, factor):
    mean = _api(x).reductions.mean(_grey(x), keep_dims=True)
    return _blend(x, mean, factor)


def adjust_sharpness(x, factor):
    """Blend with the 3x3 smoothed image (rounded, its 1-pixel border the
    original pixels, as torchvision's)."""
    api = _api(x)
    smooth = api.filter(x, _filter_input(x, _SMOOTH))  # uint8: rounded to nearest even, as torch.round
    count = api.filter(x * np.uint8(0) + np.uint8(1), _filter_input(x, _ONES), border="constant", dtype=types.FLOAT)
    inside = count == 9.0  # the 9 taps all inside the image: not a border pixel
    degenerate = inside * smooth + (inside ^ True) * x
    return _blend(x, degenerate, factor)


def posterize(x, bits):
    """Keeps the top `bits` bits; `bits` a number or a per-sample node of uint8 masks (see posterize_mask)."""
    if isinstance(bits, (int, np.integer)):
        return x & np.uint8(posterize_mask(int(bits)))
    return x & bits


def posterize_mask(bits):
    return 0xFF ^ ((1 << (8 - int(bits))) - 1)


def solarize(x, threshold):
    """255 - x where x >= threshold."""
    keep = x < threshold
    return keep * x + (keep ^ True) * (np.uint8(255) - x)


def invert(x):
    return np.uint8(255) - x


def autocontrast(x):
    """Each channel stretched to [0, 255] by 255 / (max - min), truncated;
    channels of one value unchanged."""
    api = _api(x)
    lo = api.reductions.min(x, axis_names="HW", keep_dims=True)
    hi = api.reductions.max(x, axis_names="HW", keep_dims=True)
    spread = hi - lo
    stretch = spread > 0
    divisor = spread * stretch + np.uint8(255) * (stretch ^ True)
    return _to_uint8(lmath.floor(lmath.clamp((x - lo * stretch) * (255.0 / divisor), 0.0, 255.0)))


def equalize(x):
    return _api(x).equalize(x)


# --- the schemes ------------------------------------------------------------------


class AutoAugmentPolicy(enum.Enum):
    """torchvision's AutoAugmentPolicy."""

    IMAGENET = "imagenet"
    CIFAR10 = "cifar10"
    SVHN = "svhn"


_WARPS = ("ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate")
# The groups of operations one level selects among: the warps share one warp_affine (per-sample matrix).
_GROUPS = ("Identity", "warp", "Brightness", "Color", "Contrast", "Sharpness", "Posterize", "Solarize",
           "AutoContrast", "Equalize", "Invert")


def _group(op):
    return "warp" if op in _WARPS else op


def augmentation_space(kind, num_bins, h, w):
    """{op: (magnitudes (float32 array, empty for none), signed)} as
    torchvision's _augmentation_space of AutoAugment ("auto"), RandAugment
    ("rand") and TrivialAugmentWide ("wide")."""
    def lin(lo, hi):
        return np.linspace(lo, hi, num_bins, dtype=np.float32)

    none = np.zeros(0, np.float32)
    wide = kind == "wide"
    shear, rot, enh = (0.99, 135.0, 0.99) if wide else (0.3, 30.0, 0.9)
    tx, ty = (32.0, 32.0) if wide else (150.0 / 331.0 * w, 150.0 / 331.0 * h)
    poster = 8 - np.round(np.arange(num_bins) / ((num_bins - 1) / (6 if wide else 4))).astype(np.int32)
    space = {} if kind == "auto" else {"Identity": (none, False)}
    space.update({"ShearX": (lin(0.0, shear), True), "ShearY": (lin(0.0, shear), True),
                  "TranslateX": (lin(0.0, tx), True), "TranslateY": (lin(0.0, ty), True),
                  "Rotate": (lin(0.0, rot), True), "Brightness": (lin(0.0, enh), True),
                  "Color": (lin(0.0, enh), True), "Contrast": (lin(0.0, enh), True),
                  "Sharpness": (lin(0.0, enh), True), "Posterize": (poster.astype(np.float32), False),
                  "Solarize": (lin(255.0, 0.0), False), "AutoContrast": (none, False), "Equalize": (none, False)})
    if kind == "auto":
        space["Invert"] = (none, False)
    return space


def _warp_inverse(op, magnitude, h, w):
    """torchvision's _apply_op warps as inverse affine maps."""
    if op == "Rotate":  # F.rotate: about the centre, angle negated into the affine map
        return inverse_affine([0.0, 0.0], -magnitude, [0.0, 0.0], 1.0, [0.0, 0.0])
    corner = centre_offset([0, 0], h, w)  # center=[0, 0]: the top-left corner
    if op == "ShearX":
        return inverse_affine(corner, 0.0, [0.0, 0.0], 1.0, [math.degrees(math.atan(magnitude)), 0.0])
    if op == "ShearY":
        return inverse_affine(corner, 0.0, [0.0, 0.0], 1.0, [0.0, math.degrees(math.atan(magnitude))])
    tx, ty = (int(magnitude), 0) if op == "TranslateX" else (0, int(magnitude))
    return inverse_affine(corner, 0.0, [float(tx), float(ty)], 1.0, [0.0, 0.0])


class _AutoAugmentBase(_ColorTransform):
    """Per image, params() draws on the host the operation and magnitude of
    each level (from Compose's seed, the step and the image's index, as
    torchvision draws them from torch's generator); build() runs every group
    of operations a level can choose and keeps each image's own (a chain of
    _conditional.merge over the drawn index): see ladle.auto_aug for the
    cost of that choice."""

    random = True
    _levels = 1

    def __init__(self, interpolation=InterpolationMode.NEAREST, fill=None, device=None):
        super().__init__(device)
        self.interpolation = interpolation
        self.fill = fill
        self._interp = warp_interp(interpolation, type(self).__name__)
        self._fill = warp_fill(fill, type(self).__name__)

    def out_shape(self, h, w, params=None):
        return h, w

    def _groups(self, level):
        return _GROUPS

    def build(self, node, ctx):
        for level in range(self._levels):
            groups = self._groups(level)
            index = ctx.per_sample(lambda h, w, p, k=level, g=groups: float(g.index(_group(p[k][0]))),
                                   with_params=True)
            mag = ctx.per_sample(lambda h, w, p, k=level: float(p[k][1]), with_params=True)
            factor = (ctx.per_sample(lambda h, w, p, k=level: 1.0 + float(p[k][1]), with_params=True),
                      ctx.per_sample(lambda h, w, p, k=level: 1.0 - (1.0 + float(p[k][1])), with_params=True))
            picks = [index == float(k) for k in range(len(groups) - 1)]  # before the candidates (demand.h)
            outs = []
            for g in groups:
                if g == "Identity":
                    outs.append(node)
                elif g == "warp":
                    def matrix(h, w, p, k=level):
                        op, m = p[k]
                        inv = _warp_inverse(op, m, h, w) if op in _WARPS else [1.0, 0.0, 0.0, 0.0, 1.0, 0.0]
                        return warp_matrix(inv, h, w, h, w)

                    outs.append(fn.warp_affine(node, device=ctx.device, fill_value=self._fill,
                                               interp_type=self._interp,
                                               matrix=ctx.per_sample(matrix, ndim=1, with_params=True)))
                elif g == "Posterize":
                    mask = ctx.per_sample(lambda h, w, p, k=level: float(posterize_mask(p[k][1]) if p[k][0] ==
                                                                         "Posterize" else 255), with_params=True)
                    outs.append(posterize(node, fn.cast(mask, dtype=types.UINT8)))
                else:
                    op = {"Brightness": adjust_brightness, "Color": adjust_saturation, "Contrast": adjust_contrast,
                          "Sharpness": adjust_sharpness}.get(g)
                    if op is not None:
                        outs.append(op(node, factor))
                    elif g == "Solarize":
                        outs.append(solarize(node, mag))
                    else:
                        outs.append({"AutoContrast": autocontrast, "Equalize": equalize, "Invert": invert}[g](node))
            node = _select(outs, picks)
        return node


def _select(outs, picks):
    result = outs[-1]
    for k in range(len(outs) - 2, -1, -1):
        a, b = outs[k], result
        if a.device != b.device:
            a, b = (a.gpu(), b) if b.device == "gpu" else (a, b.gpu())
        result = getattr(fn, "_conditional").merge(a, b, predicate=picks[k])
    return result


class AutoAugment(_AutoAugmentBase):
    """torchvision's AutoAugment: per image one of the policy's 25
    sub-policies, each of its 2 steps applied with its probability
    (rand <= p), magnitudes of 10 bins, signed ones negated at random."""

    _levels = 2

    def __init__(self, policy=AutoAugmentPolicy.IMAGENET, interpolation=InterpolationMode.NEAREST, fill=None,
                 device=None):
        super().__init__(interpolation, fill, device)
        try:
            self.policy = AutoAugmentPolicy(policy.value if isinstance(policy, enum.Enum) else policy)
        except ValueError:
            raise _ladle.InvalidArgumentError(f"AutoAugment: the policy {policy!r} is not known") from None
        self.policies = POLICIES[self.policy]

    def _groups(self, level):
        used = {_group(sub[level][0]) for sub in self.policies}
        return tuple(g for g in _GROUPS if g == "Identity" or g in used)

    def params(self, h, w, rng):
        space = augmentation_space("auto", 10, h, w)
        sub = self.policies[int(rng.integers(len(self.policies)))]
        probs, signs = rng.random(2), rng.integers(0, 2, 2)
        out = []
        for k, (op, p, bin_) in enumerate(sub):
            if probs[k] <= p:
                mags, signed = space[op]
                m = float(mags[bin_]) if bin_ is not None else 0.0
                out.append((op, -m if signed and signs[k] == 0 else m))
            else:
                out.append(("Identity", 0.0))
        return out


class RandAugment(_AutoAugmentBase):
    """torchvision's RandAugment: num_ops operations drawn per image from its
    14, all at bin `magnitude` of num_magnitude_bins, signed ones negated at
    random."""

    def __init__(self, num_ops=2, magnitude=9, num_magnitude_bins=31, interpolation=InterpolationMode.NEAREST,
                 fill=None, device=None):
        super().__init__(interpolation, fill, device)
        self.num_ops, self.magnitude, self.num_magnitude_bins = int(num_ops), int(magnitude), int(num_magnitude_bins)
        if self.num_ops < 0 or self.num_magnitude_bins < 2 or not 0 <= self.magnitude < self.num_magnitude_bins:
            raise _ladle.InvalidArgumentError(
                f"RandAugment: num_ops >= 0 and 0 <= magnitude < num_magnitude_bins (>= 2) are needed; got "
                f"{num_ops}, {magnitude}, {num_magnitude_bins}")
        self._levels = self.num_ops

    def params(self, h, w, rng):
        space = augmentation_space("rand", self.num_magnitude_bins, h, w)
        names, out = list(space), []
        for _ in range(self.num_ops):
            op = names[int(rng.integers(len(names)))]
            mags, signed = space[op]
            m = float(mags[self.magnitude]) if len(mags) else 0.0
            out.append((op, -m if signed and rng.integers(0, 2) else m))
        return out


class TrivialAugmentWide(_AutoAugmentBase):
    """torchvision's TrivialAugmentWide: one of its 14 operations per image
    at a random bin of num_magnitude_bins, signed ones negated at random."""

    def __init__(self, num_magnitude_bins=31, interpolation=InterpolationMode.NEAREST, fill=None, device=None):
        super().__init__(interpolation, fill, device)
        self.num_magnitude_bins = int(num_magnitude_bins)
        if self.num_magnitude_bins < 2:
            raise _ladle.InvalidArgumentError(f"TrivialAugmentWide: num_magnitude_bins must be >= 2, got "
                                              f"{num_magnitude_bins}")

    def params(self, h, w, rng):
        space = augmentation_space("wide", self.num_magnitude_bins, h, w)
        names = list(space)
        op = names[int(rng.integers(len(names)))]
        mags, signed = space[op]
        m = float(mags[int(rng.integers(len(mags)))]) if len(mags) else 0.0
        return [(op, -m if signed and rng.integers(0, 2) else m)]


class RandomApply(Transform):
    """torchvision's RandomApply: the listed transforms with probability p
    per image (applied when rand <= p), else the image unchanged. The
    transforms must keep the image's size (ladle joins the two results
    sample by sample) and run inside ladle's Compose like any other."""

    random = True

    def __init__(self, transforms, p=0.5, device=None):
        super().__init__(device)
        self.transforms = list(transforms)
        self.p = float(p)
        if not 0.0 <= self.p <= 1.0:
            raise _ladle.InvalidArgumentError(f"RandomApply: p must be in [0, 1], got {p}")
        for t in self.transforms:
            if not isinstance(t, Transform) or not t.geometric:
                raise _ladle.InvalidArgumentError(f"RandomApply: {t!r} is not an image transform of "
                                                  "ladle.torchvision (ToDtype/Normalize cannot be inside)")
        self.uint8_only = any(getattr(t, "uint8_only", False) for t in self.transforms)

    def params(self, h, w, rng):
        applied = bool(rng.random() <= self.p)
        inner = []
        for k, t in enumerate(self.transforms):
            p = t.params(h, w, np.random.default_rng([int(rng.integers(2**63)), k])) if t.random else None
            inner.append((h, w, p))
            oh, ow = t.out_shape(h, w) if p is None else t.out_shape(h, w, p)
            if (oh, ow) != (h, w):
                raise _ladle.UnsupportedError(f"RandomApply: {type(t).__name__} changes the image size "
                                              f"({h}x{w} -> {oh}x{ow}); ladle's RandomApply needs sizes kept")
        return {"applied": applied, "inner": inner}

    def out_shape(self, h, w, params=None):
        return h, w

    def build(self, node, ctx):
        applied = ctx.per_sample(lambda h, w, p: 1.0 if p["applied"] else 0.0, with_params=True)
        out = node
        for k, t in enumerate(self.transforms):
            out = t.build(out, _InnerContext(ctx, k))
        if out is node:
            return node
        if out.device != node.device:
            node = node.gpu()
        return getattr(fn, "_conditional").merge(out, node, predicate=applied)


class _InnerContext:
    """What a transform inside RandomApply sees: its per-sample arguments
    are computed from RandomApply's params (the image's shape there and the
    transform's own params)."""

    def __init__(self, ctx, k):
        self._ctx, self._k = ctx, k
        # Transforms that draw from (seed, step, index) themselves (ColorJitter) get a step of their own,
        # so that their draws are not RandomApply's.
        self.device, self.step, self.seed = ctx.device, 2**32 + ctx.step * 256 + k, ctx.seed

    def per_sample(self, value_of_shape, ndim=0, with_params=False):
        k = self._k

        def value(h, w, p):
            ih, iw, ip = p["inner"][k]
            return value_of_shape(ih, iw, ip) if with_params else value_of_shape(ih, iw)

        return self._ctx.per_sample(value, ndim=ndim, with_params=True)

    def per_sample_image(self, value_of):
        return self._ctx.per_sample_image(value_of)


class ConvertImageDtype(ToDtype):
    """torchvision's (v1) ConvertImageDtype: uint8 images to float32/float16
    in [0, 1] (ToDtype(dtype, scale=True))."""

    def __init__(self, dtype, device=None):
        super().__init__(dtype, scale=True, device=device)


# torchvision's policies: (operation, probability, magnitude bin of 10 or None) per step.
POLICIES = {
    AutoAugmentPolicy.IMAGENET: [
        (("Posterize", 0.4, 8), ("Rotate", 0.6, 9)), (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
        (("Equalize", 0.8, None), ("Equalize", 0.6, None)), (("Posterize", 0.6, 7), ("Posterize", 0.6, 6)),
        (("Equalize", 0.4, None), ("Solarize", 0.2, 4)), (("Equalize", 0.4, None), ("Rotate", 0.8, 8)),
        (("Solarize", 0.6, 3), ("Equalize", 0.6, None)), (("Posterize", 0.8, 5), ("Equalize", 1.0, None)),
        (("Rotate", 0.2, 3), ("Solarize", 0.6, 8)), (("Equalize", 0.6, None), ("Posterize", 0.4, 6)),
        (("Rotate", 0.8, 8), ("Color", 0.4, 0)), (("Rotate", 0.4, 9), ("Equalize", 0.6, None)),
        (("Equalize", 0.0, None), ("Equalize", 0.8, None)), (("Invert", 0.6, None), ("Equalize", 1.0, None)),
        (("Color", 0.6, 4), ("Contrast", 1.0, 8)), (("Rotate", 0.8, 8), ("Color", 1.0, 2)),
        (("Color", 0.8, 8), ("Solarize", 0.8, 7)), (("Sharpness", 0.4, 7), ("Invert", 0.6, None)),
        (("ShearX", 0.6, 5), ("Equalize", 1.0, None)), (("Color", 0.4, 0), ("Equalize", 0.6, None)),
        (("Equalize", 0.4, None), ("Solarize", 0.2, 4)), (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
        (("Invert", 0.6, None), ("Equalize", 1.0, None)), (("Color", 0.6, 4), ("Contrast", 1.0, 8)),
        (("Equalize", 0.8, None), ("Equalize", 0.6, None)),
    ],
    AutoAugmentPolicy.CIFAR10: [
        (("Invert", 0.1, None), ("Contrast", 0.2, 6)), (("Rotate", 0.7, 2), ("TranslateX", 0.3, 9)),
        (("Sharpness", 0.8, 1), ("Sharpness", 0.9, 3)), (("ShearY", 0.5, 8), ("TranslateY", 0.7, 9)),
        (("AutoContrast", 0.5, None), ("Equalize", 0.9, None)), (("ShearY", 0.2, 7), ("Posterize", 0.3, 7)),
        (("Color", 0.4, 3), ("Brightness", 0.6, 7)), (("Sharpness", 0.3, 9), ("Brightness", 0.7, 9)),
        (("Equalize", 0.6, None), ("Equalize", 0.5, None)), (("Contrast", 0.6, 7), ("Sharpness", 0.6, 5)),
        (("Color", 0.7, 7), ("TranslateX", 0.5, 8)), (("Equalize", 0.3, None), ("AutoContrast", 0.4, None)),
        (("TranslateY", 0.4, 3), ("Sharpness", 0.2, 6)), (("Brightness", 0.9, 6), ("Color", 0.2, 8)),
        (("Solarize", 0.5, 2), ("Invert", 0.0, None)), (("Equalize", 0.2, None), ("AutoContrast", 0.6, None)),
        (("Equalize", 0.2, None), ("Equalize", 0.6, None)), (("Color", 0.9, 9), ("Equalize", 0.6, None)),
        (("AutoContrast", 0.8, None), ("Solarize", 0.2, 8)), (("Brightness", 0.1, 3), ("Color", 0.7, 0)),
        (("Solarize", 0.4, 5), ("AutoContrast", 0.9, None)), (("TranslateY", 0.9, 9), ("TranslateY", 0.7, 9)),
        (("AutoContrast", 0.9, None), ("Solarize", 0.8, 3)), (("Equalize", 0.8, None), ("Invert", 0.1, None)),
        (("TranslateY", 0.7, 9), ("AutoContrast", 0.9, None)),
    ],
    AutoAugmentPolicy.SVHN: [
        (("ShearX", 0.9, 4), ("Invert", 0.2, None)), (("ShearY", 0.9, 8), ("Invert", 0.7, None)),
        (("Equalize", 0.6, None), ("Solarize", 0.6, 6)), (("Invert", 0.9, None), ("Equalize", 0.6, None)),
        (("Equalize", 0.6, None), ("Rotate", 0.9, 3)), (("ShearX", 0.9, 4), ("AutoContrast", 0.8, None)),
        (("ShearY", 0.9, 8), ("Invert", 0.4, None)), (("ShearY", 0.9, 5), ("Solarize", 0.2, 6)),
        (("Invert", 0.9, None), ("AutoContrast", 0.8, None)), (("Equalize", 0.6, None), ("Rotate", 0.9, 3)),
        (("ShearX", 0.9, 4), ("Solarize", 0.3, 3)), (("ShearY", 0.8, 8), ("Invert", 0.7, None)),
        (("Equalize", 0.9, None), ("TranslateY", 0.6, 6)), (("Invert", 0.9, None), ("Equalize", 0.6, None)),
        (("Contrast", 0.3, 3), ("Rotate", 0.8, 4)), (("Invert", 0.8, None), ("TranslateY", 0.0, 2)),
        (("ShearY", 0.7, 6), ("Solarize", 0.4, 8)), (("Invert", 0.6, None), ("Rotate", 0.8, 4)),
        (("ShearY", 0.3, 7), ("TranslateX", 0.9, 3)), (("ShearX", 0.1, 6), ("Invert", 0.6, None)),
        (("Solarize", 0.7, 2), ("TranslateY", 0.6, 7)), (("ShearY", 0.8, 4), ("Invert", 0.8, None)),
        (("ShearX", 0.7, 9), ("TranslateY", 0.8, 3)), (("ShearY", 0.8, 5), ("AutoContrast", 0.7, None)),
        (("ShearX", 0.7, 2), ("Invert", 0.1, None)),
    ],
}
