"""Batch and Tensor of ladle.dynamic: thin wrappers over ladle's TensorList
(one ref-counted C batch), so data leaves through DLPack without a copy."""

import numpy as np

from .. import _ladle
from .. import types
from ..math import _Arithmetic, _subscript
from ..tensors import TensorList, _host_copy, batch_from_samples, to_numpy, to_torch_tensor

def _ladle_array(a):
    """`a` as a C-contiguous NumPy array of a ladle element type (any numeric
    or bool type in native byte order; others fail naming the type)."""
    a = np.asarray(a)
    try:
        types.to_dtype(a.dtype.newbyteorder("=") if a.dtype.kind in "iufb" else a.dtype)
    except ValueError as e:
        raise _ladle.InvalidArgumentError(f"ladle.dynamic: {e}") from None
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    # (np.ascontiguousarray would turn a 0-d array into a 1-d one.)
    return a if a.flags["C_CONTIGUOUS"] else a.copy(order="C")


def _host_array(x):
    """One sample as a NumPy array: NumPy arrays, torch tensors (copied to the
    host when on the GPU), PIL images, Tensors, scalars and nested lists."""
    if isinstance(x, Tensor):
        if x.device != "cpu":
            x = x.cpu()
        return to_numpy(x._view())
    if type(x).__module__.startswith("torch") and hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return _ladle_array(x)


def _is_torch(x):
    return type(x).__module__.startswith("torch") and hasattr(x, "detach")


class Tensor(_Arithmetic):
    """One sample: ``shape``, ``dtype``, ``layout``, ``device``; ``torch()``,
    ``np.asarray(t)`` (CPU) and ``__dlpack__`` give it without a copy.

    Made by the operators (a single input gives a single output), by
    ``Batch.tensors[i]``, or by ``ladle.dynamic.tensor(x)``."""

    def __init__(self, tensor_list, index=0):
        if not isinstance(tensor_list, TensorList):
            raise TypeError(f"Tensor wraps a ladle TensorList, not {type(tensor_list).__name__}; use ladle.dynamic.tensor()")
        self._tl = tensor_list
        self._index = tensor_list._index(index)

    def _view(self):
        return self._tl._batch.sample(self._index)

    @property
    def shape(self):
        return tuple(self._tl._batch.shape(self._index))

    @property
    def ndim(self):
        return self._tl._batch.ndim

    @property
    def dtype(self):
        """A ladle.types.DALIDataType (types.UINT8, types.FLOAT, ...)."""
        return self._tl.dtype

    @property
    def layout(self):
        """Layout letters, e.g. "HWC"; "" when none."""
        return self._tl.layout()

    @property
    def device(self):
        """ "cpu" or "gpu". """
        return self._tl.device

    def torch(self, copy=False):
        """This sample as a torch tensor (no copy unless `copy`)."""
        import torch

        t = to_torch_tensor(self._view())
        return t.clone() if copy else t

    def cpu(self):
        """This sample in host memory (itself when it is there already)."""
        if self.device == "cpu":
            return self
        return Tensor(TensorList(batch_from_samples([_host_copy(self._view())], layout=self.layout or None)))

    def gpu(self):
        """This sample in GPU memory (a copy; itself when it is there already)."""
        return self if self.device == "gpu" else self._as_batch().gpu().tensors[0]

    def _as_batch(self):
        """A Batch of this one sample (the same memory when the batch holds only it)."""
        if len(self._tl) == 1:
            return Batch(self._tl)
        if self.device == "cpu":
            return Batch(TensorList(batch_from_samples([to_numpy(self._view())], layout=self.layout or None)))
        host = self.cpu()
        return host._as_batch().gpu()

    def __iter__(self):
        """The sub-tensors along the first dimension (as NumPy iterates)."""
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d ladle.dynamic.Tensor")
        return (self[i] for i in range(self.shape[0]))

    def __getitem__(self, key):
        """A part of this sample (x[1:3, ::2], x[-1], x[..., 0]), computed by
        the subscript operator, as DALI's dynamic mode does."""
        return _subscript(self, key)

    def __array__(self, dtype=None, copy=None):
        if self.device != "cpu":
            raise _ladle.StateError("ladle.dynamic.Tensor: the tensor is in GPU memory; take .cpu() first")
        a = to_numpy(self._view())
        if copy:
            a = a.copy()
        return a if dtype is None else a.astype(dtype, copy=False)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return self._view().__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self):
        return self._view().__dlpack_device__()

    def __repr__(self):
        return (f"<ladle.dynamic.Tensor shape={self.shape} dtype={self.dtype} layout={self.layout!r} "
                f"on {self.device}>")


class Batch(_Arithmetic):
    """A batch of samples of one dtype and rank (shapes may differ).

    ``len(b)``; ``b.tensors[i]`` is sample i (a Tensor); ``b.dtype``,
    ``b.layout``, ``b.device`` ("cpu"/"gpu"), ``b.shape`` (a list of sample
    shapes). ``b.torch()`` is the batch as one [N, ...] torch tensor without a
    copy when the samples share a shape (``pad=True`` pads ragged samples with
    zeros into a new tensor). ``__dlpack__`` exports a dense batch.

    Made by the operators, by ``ladle.dynamic.batch(samples)`` (a copy) and
    ``ladle.dynamic.as_batch(x)`` (no copy where possible). ``b.tensor_list``
    is the underlying ladle.TensorList."""

    def __init__(self, tensor_list):
        if not isinstance(tensor_list, TensorList):
            raise TypeError(f"Batch wraps a ladle TensorList, not {type(tensor_list).__name__}; use ladle.dynamic.batch()")
        self._tl = tensor_list
        self._tensors = None

    @property
    def tensor_list(self):
        return self._tl

    def __len__(self):
        return len(self._tl)

    @property
    def batch_size(self):
        return len(self._tl)

    @property
    def tensors(self):
        """The samples, as a tuple of Tensors."""
        if self._tensors is None:
            self._tensors = tuple(Tensor(self._tl, i) for i in range(len(self._tl)))
        return self._tensors

    def __iter__(self):
        return iter(self.tensors)

    @property
    def shape(self):
        return [tuple(s) for s in self._tl.shape()]

    @property
    def ndim(self):
        return self._tl._batch.ndim

    @property
    def dtype(self):
        return self._tl.dtype

    @property
    def layout(self):
        return self._tl.layout()

    @property
    def device(self):
        return self._tl.device

    def is_dense(self):
        return self._tl.is_dense_tensor()

    def torch(self, pad=False):
        """The batch as one torch tensor [N, ...].

        Dense: a view of ladle's memory (DLPack, no copy). Ragged: with
        ``pad=True`` a new zero-filled tensor of the largest extent in every
        dimension, each sample at the origin; without it, StateError."""
        import torch

        if self._tl.is_dense_tensor():
            return to_torch_tensor(self._tl)
        if not pad:
            raise _ladle.StateError(
                f"Batch.torch(): the samples have different shapes ({self._shape_summary()}); "
                "pass pad=True to pad them with zeros, or take them one by one from .tensors"
            )
        shapes = self.shape
        extent = [max(s[d] for s in shapes) for d in range(self.ndim)]
        first = self.tensors[0].torch()
        out = torch.zeros([len(self)] + extent, dtype=first.dtype, device=first.device)
        for i, t in enumerate(self.tensors):
            x = t.torch()
            out[(i,) + tuple(slice(0, n) for n in x.shape)] = x
        return out

    def _shape_summary(self):
        shapes = self.shape
        text = ", ".join(str(s) for s in shapes[:3])
        return text + (", ..." if len(shapes) > 3 else "")

    def cpu(self):
        """This batch in host memory (itself when it is there already)."""
        return self if self.device == "cpu" else Batch(self._tl.as_cpu())

    def gpu(self):
        """This batch in GPU memory (a copy by a small pipeline; itself when
        it is there already)."""
        if self.device == "gpu":
            return self
        from . import _exec

        return _exec.to_gpu(self)

    def _take(self, count):
        """The first `count` samples, as a new CPU batch (a copy) unless that is all of them."""
        if count == len(self):
            return self
        host = self.cpu()
        samples = [to_numpy(host._tl._batch.sample(i)) for i in range(count)]
        return Batch(TensorList(batch_from_samples(samples, layout=self.layout or None)))

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self._tl._check_dense("Batch.__dlpack__")
        return self._tl.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self):
        return self._tl.__dlpack_device__()

    def __array__(self, dtype=None, copy=None):
        if self.device != "cpu":
            raise _ladle.StateError("ladle.dynamic.Batch: the batch is in GPU memory; take .cpu() first")
        a = self._tl.as_array()
        if copy:
            a = a.copy()
        return a if dtype is None else a.astype(dtype, copy=False)

    def __repr__(self):
        dense = "" if self._tl.is_dense_tensor() else ", ragged"
        return (f"<ladle.dynamic.Batch {len(self)} x {self.dtype} layout={self.layout!r} "
                f"on {self.device}{dense}>")


def batch(samples, layout=None, dtype=None):
    """A new Batch holding a copy of `samples`: a list of arrays (NumPy, torch,
    Tensors; same dtype and rank, shapes may differ) or one [N, ...] array.
    `dtype` converts first (a ladle, NumPy or torch dtype). A list of ladle
    Tensors all in GPU memory gives a GPU batch."""
    if isinstance(samples, Batch):
        samples = samples.cpu().tensors
    if isinstance(samples, TensorList):
        samples = Batch(samples).cpu().tensors
    np_dtype = types.to_dtype(dtype).numpy_name if dtype is not None else None
    if isinstance(samples, (list, tuple)):
        if not samples:
            raise _ladle.InvalidArgumentError("ladle.dynamic.batch: no samples")
        on_gpu = all(isinstance(s, Tensor) and s.device == "gpu" for s in samples)
        arrays = [_host_array(s) for s in samples]
        if np_dtype:
            arrays = [a.astype(np_dtype) for a in arrays]
        arrays = [_ladle_array(a) for a in arrays]
        if all(a.shape == arrays[0].shape for a in arrays):
            # One [N, ...] buffer (this also keeps 0-d samples 0-d).
            tl = TensorList(_ladle.batch_from_buffer(_ladle_array(np.stack(arrays)), layout=layout))
        else:
            tl = TensorList(batch_from_samples(arrays, layout=layout))
        out = Batch(tl)
        return out.gpu() if on_gpu else out
    a = _host_array(samples)
    if np_dtype:
        a = a.astype(np_dtype)
    if a.ndim < 1:
        raise _ladle.InvalidArgumentError("ladle.dynamic.batch: a single array must be [N, ...] with N samples")
    return Batch(TensorList(_ladle.batch_from_buffer(_ladle_array(a), layout=layout)))


def as_batch(x, layout=None):
    """`x` as a Batch, without a copy where it is already ladle memory (a
    Batch, a ladle.TensorList); a Tensor becomes a batch of one; anything else
    goes through batch() (a copy)."""
    if isinstance(x, Batch):
        return x
    if isinstance(x, TensorList):
        return Batch(x)
    if isinstance(x, _ladle._Batch):
        return Batch(TensorList(x))
    if isinstance(x, Tensor):
        return x._as_batch()
    return batch(x, layout=layout)


def tensor(x, layout=None, dtype=None):
    """A new Tensor holding a copy of one sample `x` (NumPy array, torch
    tensor, PIL image, nested list or scalar); a Tensor is returned as is."""
    if isinstance(x, Tensor) and dtype is None:
        return x
    a = _host_array(x)
    if dtype is not None:
        a = _ladle_array(a.astype(types.to_dtype(dtype).numpy_name))
    return Tensor(TensorList(_ladle.batch_from_buffer(a[np.newaxis], layout=layout)))


def as_tensor(x, layout=None):
    """`x` as a Tensor, without a copy where it is one already."""
    return x if isinstance(x, Tensor) else tensor(x, layout=layout)
