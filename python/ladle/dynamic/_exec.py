"""How ladle.dynamic runs one operator call: a small Pipeline (external
sources -> the operator), built once per call signature and cached, fed the
call's inputs and run once. Randomness, threads and the cache live here."""

import collections
import functools
import os
import threading

import numpy as np

from .. import _ladle
from .. import fn
from .. import types
from ..pipeline import DataNode, Pipeline, ThreadPool, _default_device
from ..tensors import TensorList
from ._data import Batch, Tensor, _host_array, _is_torch, as_batch, batch

CACHE_SIZE = 64  # pipelines kept; the least recently used one is closed beyond that

_lock = threading.RLock()
_num_threads = None
_pool = None
_seed = 0
_draws = 0
_cache = collections.OrderedDict()  # key -> _Entry


def _after_fork_in_child():
    """A forked child starts dynamic mode afresh: the parent's pipelines and
    pool cannot run here (their threads stayed behind), and a lock the
    parent held at fork time would never be released."""
    global _lock, _pool, _cache
    _lock = threading.RLock()
    _pool = None
    _cache = collections.OrderedDict()  # the parent's entries are dropped, not closed


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


# --- threads ----------------------------------------------------------------

def set_num_threads(n):
    """Worker threads of the pool every ladle.dynamic pipeline shares (default
    min(4, cores)). Closes the cached pipelines; takes effect at the next call."""
    n = int(n)
    if n < 1:
        raise _ladle.InvalidArgumentError(f"set_num_threads: need at least 1 thread, got {n}")
    global _num_threads, _pool
    with _lock:
        _num_threads = n
        _pool = None
        clear_cache()


def get_num_threads():
    with _lock:
        return _num_threads or min(4, os.cpu_count() or 1)


def thread_pool():
    """The shared ladle.ThreadPool (made on first use)."""
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPool(get_num_threads())
        return _pool


def clear_cache():
    """Closes every cached pipeline."""
    with _lock:
        entries = list(_cache.values())
        _cache.clear()
    for e in entries:
        e.close()


# --- randomness -------------------------------------------------------------

def set_seed(seed):
    """Restarts ladle.dynamic's random draws from `seed` (default 0).

    What decides the draws: the k-th call (k = 0, 1, ... counted from the last
    set_seed, or from import) of an operator that draws random numbers
    (those whose schema has the "random" flag) runs with the
    seed mix(seed, k); sample i of that call draws from (that seed, i), as
    sample i of a pipeline's first iteration would. So the same program gives
    the same numbers, whatever the thread count, caching or batch-size
    bucketing, and every call draws new numbers. Readers made later shuffle
    with `seed` itself (as a Pipeline(seed=seed) would)."""
    seed = int(seed)
    if seed < 0:
        raise _ladle.InvalidArgumentError(f"set_seed: the seed must be >= 0, got {seed}")
    global _seed, _draws
    with _lock:
        _seed, _draws = seed, 0


def get_seed():
    with _lock:
        return _seed


def _mix(seed, k):
    """A 62-bit seed from (seed, k): splitmix64's finalizer over both."""
    x = (seed * 0x9E3779B97F4A7C15 + (k + 1) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    x ^= x >> 31
    return x >> 2


def next_seed():
    """The seed of the next random call (and counts the call)."""
    global _draws
    with _lock:
        k = _draws
        _draws += 1
        return _mix(_seed, k)


def draws_random(op_name):
    """Whether the operator draws random numbers: its schema says so."""
    return "random" in fn.op_schemas()[op_name]["flags"]


# --- the cache of pipelines -------------------------------------------------

class _Entry:
    def __init__(self, pipe):
        self.pipe = pipe
        self.lock = threading.Lock()

    def close(self):
        with self.lock:
            self.pipe.close()


def _bucket(n):
    """Batch sizes share a pipeline up to the next power of two."""
    b = 1
    while b < n:
        b *= 2
    return b


def _gpu_device_id():
    d = _default_device(-1)
    return d if d >= 0 else 0


def execute(key, build, feeds, batch_size, on_gpu, random):
    """Runs the graph that `build(pipe)` defines (inside `with pipe:`; it
    returns the outputs) on `feeds` [(source name, TensorList, layout)].
    Pipelines of deterministic graphs are cached under `key`; random ones are
    made for the call with a fresh seed. Returns the tuple of TensorLists."""
    if random or key is None:
        pipe = _make(build, batch_size, on_gpu, next_seed() if random else 0)
        try:
            return _feed_and_run(pipe, feeds)
        finally:
            pipe.close()
    with _lock:
        entry = _cache.get(key)
        if entry is not None:
            _cache.move_to_end(key)
    if entry is None:
        entry = _Entry(_make(build, batch_size, on_gpu, 0))
        evicted = []
        with _lock:
            _cache[key] = entry
            while len(_cache) > CACHE_SIZE:
                evicted.append(_cache.popitem(last=False)[1])
        for e in evicted:
            e.close()
    with entry.lock:
        try:
            return _feed_and_run(entry.pipe, feeds)
        except BaseException:
            # A failed iteration may leave data fed but not consumed: drop the pipeline.
            with _lock:
                if _cache.get(key) is entry:
                    del _cache[key]
            entry.pipe.close()
            raise


def _make(build, batch_size, on_gpu, seed):
    pipe = Pipeline(batch_size=batch_size, device_id=_gpu_device_id() if on_gpu else None, seed=seed,
                    prefetch_queue_depth=1, thread_pool=thread_pool())
    try:
        with pipe:
            outputs = build(pipe)
        if isinstance(outputs, DataNode):
            outputs = (outputs,)
        pipe.set_outputs(*outputs)
    except BaseException:
        pipe.close()
        raise
    return pipe


def _feed_and_run(pipe, feeds):
    for name, tl, layout in feeds:
        pipe.feed_input(name, tl, layout=layout)
    return pipe.run()


# --- one operator call ------------------------------------------------------

def _hashable(v):
    if isinstance(v, (list, tuple)):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _hashable(x)) for k, x in v.items()))
    try:
        hash(v)
        return v
    except TypeError:
        return repr(v)


def _fn_op(op_name):
    return functools.reduce(getattr, op_name.split("."), fn)


def _sig(b):
    """What an external source must declare for Batch `b`."""
    layout = b.layout or None
    return (b.dtype, b.ndim, layout, b.device)


def _feed_layout(sig):
    dtype, ndim, layout, _ = sig
    if layout:
        return layout
    return "HWC" if ndim == 3 else None


def _is_sample_like(x):
    """A single sample given to an operator: a Tensor, NumPy array, torch tensor, PIL image."""
    if isinstance(x, Tensor):
        return True
    if isinstance(x, (Batch, TensorList, list, tuple)):
        return False
    return isinstance(x, np.ndarray) or _is_torch(x) or hasattr(x, "getbands")


def _input_batch(x, public, i):
    if _is_sample_like(x):
        return as_batch(x if isinstance(x, Tensor) else _tensor_of(x))
    if isinstance(x, (Batch, TensorList, list, tuple)):
        return as_batch(x)
    if isinstance(x, DataNode):
        raise _ladle.InvalidArgumentError(f"{public}: input {i} is a DataNode; ladle.dynamic takes data, "
                                          "not pipeline graph nodes (use ladle.fn inside a pipeline)")
    raise _ladle.InvalidArgumentError(f"{public}: input {i} of type {type(x).__name__} is not data "
                                      "(give a Batch, a Tensor, an array or a list of arrays)")


def _tensor_of(x):
    from ._data import tensor

    return tensor(x)


def _arg_batch(value, public, key):
    """A per-sample argument as a CPU Batch of scalars (int32 or float32)."""
    if isinstance(value, Tensor):
        value = value._as_batch()
    if isinstance(value, (Batch, TensorList)):
        b = as_batch(value).cpu()
        if b.dtype == types.FLOAT16:
            b = batch([np.asarray(t).astype(np.float32) for t in b.tensors])
        return b
    arrays = [_host_array(v) for v in value]
    if any(a.size != 1 for a in arrays):
        raise _ladle.InvalidArgumentError(f"{public}: argument {key!r}: per-sample values must be scalars")
    arrays = [a.reshape(()) for a in arrays]
    if all(a.dtype.kind in "iub" for a in arrays):
        arrays = [a.astype(np.int32) for a in arrays]
    else:
        arrays = [a.astype(np.float32) for a in arrays]
    return batch(arrays)


def _resolve_device(public, schema, device, inputs_on_gpu):
    devices = schema["devices"]
    if device is None:
        device = "gpu" if inputs_on_gpu else "cpu"
    device = str(device).lower()
    if device == "cuda":
        device = "gpu"
    if device == "cpu":
        if "cpu" not in devices:
            raise _ladle.InvalidArgumentError(f"{public}: device='cpu' is not supported; it runs on: {', '.join(devices)}")
        if inputs_on_gpu:
            raise _ladle.InvalidArgumentError(f"{public}: device='cpu' cannot take inputs in GPU memory; "
                                              "use device='gpu' or move the inputs with .cpu()")
        return "cpu"
    if device in ("gpu", "mixed"):
        if _cuda_built() and not _cuda_devices():
            raise _ladle.NotAvailableError(f"{public}: device='gpu' is not available: ladle sees no CUDA device")
        if "gpu" in devices and not (device == "mixed" and "mixed" in devices):
            return "gpu"
        if "mixed" in devices:
            if inputs_on_gpu:
                raise _ladle.InvalidArgumentError(f"{public}: on the GPU this operator reads its inputs from host "
                                                  "memory; give CPU inputs (.cpu())")
            return "mixed"
        info = "" if _cuda_built() else " (this ladle was built without CUDA)"
        raise _ladle.NotAvailableError(f"{public}: device='gpu' is not available{info}; "
                                       f"this operator runs on: {', '.join(devices)}")
    raise _ladle.InvalidArgumentError(f"{public}: device={device!r}: use 'cpu' or 'gpu'")


@functools.lru_cache(maxsize=None)
def _cuda_built():
    from .. import build_info

    return bool(build_info().get("cuda_compiled"))


def _cuda_devices():
    from .. import build_info

    return int(build_info().get("cuda_devices", 0) or 0)


def call_operator(schema, public, inputs, device=None, batch_size=None, kwargs=None):
    """Runs operator `schema` eagerly. Returns a Batch, a Tensor or a tuple of them."""
    op_name = schema["name"]
    kwargs = dict(kwargs or {})
    specs = {a["name"]: a for a in schema["args"]}
    lo, hi = schema["min_inputs"], schema["max_inputs"]
    if not lo <= len(inputs) <= hi:
        expected = str(lo) if lo == hi else f"{lo} to {hi}"
        raise _ladle.InvalidArgumentError(f"{public}: takes {expected} input(s), got {len(inputs)}")
    for key in kwargs:
        if key not in specs:
            valid = ", ".join(specs) or "none"
            raise _ladle.InvalidArgumentError(f"{public}: unknown argument {key!r}; valid arguments: {valid}")

    batches = [_input_batch(x, public, i) for i, x in enumerate(inputs)]

    constants, per_sample = {}, {}
    for key, value in kwargs.items():
        spec = specs[key]
        if value is None:
            continue
        is_data = isinstance(value, (Batch, Tensor, TensorList)) or (
            spec["per_sample"] and (isinstance(value, (list, tuple, np.ndarray)) or _is_torch(value))
            and np.ndim(_host_array(value) if _is_torch(value) else value) > 0)
        if is_data:
            if not spec["per_sample"]:
                raise _ladle.InvalidArgumentError(f"{public}: argument {key!r} must be a constant; "
                                                  "it cannot be a Batch (per-sample values)")
            per_sample[key] = _arg_batch(value, public, key)
        else:
            if _is_torch(value):
                value = _host_array(value)
            if isinstance(value, np.ndarray):
                value = value.tolist()
            constants[key] = value

    sizes = {len(b) for b in batches} | {len(b) for b in per_sample.values()}
    if batch_size is not None:
        batch_size = int(batch_size)
        if batch_size < 1:
            raise _ladle.InvalidArgumentError(f"{public}: batch_size must be >= 1, got {batch_size}")
        sizes.add(batch_size)
    if len(sizes) > 1:
        raise _ladle.InvalidArgumentError(f"{public}: the inputs, per-sample arguments and batch_size disagree "
                                          f"on the number of samples: {sorted(sizes)}")
    n = sizes.pop() if sizes else 1
    # A single sample in gives a single sample out; a batch in, a batch out.
    batch_valued = any(not isinstance(kwargs[k], Tensor) for k in per_sample)
    single = batch_size is None and not batch_valued and all(_is_sample_like(x) for x in inputs)

    on_gpu = any(b.device == "gpu" for b in batches)
    op_device = _resolve_device(public, schema, device, on_gpu)
    if op_device == "mixed":
        batches = [b.cpu() for b in batches]

    in_sigs = [_sig(b) for b in batches]
    arg_sigs = {k: _sig(b) for k, b in per_sample.items()}
    has_sources = bool(in_sigs or arg_sigs)
    pipe_batch = _bucket(n) if has_sources else n
    random = draws_random(op_name)
    key = (op_name, op_device, _hashable(constants), tuple(in_sigs), _hashable(arg_sigs), pipe_batch)

    def build(pipe):
        nodes = []
        for i, sig in enumerate(in_sigs):
            node = fn.external_source(name=f"input{i}", device=sig[3], dtype=sig[0], ndim=sig[1], layout=sig[2])
            if op_device == "gpu" and sig[3] == "cpu":
                node = node.gpu()
            nodes.append(node)
        args = dict(constants)
        for k, sig in arg_sigs.items():
            args[k] = fn.external_source(name=f"arg_{k}", device="cpu", dtype=sig[0], ndim=sig[1], layout=sig[2])
        try:
            out = _fn_op(op_name)(*nodes, device=op_device, **args)
        except _ladle.Error as e:
            raise _renamed(e, op_name, public) from None
        return out

    feeds = [(f"input{i}", b.tensor_list, _feed_layout(s)) for i, (b, s) in enumerate(zip(batches, in_sigs))]
    feeds += [(f"arg_{k}", b.tensor_list, None) for k, b in per_sample.items()]
    try:
        outs = execute(key, build, feeds, pipe_batch, op_device != "cpu", random)
    except _ladle.Error as e:
        raise _renamed(e, op_name, public) from None
    results = tuple(Batch(tl) for tl in outs)
    if single:
        results = tuple(r.tensors[0] for r in results)
    return results[0] if len(results) == 1 else results


def _renamed(e, op_name, public):
    """The error with the pipeline API's name of the operator replaced by ladle.dynamic's."""
    text = str(e).replace(f"fn.{op_name}", public)
    try:
        return type(e)(text)
    except Exception:
        return e


def to_gpu(b):
    """A CPU Batch copied to the GPU."""
    if not _cuda_built():
        raise _ladle.NotAvailableError("Batch.gpu(): this ladle was built without CUDA")
    sig = _sig(b)
    n = len(b)

    def build(pipe):
        return fn.external_source(name="input0", device="cpu", dtype=sig[0], ndim=sig[1], layout=sig[2]).gpu()

    outs = execute(("transfer.to_gpu", sig, _bucket(n)), build, [("input0", b.tensor_list, _feed_layout(sig))],
                   _bucket(n), True, False)
    return Batch(outs[0])
