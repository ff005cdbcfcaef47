"""fn.python_function, fn.dl_tensor_python_function and the PyTorch plugin's
torch_python_function: a Python function as an operator of the graph.

The C operator (src/ops/python/python_function.c) calls the dispatcher
below once per iteration on the pipeline's executor thread, holding the GIL
only for the call; run() waits with the GIL released, so Python threads and
the function run side by side as in any threaded program.

What the function gets:
  - device="cpu": NumPy arrays that view the pipeline's memory (no copy),
    read-only: a batch may feed several operators (both branches of a
    conditional), so writing into an input would change what the others see.
    DALI also asks functions not to modify their inputs; it does not enforce it.
  - device="gpu": CuPy arrays when CuPy is installed (DALI's type), otherwise
    torch CUDA tensors (ladle's choice: torch is what ladle already exports
    to). The pipeline's stream is synchronized before the call and the
    current stream of the array library after it (as DALI's torch plugin
    does), so the function may use any stream.
  - dl_tensor_python_function: DLPack capsules, as in DALI.
  - torch_python_function: torch tensors (CPU or CUDA), as in DALI.
With batch_processing=True each input is a list of the batch's samples and
each output must be a list of as many samples.

What it may return, per output: a NumPy array (also NumPy scalars, torch CPU
tensors and objects with __array__ or __dlpack__, which DALI refuses) on the
cpu; a CUDA array with __dlpack__ on the gpu; with num_outputs > 1, a tuple
of them; with num_outputs=0, None. The samples of one output must share a
dtype and rank, and every iteration must give the same dtype and rank (DALI
allows a change between iterations; ladle's operators check their input types
once). DALI's function_wrapper takes a 2-tuple for num_outputs=1 and keeps its
first element; ladle refuses it, since it is a mistake.

Errors: an exception in the function fails the iteration; run() raises
ladle.Error naming the operator (and sample), chained to the original
exception, whose traceback Python prints with it.
"""

import atexit
import itertools
import threading
import weakref

import numpy as np

from . import _ladle, types
from .tensors import batch_from_samples, to_numpy

_INVALID_ARGUMENT = 1  # LADLE_ERROR_INVALID_ARGUMENT (include/ladle/ladle.h)
_counter = itertools.count(1)
_TAG = "[python exception #"
_KEEP = 64  # exceptions kept for run() to chain; older ones of dropped iterations go
_state = threading.local()
# Pipelines with Python functions, closed at exit while their executors can
# still take the GIL: once the interpreter finalizes, a thread asking for it is
# ended in place (pthread_exit), which would abort the process.
_live: "weakref.WeakSet[object]" = weakref.WeakSet()


_deferred: list = []  # C pipelines whose close was asked for inside a function (see defer_close)


def in_function():
    """Whether this thread is inside a Python function's call (an executor's)."""
    return getattr(_state, "depth", 0) > 0


def defer_close(handle):
    """A pipeline closed from inside a Python function (garbage collection
    can run there) cannot be stopped on its own executor thread: it is
    closed by the next close_deferred() outside one, or at exit."""
    _deferred.append(handle)


def close_deferred():
    while _deferred and not in_function():
        _deferred.pop().close()


@atexit.register
def _close_all():
    close_deferred()
    for pipe in list(_live):
        try:
            pipe.close()
        except Exception:
            pass


def current_stream():
    """Inside a device="gpu" function: the pipeline's CUDA stream (a
    types.CUDAStream-like int), for work ordered with it (DALI's
    PythonFunction.current_stream())."""
    return getattr(_state, "stream", 0)


class _Failure(Exception):
    """A check of what the function returned: its message, no traceback."""


class _Capsule:
    """A DLPack capsule as an object NumPy's from_dlpack takes."""

    def __init__(self, capsule, device):
        self._capsule, self._device = capsule, device

    def __dlpack__(self, stream=None, **kw):
        return self._capsule

    def __dlpack_device__(self):
        return self._device


class Dispatcher:
    """Called by the C operator with (input _Batches, batch_size, stream,
    iteration); returns one _Batch per output, or (status, message)."""

    def __init__(self, public, function, num_outputs, batch_processing, device, kind, errors):
        self.public, self.function, self.num_outputs = public, function, num_outputs
        self.batch_processing, self.device, self.kind = bool(batch_processing), device, kind
        self.errors = errors  # shared with the Pipeline (never the Pipeline itself: no cycle through C)
        self.instance = None
        self.device_id = 0

    # --- conversions -----------------------------------------------------------------

    def _gpu_lib(self):
        if self.kind == "torch":
            import torch
            return "torch", torch
        try:
            import cupy
            return "cupy", cupy
        except ImportError:
            import torch
            return "torch", torch

    def _inputs(self, batch):
        """The samples of one input _Batch as the function's array type (views)."""
        n = batch.num_samples
        if self.kind == "dlpack":
            return [batch.sample(i).__dlpack__() for i in range(n)]
        if batch.device == "cpu":
            if self.kind == "torch":  # torch has no read-only tensors: these views are writable
                from .tensors import to_torch_tensor
                return [to_torch_tensor(batch.sample(i)) for i in range(n)]
            return [_readonly(to_numpy(batch.sample(i))) for i in range(n)]
        name, lib = self._gpu_lib()
        if name == "torch":
            from .tensors import to_torch_tensor
            return [to_torch_tensor(batch.sample(i)) for i in range(n)]
        return [lib.from_dlpack(batch.sample(i)) for i in range(n)]

    def _sample_array(self, x, k, i):
        """Output k, sample i, as a NumPy array (cpu) or a GPU array with __dlpack__."""
        where = f"output {k}" + (f", sample {i}" if i is not None else "")
        if self.kind == "dlpack":
            if type(x).__name__ == "PyCapsule":
                x = _Capsule(x, (1, 0) if self.device == "cpu" else (2, 0))
            elif not hasattr(x, "__dlpack__"):
                raise _Failure(f"{where}: the function returned {type(x).__name__}; dl_tensor_python_function "
                               "returns DLPack capsules (or objects with __dlpack__)")
            if self.device == "cpu":
                x = np.from_dlpack(x)
            else:
                import torch.utils.dlpack
                x = torch.utils.dlpack.from_dlpack(x._capsule if isinstance(x, _Capsule) else x.__dlpack__())
        if self.device == "cpu":
            if type(x).__module__.startswith("torch") and hasattr(x, "detach"):
                if x.device.type != "cpu":
                    raise _Failure(f"{where}: the function returned a {x.device.type} tensor; device=\"cpu\" "
                                   "takes host arrays")
                x = x.detach().numpy()
            if isinstance(x, (list, tuple, str, bytes, int, float, bool)) or x is None:
                raise _Failure(f"{where}: the function returned {type(x).__name__}; it must return NumPy arrays "
                               "(np.asarray(...) for other data)")
            if not isinstance(x, (np.ndarray, np.generic)):
                if hasattr(x, "__array__"):
                    x = np.asarray(x)
                elif hasattr(x, "__dlpack__"):
                    x = np.from_dlpack(x)
                else:
                    raise _Failure(f"{where}: the function returned {type(x).__name__}, not an array")
            x = np.asarray(x)
            try:
                types.to_dtype(x.dtype)
            except ValueError:
                raise _Failure(f"{where}: the function returned an array of {x.dtype}, which a ladle batch cannot "
                               "hold (numbers or bool)") from None
            return x
        if not hasattr(x, "__dlpack__"):
            raise _Failure(f"{where}: the function returned {type(x).__name__}; device=\"gpu\" takes CUDA arrays "
                           "with __dlpack__ (CuPy arrays, torch CUDA tensors)")
        return x

    def _to_batch(self, samples, k, stream):
        arrays = [self._sample_array(x, k, i) for i, x in enumerate(samples)]
        for i, a in enumerate(arrays[1:], 1):
            if a.dtype != arrays[0].dtype or a.ndim != arrays[0].ndim:
                raise _Failure(f"output {k}: sample {i} is {_describe(a)}, sample 0 {_describe(arrays[0])}: the "
                               "samples of an output must share a dtype and rank")
        if self.device == "cpu":
            return batch_from_samples(arrays)
        return self._gpu_batch(arrays, k, stream)

    def _gpu_batch(self, arrays, k, stream):
        name, lib = self._gpu_lib()
        if any(tuple(a.shape) != tuple(arrays[0].shape) for a in arrays):
            raise _Failure(f"output {k}: samples of different shapes; device=\"gpu\" functions return samples of "
                           "one shape in ladle (ragged GPU outputs are not supported yet)")
        dense = lib.stack(list(arrays))
        is_bool = str(dense.dtype) in ("bool", "torch.bool")
        if name == "torch":
            dense = dense.contiguous()
            if is_bool:  # PyTorch < 2.0 exports no DLPack bool: its bytes, marked bool
                dense = dense.view(lib.uint8)
        else:
            dense = lib.ascontiguousarray(dense)
            if is_bool:
                dense = dense.view(lib.uint8)
        return _ladle.batch_from_dlpack(dense, stream=stream or None, as_bool=is_bool)

    def _sync(self):
        if self.device != "gpu" or self.kind == "dlpack":
            return
        name, lib = self._gpu_lib()
        if name == "torch":
            lib.cuda.current_stream().synchronize()
        else:
            lib.cuda.get_current_stream().synchronize()

    # --- the call --------------------------------------------------------------------

    def _split(self, result, what):
        """The function's result as a tuple of num_outputs values."""
        n = self.num_outputs
        if n == 0:
            return ()
        if n == 1:
            if isinstance(result, tuple):
                if len(result) != 1:
                    raise _Failure(f"{what}: the function returned a tuple of {len(result)} for num_outputs=1")
                result = result[0]
            return (result,)
        if not isinstance(result, tuple):
            raise _Failure(f"{what}: the function returned {type(result).__name__}; with num_outputs={n} it must "
                           f"return a tuple of {n}")
        if len(result) != n:
            raise _Failure(f"{what}: the function returned {len(result)} outputs, expected num_outputs={n}")
        return result

    def _run(self, inputs, batch_size, stream):
        per_input = [self._inputs(b) for b in inputs]
        outputs = [[] for _ in range(self.num_outputs)]
        if self.batch_processing:
            result = self._split(self.function(*per_input), "the batch")
            for k, out in enumerate(result):
                if not isinstance(out, list):
                    raise _Failure(f"output {k}: batch_processing=True: the function returned {type(out).__name__}; "
                                   "it must return a list of samples per output")
                if len(out) != batch_size:
                    raise _Failure(f"output {k}: the function returned a list of {len(out)} samples for a batch of "
                                   f"{batch_size}")
                outputs[k] = out
        else:
            for i in range(batch_size):
                self._sample = i
                result = self._split(self.function(*(x[i] for x in per_input)), f"sample {i}")
                for k, out in enumerate(result):
                    outputs[k].append(out)
        self._sync()
        return [self._to_batch(out, k, stream) for k, out in enumerate(outputs)]

    def _on_device(self):
        """The pipeline's GPU as the current device of the array library (the executor's thread is not the
        one that made the pipeline)."""
        import contextlib

        if self.device != "gpu" or self.kind == "dlpack":
            return contextlib.nullcontext()
        name, lib = self._gpu_lib()
        return lib.cuda.device(self.device_id) if name == "torch" else lib.cuda.Device(self.device_id)

    def __call__(self, inputs, batch_size, stream, iteration):
        self._sample = None
        _state.stream = stream
        _state.depth = getattr(_state, "depth", 0) + 1
        try:
            with self._on_device():
                return self._run(inputs, batch_size, stream)
        except _Failure as e:
            return (_INVALID_ARGUMENT, str(e))
        except BaseException as e:  # the function's own error: kept for run() to chain
            token = next(_counter)
            self.errors[token] = e
            for old in sorted(self.errors)[:-_KEEP]:
                del self.errors[old]
            where = f"sample {self._sample}: " if self._sample is not None else ""
            text = f"{where}the function raised {type(e).__name__}: {e}"
            return (_INVALID_ARGUMENT, f"{text} {_TAG}{token}]")
        finally:
            _state.stream = 0
            _state.depth -= 1
            self._sample = None


def _readonly(a):
    a.flags.writeable = False
    return a


def _describe(a):
    return f"{a.dtype} of rank {a.ndim}"


def chain_error(error, errors):
    """The error run() raises for `error` (a ladle.Error): when a Python
    function raised, a ladle.Error with the same message (without the tag),
    chained to that exception; else `error` itself."""
    text = str(error)
    start = text.find(_TAG)
    if start < 0:
        return error
    end = text.find("]", start)
    try:
        token = int(text[start + len(_TAG):end])
    except ValueError:
        return error
    cause = errors.pop(token, None)
    clean = (text[:start].rstrip() + text[end + 1:]).strip()
    new = _ladle.Error(clean)  # the function's error, not an argument's: the base class
    new.status = getattr(error, "status", None)
    new.__cause__ = cause  # Python prints the function's traceback above this error
    return new


def add(public, op_name, inputs, function, num_outputs, batch_processing, output_layouts, device, name, kind,
        extra=None):
    """Adds a python_function-like operator to the current pipeline; returns
    its outputs (a DataNode, a tuple of them, or None for num_outputs=0)."""
    from .pipeline import DataNode, Pipeline, _check_node

    pipe = Pipeline.current()
    if pipe is None:
        raise _ladle.StateError(f"{public}() must be called inside a pipeline definition "
                                "(`with pipe:` or a @pipeline_def function)")
    if not callable(function):
        raise _ladle.InvalidArgumentError(f"{public}: argument 'function' must be callable, got "
                                          f"{type(function).__name__}")
    if isinstance(num_outputs, bool) or not isinstance(num_outputs, (int, np.integer)):
        raise _ladle.InvalidArgumentError(f"{public}: argument 'num_outputs' must be an int, got {num_outputs!r}")
    for i, x in enumerate(inputs):
        if not isinstance(x, DataNode):
            raise _ladle.InvalidArgumentError(
                f"{public}: input {i} must be a DataNode, got {type(x).__name__} (Python functions take no "
                "constants as inputs; DALI: multiple input sets are not supported)")
        _check_node(pipe, x, f"{public}: input {i}")
    on_gpu = any(x.device == "gpu" for x in inputs)
    device = ("gpu" if on_gpu else "cpu") if device is None else str(device).lower()
    if device == "cuda":
        device = "gpu"
    if device not in ("cpu", "gpu"):
        raise _ladle.InvalidArgumentError(f"{public}: device={device!r}: use \"cpu\" or \"gpu\"")
    if on_gpu and device == "cpu":
        raise _ladle.InvalidArgumentError(f"{public}: device=\"cpu\" cannot take inputs in GPU memory; use "
                                          "device=\"gpu\"")
    args = [("num_outputs", int(num_outputs)), ("batch_processing", bool(batch_processing))]
    if output_layouts is not None:
        layouts = [str(output_layouts)] if isinstance(output_layouts, str) else [str(x) for x in output_layouts]
        args.append(("output_layouts", layouts))
    for key, value in (extra or {}).items():
        args.append((key, value))
    dispatcher = Dispatcher(public, function, int(num_outputs), batch_processing, device, kind, pipe._callback_errors)
    first, instance = pipe._add_op(op_name, device, inputs, args, name, callback=dispatcher, public=public)
    dispatcher.instance = instance
    dispatcher.device_id = max(0, pipe.device_id)
    _live.add(pipe)
    if num_outputs == 0:
        return None
    if num_outputs == 1:
        return DataNode(pipe, first, instance, device)
    return tuple(DataNode(pipe, first + k, f"{instance}[{k}]", device) for k in range(num_outputs))
