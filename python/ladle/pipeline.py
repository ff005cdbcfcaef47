"""Pipeline, pipeline_def and DataNode: DALI's graph-definition API over
ladle's C pipeline.

Operators are added to the C pipeline as soon as an ``fn.*`` function is
called, so a wrong argument raises at the line that wrote it.
"""

import functools
import inspect
import json
import logging
import os
import sys
import threading
import types as _types
import warnings

import numpy as np

from . import _ladle, types
from .math import _Arithmetic, _subscript
from .tensors import TensorList, as_tensor_list

# DALI Pipeline arguments that ladle accepts and ignores (with a warning).
_DALI_IGNORED = frozenset({
    "bytes_per_sample",
    "default_cuda_stream_priority",
    "enable_memory_stats",
    "output_dtype",
    "output_ndim",
    "exec_dynamic",
    "experimental_exec_dynamic",
    "stream",
})

_local = threading.local()
_log = logging.getLogger("ladle")


def _definition_stack():
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


@functools.lru_cache(maxsize=None)
def op_schemas():
    """Every registered operator's schema, by name (see _ladle.op_schemas)."""
    return {s["name"]: s for s in _ladle.op_schemas()}


def arg_specs(schema):
    """{name: argument schema} of an operator's arguments, under their DALI
    deprecated names too (crop_mirror_normalize's output_dtype: dtype)."""
    specs = {a["name"]: a for a in schema["args"]}
    specs.update({a["deprecated_name"]: a for a in schema["args"] if a.get("deprecated_name")})
    return specs


def renamed_args(public, specs, kwargs):
    """kwargs with arguments given by their deprecated names under their
    names, each with a DeprecationWarning, as DALI gives."""
    if not any(key in specs and specs[key]["name"] != key for key in kwargs):
        return kwargs
    out = {}
    for key, value in kwargs.items():
        name = specs[key]["name"] if key in specs else key
        if name != key:
            warnings.warn(f"{public}: argument {key!r} is a deprecated alias for {name!r}; use {name!r} instead",
                          DeprecationWarning, stacklevel=3)
        if name in out:
            raise _ladle.InvalidArgumentError(f"{public}: argument {name!r} given twice (once as {key!r})")
        out[name] = value
    return out


def _parse_cpu_list(text):
    """ "0,1,4-7" -> [0, 1, 4, 5, 6, 7]. """
    cpus = []
    try:
        for part in text.replace(" ", "").split(","):
            if not part:
                continue
            if "-" in part:
                lo, hi = (int(x) for x in part.split("-", 1))
                if lo > hi:
                    raise ValueError(part)
                cpus.extend(range(lo, hi + 1))
            else:
                cpus.append(int(part))
    except ValueError:
        raise _ladle.InvalidArgumentError(
            f"LADLE_AFFINITY: cannot read {text!r}; expected core numbers and ranges like \"0,1,4-7\""
        ) from None
    if any(c < 0 for c in cpus):
        raise _ladle.InvalidArgumentError(f"LADLE_AFFINITY: negative core number in {text!r}")
    return cpus


def _affinity(set_affinity):
    """The cores to pin worker threads to, or None for no pinning."""
    env = os.environ.get("LADLE_AFFINITY", "").strip()
    if env:
        return _parse_cpu_list(env) or None
    if set_affinity and hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return None


def _default_device(device_id):
    """device_id as given; the default (-1) is LOCAL_RANK under torchrun when
    that device exists, so each process of a distributed run takes its own GPU."""
    if device_id is None:
        return -1
    device_id = int(device_id)
    local_rank = os.environ.get("LOCAL_RANK", "")
    if device_id != -1 or not local_rank.strip().isdigit():
        return device_id
    info = json.loads(_ladle.build_info())
    return int(local_rank) if int(local_rank) < int(info.get("cuda_devices", 0)) else -1


def _unwrap(f):
    """The function under functools.partial and decorators."""
    while isinstance(f, functools.partial):
        f = f.func
    return inspect.unwrap(f) if callable(f) else f


class _Source:
    """An external_source's `source`, asked for one batch per iteration until
    it raises StopIteration (the end of an epoch).

    A callable is called with the batch's index in the epoch (or a
    types.BatchInfo with batch_info=True) when it takes an argument; with
    batch=False it is called once per sample, with a types.SampleInfo, and an
    iterable gives one sample per next(). A callable starts again after the
    end of an epoch has been reported (it decides itself when epochs end); an
    iterable is iterated again only with cycle="raise" (True/"quiet" restart
    it without reporting an end). A generator function (DALI accepts one) is
    an iterable: each (re)start calls it for a new generator."""

    def __init__(self, name, source, cycle, batch, batch_info, batch_size):
        self.name, self.source, self.cycle = name, source, cycle
        self.batch, self.batch_info, self.batch_size = batch, batch_info, batch_size
        self.iteration = 0  # batches given in this epoch
        self.epoch = 0
        self.exhausted = False
        self._in_epoch = 0  # samples given in this epoch (batch=False)
        self._iter = None
        self._takes_arg = False
        self._pending = []  # items pulled ahead (to infer the dtype), given first
        # A generator function is called once per epoch, and its generator
        # gives the items (as DALI does); any other callable is called per item.
        self._factory = callable(source) and inspect.isgeneratorfunction(_unwrap(source))
        if callable(source) and not self._factory:
            try:
                params = [p for p in inspect.signature(source).parameters.values()
                          if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
                self._takes_arg = len(params) >= 1
            except (TypeError, ValueError):  # builtins without a signature
                pass

    def _new_iter(self):
        it = self.source() if self._factory else self.source
        return iter(it)

    def _pull(self, info):
        """One item (a batch, or a sample with batch=False); raises StopIteration at the end."""
        if self._pending:
            return self._pending.pop(0)
        if callable(self.source) and not self._factory:
            item = self.source(info) if self._takes_arg else self.source()
            if not isinstance(item, _types.GeneratorType):
                return item
            # A callable that returns a generator (a lambda or partial of a
            # generator function): a generator function from now on.
            self._factory, self._iter = True, item
        if self._iter is None:
            self._iter = self._new_iter()
        try:
            return next(self._iter)
        except StopIteration:
            if self.cycle not in (True, "quiet"):
                raise
            self._iter = self._new_iter()
            return next(self._iter)

    def peek(self):
        """The first item of the epoch, pulled ahead (None if the source is
        empty): what the dtype and rank are inferred from."""
        if not self._pending:
            info = types.BatchInfo(0, self.epoch) if self.batch_info else 0
            if not self.batch:
                info = types.SampleInfo(0, 0, 0, self.epoch)
            try:
                self._pending.append(self._pull(info))
            except StopIteration:
                return None
        return self._pending[0]

    def next(self):
        """The next batch, or None when the source ran out (it is then exhausted).
        With batch=False, a batch cut short by the end holds the samples before it."""
        if self.exhausted:
            return None
        if self.batch:
            info = types.BatchInfo(self.iteration, self.epoch) if self.batch_info else self.iteration
            try:
                data = self._pull(info)
            except StopIteration:
                self.exhausted = True
                return None
        else:
            data = []
            try:
                while len(data) < self.batch_size:
                    data.append(self._pull(types.SampleInfo(self._in_epoch, len(data), self.iteration, self.epoch)))
                    self._in_epoch += 1
            except StopIteration:
                self.exhausted = True
            if not data:
                return None
        self.iteration += 1
        return data

    def restart(self):
        """After run() reported the end of an epoch: starts the next one where
        the source can go on (see the class)."""
        # A generator function restarts as an iterable does: with cycle="raise" (DALI).
        if (callable(self.source) and not self._factory) or self.cycle == "raise":
            self._iter = None
            self._pending = []
            self.exhausted = False
            self.iteration = self._in_epoch = 0
            self.epoch += 1


def _as_batch(data, layout, cuda_stream=0, copy=True, name=None):
    """A _Batch for feed_input (see there). NumPy arrays and torch tensors of
    [N, ...] go in through DLPack, copied first unless `copy` is False (a CUDA
    tensor is ordered before `cuda_stream`); a list of samples is copied into
    one batch; ladle's own TensorLists are taken as they are. Bool data go in
    as uint8 bytes marked bool (NumPy < 1.25 and PyTorch < 2.0 have no DLPack
    bool)."""
    layout = None if layout is None else str(layout)
    if isinstance(data, TensorList):
        return data._batch
    if isinstance(data, _ladle._Batch):
        return data
    if _is_torch(data):
        import torch

        t = data.detach()
        t = t.clone(memory_format=torch.contiguous_format) if copy else t.contiguous()
        _check_numeric(types.to_dtype, t.dtype, name)
        is_bool = t.dtype == torch.bool
        if is_bool:
            t = t.view(torch.uint8)
        return _ladle.batch_from_dlpack(t, stream=_dlpack_stream(t, cuda_stream), layout=layout, as_bool=is_bool)
    if isinstance(data, np.ndarray):
        _check_numeric(types.to_dtype, data.dtype, name)
    if isinstance(data, np.ndarray) and data.ndim >= 1 and (copy or data.flags["C_CONTIGUOUS"]):
        a = np.array(data, order="C", copy=True) if copy else data
        if not a.dtype.isnative:
            a = a.astype(a.dtype.newbyteorder("="))
        is_bool = a.dtype == np.bool_
        return _ladle.batch_from_dlpack(a.view(np.uint8) if is_bool else a, layout=layout, as_bool=is_bool)
    if isinstance(data, (list, tuple)):
        data = [x.detach().cpu().numpy() if _is_torch(x) else x for x in data]
        for i, x in enumerate(data):
            _check_numeric(types.to_dtype, _sample_dtype(x), name, i)
    elif isinstance(data, _types.GeneratorType):
        raise _ladle.InvalidArgumentError(
            f"{_where(name)}: got a generator where a batch was expected; pass the generator function itself as "
            "source= (it is called once per epoch), or a batch (a list of arrays or an [N, ...] array)")
    elif not isinstance(data, np.ndarray):
        _check_numeric(types.to_dtype, _sample_dtype(data), name)
    return as_tensor_list(data, layout=layout)._batch


def _infer_type(item, batch, name):
    """(DALIDataType, ndim) of a source's first item (a batch, or a sample
    with batch=False), as DALI's external_source infers them without dtype."""
    if batch and isinstance(item, TensorList):
        return item.dtype, item._batch.ndim
    if batch and isinstance(item, _ladle._Batch):
        return types.from_dtype_name(item.dtype), item.ndim
    if batch and (_is_torch(item) or isinstance(item, np.ndarray)):
        if item.ndim < 1:
            raise _ladle.InvalidArgumentError(
                f"external_source {name!r}: the source gave a 0-d array as a batch; a batch is a list of samples "
                "or an [N, ...] array (batch=False for one sample per call)")
        _check_numeric(types.to_dtype, item.dtype, name)
        return types.to_dtype(item.dtype), item.ndim - 1
    if batch:
        if not isinstance(item, (list, tuple)) or not item:
            raise _ladle.InvalidArgumentError(
                f"external_source {name!r}: the source gave {type(item).__name__!s}, not a batch (a non-empty list "
                "of arrays, an [N, ...] array or tensor, or a TensorList)")
        item = item[0]
    if _is_torch(item):
        _check_numeric(types.to_dtype, item.dtype, name, 0)
        return types.to_dtype(item.dtype), item.dim()
    dtype = _sample_dtype(item)
    _check_numeric(types.to_dtype, dtype, name, 0)
    return types.to_dtype(dtype), np.ndim(item)


def _sample_dtype(x):
    """The NumPy dtype a sample would have (object for ragged nested lists)."""
    if isinstance(x, np.ndarray):
        return x.dtype
    if isinstance(x, (TensorList, _ladle._Batch)):
        raise _ladle.InvalidArgumentError("feed_input: a list of samples cannot hold TensorLists")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy's warning on ragged nested lists
        try:
            return np.asarray(x).dtype
        except ValueError:  # NumPy >= 1.24 refuses ragged nested lists
            return np.dtype(object)


def _where(name):
    return f"external_source {name!r}" if name else "feed_input"


def _check_numeric(convert, dtype, name, sample=None):
    """Raises InvalidArgumentError naming the source (and sample) when data
    of `dtype` cannot be a ladle batch (objects, strings, complex ...)."""
    try:
        convert(dtype)
    except ValueError as e:
        what = f"sample {sample}" if sample is not None else "the data"
        raise _ladle.InvalidArgumentError(
            f"{_where(name)}: {what}: {e}. Ragged nested lists become object arrays: give each sample as an array "
            "of numbers (np.asarray(sample, dtype=...))") from None

def _is_torch(x):
    return type(x).__module__.startswith("torch") and hasattr(x, "detach")



def _dlpack_stream(tensor, cuda_stream):
    """DLPack's stream argument: CUDA tensors are ordered before the
    pipeline's stream; CPU tensors need none."""
    if tensor.device.type != "cuda":
        return None
    if not cuda_stream:
        raise _ladle.InvalidArgumentError(
            "feed_input: a CUDA tensor needs a device=\"gpu\" external_source (this pipeline has no GPU work)")
    return cuda_stream


def cuda_batch(tensors, layout=None):
    """One GPU _Batch of the CUDA torch tensors `tensors` (one device, dtype
    and rank; shapes may differ), without a trip through host memory: the
    samples are packed back to back into one buffer by torch on the GPU (a
    device copy, which also makes permuted views contiguous) and wrapped by
    DLPack. Whoever reads the batch (a pipeline it is fed to, a DLPack
    consumer) waits on the GPU for torch's current stream of that device at
    this call, so torch's pending writes come first."""
    import torch

    device = tensors[0].device
    if any(t.device != device for t in tensors):
        raise _ladle.InvalidArgumentError(f"the tensors are on different devices: {sorted({str(t.device) for t in tensors})}")
    stream = torch.cuda.current_stream(device).cuda_stream
    shapes = [tuple(t.shape) for t in tensors]
    if all(shape == shapes[0] for shape in shapes):
        packed = torch.stack([t.detach() for t in tensors]).contiguous()
        return _ladle.batch_from_dlpack(packed, layout=layout, ready_stream=stream)
    flat = torch.empty(sum(t.numel() for t in tensors), dtype=tensors[0].dtype, device=device)
    start = 0
    for t in tensors:
        flat[start:start + t.numel()].view(t.shape).copy_(t.detach())
        start += t.numel()
    return _ladle.batch_from_dlpack(flat, layout=layout, shapes=shapes, ready_stream=stream)


class DataNode(_Arithmetic):
    """An output of an operator in a pipeline graph.

    ``name`` is the operator instance's name (with ``[k]`` for output k of an
    operator with several outputs); ``device`` is "cpu" or "gpu". Python's
    arithmetic and comparison operators build element-wise expressions
    (ladle.math), as in DALI.
    """

    def __init__(self, pipeline, node_id, name, device):
        self._pipeline = pipeline
        self._id = node_id
        self.name = name
        self.device = device

    def gpu(self):
        """This node's data in GPU memory (a transfer added to the graph)."""
        if self.device == "gpu":
            return self
        schema = op_schemas().get("transfer.to_gpu")
        if schema is None:
            raise _ladle.NotAvailableError(
                "DataNode.gpu(): GPU support is not built into this ladle (no transfer.to_gpu operator)"
            )
        device = "mixed" if "mixed" in schema["devices"] else "gpu"
        first, name = self._pipeline._add_op("transfer.to_gpu", device, [self], [], None)
        return DataNode(self._pipeline, first, name, "gpu")

    def __iter__(self):
        # Without this, Python would iterate through __getitem__ (0, 1, ...) without end.
        raise TypeError("a DataNode is not iterable (an operator with several outputs returns a tuple of them)")

    def __getitem__(self, key):
        """DALI's subscripts: x[1:3, ::2], x[-1], x[..., 0], x[i] with i a
        per-sample DataNode (a scalar integer on the cpu)."""
        return _subscript(self, key)

    def shape(self, *, dtype=None, device="cpu"):
        """The run-time shape of each sample, as a new DataNode of 1-D samples
        (DALI's; `dtype` defaults to INT64). Only for nodes in host memory."""
        if device != "cpu":
            raise _ladle.InvalidArgumentError(f"DataNode.shape: device={device!r}: shapes are computed on the cpu")
        from . import fn

        return fn.shapes(self, dtype=dtype)

    def __repr__(self):
        return f"DataNode(name={self.name!r}, device={self.device!r})"

    def __bool__(self):
        raise TypeError(
            "a DataNode has no truth value while the graph is defined: for a per-sample `if`, define the "
            "pipeline with @pipeline_def(enable_conditionals=True), where `and`, `or` and `not` work on DataNodes too "
            "(or combine conditions with &, |)"
        )


def _check_node(pipeline, node, what):
    """Raises unless `node` is a DataNode of `pipeline`; `what` ("resize: input 0")
    names it in the message."""
    if not isinstance(node, DataNode):
        raise _ladle.InvalidArgumentError(
            f"{what} must be a DataNode (an operator's output), got {type(node).__name__}"
        )
    if node._pipeline is not pipeline:
        raise _ladle.InvalidArgumentError(f"{what} ({node.name}) belongs to another pipeline")


class ThreadPool:
    """Worker threads that several pipelines share (Pipeline(thread_pool=...)),
    so that a process runs a fixed number of decoding threads however many
    pipelines it has (say, training and validation). The pool lives as long
    as any pipeline using it. set_affinity and LADLE_AFFINITY pin its workers
    as they pin a pipeline's own."""

    def __init__(self, num_threads, set_affinity=False):
        self._c = _ladle._ThreadPool(int(num_threads), _affinity(set_affinity))

    @property
    def num_threads(self):
        return self._c.num_threads


def _os_string(s):
    """A str that is not valid UTF-8 text (a file name os.listdir decoded with
    surrogateescape) as the bytes the file system has; the library takes both."""
    if isinstance(s, str):
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:
            return os.fsencode(s)
    return s


def _os_strings(value):
    if isinstance(value, (list, tuple)):
        return type(value)(_os_string(v) for v in value)
    return _os_string(value)


class Pipeline:
    """A graph of operators, built once and run many times (DALI's Pipeline).

    Define the graph inside ``with pipe:`` (or with ``@pipeline_def``), then
    ``pipe.set_outputs(...)``; ``pipe.run()`` returns one TensorList per
    output and builds the pipeline on first use.

    Arguments:
      batch_size: samples per iteration (required, >= 1).
      num_threads: CPU worker threads; -1 takes ladle's default (4).
      device_id: the CUDA device, or -1 for none (CPU only). Under torchrun
        (LOCAL_RANK set), the default -1 becomes LOCAL_RANK when ladle sees
        more than LOCAL_RANK CUDA devices; pass None to stay off the GPU.
      seed: seed of every random choice. Unlike DALI, which draws a random
        seed when none is given, ladle's default (seed=-1) is 0, so runs are
        reproducible unless you ask otherwise. Output is bit-identical for
        any num_threads and prefetch_queue_depth.
      prefetch_queue_depth: iterations prepared ahead of run() (an int, or
        DALI's {"cpu_size": a, "gpu_size": b}: the larger is used).
      exec_async, exec_pipelined: accepted for DALI compatibility; ladle
        always prepares iterations ahead on its own thread.
      set_affinity: pin worker threads to the cores this process may use.
        The environment variable LADLE_AFFINITY="0,1,4-7" pins them to those
        cores, whatever set_affinity says.
      max_pixels: the largest decoded image allowed, in pixels (ladle's
        default: 512 Mpx); bigger images fail with LimitError.
      thread_pool: a ladle.ThreadPool to run on instead of num_threads
        workers of the pipeline's own; pipelines may share one.
      on_error: "raise" (the default): a bad sample fails its iteration,
        naming the file; "skip": a sample of a reader whose reading, decoding
        or processing fails on bad data (a corrupt, unreadable or
        unsupported file, or one over a limit; never a wrong argument) is
        dropped and its slot filled with the next good sample of its batch
        (a duplicate), so batches stay full and every shard keeps its batch
        count; the choice depends only on which files are bad. Each skip is
        logged (logger "ladle", WARNING) and listed by skipped_samples().
        In a pipeline fed only by external sources a bad sample is dropped
        instead and that iteration's batch is smaller (fed data has no
        "next sample" to take; a batch with no good sample raises; fed GPU
        batches are not shrunk, so their failures raise). A pipeline with
        both a reader and external sources raises as with "raise".
        With device="mixed" decoders, a batch nvJPEG refuses is decoded on
        the CPU, and the samples that fail there are skipped.
      max_skipped_samples: with on_error="skip", how many distinct bad
        samples are allowed before the pipeline raises LimitError listing
        them: an int, or a float in (0, 1] meaning that fraction of the
        reader's epoch; None (default): no limit.
      py_num_workers, py_start_method: the worker processes of
        external_source(parallel=True) sources (DALI's): how many (>= 1),
        started with "fork" (default) or "spawn" when the pipeline is built
        (see ladle._parallel).
      enable_conditionals: per-sample `if` on DataNodes in a @pipeline_def
        function (see ladle._conditionals for how and what is supported).
      enable_checkpointing: allow checkpoint() (DALI's argument).
      checkpoint: a string from checkpoint() (or a file's contents): the
        pipeline resumes there when built, byte for byte as if it had run on.
        A checkpoint is ladle's position: since every random choice and
        every shuffle is a function of (seed, epoch, sample), the position is
        all the state there is. Pipelines fed by external sources have no
        position to return to and refuse it.

    Other DALI arguments are accepted and ignored with a warning.

    The pipeline's threads and memory are freed by close() (or when the
    object is garbage collected). ``with pipe:`` only selects the pipeline
    for graph definition, as in DALI; for close-on-exit use
    ``contextlib.closing(pipe)``. Outputs already returned stay valid after
    close().
    """

    def __init__(self, batch_size=-1, num_threads=-1, device_id=-1, seed=-1, prefetch_queue_depth=2,
                 exec_async=True, exec_pipelined=True, set_affinity=False, max_pixels=None, thread_pool=None,
                 enable_conditionals=False, enable_checkpointing=False, checkpoint=None, on_error="raise",
                 max_skipped_samples=None, py_num_workers=1, py_start_method="fork", py_callback_pickler=None,
                 **kwargs):
        unknown = sorted(set(kwargs) - _DALI_IGNORED)
        if unknown:
            raise TypeError(f"Pipeline() got unexpected keyword argument(s): {', '.join(unknown)}")
        if kwargs:
            warnings.warn(f"ladle.Pipeline ignores the DALI argument(s): {', '.join(sorted(kwargs))}",
                          stacklevel=2)
        if isinstance(prefetch_queue_depth, dict):
            prefetch_queue_depth = max(prefetch_queue_depth.values())
        self._batch_size = _whole("batch_size", -1 if batch_size is None else batch_size, -1)
        if self._batch_size == 0 or self._batch_size < -1:
            raise _ladle.InvalidArgumentError(f"Pipeline: batch_size must be >= 1, got {batch_size}")
        self._num_threads = _whole("num_threads", -1 if num_threads is None else num_threads, -1)
        if self._num_threads == 0 or self._num_threads < -1:
            raise _ladle.InvalidArgumentError(f"Pipeline: num_threads must be >= 1 (or -1: the default), "
                                              f"got {num_threads}")
        self._device_id = _default_device(device_id)
        seed = _whole("seed", -1 if seed is None else seed, -1)
        if seed >= 2**64:
            raise _ladle.InvalidArgumentError(f"Pipeline: seed must be < 2**64, got {seed}")
        self._seed = 0 if seed < 0 else seed
        self._prefetch_queue_depth = _whole("prefetch_queue_depth", prefetch_queue_depth, 1)
        self._max_pixels = _whole("max_pixels", max_pixels, 1) if max_pixels is not None else 0
        self._cpus = _affinity(set_affinity)
        if thread_pool is not None and not isinstance(thread_pool, ThreadPool):
            raise TypeError("thread_pool must be a ladle.ThreadPool")
        self._thread_pool = thread_pool
        self.exec_async = exec_async
        self.exec_pipelined = exec_pipelined
        self._c = None  # the _ladle._Pipeline, made on first use
        self._fed_seeds = False  # ladle.dynamic sets it before first use: a seed is fed per iteration
        self._closed = False
        self._op_names = set()
        self._callback_errors = {}  # python_function exceptions by token, until run() raises them
        self._py_num_workers, self._py_start_method = py_num_workers, py_start_method
        if py_start_method not in ("fork", "spawn"):
            raise _ladle.InvalidArgumentError(f"Pipeline: py_start_method={py_start_method!r}: use \"fork\" or "
                                              "\"spawn\"")
        if py_callback_pickler is not None:
            raise _ladle.NotAvailableError("Pipeline: py_callback_pickler is not supported by ladle: with "
                                           "py_start_method=\"spawn\" sources are pickled with pickle (define them "
                                           "at module level)")
        self._workers = None  # the _parallel.WorkerPool of parallel external sources, from build on
        self._readers = []
        self._sources = {}  # external_source name -> _Source (those given a `source`)
        self._ahead = 0  # iterations drawn from the sources and not yet returned by run()
        self._no_copy = {}  # external_source name -> its no_copy
        self._source_types = {}  # external_source name -> (DALIDataType, ndim) it was declared or inferred with
        self._num_outputs = 0
        self._built = False
        self._op_list = []  # schema names in the order added: a checkpoint's graph fingerprint
        if on_error not in ("raise", "skip"):
            raise _ladle.InvalidArgumentError(f"Pipeline: on_error={on_error!r}: use 'raise' or 'skip'")
        self._skip = on_error == "skip"
        self._max_skipped, self._max_skipped_fraction = -1, 0.0
        if max_skipped_samples is not None:
            if not self._skip:
                raise _ladle.InvalidArgumentError("Pipeline: max_skipped_samples needs on_error='skip'")
            if isinstance(max_skipped_samples, bool) or not isinstance(max_skipped_samples, (int, float)):
                raise _ladle.InvalidArgumentError(
                    f"Pipeline: max_skipped_samples={max_skipped_samples!r}: give an int, or a float in (0, 1]")
            if isinstance(max_skipped_samples, float):
                if not 0 < max_skipped_samples <= 1:
                    raise _ladle.InvalidArgumentError(
                        f"Pipeline: max_skipped_samples={max_skipped_samples} as a fraction must be in (0, 1]")
                self._max_skipped_fraction = max_skipped_samples
            elif max_skipped_samples < 0:
                raise _ladle.InvalidArgumentError(f"Pipeline: max_skipped_samples={max_skipped_samples} < 0")
            else:
                self._max_skipped = int(max_skipped_samples)
        self._logged_skips = 0
        self._checkpointing = bool(enable_checkpointing)
        self._conditionals = bool(enable_conditionals)
        if checkpoint is not None and not self._checkpointing:
            raise _ladle.InvalidArgumentError("Pipeline: checkpoint= needs enable_checkpointing=True (as in DALI)")
        self._restore = _parse_checkpoint(checkpoint) if checkpoint is not None else None

    # --- DALI's attributes -----------------------------------------------

    @property
    def batch_size(self):
        return self._batch_size

    @property
    def max_batch_size(self):
        return self._batch_size

    @property
    def num_threads(self):
        return self._num_threads if self._num_threads > 0 else 4

    @property
    def device_id(self):
        return self._device_id

    @property
    def seed(self):
        return self._seed

    @property
    def prefetch_queue_depth(self):
        return self._prefetch_queue_depth

    # --- graph definition -----------------------------------------------

    @staticmethod
    def current():
        """The pipeline whose graph is being defined on this thread, or None."""
        stack = _definition_stack()
        return stack[-1] if stack else None

    def __enter__(self):
        _definition_stack().append(self)
        return self

    def __exit__(self, exc_type, exc, tb):
        stack = _definition_stack()
        if stack and stack[-1] is self:
            stack.pop()
        return False

    def _handle(self):
        if self._closed:
            raise _ladle.StateError("the pipeline is closed")
        if self._c is None:
            pool = self._thread_pool._c if self._thread_pool is not None else None
            self._c = _ladle._Pipeline(self._batch_size, self._num_threads, self._device_id, self._seed,
                                       self._prefetch_queue_depth, self._max_pixels, self._cpus, pool,
                                       self._skip, self._max_skipped, self._max_skipped_fraction,
                                       self._fed_seeds)
        return self._c

    def _add_op(self, op_name, device, inputs, args, name, callback=None, public=None):
        """Adds operator `op_name`; returns (first output id, instance name).
        `callback`: a callback operator's dispatcher (ladle._python_function)."""
        if name is None:
            name = f"__{op_name}_{len(self._op_names)}"
            while name in self._op_names:
                name += "_"
        elif name in self._op_names:
            raise _ladle.InvalidArgumentError(f"fn.{op_name}: an operator named {name!r} is already in the pipeline")
        args = [(k, _os_strings(v)) for k, v in args] if isinstance(args, list) else args
        try:
            first = self._handle().add_op(op_name, device, [x._id for x in inputs], args, name, callback)
        except _ladle.Error as e:
            # The library names the operator by its schema; the user called fn.<name>.
            text = str(e)
            if text.startswith(op_name + ": "):
                e.args = ((public or "fn." + op_name) + text[len(op_name):],) + e.args[1:]
            raise
        self._op_names.add(name)
        self._op_list.append(op_name)
        if "reader" in op_schemas()[op_name]["flags"]:
            self._readers.append(name)
        return first, name

    def _add_source(self, name, source, no_copy, dtype, ndim):
        """Registers external_source `name`: `source` is its _Source (None
        when fed with feed_input), dtype and ndim what it was declared with."""
        if source is not None:
            source.name = name
        self._sources[name] = source
        self._no_copy[name] = bool(no_copy)
        self._source_types[name] = (types.to_dtype(dtype), int(ndim))

    def feed_input(self, data_node, data, layout=None):
        """Queues `data` for the external_source `data_node` (its DataNode or
        name): one batch, used by one iteration, first in first out. `data` is
        a list of arrays (one dtype and rank; shapes may differ), an [N, ...]
        NumPy array or torch tensor (a CUDA one for a device="gpu" source), or
        a ladle TensorList; 1 <= N <= batch_size. Arrays and tensors are copied
        (so the caller may reuse them at once) unless the source was made with
        no_copy=True: then they are taken as they are and must not change until
        the iteration has run. TensorLists are never copied."""
        name = data_node.name if isinstance(data_node, DataNode) else str(data_node)
        if name not in self._sources:
            raise _ladle.InvalidArgumentError(f"feed_input: no external_source named {name!r} in the pipeline")
        handle = self._handle()
        handle.build()  # the CUDA stream that fed GPU tensors are ordered before exists from here
        batch = _as_batch(data, layout, handle.cuda_stream(), copy=not self._no_copy.get(name, False), name=name)
        dtype, ndim = self._source_types.get(name, (None, None))
        got = types.from_dtype_name(batch.dtype)
        if dtype is not None and (got != dtype or batch.ndim != ndim):
            raise _ladle.InvalidArgumentError(
                f'external_source "{name}": fed {got.numpy_name} samples of rank {batch.ndim}; it was declared '
                f"{dtype.numpy_name} of rank {ndim} (dtype=types.{dtype.name}, ndim={ndim}): convert the data "
                f"(e.g. .astype(np.{dtype.numpy_name})) or declare dtype=types.{got.name}, ndim={batch.ndim} (or "
                "leave dtype out to take the first batch's)")
        handle.feed(name, batch)

    def _feed_from_sources(self):
        """Tops up the batches drawn from `source`s and not yet consumed to
        prefetch_queue_depth, so the executor can work that far ahead."""
        while self._ahead < self._prefetch_queue_depth:
            fed = False
            for src in self._sources.values():
                if src is not None and not src.exhausted:
                    data = src.next()
                    if data is not None:
                        self.feed_input(src.name, data)
                        fed = True
            if not fed:
                return
            self._ahead += 1

    def set_outputs(self, *outputs):
        """Declares the nodes run() returns, in order."""
        if len(outputs) == 1 and isinstance(outputs[0], (list, tuple)):
            outputs = tuple(outputs[0])
        for i, node in enumerate(outputs):
            _check_node(self, node, f"set_outputs: output {i}")
        self._handle().set_outputs([node._id for node in outputs])
        self._num_outputs = len(outputs)

    # --- running ---------------------------------------------------------

    def _start_workers(self):
        """Starts the worker processes of parallel external sources."""
        from . import _parallel

        parallel = [s for s in self._sources.values() if isinstance(s, _parallel.ParallelSource)]
        if not parallel or self._workers is not None:
            return
        n = self._py_num_workers
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise _ladle.InvalidArgumentError(
                f"Pipeline: external_source {parallel[0].name!r} has parallel=True, which needs py_num_workers >= "
                f"1; got {n!r}")
        self._workers = _parallel.WorkerPool(parallel, n, self._py_start_method)
        for i, s in enumerate(parallel):
            s.start(self._workers, i)

    def define_graph(self):
        """DALI's hook for a Pipeline subclass: return the outputs (a DataNode
        or a list of them) from operators called here, e.g. ladle.ops
        instances made in __init__. build() calls it once, inside the
        pipeline, when no outputs were set."""
        raise NotImplementedError("define_graph: override it in a Pipeline subclass, or use set_outputs")

    def _define(self):
        """The outputs of a subclass's define_graph, when none were set."""
        if self._num_outputs or type(self).define_graph is Pipeline.define_graph:
            return
        with self:
            outputs = self.define_graph()
        if isinstance(outputs, DataNode):
            outputs = (outputs,)
        if not isinstance(outputs, (list, tuple)) or not outputs:
            raise _ladle.InvalidArgumentError(f"{type(self).__name__}.define_graph must return the pipeline's "
                                              f"outputs: a DataNode or a list of them, not {type(outputs).__name__}")
        self.set_outputs(*outputs)

    def build(self):
        """Checks the graph and starts the executor. Optional: run() builds."""
        if not self._built:
            self._define()
            self._start_workers()
        self._handle().build()
        if not self._built:
            self._built = True
            if self._restore is not None:
                self._resume(self._restore)
            self._feed_from_sources()

    def run(self):
        """The next iteration: a tuple with one TensorList per output. With
        external sources that have a `source`, StopIteration when one ran out."""
        if _deferred_closes():
            from ._python_function import close_deferred

            close_deferred()
        if not self._built:
            self.build()
        else:
            self._feed_from_sources()
        try:
            batches = self._handle().run()
        except _ladle.StateError:  # nothing was consumed
            ended = [s for s in self._sources.values() if s is not None and s.exhausted]
            if ended:
                for s in ended:
                    s.restart()
                raise StopIteration(f"external_source {ended[0].name!r}: its source ran out") from None
            raise
        except _ladle.Error as e:  # a failed iteration is used up too
            self._ahead = max(0, self._ahead - 1)
            if self._skip:
                self._log_skips()
            if self._callback_errors:  # a Python function raised: chain its exception
                from ._python_function import chain_error

                error = chain_error(e, self._callback_errors)
                if error is not e:
                    raise error from error.__cause__
            raise
        self._ahead = max(0, self._ahead - 1)
        if self._skip:
            self._log_skips()
        return tuple(TensorList(b) for b in batches)

    def _log_skips(self):
        for s in self._handle().skipped(self._logged_skips):
            _log.warning("skipped a bad sample: %s (record %d, epoch %d): %s", s["name"] or "(unnamed)", s["record"],
                         s["epoch"], s["error"])
            self._logged_skips += 1

    def skipped_samples(self):
        """The bad samples skipped so far (on_error="skip"), each once: dicts
        with record, epoch, iteration, name (the file) and error."""
        return self._handle().skipped(0)

    # DALI's split form of run(), for code written against it. ladle always
    # prepares iterations ahead, so scheduling is a no-op.
    def schedule_run(self):
        self._handle()

    def outputs(self):
        return self.run()

    def share_outputs(self):
        return self.run()

    def release_outputs(self):
        pass

    def executor_statistics(self):
        """Where the time went since build: {"iterations", "prepare_seconds"
        (the executor's time preparing them), "wait_seconds" (time run()
        waited: the consumer starved), "host_stage_seconds" and
        "device_stage_seconds", "gpu_wait_seconds", "operators": [{"op", "name", "device",
        "seconds", "setup_seconds", "cpu_passes", "inline_passes", "fused", "stage",
        "counters"}, ...] in the order added}; "setup_seconds" is the part of
        "seconds" in the operator's setup pass (output shapes, per-sample
        decisions such as the mixed decoder's routes); "inline_passes" of its
        "cpu_passes" over the samples ran on the stage's thread alone, not the
        workers: those whose samples took under LADLE_EXECUTOR_INLINE_US (100)
        in all the time before.
        A loader that keeps up with training shows wait_seconds near 0.

        A pipeline with GPU or mixed operators runs in two stages on two
        threads: the host stage (readers and the CPU operators that need
        nothing from a GPU or mixed one, wherever they were added) prepares
        the next iteration while the device
        stage (the rest: the mixed decoder, GPU operators) runs this one.
        host_stage_seconds and device_stage_seconds are each thread's busy
        time (0 with one stage); prepare_seconds is their sum, so it may
        exceed the wall time. Outputs are the same bytes either way. For A/B
        measurements the environment variable LADLE_EXECUTOR_STAGES=1, read
        when the pipeline is built, runs every node on one thread; as a test
        knob, LADLE_EXECUTOR_SPLIT=k starts the device stage at operator k
        (in the order added; 1 <= k <= the number of operators, else build()
        fails) of a CPU pipeline too,
        LADLE_EXECUTOR_SETUP_AHEAD=1 (experimental) moves the mixed decoder's
        reading of the image headers into the host stage, and
        LADLE_EXECUTOR_HOIST=0 keeps CPU operators added after a GPU or
        mixed one in the device stage. "stage" says which stage runs an
        operator ("host", "device"; None with one stage).
        "fused" is True for an operator computed inside the one after it:
        resize inside crop_mirror_normalize's GPU kernel, or an element-wise
        expression step (x * 0.5 in x * 0.5 + 1) inside the next step's single
        pass, on the CPU or the GPU; its seconds then hold only its setup. The
        environment variable LADLE_NO_FUSION=1 turns fusion off.

        "counters" holds the counts an operator keeps ({} for most). The image
        decoders count the images each decoder delivered: "cpu" (libjpeg-turbo
        and libpng on the workers), "hw" (the mixed backend's hw_decoder_load
        share: nvJPEG on the hardware engines, or on its GPU-hybrid backend
        where the GPU has none), "gpu_hybrid" (the hybrid_huffman_threshold
        route) and "retried_on_cpu" (images sent to nvJPEG whose batch it
        refused, decoded on the CPU instead; counted in "cpu" too). The mixed
        backend counts batches it completed; a batch run again without a
        skipped sample counts again. The mixed backend also sums its waits,
        in microseconds: "nvjpeg_us" (in nvJPEG's batched call), of it
        "engines_wait_us" (for the engines to finish the previous batch) and
        "cpu_wait_us" (for the CPU workers' share): which side of
        hw_decoder_load is behind. "gpu_wait_seconds" is the executor's
        time blocked until the GPU finished an earlier iteration (all
        iterations in flight taken): the GPU, not the host, is behind.

        "skipped_samples" counts the bad samples skipped (on_error="skip");
        "memory" has one dict per memory pool ("host_pageable", "host_pinned",
        "device"; the last two are zero without GPU operators), each with
        used_bytes (handed out now), peak_used_bytes, reserved_bytes (taken
        from the system and not given back: used plus idle kept for reuse) and
        peak_reserved_bytes, the high-water marks since build."""
        return self._handle().stats()

    def release_memory(self):
        """Gives the idle memory of the pipeline's pools (host, pinned, device)
        back to the system and returns the bytes given back. Call it between
        run() calls, e.g. after training before evaluation: memory in use stays
        (the iterations prepared ahead, the batches you still hold), and the
        next iterations allocate again, so they run slower until the pools are
        warm. peak_* figures of executor_statistics() are not reset."""
        return self._handle().release_memory()

    def reader_meta(self, name=None):
        """DALI's reader metadata: a dict for reader `name`, or, without a
        name, a dict of those dicts for every reader. Builds the pipeline.
        Beyond DALI's keys, ``index_bytes``: the host memory the reader's
        index holds (fn.readers.coco's annotations; 0 where not reported)."""
        if name is None:
            return {reader: self.reader_meta(reader) for reader in self._readers}
        if not self._built:
            self.build()
        return self._handle().reader_meta(name)

    def epoch_size(self, name=None):
        """Samples in the epoch of reader `name`, or a dict for every reader."""
        if name is None:
            return {reader: meta["epoch_size"] for reader, meta in self.reader_meta().items()}
        return self.reader_meta(name)["epoch_size"]

    def get_position(self):
        """The number of iterations run() has returned: enough to resume."""
        return self._handle().get_position()

    def set_position(self, iteration):
        """Makes the next run() return iteration `iteration` (resume)."""
        self._handle().set_position(iteration)

    # --- checkpoints (DALI's enable_checkpointing / checkpoint()) ------------

    def checkpoint(self, filename=None):
        """The pipeline's state as a string (also written to `filename` when
        given): pass it as Pipeline(checkpoint=...) to resume after the last
        iteration run() returned. Needs enable_checkpointing=True."""
        return self._checkpoint(self.get_position() if self._built else 0, filename)

    def _checkpoint(self, iteration, filename=None):
        if not self._checkpointing:
            raise _ladle.StateError("checkpoint(): create the pipeline with enable_checkpointing=True")
        if self._sources:
            raise _ladle.StateError("checkpoint(): a pipeline fed by external sources has no position to "
                                    "return to (fed data cannot be replayed)")
        text = json.dumps({"format": _CHECKPOINT_FORMAT, "iteration": int(iteration),
                           "batch_size": self._batch_size, "seed": self._seed, "operators": self._op_list})
        if filename is not None:
            with open(filename, "w") as f:
                f.write(text)
        return text

    def _resume(self, state):
        mine = {"batch_size": self._batch_size, "seed": self._seed, "operators": self._op_list}
        diff = [k for k in mine if state.get(k) != mine[k]]
        if diff:
            details = ", ".join(f"{k}: saved {state.get(k)!r}, here {mine[k]!r}" for k in diff)
            raise _ladle.InvalidArgumentError(f"Pipeline(checkpoint=...): the pipeline is defined differently "
                                              f"({details})")
        self.set_position(int(state["iteration"]))

    def close(self):
        """Stops the pipeline and frees its threads and memory. Idempotent.
        Outputs already returned stay valid."""
        workers, self._workers = getattr(self, "_workers", None), None
        if workers is not None:
            workers.close()
        c, self._c = self._c, None
        self._closed = True
        from . import _python_function

        if c is not None and _python_function.in_function():
            _python_function.defer_close(c)  # maybe this pipeline's own executor: stopped from another thread
        elif c is not None:
            c.close()
        _python_function.close_deferred()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        state = "closed" if self._closed else "built" if self._built else "defining"
        return (f"<ladle.Pipeline batch_size={self._batch_size} num_threads={self.num_threads} "
                f"device_id={self._device_id} seed={self._seed} {state}>")


def _deferred_closes():
    mod = sys.modules.get("ladle._python_function")
    return bool(mod is not None and mod._deferred)


def _whole(name, value, low):
    """`value` as an int >= low, or a clear error (2.7 or True is not a batch size)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise _ladle.InvalidArgumentError(f"Pipeline: {name} must be an integer, got {value!r}")
    if value < low:
        raise _ladle.InvalidArgumentError(f"Pipeline: {name} must be >= {low}, got {value}")
    return int(value)


_CHECKPOINT_FORMAT = "ladle.Pipeline.checkpoint/1"


def _parse_checkpoint(text):
    try:
        state = json.loads(text)
    except (TypeError, ValueError):
        state = None
    if not isinstance(state, dict) or state.get("format") != _CHECKPOINT_FORMAT:
        raise _ladle.InvalidArgumentError("Pipeline(checkpoint=...): not a checkpoint of a ladle pipeline "
                                          "(give the string checkpoint() returned)")
    return state


def do_not_convert(func=None):
    """Leaves `func` as written when a pipeline with enable_conditionals=True
    calls it (DALI's nvidia.dali.pipeline.do_not_convert): functions a
    pipeline function calls are otherwise rewritten too, as DALI's AutoGraph
    rewrites them. Use it bare or with parentheses."""
    def mark(f):
        f.__ladle_do_not_convert__ = True
        return f

    return mark if func is None else mark(func)


_PIPELINE_ARGS = frozenset(
    name for name in inspect.signature(Pipeline.__init__).parameters if name not in ("self", "kwargs")
) | _DALI_IGNORED


def pipeline_def(fn=None, **pipeline_kwargs):
    """Turns a graph-defining function into a pipeline factory (DALI's).

    ``@pipeline_def`` or ``@pipeline_def(batch_size=..., ...)``. Calling the
    decorated function returns a Pipeline whose outputs are what the function
    returns (a DataNode or a tuple of them). Keyword arguments of the call
    that name Pipeline arguments override the decorator's; the rest go to the
    function. A function parameter with a Pipeline argument's name takes the
    value (with a warning), as in DALI.
    """

    def decorate(func):
        params = inspect.signature(func).parameters
        converted = []  # the function with per-sample `if`s, made once on first need

        @functools.wraps(func)
        def create_pipeline(*args, **kwargs):
            ctor = dict(pipeline_kwargs)
            fn_kwargs = {}
            for key, value in kwargs.items():
                if key in params:
                    if key in _PIPELINE_ARGS:
                        warnings.warn(f"{func.__name__}: the argument {key!r} shadows the Pipeline argument "
                                      "of the same name; it goes to the function", stacklevel=2)
                    fn_kwargs[key] = value
                elif key in _PIPELINE_ARGS:
                    ctor[key] = value
                else:
                    fn_kwargs[key] = value
            pipe = Pipeline(**ctor)
            body = func
            if pipe._conditionals:
                if not converted:
                    from . import _conditionals

                    converted.append(_conditionals.convert(func))
                body = converted[0]
            try:
                with pipe:
                    outputs = body(*args, **fn_kwargs)
                if isinstance(outputs, DataNode):
                    outputs = (outputs,)
                if not isinstance(outputs, (list, tuple)) or not outputs:
                    raise _ladle.InvalidArgumentError(
                        f"{func.__name__} must return the pipeline's outputs: a DataNode or a tuple of "
                        f"DataNodes, not {type(outputs).__name__}"
                    )
                pipe.set_outputs(*outputs)
            except BaseException:
                pipe.close()
                raise
            return pipe

        return create_pipeline

    return decorate(fn) if fn is not None else decorate
