"""Capture mode of ladle.dynamic (DALI 2.3's ``reader.next_epoch(batch_size,
capture=True)``): the first step of a reader-driven loop runs eagerly and its
operator calls are recorded; the recorded calls then become one ladle
Pipeline (external sources fed with the reader's batches -> the operators),
which runs the later steps ahead of the loop (prefetching, one graph, GPU
fusion), and each call of the body is answered with that step's output.

Results equal the eager ones: a random call draws its seed from its RNG in
program order as an eager call does, the pipeline is fed the same seeds
(drawn ahead from the RNG's counter: the traced step tells how many draws a
step makes), and each random operator draws as its eager graph would
(ladle_pipeline_set_node_seed). A call is matched by its call site (code and
bytecode offset of the caller, and how often that site ran in the step),
operator, device, constant arguments and inputs (the same outputs of the same
step); a call that does not match runs eagerly (the fallback: its inputs are
real data), and so do calls whose inputs the capture does not know (data made
in the body). A random call that does not match, or a step that draws a
different number of seeds than the traced one, would give other numbers than
eager mode: that raises CaptureError. Results that only feed other captured
calls are not pipeline outputs (so the graph can fuse them); if the body reads
one, it is computed eagerly then, with the same bytes."""

import collections
import sys
import threading
import warnings

from .. import _ladle
from .. import fn
from ..pipeline import Pipeline
from ..tensors import TensorList
from . import _random


class CaptureError(_ladle.StateError):
    """The loop body of a capture=True loop did something the captured graph cannot repeat."""


_local = threading.local()
_PACKAGE = __name__.rsplit(".", 1)[0]  # "ladle.dynamic"
_PREFETCH = 2


def active():
    """The capture loop whose body runs on this thread now, or None."""
    return getattr(_local, "loop", None)


def _call_site():
    """(code, bytecode offset) of the first caller outside ladle.dynamic."""
    f = sys._getframe(2)
    while f is not None and f.f_globals.get("__name__", "").startswith(_PACKAGE):
        f = f.f_back
    return (f.f_code, f.f_lasti) if f is not None else None


def _same(a, b):
    try:
        r = a == b
        return bool(r) if isinstance(r, bool) else bool(all(r))
    except Exception:
        return False


class _Node:
    """One recorded call: its operator, device, constants and where its inputs come from."""

    __slots__ = ("info", "device", "op_device", "constants", "inputs", "per_sample", "batch_size", "rng",
                 "offset", "slot", "stream", "num_outputs", "outputs_at", "on_gpu")


class _Recompute:
    """A captured result the pipeline does not output: computed eagerly when read."""

    __slots__ = ("_run", "_value")

    def __init__(self, run):
        self._run, self._value = run, None

    def done(self):
        return self._value is not None

    def result(self):
        if self._value is None:
            self._value = self._run()
        return self._value


class CaptureLoop:
    """The capture state of one reader loop (TRACING -> CAPTURED, or DISABLED)."""

    def __init__(self, reader, batch_size, ctx):
        self.reader, self.batch_size, self.ctx = reader, batch_size, ctx
        self.state = "tracing"
        self.nodes = []
        self.sites = {}  # (call site, occurrence) -> node index
        self.source_sigs = None
        self.rngs = {}  # RNG -> draws at the start of the traced step
        self.periods = {}
        self.pipe = None
        self.step = 0
        self._seen = collections.Counter()
        self._values = None  # this step's values: {(node, k): TensorList or Batch}

    # --- the body's calls --------------------------------------------------

    def intercept(self, call, single):
        """The results of `call` (an _exec._Call with its seed drawn), or None to run it as usual."""
        if single or self.state == "disabled":
            return None
        site = _call_site()
        self._seen[site] += 1
        key = (site, self._seen[site])
        if self.state == "tracing":
            return self._trace(call, key)
        return self._replay(call, key)

    def _ref(self, x):
        c = getattr(x, "_capture", None)
        if c is not None and c[0] is self and c[1] == self.step:
            return c[2]
        return None

    def _trace(self, call, key):
        from ._exec import _Call  # noqa: F401 (the type of call)

        info = call.info
        if call.seed is not None:
            rng = call.rng
            self.rngs.setdefault(rng, rng._draws - 1)
        outs = call.run()
        node = _Node()
        refs = [self._ref(x) for x in call.inputs]
        per_sample = {}
        for k, (v, rank) in call.per_sample.items():
            r = self._ref(v)
            if r is None:
                refs.append(None)
            per_sample[k] = (r, rank)
        capturable = (key[0] is not None and key not in self.sites and all(r is not None for r in refs)
                      and "stateful" not in info.schema["flags"] and len(outs) > 0
                      and all(len(tl) == self._step_size for tl in outs))
        if capturable:
            # Per-sample arguments are read on the host: a GPU one cannot be wired as it is.
            capturable = all(self._device_of(r) == "cpu" for r, _ in per_sample.values())
        if not capturable:
            return None if outs is None else self._plain(outs)
        node.info, node.device, node.constants = info, call.device, call.constants
        node.inputs = refs[:len(call.inputs)]
        # batch_size= of the step's size (random ops without inputs) follows the step (a smaller last batch).
        node.per_sample = per_sample
        node.batch_size = "step" if call.batch_size == self._step_size else call.batch_size
        node.on_gpu = any(tl.device == "gpu" for tl in outs)
        node.op_device = call.op_device
        node.num_outputs = len(outs)
        node.rng = call.rng if call.seed is not None else None
        node.offset = (call.rng._draws - 1 - self.rngs[call.rng]) if node.rng is not None else None
        node.slot = None
        node.stream = call.rng_stream
        index = len(self.nodes)
        self.nodes.append(node)
        self.sites[key] = index
        self._values.update({(index, k): tl for k, tl in enumerate(outs)})
        return tuple(self._tag(tl, (index, k)) for k, tl in enumerate(outs))

    @staticmethod
    def _plain(outs):
        from ._data import Batch

        return tuple(Batch._wrap(tl) for tl in outs)

    def _tag(self, tl, ref, future=None):
        from ._data import Batch

        b = Batch._wrap(tl, future)
        b._capture = (self, self.step, ref)
        return b

    def _device_of(self, ref):
        node, k = ref
        if node < 0:
            return "cpu"
        return "gpu" if self.nodes[node].on_gpu else "cpu"

    def _replay(self, call, key):
        index = self.sites.get(key)
        node = self.nodes[index] if index is not None else None
        ok = (node is not None and node.info is call.info and node.device == call.device
              and call.batch_size == (self._step_size if node.batch_size == "step" else node.batch_size)
              and len(call.inputs) == len(node.inputs)
              and all(self._ref(x) == r for x, r in zip(call.inputs, node.inputs))
              and set(call.constants) == set(node.constants)
              and all(_same(call.constants[k], v) for k, v in node.constants.items())
              and set(call.per_sample) == set(node.per_sample)
              and all(self._ref(v) == node.per_sample[k][0] for k, (v, _) in call.per_sample.items()))
        if node is not None and node.rng is not None:
            expected = _random._mix(node.rng._seed, self._draw_index(node, self.step))
            if not ok or call.rng is not node.rng or call.seed != expected:
                raise CaptureError(
                    f"{call.info.public}: this random call differs from the traced first step of the capture=True "
                    "loop (its arguments, inputs or random generator, or the number of random draws before it); its "
                    "numbers would differ from eager mode. Use next_epoch(capture=False) for this loop")
        elif call.seed is not None:
            raise CaptureError(
                f"{call.info.public}: a random call the traced first step of the capture=True loop did not make; "
                "the captured graph drew its numbers ahead, so this one would differ from eager mode. Use "
                "next_epoch(capture=False) for this loop")
        if not ok:
            return None  # the eager fallback: it runs on real data
        return tuple(self._tag(*self._value(index, k)) for k in range(node.num_outputs))

    def _value(self, index, k, values=None, step=None):
        """(TensorList or None, ref, future or None) of output k of node `index` in this step (or `step`,
        whose values are `values`)."""
        values = self._values if values is None else values
        step = self.step if step is None else step
        v = values.get((index, k))
        if isinstance(v, TensorList):
            return v, (index, k), None
        future = values.get(("recompute", index))
        if future is None:
            future = values[("recompute", index)] = _Recompute(lambda: self._recompute(index, step, values))
        return None, (index, k), (future, k)

    def _recompute(self, index, step, values):
        """Node `index`'s outputs in `step`, by an eager call on that step's inputs."""
        from ._exec import _Call, EvalContext

        node = self.nodes[index]
        call = _Call()
        call.info, call.constants, call.device = node.info, node.constants, node.device
        call.batch_size = len(values[(-1, 0)]) if node.batch_size == "step" else node.batch_size
        call.inputs = [self._input_batch(r, step, values) for r in node.inputs]
        call.per_sample = {k: (self._input_batch(r, step, values), rank) for k, (r, rank) in node.per_sample.items()}
        call.ctx = self.ctx or EvalContext.current()
        call.rng = node.rng
        call.seed = _random._mix(node.rng._seed, self._draw_index(node, step)) if node.rng is not None else None
        return call.run()

    def _input_batch(self, ref, step, values):
        tl, ref, future = self._value(*ref, values, step) if ref[0] >= 0 else (values[ref], ref, None)
        return self._tag(tl, ref, future)

    def _draw_index(self, node, step):
        return self.rngs[node.rng] + step * self.periods[node.rng] + node.offset

    # --- the loop -------------------------------------------------------------------

    def _begin(self, batches):
        self._seen.clear()
        self._step_size = len(batches[0])
        self._values = {(-1, k): b._tl for k, b in enumerate(batches)}
        for k, b in enumerate(batches):
            b._capture = (self, self.step, (-1, k))

    def _end_trace(self):
        self.periods = {rng: rng._draws - start for rng, start in self.rngs.items()}
        if not self.nodes:
            warnings.warn("next_epoch(capture=True): the loop body made no call that can be captured; it runs "
                          "eagerly", stacklevel=3)
            self.state = "disabled"
            return
        try:
            self._build()
        except _ladle.Error as e:
            warnings.warn(f"next_epoch(capture=True): the traced loop body does not build as one graph ({e}); it "
                          "runs eagerly", stacklevel=3)
            self.state = "disabled"
            return
        self.state = "captured"

    def _check_draws(self):
        """After step `self.step`: each generator must have made the traced step's draws."""
        for rng, start in self.rngs.items():
            if rng._draws != start + (self.step + 1) * self.periods[rng]:
                raise CaptureError(
                    f"the body of the capture=True loop drew {rng._draws - start - self.step * self.periods[rng]} "
                    f"numbers from a random generator in step {self.step}, the traced first step "
                    f"{self.periods[rng]}; captured results would differ from eager mode. Use capture=False")

    def _build(self):
        from ._exec import _fn_op, _gpu_device_id

        used = {r for n in self.nodes for r in n.inputs} | {r for n in self.nodes for r, _ in n.per_sample.values()}
        randoms = [n for n in self.nodes if n.rng is not None]
        for slot, n in enumerate(randoms):
            n.slot = slot
        on_gpu = any(n.op_device != "cpu" for n in self.nodes)
        pipe = Pipeline(batch_size=self.batch_size, device_id=_gpu_device_id(self.ctx) if on_gpu else None, seed=0,
                        prefetch_queue_depth=_PREFETCH, thread_pool=self.ctx.thread_pool._pool)
        pipe._fed_seeds = len(randoms)
        try:
            with pipe:
                values = {}
                for k, (dtype, ndim, layout) in enumerate(self.source_sigs):
                    values[(-1, k)] = fn.external_source(name=f"source{k}", device="cpu", dtype=dtype, ndim=ndim,
                                                         layout=layout)
                outputs = []
                for index, n in enumerate(self.nodes):
                    ins = [values[r].gpu() if n.op_device == "gpu" and self._device_of(r) == "cpu" else values[r]
                           for r in n.inputs]
                    args = dict(n.constants)
                    args.update({k: values[r] for k, (r, _) in n.per_sample.items()})
                    outs = _fn_op(n.info.name)(*ins, device=n.op_device, **args)
                    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
                    if n.slot is not None:
                        pipe._handle().set_node_seed(outs[0]._id, n.slot, n.stream)
                    n.outputs_at = []
                    for k, o in enumerate(outs):
                        values[(index, k)] = o
                        if (index, k) not in used:
                            n.outputs_at.append((k, len(outputs)))
                            outputs.append(o)
                pipe.set_outputs(*outputs)
            pipe.build()
        except BaseException:
            pipe.close()
            raise
        self.pipe = pipe

    def _feed(self, step, batches):
        handle = self.pipe._handle()
        for k, b in enumerate(batches):
            handle.feed(f"source{k}", b._tl._batch)
        for n in sorted((n for n in self.nodes if n.slot is not None), key=lambda n: n.slot):
            handle.feed_seed(_random._mix(n.rng._seed, self._draw_index(n, step)))

    def _take(self):
        outs = [TensorList(b) for b in self.pipe._handle().run()]
        for index, n in enumerate(self.nodes):
            for k, at in n.outputs_at:
                self._values[(index, k)] = outs[at]

    def close(self):
        if self.pipe is not None:
            self.pipe.close()
            self.pipe = None

    def _enter(self):
        if getattr(_local, "loop", None) is not None:
            raise CaptureError("only one capture=True loop can run its body at a time on a thread")
        _local.loop = self

    @staticmethod
    def _leave():
        _local.loop = None


def captured_epoch(loop, batches):
    """Iterates `batches` (the reader's tuples of Batches for one epoch) with
    the loop body captured: yields what the reader yields."""
    it = iter(batches)
    if loop.state == "tracing":
        first = next(it, None)
        if first is None:
            return
        loop.source_sigs = [(b.dtype, b.ndim, b.layout or None) for b in _flat(first)]
        loop._begin(_flat(first))
        loop._enter()
        try:
            yield first
        except GeneratorExit:  # left during the traced step: the next epoch traces afresh
            loop.nodes, loop.sites, loop.rngs = [], {}, {}
            raise
        finally:
            loop._leave()
        loop._end_trace()
        loop.step = 1
    if loop.state != "captured":
        for item in it:
            yield item
        return
    if loop.pipe is None:
        loop._build()  # again, after a loop that was left with steps fed ahead
    ahead = collections.deque()
    fed_step = loop.step

    def top_up():
        nonlocal fed_step
        while len(ahead) < _PREFETCH + 1:
            item = next(it, None)
            if item is None:
                return
            loop._feed(fed_step, _flat(item))
            ahead.append(item)
            fed_step += 1

    reader = loop.reader
    try:
        top_up()
        while ahead:
            item = ahead.popleft()
            flat = _flat(item)
            loop._begin(flat)
            loop._take()
            top_up()
            reader._ahead = len(ahead)  # taken from the reader, not handed out yet (get_state)
            loop._enter()
            try:
                yield item
            except GeneratorExit:  # the loop was left after this step's body
                loop.step += 1
                raise
            finally:
                loop._leave()
            loop._check_draws()
            loop.step += 1
    finally:
        reader._ahead = 0
        if ahead:  # left early: the graph holds steps fed ahead; the reader took them
            loop.close()
            reader._given -= len(ahead)


def _flat(item):
    return tuple(item.values()) if isinstance(item, dict) else tuple(item)
