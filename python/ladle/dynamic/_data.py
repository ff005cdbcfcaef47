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


class _Lazy:
    """The TensorList of a result, made now or by a queued call (EvalMode.deferred)."""

    __slots__ = ()

    @property
    def _tl(self):
        tl = self._tl_value
        if tl is None:
            future, k = self._future
            tl = self._tl_value = future.result()[k]
            self._future = None
        return tl

    def evaluate(self):
        """Waits for the call that makes this result (deferred mode); returns self."""
        self._tl
        return self


class Tensor(_Lazy, _Arithmetic):
    """One sample: ``shape``, ``dtype``, ``layout``, ``device``; ``torch()``,
    ``np.asarray(t)`` (CPU) and ``__dlpack__`` give it without a copy.

    ``Tensor(data, dtype=None, device=None, layout=None, batch=None,
    index_in_batch=None, copy=False)`` as in DALI: `data` is an array, a torch
    tensor, a Tensor, a nested list or a scalar (copied unless it is ladle
    memory already and `copy` is False); or ``batch=b, index_in_batch=i`` is
    sample i of Batch b, without a copy. Operators given single samples
    return Tensors, ``Batch.tensors[i]`` is one."""

    __slots__ = ("_tl_value", "_future", "_index")

    def __init__(self, data=None, dtype=None, device=None, layout=None, batch=None, index_in_batch=None,
                 copy=False):
        self._future = None
        if batch is not None:
            if data is not None:
                raise _ladle.InvalidArgumentError("Tensor: give data or batch=, not both")
            b = as_batch(batch)
            self._tl_value, self._index = b._tl, b._tl._index(0 if index_in_batch is None else index_in_batch)
        else:
            if data is None:
                raise _ladle.InvalidArgumentError("Tensor: no data")
            t = data if isinstance(data, Tensor) and not copy and dtype is None else tensor(data, dtype=dtype,
                                                                                            layout=layout)
            self._tl_value, self._index = t._tl, t._index
        if device is not None:
            moved = self.to_device(device)
            self._tl_value, self._index = moved._tl, moved._index

    @classmethod
    def _wrap(cls, tensor_list, index=0, future=None):
        """Sample `index` of a TensorList, or of output `future[1]` of a queued call."""
        t = cls.__new__(cls)
        t._tl_value, t._future = tensor_list, future
        t._index = index if future is not None else tensor_list._index(index)
        return t

    def _view(self):
        return self._tl._batch.sample(self._index)

    @property
    def shape(self):
        return tuple(self._tl._batch.shape(self._index))

    @property
    def ndim(self):
        return self._tl._batch.ndim

    @property
    def size(self):
        """The number of elements."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def itemsize(self):
        return np.dtype(self.dtype.numpy_name).itemsize

    @property
    def nbytes(self):
        return self.size * self.itemsize

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

    def item(self):
        """The value of a one-element tensor, as a Python number."""
        if self.size != 1:
            raise _ladle.InvalidArgumentError(f"Tensor.item(): the tensor has {self.size} elements, not 1")
        return np.asarray(self.cpu()).reshape(()).item()

    def torch(self, copy=False):
        """This sample as a torch tensor (no copy unless `copy`)."""
        t = to_torch_tensor(self._view())
        return t.clone() if copy else t

    def cpu(self):
        """This sample in host memory (itself when it is there already)."""
        if self.device == "cpu":
            return self
        return Tensor._wrap(TensorList(batch_from_samples([_host_copy(self._view())], layout=self.layout or None)))

    def gpu(self, index=None):
        """This sample in GPU memory (a copy; itself when it is there
        already), on GPU `index` (default: the context's)."""
        return self if self.device == "gpu" else self._as_batch().gpu(index).tensors[0]

    def to_device(self, device, force_copy=False):
        """This sample on `device` ("cpu", "gpu", a Device or torch.device)."""
        from ._context import device as _device

        target = _device(device)
        if target.device_type == self.device:
            if not force_copy:
                return self
            copy = tensor(np.array(self.cpu()), layout=self.layout or None)  # a new host copy
            return copy if self.device == "cpu" else copy.gpu(target.device_id)
        return self.cpu() if target.device_type == "cpu" else self.gpu(target.device_id)

    def _as_batch(self):
        """A Batch of this one sample (the same memory when the batch holds only it)."""
        if len(self._tl) == 1:
            return Batch._wrap(self._tl)
        if self.device == "cpu":
            return Batch._wrap(TensorList(batch_from_samples([to_numpy(self._view())], layout=self.layout or None)))
        host = self.cpu()
        return host._as_batch().gpu()

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d ladle.dynamic.Tensor")
        return self.shape[0]

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

    def __bool__(self):
        if self.size != 1:
            raise ValueError("the truth value of a ladle.dynamic.Tensor of more than one element is ambiguous")
        return bool(self.item())

    def __int__(self):
        return int(self.item())

    def __float__(self):
        return float(self.item())

    def __repr__(self):
        if self._tl_value is None or self._future is not None:
            return "<ladle.dynamic.Tensor (not evaluated yet)>"
        return (f"<ladle.dynamic.Tensor shape={self.shape} dtype={self.dtype} layout={self.layout!r} "
                f"on {self.device}>")


class _SampleSlicer:
    """``batch.slice[...]``: every sample sliced, with per-sample bounds where
    an index is a Batch (or a list with one value per sample)."""

    __slots__ = ("_batch",)

    def __init__(self, b):
        self._batch = b

    def __getitem__(self, key):
        return _subscript(self._batch, key)


class Batch(_Lazy, _Arithmetic):
    """A batch of samples of one dtype and rank (shapes may differ).

    ``len(b)`` / ``b.batch_size``; ``b.tensors[i]`` or ``b.select(i)`` is
    sample i (a Tensor), ``b.select(slice or list)`` a Batch of some samples,
    ``b.slice[...]`` slices every sample; ``b.dtype``, ``b.layout``,
    ``b.device`` ("cpu"/"gpu"), ``b.shape`` (a list of sample shapes).
    ``b.torch()`` is the batch as one [N, ...] torch tensor without a copy
    when the samples share a shape (``pad=True`` pads ragged samples with
    zeros into a new tensor). ``__dlpack__`` exports a dense batch.

    ``Batch(tensors, dtype=None, device=None, layout=None, copy=False)`` as in
    DALI: a list of samples (arrays, torch tensors, Tensors) or one [N, ...]
    array; ladle memory (a Batch, a TensorList) is kept without a copy unless
    `copy`. Also made by the operators, ``ladle.dynamic.batch(samples)`` (a
    copy) and ``ladle.dynamic.as_batch(x)``. ``b.tensor_list`` is the
    underlying ladle.TensorList."""

    __slots__ = ("_tl_value", "_future", "_tensors", "_origins", "_capture")

    def __init__(self, tensors=None, dtype=None, device=None, layout=None, copy=False):
        self._future = self._tensors = self._origins = self._capture = None
        if tensors is None:
            raise _ladle.InvalidArgumentError("Batch: no samples")
        if isinstance(tensors, TensorList) and dtype is None and layout is None and not copy:
            b = Batch._wrap(tensors)
        elif copy or dtype is not None:
            b = batch(tensors, layout=layout, dtype=dtype)
        else:
            b = as_batch(tensors, layout=layout)
        if device is not None:
            b = b.to_device(device)
        self._tl_value = b._tl

    @classmethod
    def _wrap(cls, tensor_list, future=None):
        b = cls.__new__(cls)
        b._tl_value, b._future, b._tensors = tensor_list, future, None
        b._origins = None  # sample index -> the file it was read from (readers' batches)
        b._capture = None  # (capture loop, step, output) of a captured loop's batch (_capture.py)
        return b

    @staticmethod
    def broadcast(sample, batch_size, device=None, dtype=None):
        """A batch of `batch_size` copies of one sample."""
        if isinstance(sample, Batch):
            raise _ladle.InvalidArgumentError("Batch.broadcast: give one sample, not a Batch")
        a = _host_array(sample)
        if dtype is not None:
            a = a.astype(types.to_dtype(dtype).numpy_name)
        b = batch(np.broadcast_to(a, (int(batch_size),) + a.shape))
        return b if device is None else b.to_device(device)

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
            tl = self._tl
            self._tensors = tuple(Tensor._wrap(tl, i) for i in range(len(tl)))
        return self._tensors

    def __iter__(self):
        return iter(self.tensors)

    def select(self, sample_range):
        """Sample i (a Tensor) for an int; a Batch of the samples a slice or a
        list of indices names (a copy, unless it is all of them); ... : self."""
        if sample_range is Ellipsis:
            return self
        if isinstance(sample_range, slice):
            indices = list(range(*sample_range.indices(len(self))))
        elif isinstance(sample_range, (list, tuple, np.ndarray)):
            indices = [self._tl._index(int(i)) for i in sample_range]
        else:
            return self.tensors[self._tl._index(sample_range)]
        if indices == list(range(len(self))):
            return self
        if not indices:
            raise _ladle.InvalidArgumentError("Batch.select: no samples selected")
        return batch([self.tensors[i] for i in indices], layout=self.layout or None)

    @property
    def slice(self):
        """``b.slice[start:stop, ...]``: each sample sliced (DALI's sample-wise
        slicing); a bound may be a Batch or a list with one value per sample."""
        return _SampleSlicer(self)

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

    def torch(self, copy=None, pad=False):
        """The batch as one torch tensor [N, ...].

        Dense: a view of ladle's memory (DLPack, no copy; ``copy=True`` clones
        it). Ragged: with ``pad=True`` a new zero-filled tensor of the largest
        extent in every dimension, each sample at the origin; without it,
        StateError (as with ``copy=False``, which refuses any copy). A GPU
        result is ordered for the current EvalContext's cuda_stream when it
        has one (else torch's current stream) through DLPack's stream protocol."""
        import torch

        if self._tl.is_dense_tensor():
            t = _torch_of(self._tl)
            return t.clone() if copy else t
        if copy is False:
            raise _ladle.StateError("Batch.torch(copy=False): the samples have different shapes; padding copies")
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
        return self if self.device == "cpu" else Batch._wrap(self._tl.as_cpu())

    def gpu(self, index=None):
        """This batch in GPU memory (a copy by a small pipeline; itself when
        it is there already), on GPU `index` (default: the context's)."""
        if self.device == "gpu":
            return self
        from . import _exec

        return _exec.to_gpu(self, index)

    def to_device(self, device, force_copy=False):
        """This batch on `device` ("cpu", "gpu", "gpu:0", a Device or torch.device)."""
        from ._context import device as _device

        target = _device(device)
        if target.device_type == self.device:
            if not force_copy:
                return self
            copy = batch(self.cpu().tensors, layout=self.layout or None)  # a new host copy
            return copy if self.device == "cpu" else copy.gpu(target.device_id)
        return self.cpu() if target.device_type == "cpu" else self.gpu(target.device_id)

    def _take(self, count):
        """The first `count` samples, as a new CPU batch (a copy) unless that is all of them."""
        if count == len(self):
            return self
        host = self.cpu()
        samples = [to_numpy(host._tl._batch.sample(i)) for i in range(count)]
        return Batch._wrap(TensorList(batch_from_samples(samples, layout=self.layout or None)))

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
        if self._tl_value is None or self._future is not None:
            return "<ladle.dynamic.Batch (not evaluated yet)>"
        dense = "" if self._tl.is_dense_tensor() else ", ragged"
        return (f"<ladle.dynamic.Batch {len(self)} x {self.dtype} layout={self.layout!r} "
                f"on {self.device}{dense}>")


def _torch_of(tl):
    """A dense TensorList as a torch tensor; a GPU one ordered for the current
    context's stream when it has one (DLPack's stream protocol)."""
    if tl.device == "gpu":
        from ._context import EvalContext

        stream = EvalContext.current().cuda_stream
        if stream is not None:
            from ..tensors import torch_from_capsule

            return torch_from_capsule(tl, stream=_stream_handle(stream))
    return to_torch_tensor(tl)


def _stream_handle(stream):
    """A CUDA stream as the int DLPack takes: a Stream, a torch stream, an
    object with __cuda_stream__, or an int."""
    if hasattr(stream, "__cuda_stream__"):
        return int(stream.__cuda_stream__()[1])
    if hasattr(stream, "cuda_stream"):
        return int(stream.cuda_stream)
    return int(stream)


def batch(samples, layout=None, dtype=None):
    """A new Batch holding a copy of `samples`: a list of arrays (NumPy, torch,
    Tensors; same dtype and rank, shapes may differ) or one [N, ...] array.
    `dtype` converts first (a ladle, NumPy or torch dtype). A list of ladle
    Tensors all in GPU memory gives a GPU batch."""
    if isinstance(samples, Batch):
        samples = samples.cpu().tensors
    if isinstance(samples, TensorList):
        samples = Batch._wrap(samples).cpu().tensors
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
        out = Batch._wrap(tl)
        return out.gpu() if on_gpu else out
    a = _host_array(samples)
    if np_dtype:
        a = a.astype(np_dtype)
    if a.ndim < 1:
        raise _ladle.InvalidArgumentError("ladle.dynamic.batch: a single array must be [N, ...] with N samples")
    return Batch._wrap(TensorList(_ladle.batch_from_buffer(_ladle_array(a), layout=layout)))


def as_batch(x, layout=None):
    """`x` as a Batch, without a copy where it is already ladle memory (a
    Batch, a ladle.TensorList); a Tensor becomes a batch of one; anything else
    goes through batch() (a copy)."""
    if isinstance(x, Batch):
        return x
    if isinstance(x, TensorList):
        return Batch._wrap(x)
    if isinstance(x, _ladle._Batch):
        return Batch._wrap(TensorList(x))
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
    return Tensor._wrap(TensorList(_ladle.batch_from_buffer(a[np.newaxis], layout=layout)))


def as_tensor(x, layout=None):
    """`x` as a Tensor, without a copy where it is one already."""
    return x if isinstance(x, Tensor) else tensor(x, layout=layout)
