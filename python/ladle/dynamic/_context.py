"""Where and how ladle.dynamic calls run: EvalMode (when a call's work is
done), EvalContext (device, CUDA stream, thread pool, and the cache of built
graphs), ThreadPool and Device, with the names of DALI's dynamic mode."""

import collections
import enum
import logging
import os
import queue
import threading
import weakref

from .. import _ladle
from ..pipeline import ThreadPool as _PipelineThreadPool

_log = logging.getLogger("ladle")
CACHE_SIZE = 64  # built graphs kept per context; the least recently used one is closed beyond that


# --- evaluation modes ----------------------------------------------------------

class EvalMode(enum.Enum):
    """When the work of an operator call is done (a context manager:
    ``with ldd.EvalMode.deferred: ...``), from the least to the most
    synchronous, as in DALI:

    - ``deferred``: the call checks its arguments and returns at once. A
      call whose inputs are data is fed to its graph there and then (the
      graph's executor works on it while Python goes on); one that takes
      results not computed yet is queued on the context's worker thread,
      which feeds it, in call order, once they are. A result waits for its
      graph when its data is used (``.torch()``, ``np.asarray``, ``.shape``,
      ``evaluate()``, an operator taking it), so independent calls run side
      by side. Random calls draw their seeds in call order, so the bytes are
      eager mode's. Errors of the work (bad data) are raised there.
    - ``eager`` (``default``): the call returns when the host work is done;
      GPU work may still be queued on the context's stream (consumers are
      ordered after it through DLPack's stream protocol).
    - ``sync_cpu``: as eager in ladle (the host part of a call always ends
      before it returns in that mode).
    - ``sync_full``: also waits for the GPU work of the call.
    """

    deferred = 1
    eager = 2
    sync_cpu = 3
    sync_full = 4
    default = 2  # an alias of eager

    def __enter__(self):
        _tls().modes.append(self)
        return self

    def __exit__(self, *exc):
        _tls().modes.pop()

    @staticmethod
    def current():
        return _tls().modes[-1]


class _Local(threading.local):
    def __init__(self):
        self.modes = [EvalMode.default]
        self.contexts = []


_local = _Local()


def _tls():
    return _local


# --- devices and thread pools -------------------------------------------------

class Device:
    """A device: ``Device("cpu")``, ``Device("gpu", 0)`` or ``Device("gpu:1")``
    ("cuda" is accepted for "gpu")."""

    def __init__(self, name, device_id=None):
        name = str(name).lower()
        if ":" in name:
            name, _, index = name.partition(":")
            if device_id is not None and int(index) != device_id:
                raise _ladle.InvalidArgumentError(f"Device: {name}:{index} and device_id={device_id} disagree")
            device_id = int(index)
        if name == "cuda":
            name = "gpu"
        if name not in ("cpu", "gpu"):
            raise _ladle.InvalidArgumentError(f"Device: unknown device type {name!r}; use 'cpu' or 'gpu'")
        if name == "cpu":
            device_id = None
        elif device_id is None:
            device_id = 0
        self.device_type = name
        self.device_id = device_id

    def __str__(self):
        return self.device_type if self.device_id is None else f"{self.device_type}:{self.device_id}"

    def __repr__(self):
        return f"Device({self.device_type!r}, {self.device_id!r})"

    def __eq__(self, other):
        if isinstance(other, str):
            other = Device(other)
        return isinstance(other, Device) and (self.device_type, self.device_id) == (other.device_type,
                                                                                   other.device_id)

    def __hash__(self):
        return hash((self.device_type, self.device_id))


def device(obj, id=None):
    """A Device from "cpu", "gpu", "gpu:1", a torch.device or a Device."""
    if isinstance(obj, Device):
        return obj if id is None else Device(obj.device_type, id)
    if type(obj).__module__.startswith("torch"):  # torch.device
        return Device(obj.type, obj.index if id is None else id)
    return Device(obj, id)


def _default_num_threads():
    return min(4, os.cpu_count() or 1)


class ThreadPool:
    """The CPU worker threads that operators run their samples on.

    ``ThreadPool(num_threads=None, *, device_id=None)``: num_threads defaults
    to ``get_num_threads()``; device_id names the GPU the pool's work is for
    (an EvalContext checks that it agrees with its own)."""

    def __init__(self, num_threads=None, *, device_id=None):
        if num_threads is None:
            num_threads = get_num_threads()
        num_threads = int(num_threads)
        if num_threads < 1:
            raise _ladle.InvalidArgumentError(f"ThreadPool: need at least 1 thread, got {num_threads}")
        self._pool = _PipelineThreadPool(num_threads)
        self._device_id = device_id

    @property
    def num_threads(self):
        return self._pool.num_threads

    @property
    def device_id(self):
        return self._device_id

    def __repr__(self):
        return f"ladle.dynamic.ThreadPool(num_threads={self.num_threads}, device_id={self._device_id})"


_num_threads = None


def get_num_threads():
    """Threads of the default context's pool (default min(4, cores))."""
    return _num_threads or _default_num_threads()


def set_num_threads(n):
    """Threads of the default context's pool; its built graphs are closed and
    rebuilt on the next call."""
    n = int(n)
    if n < 1:
        raise _ladle.InvalidArgumentError(f"set_num_threads: need at least 1 thread, got {n}")
    global _num_threads
    _num_threads = n
    ctx = EvalContext._default_instance
    if ctx is not None:
        ctx._reset_pool(None)


# --- the deferred worker --------------------------------------------------------

class _Future:
    """The outputs of a queued call: a tuple of TensorLists, or an error."""

    __slots__ = ("_done", "_value", "_error")

    def __init__(self):
        self._done = threading.Event()
        self._value = self._error = None

    def set(self, value=None, error=None):
        self._value, self._error = value, error
        self._done.set()

    def done(self):
        return self._done.is_set()

    def result(self):
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value


class _CallFuture:
    """The outputs of a deferred operator call: fed to its graph at once when
    its inputs are data (the call's ticket), or by the context's worker once
    they are; result() takes them, waiting for that graph's iteration."""

    __slots__ = ("_attached", "_call", "_submitted", "_value", "_error")

    def __init__(self, call):
        self._attached = threading.Event()
        self._call, self._submitted, self._value, self._error = call, None, None, None

    def attach(self):
        try:
            self._submitted = self._call.submit()
        except BaseException as e:  # handed to whoever uses the result
            self._error = e
        self._attached.set()

    def done(self):
        if not self._attached.is_set():
            return False
        return self._error is not None or self._value is not None or self._submitted[1].done

    def result(self):
        self._attached.wait()
        if self._error is not None:
            raise self._error
        if self._value is None:
            try:
                self._value = self._call.collect(*self._submitted)
            except BaseException as e:
                self._error = e
                raise
            self._call = self._submitted = None
        return self._value


class _Worker:
    """One thread running queued calls in order (EvalMode.deferred)."""

    def __init__(self):
        self._queue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._main, name="ladle.dynamic worker", daemon=True)
        self._thread.start()

    def submit(self, work):
        future = _Future()
        self._queue.put((work, future))
        return future

    def _main(self):
        while True:
            item = self._queue.get()
            if item is None:
                return
            work, future = item
            try:
                future.set(work())
            except BaseException as e:  # handed to whoever uses the result
                future.set(error=e)
            del work, future, item

    def shutdown(self):
        self._queue.put(None)


# --- contexts ------------------------------------------------------------------------

class EvalContext:
    """What calls run with: ``device_id`` (the GPU of GPU operators),
    ``cuda_stream`` (the stream that GPU results are ordered for: ``.torch()``
    of a GPU result makes that stream wait for it), ``thread_pool`` (or
    ``num_threads`` for a new pool), and the graphs it built.

    ``with ldd.EvalContext(num_threads=8, device_id=0):`` makes it current for
    the thread; ``EvalContext.current()`` is the innermost one, or
    ``EvalContext.default()``. ``evaluate_all()`` waits for the calls queued
    in it (EvalMode.deferred). Each context keeps up to CACHE_SIZE built
    graphs; ``close()`` (or leaving the last reference) frees them.

    Bad data: with ``on_error="skip"`` (default ``"raise"``) a sample that an
    operator call of this context fails on with a data error (corrupt,
    truncated, unsupported, over a limit; never a wrong argument) is dropped
    from that call's result, which is smaller by it (what a pipeline fed by
    external sources does; a replacement would need the sample's other data,
    such as its label, replaced too). Each skip is logged once (logger
    "ladle") and listed by ``skipped_samples()`` with the index of the sample
    in the call's inputs, so that other batches can drop it too.
    ``max_skipped_samples=N`` (an int) bounds the skips of the context: past
    it the call raises LimitError listing the skipped samples. Read errors of
    a dynamic reader are the reader's own ``on_error`` (the slot takes the
    next good sample of its batch)."""

    _default_instance = None
    _default_lock = threading.Lock()

    def __init__(self, *, num_threads=None, device_id=None, cuda_stream=None, thread_pool=None, on_error="raise",
                 max_skipped_samples=None):
        if on_error not in ("raise", "skip"):
            raise _ladle.InvalidArgumentError(f"EvalContext: on_error={on_error!r}: use 'raise' or 'skip'")
        if max_skipped_samples is not None:
            if on_error != "skip":
                raise _ladle.InvalidArgumentError("EvalContext: max_skipped_samples needs on_error='skip'")
            if isinstance(max_skipped_samples, bool) or not isinstance(max_skipped_samples, int) \
                    or max_skipped_samples < 0:
                raise _ladle.InvalidArgumentError(
                    f"EvalContext: max_skipped_samples={max_skipped_samples!r}: give an int >= 0 (a context has "
                    "no epoch to take a fraction of)")
        if thread_pool is not None and num_threads is not None:
            raise _ladle.InvalidArgumentError("EvalContext: give thread_pool or num_threads, not both")
        if thread_pool is not None and not isinstance(thread_pool, ThreadPool):
            raise TypeError("EvalContext: thread_pool must be a ladle.dynamic.ThreadPool")
        if thread_pool is not None and device_id is not None and thread_pool.device_id not in (None, device_id):
            raise _ladle.InvalidArgumentError(f"EvalContext: device_id={device_id} but the thread pool is for "
                                              f"device {thread_pool.device_id}")
        self._device_id = None if device_id is None else int(device_id)
        self._cuda_stream = cuda_stream
        self._lock = threading.RLock()
        self._cache = collections.OrderedDict()  # key -> _exec entry
        self._own_threads = num_threads
        self._thread_pool = thread_pool
        self._worker = None
        self._pending = []  # futures of deferred calls not known to be done
        from . import checkpoint as _checkpoint

        self._checkpoint = _checkpoint.Checkpoint()
        self._on_error, self._max_skipped = on_error, max_skipped_samples
        self._skipped = []  # on_error="skip": the dropped samples, in the order found
        weakref.finalize(self, EvalContext._release, self._cache)

    @staticmethod
    def _release(cache):
        for e in list(cache.values()):
            e.close()
        cache.clear()

    # --- DALI's properties ------------------------------------------------------

    @property
    def device_id(self):
        """The GPU of this context's GPU operators (None: the default, GPU 0 or LOCAL_RANK)."""
        return self._device_id

    @property
    def cuda_stream(self):
        """The given stream, else the thread's current one (set_current_stream), else None."""
        if self._cuda_stream is not None:
            return self._cuda_stream
        from ._stream import get_current_stream

        return get_current_stream()

    @property
    def num_threads(self):
        return self.thread_pool.num_threads

    @property
    def thread_pool(self):
        with self._lock:
            if self._thread_pool is None:
                self._thread_pool = ThreadPool(self._own_threads or get_num_threads(), device_id=self._device_id)
            return self._thread_pool

    @property
    def checkpoint(self):
        """This context's Checkpoint (ldd.checkpoint.current() while it is current)."""
        return self._checkpoint

    def _reset_pool(self, pool):
        with self._lock:
            self._thread_pool = pool
            self.clear_cache()

    def clear_cache(self):
        """Closes the graphs this context built (they are built again when needed)."""
        with self._lock:
            entries = list(self._cache.values())
            self._cache.clear()
        for e in entries:
            e.close()

    close = clear_cache

    @property
    def on_error(self):
        return self._on_error

    def skipped_samples(self):
        """The samples that calls of this context dropped (on_error="skip"),
        in the order found: dicts with operator (its ladle.dynamic name),
        call (the context's count of calls that skipped, from 0), sample
        (its index in the call's inputs), name (the file it was read from,
        when a dynamic reader made the input, else "") and error."""
        with self._lock:
            return [dict(s) for s in self._skipped]

    def _record_skips(self, operator, found):
        """Logs and records the samples a call dropped ([(sample, name, error)]);
        raises LimitError past max_skipped_samples."""
        with self._lock:
            call = self._skipped[-1]["call"] + 1 if self._skipped else 0
            for sample, name, error in found:
                _log.warning("skipped a bad sample: %s (sample %d of a call of %s): %s", name or "(unnamed)",
                             sample, operator, error)
                self._skipped.append({"operator": operator, "call": call, "sample": sample, "name": name or "",
                                      "error": error})
            total = len(self._skipped)
            if self._max_skipped is None or total <= self._max_skipped:
                return
            listed = ", ".join(s["name"] or f"sample {s['sample']} of {s['operator']}" for s in self._skipped)
        raise _ladle.LimitError(f"{operator}: {total} bad samples skipped in this EvalContext, more than "
                                f"max_skipped_samples={self._max_skipped} allows: {listed}")

    # --- the current context -------------------------------------------------------

    @staticmethod
    def default():
        with EvalContext._default_lock:
            if EvalContext._default_instance is None:
                EvalContext._default_instance = EvalContext()
            return EvalContext._default_instance

    @staticmethod
    def current():
        stack = _tls().contexts
        return stack[-1] if stack else EvalContext.default()

    def __enter__(self):
        _tls().contexts.append(self)
        return self

    def __exit__(self, *exc):
        _tls().contexts.pop()

    # --- deferred work ----------------------------------------------------------------

    def _submit(self, work):
        with self._lock:
            if self._worker is None:
                self._worker = _Worker()
                weakref.finalize(self, self._worker.shutdown)
            future = self._worker.submit(work)
            self._pending = [f for f in self._pending if not f.done()]
            self._pending.append(future)
            return future

    def _submit_call(self, call):
        """Queues an operator call (EvalMode.deferred): fed now when its inputs
        are data, else by the worker, which waits for them (never for the
        call's own outputs, so independent calls run side by side)."""
        future = _CallFuture(call)
        if call.ready():
            future.attach()
            with self._lock:
                self._pending = [f for f in self._pending if not f.done()]
                self._pending.append(future)
        else:
            self._submit(future.attach)
            with self._lock:
                self._pending.append(future)
        return future

    def evaluate_all(self):
        """Waits for every call queued in this context; raises the first error."""
        with self._lock:
            pending, self._pending = self._pending, []
        first = None
        for f in pending:
            try:
                f.result()
            except Exception as e:
                first = first or e
        if first is not None:
            raise first

    def __repr__(self):
        return (f"ladle.dynamic.EvalContext(device_id={self._device_id}, "
                f"num_threads={self._own_threads or (self._thread_pool and self._thread_pool.num_threads)}"
                + (", on_error='skip')" if self._on_error == "skip" else ")"))


def _after_fork_in_child():
    """A forked child starts afresh: the parent's graphs, pools and worker
    threads stayed behind (their entries are dropped, not closed)."""
    global _local
    _local = _Local()
    ctx = EvalContext._default_instance
    EvalContext._default_instance = None
    EvalContext._default_lock = threading.Lock()
    if ctx is not None:
        ctx._cache.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
