"""TensorList: what Pipeline.run() returns for each output, with DALI's methods.

A TensorList wraps one ladle batch. Nothing here copies unless the method's
name says so (as_cpu): samples and dense batches leave through DLPack, and the
batch's memory stays valid for as long as any array or tensor made from it
lives, even after the TensorList and the pipeline are gone.
"""

import functools

import numpy as np

from . import _ladle
from . import types


# --- bool and unsigned types through DLPack --------------------------------
# ladle exports bool as DLPack's kDLBool; NumPy < 1.25 and PyTorch < 2.0 do
# not know it. For them the same bytes leave as uint8 (0 or 1) and are viewed
# as bool on arrival: still no copy. Whether a consumer takes kDLBool is
# probed once, on a one-element batch. PyTorch < 2.3 has no uint16/32/64:
# to_torch refuses those clearly; internal copies (as_cpu) take them as the
# signed type of the same width and view the NumPy result as unsigned.

class _Compat:
    """An object's __dlpack__ with bool as uint8 and uint16/32/64 as signed."""

    def __init__(self, obj):
        self._obj = obj

    def __dlpack__(self, **kw):
        return self._obj._dlpack_compat(**kw)

    def __dlpack_device__(self):
        return self._obj.__dlpack_device__()


def _is_bool(obj):
    return getattr(obj, "dtype", None) in ("bool", types.BOOL)


def _dtype_name(obj):
    name = getattr(obj, "dtype", None)
    return name.numpy_name if isinstance(name, types.DALIDataType) else name


@functools.lru_cache(maxsize=None)
def _takes_dlpack_bool(consumer):
    probe = _ladle.batch_from_buffer(np.zeros((1,), np.bool_))
    try:
        if consumer == "numpy":
            np.from_dlpack(probe)
        else:
            import torch.utils.dlpack

            torch.utils.dlpack.from_dlpack(probe.__dlpack__())
        return True
    except (TypeError, ValueError, RuntimeError, BufferError):
        return False


def to_numpy(obj):
    """np.from_dlpack(obj) for a ladle batch, sample or Tensor of any dtype
    (bool too, whatever the NumPy version). A view: no copy."""
    if _is_bool(obj) and not _takes_dlpack_bool("numpy"):
        return np.from_dlpack(_Compat(obj)).view(np.bool_)
    return np.from_dlpack(obj)


def _check_torch_has(obj, torch):
    name = _dtype_name(obj)
    if name in ("uint16", "uint32", "uint64") and not hasattr(torch, name):
        raise _ladle.UnsupportedError(
            f"torch {torch.__version__} has no {name} tensors (PyTorch 2.3 added them): cast the output in the "
            f"pipeline first, e.g. fn.cast(x, dtype=types.INT{int(name[4:]) * 2 if name != 'uint64' else 64})")


def torch_from_capsule(obj, **dlpack_kwargs):
    """torch.utils.dlpack.from_dlpack(obj.__dlpack__(**dlpack_kwargs)) for a
    ladle batch, sample or Tensor of any dtype (bool too on PyTorch 1.x)."""
    import torch.utils.dlpack

    _check_torch_has(obj, torch)
    if _is_bool(obj) and not _takes_dlpack_bool("torch"):
        return torch.utils.dlpack.from_dlpack(obj._dlpack_compat(**dlpack_kwargs)).view(torch.bool)
    return torch.utils.dlpack.from_dlpack(obj.__dlpack__(**dlpack_kwargs))


def to_torch_tensor(obj):
    """torch.from_dlpack(obj) for a ladle batch, sample or Tensor of any
    dtype (bool too on PyTorch 1.x). A view: no copy."""
    import torch

    _check_torch_has(obj, torch)
    if _is_bool(obj) and not _takes_dlpack_bool("torch"):
        return torch.from_dlpack(_Compat(obj)).view(torch.bool)
    return torch.from_dlpack(obj)


def _host_copy(obj):
    """A NumPy copy of a GPU ladle batch or sample of any dtype (through torch)."""
    import torch

    name = _dtype_name(obj)
    compat = (name in ("uint16", "uint32", "uint64") and not hasattr(torch, name)) or \
        (name == "bool" and not _takes_dlpack_bool("torch"))
    if compat:
        return torch.from_dlpack(_Compat(obj)).cpu().numpy().view(name)
    return torch.from_dlpack(obj).cpu().numpy()



class Tensor:
    """One tensor: a whole dense batch ([N, ...]) or one sample. Exposes
    ``__dlpack__`` so ``torch.from_dlpack(t)`` and ``np.from_dlpack(t)`` take
    it without a copy."""

    def __init__(self, owner, index=None):
        self._batch = owner  # a _Batch
        self._index = index
        self._view = owner if index is None else owner.sample(index)

    def shape(self):
        """The shape as a list, as DALI's Tensor gives it."""
        if self._index is not None:
            return list(self._view.shape)
        return [self._batch.num_samples, *(self._batch.shape(0) if self._batch.num_samples else ())]

    def ndim(self):
        return len(self.shape())

    @property
    def dtype(self):
        return types.from_dtype_name(self._batch.dtype)

    def layout(self):
        layout = self._batch.layout
        return layout if self._index is not None or not layout else "N" + layout

    def data_ptr(self):
        return self._batch.data_ptr(self._index or 0)

    def as_cpu(self):
        """This tensor in host memory: itself on the CPU, a copy otherwise."""
        if self._batch.device == "cpu":
            return self
        if self._index is not None:  # one sample: a batch of one
            return Tensor(batch_from_samples([_host_copy(self._view)], layout=self._batch.layout), 0)
        return Tensor(_ladle.batch_from_buffer(_host_copy(self._batch), layout=self._batch.layout))  # [N, ...]

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return self._view.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def _dlpack_compat(self, **kw):
        return self._view._dlpack_compat(**kw)

    def __dlpack_device__(self):
        return self._view.__dlpack_device__()

    def __array__(self, dtype=None, copy=None):
        if self._batch.device != "cpu":
            raise _ladle.StateError("the tensor is in GPU memory: copy it with as_cpu() first")
        a = to_numpy(self)
        if copy:
            a = a.copy()
        return a if dtype is None else a.astype(dtype, copy=False)

    def __repr__(self):
        return f"<ladle.Tensor shape={self.shape()} dtype={self._batch.dtype} on {self._batch.device}>"


class TensorList:
    """A batch of samples (DALI's TensorListCPU / TensorListGPU).

    ``len(tl)`` samples; ``tl.at(i)`` is sample i as a NumPy array (a view,
    CPU only) and ``tl[i]`` (and iteration) sample i as a Tensor, as DALI
    gives them (``np.array(tl[i])`` is the array); ``tl.as_array()`` the dense
    batch as one [N, ...] array; ``torch.from_dlpack(tl)`` the dense batch as one tensor (CPU or
    GPU). A ragged batch (sample shapes differ) only gives samples.
    """

    def __init__(self, batch):
        if not isinstance(batch, _ladle._Batch):
            raise TypeError(f"TensorList wraps a ladle batch, not {type(batch).__name__}")
        self._batch = batch

    # --- shape and type ---------------------------------------------------

    def __len__(self):
        return self._batch.num_samples

    def shape(self):
        """The shape of every sample, as a list of tuples."""
        return self._batch.shapes()

    def layout(self):
        """The layout letters of each sample, e.g. "HWC" ("" when none)."""
        return self._batch.layout

    @property
    def dtype(self):
        return types.from_dtype_name(self._batch.dtype)

    @property
    def device(self):
        """ "cpu" or "gpu" (DALI's spelling). """
        return "gpu" if self._batch.device == "cuda" else "cpu"

    @property
    def device_id(self):
        return self._batch.device_id

    def is_dense_tensor(self):
        """True when all samples have one shape (the batch is one [N, ...] tensor)."""
        return self._batch.is_dense

    def data_ptr(self, i=0):
        """The address of sample i (device memory for a GPU batch)."""
        return self._batch.data_ptr(self._index(i))

    # --- samples ----------------------------------------------------------

    def _index(self, i):
        n = len(self)
        if not isinstance(i, int):
            i = int(i)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"sample index out of range for a batch of {n}")
        return i

    def _check_cpu(self, what):
        if self._batch.device != "cpu":
            raise _ladle.StateError(f"{what}: the batch is in GPU memory; copy it with as_cpu() first")

    def at(self, i):
        """Sample i as a NumPy array that views ladle's memory (no copy)."""
        self._check_cpu("at")
        return to_numpy(self._batch.sample(self._index(i)))

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self.sample(k) for k in range(*i.indices(len(self)))]
        return self.sample(i)

    def __iter__(self):
        for i in range(len(self)):
            yield self.sample(i)

    def sample(self, i):
        """Sample i as a Tensor (works for GPU batches too; use with from_dlpack)."""
        return Tensor(self._batch, self._index(i))

    # --- the whole batch --------------------------------------------------

    def _check_dense(self, what):
        if not self._batch.is_dense:
            raise _ladle.StateError(
                f"{what}: batch is ragged (sample shapes differ), take samples with at(i)"
            )

    def as_array(self):
        """The dense batch as one NumPy array [N, ...] (a view, no copy)."""
        self._check_cpu("as_array")
        self._check_dense("as_array")
        return to_numpy(self._batch)

    def as_tensor(self):
        """The dense batch as one Tensor [N, ...] (a view, no copy)."""
        self._check_dense("as_tensor")
        return Tensor(self._batch)

    def as_cpu(self):
        """This batch in host memory: itself for a CPU batch, a copy otherwise."""
        if self._batch.device == "cpu":
            return self
        try:
            import torch
        except ImportError:
            raise _ladle.NotAvailableError("as_cpu() of a GPU batch needs PyTorch for the copy") from None
        samples = [_host_copy(self._batch.sample(i)) for i in range(len(self))]
        return TensorList(batch_from_samples(samples, layout=self._batch.layout))

    def __array__(self, dtype=None, copy=None):
        a = self.as_array()
        if copy:
            a = a.copy()
        return a if dtype is None else a.astype(dtype, copy=False)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return self._batch.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def _dlpack_compat(self, **kw):
        return self._batch._dlpack_compat(**kw)

    def __dlpack_device__(self):
        return self._batch.__dlpack_device__()

    def __repr__(self):
        kind = "TensorListGPU" if self._batch.device == "cuda" else "TensorListCPU"
        dense = "" if self._batch.is_dense else ", ragged"
        return f"<ladle.{kind} {len(self)} x {self._batch.dtype} layout={self._batch.layout!r}{dense}>"


# DALI's names for the two kinds.
TensorListCPU = TensorList
TensorListGPU = TensorList


def batch_from_samples(samples, layout=None):
    """A new CPU _Batch holding copies of `samples` (NumPy-convertible arrays
    of one dtype and one rank; shapes may differ)."""
    arrays = [np.asarray(s) for s in samples]
    # ascontiguousarray would make 0-d samples 1-d; copy only what is not contiguous.
    arrays = [a if a.flags["C_CONTIGUOUS"] else a.copy() for a in arrays]
    if not arrays:
        raise _ladle.InvalidArgumentError("batch_from_samples: no samples")
    dtype = arrays[0].dtype
    if any(a.dtype != dtype for a in arrays):
        raise _ladle.InvalidArgumentError("batch_from_samples: samples have different dtypes")
    if all(a.shape == arrays[0].shape for a in arrays):
        return _ladle.batch_from_buffer(np.stack(arrays), layout=layout)
    flat = np.concatenate([a.reshape(-1) for a in arrays])
    return _ladle.batch_from_buffer(flat, shapes=[a.shape for a in arrays], layout=layout)


def as_tensor_list(data, layout=None):
    """A TensorList from a TensorList, a _Batch, an [N, ...] array or a list
    of arrays (copied into ladle memory)."""
    if isinstance(data, TensorList):
        return data
    if isinstance(data, _ladle._Batch):
        return TensorList(data)
    if isinstance(data, (list, tuple)):
        return TensorList(batch_from_samples(data, layout=layout))
    return TensorList(_ladle.batch_from_buffer(np.ascontiguousarray(data), layout=layout))
