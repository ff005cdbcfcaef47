"""The transform classes of ladle.torchvision and Compose, which turns a list
of them into one ladle pipeline."""

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


# --- the transforms ---------------------------------------------------------


class Transform:
    """Base of the transform classes. Each takes ``device`` ("cpu", "gpu" or
    None: Compose's device). Transforms run inside a Compose only."""

    geometric = True

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
        return fn.resize(node, device=ctx.device, resize_x=rx, resize_y=ry, interp_type=self._interp,
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
                                      random_aspect_ratio=list(self.ratio), interp_type=self._interp,
                                      antialias=self.antialias)


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

    def per_sample(self, value_of_shape, with_image=False):
        name = f"arg{len(self._compose._args)}"
        self._compose._args.append((name, self.step, value_of_shape, with_image))
        return fn.external_source(name=name, device="cpu", dtype=types.FLOAT, ndim=0)

    def per_sample_image(self, value_of):
        """A per-sample argument value_of(h, w, image, index): `image` is the
        HWC image as it entered the Compose (host memory) and `index` counts
        the images this Compose has been called on."""
        return self.per_sample(value_of, with_image=True)


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

    ``device="gpu"`` runs the transforms on the GPU (a transform's own device
    argument moves the pipeline to the GPU from that transform on) and
    returns CUDA tensors. Tensor inputs in GPU memory are copied to the host
    first (ladle feeds host memory); results of a CPU Compose go back to the
    input's device.

    Random transforms draw from ``seed`` (default: the next seed of
    ladle.dynamic's, so ``ladle.dynamic.random.set_seed`` makes a program
    reproducible); image i of a call draws from (seed, transform, index of
    the call's first iteration * batch_size + i)."""

    def __init__(self, op_list, batch_size=16, num_threads=4, device="cpu", seed=None, **pipeline_kwargs):
        self.op_list = list(op_list)
        for t in self.op_list:
            if not isinstance(t, Transform):
                raise _ladle.InvalidArgumentError(
                    f"Compose: {t!r} is not a ladle.torchvision transform (torchvision's own transforms and "
                    "callables cannot run inside a ladle pipeline)")
        self.batch_size = int(batch_size)
        self.num_threads = int(num_threads)
        self.device = "gpu" if str(device).lower() in ("gpu", "cuda") else "cpu"
        self.seed = _exec.next_seed() if seed is None else int(seed)
        self._pipeline_kwargs = pipeline_kwargs
        self._lock = threading.Lock()
        self._seen = 0  # images transformed so far: keys the host-side random draws
        self._pipes = {}  # input dtype -> (pipeline, output info)
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
        want = t.device or self.device
        if current == "gpu" and want == "cpu":
            raise _ladle.InvalidArgumentError(
                f"Compose: {type(t).__name__}(device='cpu') follows a GPU transform; data cannot go back to the CPU")
        return want

    def _build(self, dtype, ndim_channels):
        on_gpu = self.device == "gpu" or any(t.device == "gpu" for t in self.op_list)
        self._args = []
        pipe = Pipeline(batch_size=self.batch_size, num_threads=self.num_threads,
                        device_id=_exec._gpu_device_id() if on_gpu else None, seed=self.seed,
                        prefetch_queue_depth=1, **self._pipeline_kwargs)
        try:
            with pipe:
                node = fn.external_source(name="images", device="cpu", dtype=dtype, ndim=3, layout="HWC")
                ctx = _BuildContext(self)
                current = "cpu"
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
        dtype = types.to_dtype(inputs.dtype)
        with self._lock:
            if dtype not in self._pipes:
                self._pipes[dtype] = self._build(dtype, 3) + (list(self._args),)
            pipe, chw, args = self._pipes[dtype]
            samples, tls = [], []
            for start in range(0, len(inputs), self.batch_size):
                chunk = inputs.samples[start:start + self.batch_size]
                pipe.feed_input("images", chunk, layout="HWC")
                for name, values in self._arg_values(chunk, args).items():
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

    def _arg_values(self, chunk, args):
        """The per-sample arguments of every transform for these images."""
        values = {name: [] for name, _, _, _ in args}
        for a in chunk:
            h, w = a.shape[0], a.shape[1]
            for step, t in enumerate(self._geometric):
                for name, s, value_of, with_image in args:
                    if s == step:
                        values[name].append(value_of(h, w, a, self._seen) if with_image else value_of(h, w))
                h, w = t.out_shape(h, w)
            self._seen += 1
        # One [N] array: N samples of rank 0.
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
