"""How ladle.dynamic runs one operator call: a small Pipeline (external
sources -> the operator), built once per call signature and kept in the
current EvalContext, then fed the call's inputs (and, for random operators,
the call's seed) and run once. In steady state a call builds nothing."""

import collections
import functools
import re
import threading

import numpy as np

from .. import _ladle
from .. import fn
from ..pipeline import DataNode, Pipeline, _default_device, arg_specs, renamed_args
from ..tensors import TensorList
from . import _capture, _random
from ._context import CACHE_SIZE, EvalContext, EvalMode
from ._data import Batch, Tensor, _host_array, _is_torch, as_batch, batch


# --- compatibility with ladle.dynamic before EvalContext ------------------------

def set_num_threads(n):
    from . import _context

    _context.set_num_threads(n)


def get_num_threads():
    from . import _context

    return _context.get_num_threads()


def thread_pool():
    """The ladle.ThreadPool of the current context."""
    return EvalContext.current().thread_pool._pool


def clear_cache():
    """Closes the graphs the current context built."""
    EvalContext.current().clear_cache()


def set_seed(seed):
    _random.set_seed(seed)


def get_seed():
    return _random.get_seed()


def next_seed():
    """A draw of the default generator (the seed ladle.torchvision gives a Compose)."""
    return _random.get_default_rng()._next_seed()


def draws_random(op_name):
    """Whether the operator draws random numbers: its schema says so."""
    return "random" in fn.op_schemas()[op_name]["flags"]


# --- the cache of built graphs ------------------------------------------------------

class _Ticket:
    """One fed iteration of an entry: its outputs once run() handed them out."""

    __slots__ = ("done", "value", "error", "dropped")

    def __init__(self):
        self.done, self.value, self.error = False, None, None
        self.dropped = []  # on_error="skip": [(index in the feeds, error)]


class _Entry:
    """One built pipeline of a context. Calls feed it (submit) and take their
    outputs (collect) separately: the outputs come in feeding order, so a
    call's ticket is answered once the tickets fed before it are. Feeding
    never waits for the executor, so independent calls (EvalMode.deferred)
    keep several pipelines busy at once."""

    __slots__ = ("pipe", "handle", "feed_lock", "run_lock", "random", "fed", "dead", "limit", "skipped")

    def __init__(self, pipe, random):
        self.pipe = pipe
        self.handle = pipe._handle()
        self.feed_lock = threading.Lock()  # feeds and the ticket queue
        self.run_lock = threading.Lock()  # run(): one taker at a time, in feeding order
        self.random = random
        self.fed = collections.deque()  # tickets fed, not answered yet
        self.dead = False  # left the cache after a failure: closed once its tickets are answered
        self.limit = _PREFETCH + 8  # the batches a source may hold untaken (ladle_pipeline_feed)
        self.skipped = 0  # on_error="skip": the pipeline's skips already taken

    def submit(self, feeds, seed):
        if len(self.fed) >= self.limit:  # the oldest must be taken before more fit
            self.collect(self.fed[0], raise_error=False)
        ticket = _Ticket()
        handle = self.handle
        with self.feed_lock:
            for name, tl in feeds:
                handle.feed(name, tl._batch)
            if self.random:
                handle.feed_seed(seed)
            self.fed.append(ticket)
        return ticket

    def collect(self, ticket, raise_error=True):
        with self.run_lock:
            while not ticket.done:
                with self.feed_lock:
                    head = self.fed.popleft()
                try:
                    head.value = tuple(TensorList(b) for b in self.handle.run())
                    head.dropped = self._dropped()
                except BaseException as e:
                    head.error = self._chained(e)
                head.done = True
            if self.dead and not self.fed:
                self.pipe.close()
        if ticket.error is not None and raise_error:
            raise ticket.error
        return ticket.value

    def _dropped(self):
        """The samples the last run dropped (on_error="skip"): [(index in the feeds, error)]."""
        dropped = []
        if self.pipe._skip:
            # Fed samples are numbered iteration x batch_size + slot (from 0 in
            # each iteration with fed seeds); the slot is the index in the feeds.
            for s in self.handle.skipped(self.skipped):
                first = 0 if self.random else s["iteration"] * self.pipe.batch_size
                dropped.append((s["record"] - first, s["error"]))
                self.skipped += 1
        return dropped

    def _chained(self, e):
        """A failed run's error, chained to the Python function's exception that caused it."""
        if isinstance(e, _ladle.Error) and self.pipe._callback_errors:
            from .._python_function import chain_error

            return chain_error(e, self.pipe._callback_errors)
        return e

    def run(self, feeds, seed):
        return self.collect(self.submit(feeds, seed))

    def close(self):
        with self.run_lock:
            self.pipe.close()


_PREFETCH = 2  # iterations an entry's executor may prepare ahead of the takers


def _bucket(n):
    """Batch sizes share a pipeline up to the next power of two."""
    b = 1
    while b < n:
        b *= 2
    return b


def _gpu_device_id(ctx=None):
    """The GPU of `ctx` (default: the current context): its device_id, else LOCAL_RANK's or 0."""
    ctx = ctx or EvalContext.current()
    if ctx.device_id is not None:
        return ctx.device_id
    d = _default_device(-1)
    return d if d >= 0 else 0


def execute(key, build, feeds, batch_size, on_gpu, random, seed=None, ctx=None):
    """Runs the graph that `build(pipe)` defines (inside `with pipe:`; it
    returns the outputs) on `feeds` [(source name, TensorList)], with `seed`
    as the iteration's seed when `random`. The pipeline is kept in the
    context under `key`. Returns the tuple of TensorLists."""
    entry, ticket = submit(key, build, feeds, batch_size, on_gpu, random, seed, ctx)
    return collect(entry, ticket, key, ctx)


def submit(key, build, feeds, batch_size, on_gpu, random, seed=None, ctx=None):
    """Feeds the call to the cached graph (built now if needed); returns
    (entry, ticket) for collect()."""
    ctx = ctx or EvalContext.current()
    cache = ctx._cache
    with ctx._lock:
        entry = cache.get(key)
        if entry is not None:
            cache.move_to_end(key)
    if entry is None:
        entry = _Entry(_make(ctx, build, batch_size, on_gpu, random), random)
        evicted = []
        with ctx._lock:
            cache[key] = entry
            while len(cache) > CACHE_SIZE:
                evicted.append(cache.popitem(last=False)[1])
        for e in evicted:
            e.dead = True
            if not e.fed:
                e.close()
    try:
        return entry, entry.submit(feeds, seed)
    except BaseException:
        _drop(ctx, key, entry)  # a feed that failed half-way leaves the graph out of step
        raise


def collect(entry, ticket, key, ctx=None):
    """The outputs of a submitted call (waits for its iteration)."""
    try:
        return entry.collect(ticket)
    except BaseException:
        # A failed iteration may leave data fed but not consumed: the graph is not reused.
        _drop(ctx or EvalContext.current(), key, entry)
        raise


def _drop(ctx, key, entry):
    with ctx._lock:
        if ctx._cache.get(key) is entry:
            del ctx._cache[key]
    entry.dead = True
    if not entry.fed:
        entry.close()


def _make(ctx, build, batch_size, on_gpu, random):
    # on_error="skip" without a budget: the context counts the skips of all its graphs.
    pipe = Pipeline(batch_size=batch_size, device_id=_gpu_device_id(ctx) if on_gpu else None, seed=0,
                    prefetch_queue_depth=_PREFETCH, thread_pool=ctx.thread_pool._pool,
                    on_error=ctx.on_error)
    pipe._fed_seeds = random
    try:
        with pipe:
            outputs = build(pipe)
        if isinstance(outputs, DataNode):
            outputs = (outputs,)
        pipe.set_outputs(*outputs)
        pipe.build()
    except BaseException:
        pipe.close()
        raise
    return pipe


# --- one operator call ----------------------------------------------------------

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
    tl = b._tl
    return (tl.dtype, tl._batch.ndim, tl._batch.layout or None, tl.device)


def _is_sample_like(x):
    """A single sample given to an operator: a Tensor, NumPy array, torch tensor, PIL image."""
    if isinstance(x, Tensor):
        return True
    if isinstance(x, (Batch, TensorList, list, tuple)):
        return False
    return isinstance(x, np.ndarray) or _is_torch(x) or hasattr(x, "getbands")


def _check_input(x, public, i):
    if isinstance(x, DataNode):
        raise _ladle.InvalidArgumentError(f"{public}: input {i} is a DataNode; ladle.dynamic takes data, "
                                          "not pipeline graph nodes (use ladle.fn inside a pipeline)")
    if not (_is_sample_like(x) or isinstance(x, (Batch, TensorList, list, tuple))):
        raise _ladle.InvalidArgumentError(f"{public}: input {i} of type {type(x).__name__} is not data "
                                          "(give a Batch, a Tensor, an array or a list of arrays)")


def _input_batch(x):
    if isinstance(x, Batch):
        return x
    if _is_sample_like(x):
        return as_batch(x if isinstance(x, Tensor) else _tensor_of(x))
    return as_batch(x)


def _tensor_of(x):
    from ._data import tensor

    return tensor(x)


def _ndim(value):
    if _is_torch(value):
        return np.ndim(_host_array(value))
    try:
        return np.ndim(value)
    except ValueError:  # a ragged list of lists
        return 2


def _arg_batch(value, public, key, rank=0):
    """A per-sample argument as a CPU Batch of scalars (given batches keep their
    dtype; Python values become int32 or float32); rank 1: of flat lists (list
    arguments; a [2, 3] matrix counts as its 6 values)."""
    if isinstance(value, Tensor):
        value = value._as_batch()
    if isinstance(value, (Batch, TensorList)):
        return as_batch(value).cpu()  # per-sample values of any numeric dtype
    arrays = [_host_array(v) for v in value]
    if rank == 1:
        arrays = [a.reshape(-1) for a in arrays]
    elif any(a.size != 1 for a in arrays):
        raise _ladle.InvalidArgumentError(f"{public}: argument {key!r}: per-sample values must be scalars")
    else:
        arrays = [a.reshape(()) for a in arrays]
    if all(a.dtype.kind in "iub" for a in arrays):
        arrays = [a.astype(np.int32) for a in arrays]
    else:
        arrays = [a.astype(np.float32) for a in arrays]
    return batch(arrays)


def _normal_device(public, device):
    if device is None:
        return None
    if not isinstance(device, str):
        from ._context import device as _device

        device = _device(device).device_type
    device = device.lower().split(":")[0]
    if device == "cuda":
        device = "gpu"
    if device not in ("cpu", "gpu", "mixed"):
        raise _ladle.InvalidArgumentError(f"{public}: device={device!r}: use 'cpu' or 'gpu'")
    return device


def _resolve_device(public, schema, device, inputs_on_gpu):
    devices = schema["devices"]
    if device is None:
        device = "gpu" if inputs_on_gpu else "cpu"
    if device == "cpu":
        if "cpu" not in devices:
            raise _ladle.InvalidArgumentError(f"{public}: device='cpu' is not supported; it runs on: {', '.join(devices)}")
        if inputs_on_gpu:
            raise _ladle.InvalidArgumentError(f"{public}: device='cpu' cannot take inputs in GPU memory; "
                                              "use device='gpu' or move the inputs with .cpu()")
        return "cpu"
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


@functools.lru_cache(maxsize=None)
def _cuda_built():
    from .. import build_info

    return bool(build_info().get("cuda_compiled"))


def _cuda_devices():
    from .. import build_info

    return int(build_info().get("cuda_devices", 0) or 0)


class OpInfo:
    """What a call needs from an operator's schema, worked out once."""

    def __init__(self, schema, public):
        self.schema = schema
        self.name = schema["name"]
        self.public = public
        self.specs = arg_specs(schema)
        for key, spec in fn._COMMON_ARGS.items():  # seed and DALI's hints, as fn takes them
            self.specs.setdefault(key, spec)
        self.lo, self.hi = schema["min_inputs"], schema["max_inputs"]
        # Arguments fn's Python wrapper adds (fn.python_function's function): constants here too.
        self.python_args = dict(getattr(_fn_op(self.name), "python_args", None) or {})
        for key, doc in self.python_args.items():
            self.specs.setdefault(key, {"name": key, "type": "python", "per_sample": False, "required": True,
                                        "doc": doc})
        self.random = "random" in schema["flags"]
        self.callback = "callback" in schema["flags"]  # outputs: as many as its num_outputs argument says
        self.num_outputs = schema["num_outputs"]
        self.valid = ", ".join(self.specs) or "none"


class _Call:
    """One call's arguments, checked; submit() feeds the work to its graph
    and collect() takes the outputs (run() both: now, or in deferred mode
    feeding at once or on the context's worker once the inputs exist)."""

    __slots__ = ("info", "inputs", "constants", "per_sample", "batch_size", "device", "seed", "ctx", "names", "rng",
                 "op_device", "rng_stream")

    def submit(self):
        info, public = self.info, self.info.public
        batches = [_input_batch(x) for x in self.inputs]
        per_sample = {k: _arg_batch(v, public, k, r) for k, (v, r) in self.per_sample.items()}
        sizes = {len(b) for b in batches} | {len(b) for b in per_sample.values()}
        if self.batch_size is not None:
            sizes.add(self.batch_size)
        if len(sizes) > 1:
            raise _ladle.InvalidArgumentError(f"{public}: the inputs, per-sample arguments and batch_size "
                                              f"disagree on the number of samples: {sorted(sizes)}")
        n = sizes.pop() if sizes else 1
        on_gpu = any(b.device == "gpu" for b in batches)
        op_device = _resolve_device(public, info.schema, self.device, on_gpu)
        host_from = info.schema.get("host_inputs_from", 0)
        if op_device == "mixed":
            batches = [b.cpu() for b in batches]
        elif host_from:  # inputs the operator reads on the host (slice's anchor, filter's kernel)
            batches = [b.cpu() if i >= host_from else b for i, b in enumerate(batches)]
        in_sigs = [_sig(b) for b in batches]
        arg_sigs = {k: _sig(b) for k, b in per_sample.items()}
        self.op_device = op_device
        # The operator's random stream in the graph below: the computing nodes before it.
        self.rng_stream = (len(in_sigs) + len(arg_sigs)) * _SOURCE_COMPUTES
        pipe_batch = _bucket(n) if (in_sigs or arg_sigs) else n
        constants = self.constants
        key = (info.name, op_device, _hashable(constants), tuple(in_sigs), _hashable(arg_sigs), pipe_batch,
               self.ctx.on_error)

        def build(pipe):
            nodes = []
            for i, sig in enumerate(in_sigs):
                node = fn.external_source(name=f"input{i}", device=sig[3], dtype=sig[0], ndim=sig[1],
                                          layout=sig[2])
                if op_device == "gpu" and sig[3] == "cpu" and not (host_from and i >= host_from):
                    node = node.gpu()
                nodes.append(node)
            args = dict(constants)
            for k, sig in arg_sigs.items():
                args[k] = fn.external_source(name=f"arg_{k}", device="cpu", dtype=sig[0], ndim=sig[1],
                                             layout=sig[2])
            return _fn_op(info.name)(*nodes, device=op_device, **args)

        feeds = [(f"input{i}", b._tl) for i, b in enumerate(batches)]
        feeds += [(f"arg_{k}", b._tl) for k, b in per_sample.items()]
        try:
            entry, ticket = submit(key, build, feeds, pipe_batch, op_device != "cpu", info.random, self.seed,
                                   self.ctx)
        except _ladle.Error as e:
            raise _renamed(e, info, batches) from None
        return entry, ticket, key, batches

    def run(self):
        entry, ticket, key, batches = self.submit()
        return self.collect(entry, ticket, key, batches)

    def collect(self, entry, ticket, key, batches):
        info = self.info
        try:
            outs = collect(entry, ticket, key, self.ctx)
        except _ladle.Error as e:
            error = _renamed(e, info, batches)
            raise error from error.__cause__  # a Python function's exception, or None
        if ticket.dropped:
            self.ctx._record_skips(info.public, [(i, _origin_of(batches, i), _renamed_text(error, info))
                                                 for i, error in ticket.dropped])
        return outs

    def ready(self):
        """Whether the inputs are data now (no deferred result among them)."""
        values = list(self.inputs) + [v for v, _ in self.per_sample.values()]
        return not any(getattr(v, "_future", None) is not None for v in values)


_SOURCE_COMPUTES = int("moves_data" not in fn.op_schemas()["external_source"]["flags"])


def call_operator(info, inputs, device=None, batch_size=None, kwargs=None, rng=None):
    """Runs an operator (an OpInfo) as the current EvalMode says. Returns a
    Batch, a Tensor or a tuple of them."""
    public = info.public
    if not info.lo <= len(inputs) <= info.hi:
        expected = str(info.lo) if info.lo == info.hi else f"{info.lo} to {info.hi}"
        raise _ladle.InvalidArgumentError(f"{public}: takes {expected} input(s), got {len(inputs)}")
    specs = info.specs
    kwargs = renamed_args(public, specs, kwargs or {})
    constants, per_sample = {}, {}
    batch_valued = False
    for key, value in (kwargs or {}).items():
        spec = specs.get(key)
        if spec is None:
            raise _ladle.InvalidArgumentError(f"{public}: unknown argument {key!r}; valid arguments: {info.valid}")
        if value is None:
            continue
        # A list argument's constant is itself a list (matrix=[...]): per-sample
        # values are then one list per sample (a list of lists, or an [N, k] array).
        rank = 1 if spec["type"].startswith("list") else 0
        is_data = isinstance(value, (Batch, Tensor, TensorList)) or (
            spec["per_sample"] and (isinstance(value, (list, tuple, np.ndarray)) or _is_torch(value))
            and _ndim(value) > rank)
        if is_data:
            if not spec["per_sample"]:
                raise _ladle.InvalidArgumentError(f"{public}: argument {key!r} must be a constant; "
                                                  "it cannot be a Batch (per-sample values)")
            per_sample[key] = (value, rank)
            batch_valued = batch_valued or not isinstance(value, Tensor)
        else:
            if _is_torch(value):
                value = _host_array(value)
            if isinstance(value, np.ndarray):
                value = value.tolist()
            constants[key] = value
    num_outputs = info.num_outputs
    if info.callback:
        if "function" not in constants:
            raise _ladle.InvalidArgumentError(f"{public}: argument 'function' is required (a Python callable)")
        num_outputs = constants.get("num_outputs", 1)
        if isinstance(num_outputs, bool) or not isinstance(num_outputs, int) or num_outputs < 1:
            raise _ladle.InvalidArgumentError(f"{public}: num_outputs={num_outputs!r}: a call returns its outputs, "
                                              "so it needs at least 1")
    for i, x in enumerate(inputs):
        _check_input(x, public, i)
    if batch_size is not None:
        batch_size = int(batch_size)
        if batch_size < 1:
            raise _ladle.InvalidArgumentError(f"{public}: batch_size must be >= 1, got {batch_size}")
    call = _Call()
    call.info, call.inputs, call.constants, call.per_sample = info, inputs, constants, per_sample
    call.batch_size, call.device = batch_size, _normal_device(public, device)
    call.ctx = EvalContext.current()
    if info.random:
        call.rng = _random.resolve(rng, public)
        call.seed = call.rng._next_seed()  # in program order, whatever runs when
    else:
        if rng is not None:
            raise _ladle.InvalidArgumentError(f"{public}: argument 'rng': this operator draws no random numbers")
        call.seed = call.rng = None
    # A single sample in gives a single sample out; a batch in, a batch out.
    single = batch_size is None and not batch_valued and all(_is_sample_like(x) for x in inputs)
    loop = _capture.active()
    if loop is not None:
        results = loop.intercept(call, single)
        if results is not None:
            return results[0] if len(results) == 1 else results
    mode = EvalMode.current()
    if mode is EvalMode.deferred and num_outputs >= 1:
        future = call.ctx._submit_call(call)
        if single:
            results = tuple(Tensor._wrap(None, 0, (future, k)) for k in range(num_outputs))
        else:
            results = tuple(Batch._wrap(None, (future, k)) for k in range(num_outputs))
    else:
        outs = call.run()
        if mode is EvalMode.sync_full:
            _synchronize(outs)
        results = tuple(Tensor._wrap(tl, 0) if single else Batch._wrap(tl) for tl in outs)
    return results[0] if len(results) == 1 else results


def _synchronize(outs):
    """Waits for the GPU work that wrote `outs` (EvalMode.sync_full)."""
    if any(tl.device == "gpu" for tl in outs):
        import torch

        for tl in outs:
            if tl.device == "gpu" and tl.is_dense_tensor():
                torch.from_dlpack(tl)  # orders torch's current stream after the batch
        torch.cuda.current_stream().synchronize()


def _renamed_text(text, info):
    """An error message with ladle.dynamic's name of the operator (the
    pipeline API's fn.<name> replaced, or put in front) and the internal
    pipeline's iteration left out."""
    text = text.replace(f"fn.{info.name}", info.public)
    text = re.sub(r"sample (\d+) of iteration \d+(?: \(record \d+, epoch \d+, \"[^\"]*\"\))?: (?:\(unnamed\): )?",
                  r"sample \1: ", text)
    text = re.sub(r"^iteration \d+: (?:" + re.escape(info.name) + ": )?", "", text)
    if info.public not in text:
        text = f"{info.public}: {text}"
    return text


def _renamed(e, info, batches=()):
    """The error renamed (_renamed_text), with the file a failing sample came
    from when a reader made it."""
    text = _renamed_text(str(e), info)
    m = re.search(r"sample (\d+)", text)
    if m:
        origin = _origin_of(batches, int(m.group(1)))
        if origin:
            text += f" (the sample came from {origin})"
    try:
        new = type(e)(text)
    except Exception:
        return e
    new.__cause__ = e.__cause__  # a Python function's exception stays chained
    return new


def _origin_of(batches, i):
    """The file sample i of the call's inputs was read from, if a reader made one of them."""
    for b in batches:
        origin = getattr(b, "_origins", None)
        if origin is not None and i < len(b):
            name = origin(i)
            if name:
                return name
    return None


def to_gpu(b, device_id=None):
    """A CPU Batch copied to the GPU (`device_id`, default the context's)."""
    if not _cuda_built():
        raise _ladle.NotAvailableError("Batch.gpu(): this ladle was built without CUDA")
    sig = _sig(b)
    n = len(b)

    def build(pipe):
        return fn.external_source(name="input0", device="cpu", dtype=sig[0], ndim=sig[1], layout=sig[2]).gpu()

    ctx = EvalContext.current()
    if device_id is not None and device_id != _gpu_device_id(ctx):
        ctx = EvalContext(device_id=device_id, thread_pool=ctx.thread_pool)  # a one-off graph on that GPU
    outs = execute(("transfer.to_gpu", sig, _bucket(n)), build, [("input0", b._tl)], _bucket(n), True, False,
                   ctx=ctx)
    return Batch._wrap(outs[0])
