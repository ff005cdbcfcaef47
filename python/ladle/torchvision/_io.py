"""Inputs and outputs of ladle.torchvision: PIL images and torch tensors
([C, H, W] or [N, C, H, W]) to the HWC samples ladle's operators take, and
back."""

import enum

import numpy as np

from .. import _ladle


class InterpolationMode(enum.Enum):
    """torchvision's interpolation modes (same names and values)."""

    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


# ladle's filters for torchvision's modes. ladle's NN samples pixel centres,
# which is torchvision's "nearest-exact"; its legacy "nearest" (floor(x *
# scale)) has no ladle filter and gets the same.
_FILTERS = {
    "nearest": "NN",
    "nearest-exact": "NN",
    "bilinear": "LINEAR",
    "bicubic": "CUBIC",
    "lanczos": "LANCZOS3",
}

# PIL's integer constants, which torchvision also accepts.
_PIL_CODES = {0: "nearest", 2: "bilinear", 3: "bicubic", 1: "lanczos", 4: "box", 5: "hamming"}


def interp_type(mode, who):
    """ladle's interp_type for a torchvision interpolation (enum, its value or a PIL code)."""
    if isinstance(mode, enum.Enum):
        mode = mode.value
    if isinstance(mode, int) and not isinstance(mode, bool):
        mode = _PIL_CODES.get(mode, mode)
    key = str(mode).lower()
    if key not in _FILTERS:
        raise _ladle.UnsupportedError(f"{who}: interpolation {mode!r} is not supported; use NEAREST, "
                                      "NEAREST_EXACT, BILINEAR, BICUBIC or LANCZOS")
    return _FILTERS[key]


def _is_torch(x):
    return type(x).__module__.startswith("torch") and hasattr(x, "detach")


def _is_pil(x):
    return hasattr(x, "getbands") and hasattr(x, "mode")


class Inputs:
    """What a call was given: `kind` is "pil", "tensor" (one [C, H, W]),
    "batch" ([N, C, H, W]) or "list" (of PIL images / [C, H, W] tensors);
    `samples` are the HWC images (NumPy arrays in host memory; for CUDA
    tensors, HWC views of them on the GPU: nothing is copied here), `kinds`
    the kind of each list item, `cuda` whether the images are CUDA tensors
    (then all of them, on one device: `device`, `gpu_index` its ordinal)."""

    def __init__(self, inpt, who):
        self.kinds = None
        self.cuda = False
        self.device = None
        self.gpu_index = None
        if _is_pil(inpt):
            self.kind = "pil"
            self.samples = [_pil_array(inpt)]
        elif _is_torch(inpt):
            if inpt.dim() == 3:
                self.kind = "tensor"
                self.samples = [self._chw(inpt, who)]
            elif inpt.dim() == 4:
                self.kind = "batch"
                self.samples = [self._chw(x, who) for x in inpt]
            else:
                raise _ladle.InvalidArgumentError(f"{who}: expects a [C, H, W] or [N, C, H, W] tensor, "
                                                  f"got {inpt.dim()} dimensions")
        elif isinstance(inpt, (list, tuple)):
            if not inpt:
                raise _ladle.InvalidArgumentError(f"{who}: empty list")
            self.kind = "list"
            self.kinds, self.samples = [], []
            for x in inpt:
                if _is_pil(x):
                    self.kinds.append("pil")
                    self.samples.append(_pil_array(x))
                elif _is_torch(x) and x.dim() == 3:
                    self.kinds.append("tensor")
                    self.samples.append(self._chw(x, who))
                else:
                    raise _ladle.InvalidArgumentError(f"{who}: a list must hold PIL images or [C, H, W] tensors, "
                                                      f"got {type(x).__name__}")
            on_gpu = {_is_torch(x) and x.is_cuda for x in inpt}
            if len(on_gpu) > 1:
                raise _ladle.InvalidArgumentError(f"{who}: the list mixes CUDA tensors with images in host memory; "
                                                  "give all of them on one device")
        else:
            raise _ladle.InvalidArgumentError(f"{who}: expects a PIL image, a torch tensor ([C, H, W] or "
                                              f"[N, C, H, W]) or a list of them, got {type(inpt).__name__}")
        dtypes = {np.dtype(a.dtype) if isinstance(a, np.ndarray) else _numpy_dtype(a.dtype, who)
                  for a in self.samples}
        if len(dtypes) > 1:
            raise _ladle.InvalidArgumentError(f"{who}: the images have different dtypes: {sorted(map(str, dtypes))}")
        self.dtype = dtypes.pop()
        if self.dtype not in (np.uint8, np.float32):
            raise _ladle.UnsupportedError(f"{who}: images must be uint8 (or float32 for geometric transforms), "
                                          f"got {self.dtype}")

    def _chw(self, t, who):
        t = t.detach()
        if t.is_cuda:
            if self.device is not None and t.device != self.device:
                raise _ladle.InvalidArgumentError(f"{who}: the tensors are on different devices ({self.device}, "
                                                  f"{t.device}); give all of them on one device")
            self.cuda = True
            self.device = t.device
            self.gpu_index = t.device.index
            return t.permute(1, 2, 0)  # a view: the GPU copy that packs it comes with the batch (gpu_batch)
        # [C, H, W] -> HWC on the host (a copy: ladle's operators read HWC).
        return np.ascontiguousarray(t.permute(1, 2, 0).numpy())

    def gpu_batch(self, start=0, stop=None):
        """Samples start..stop of CUDA inputs as one GPU _Batch (HWC), packed
        on the GPU (see ladle.pipeline.cuda_batch)."""
        from ..pipeline import cuda_batch

        return cuda_batch(self.samples[start:stop], layout="HWC")

    def __len__(self):
        return len(self.samples)


def _numpy_dtype(dtype, who):
    """The NumPy dtype of a torch dtype (torch.uint8 -> uint8)."""
    try:
        return np.dtype(str(dtype).replace("torch.", ""))
    except TypeError:
        raise _ladle.UnsupportedError(f"{who}: images must be uint8 (or float32 for geometric transforms), "
                                      f"got {dtype}") from None


def _pil_array(img):
    a = np.asarray(img)
    if a.ndim == 2:
        a = a[:, :, np.newaxis]
    if a.dtype == np.bool_:
        a = a.astype(np.uint8) * 255
    if a.dtype != np.uint8:
        raise _ladle.UnsupportedError(f"ladle.torchvision: PIL images of mode {img.mode} are not supported")
    return np.ascontiguousarray(a)


def to_torch_samples(tensors, chw):
    """torch tensors [C, H, W] from ladle samples (Tensors or TensorList samples):
    no copy when `chw` (already planar), else a permuted contiguous copy."""
    import torch

    out = []
    for t in tensors:
        x = torch.from_dlpack(t)
        out.append(x if chw else x.permute(2, 0, 1).contiguous())
    return out


def assemble(inputs, samples, chw, as_pil, torch_batch=None):
    """The result in the caller's form. `samples` are ladle samples (objects
    with __dlpack__), HWC unless `chw`; `as_pil`: PIL inputs give PIL images
    (the transforms kept them images); `torch_batch`, when given, is the
    dense batch as one [N, ...] torch tensor (no copy)."""
    import torch

    def pil(x):
        from PIL import Image

        a = np.from_dlpack(x) if not chw else np.from_dlpack(x).transpose(1, 2, 0)
        if a.ndim == 3 and a.shape[2] == 1:
            a = a[:, :, 0]
        return Image.fromarray(np.ascontiguousarray(a))

    if inputs.kind == "pil":
        return pil(samples[0]) if as_pil else to_torch_samples(samples, chw)[0]
    if inputs.kind == "tensor":
        return to_torch_samples(samples, chw)[0]
    if inputs.kind == "batch":
        if torch_batch is not None:
            return torch_batch if chw else torch_batch.permute(0, 3, 1, 2).contiguous()
        tensors = to_torch_samples(samples, chw)
        if all(t.shape == tensors[0].shape for t in tensors):
            return torch.stack(tensors)
        return tensors  # ragged (e.g. Resize(int) of mixed aspect ratios): a list
    out = []
    for kind, x in zip(inputs.kinds, samples):
        if kind == "pil" and as_pil:
            out.append(pil(x))
        else:
            out.append(to_torch_samples([x], chw)[0])
    return out
