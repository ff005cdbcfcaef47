"""external_source(parallel=True): sources run in worker processes (DALI's
py_num_workers and py_start_method on the Pipeline, prefetch_queue_depth on
the source).

Workers start when the pipeline is built, with fork (the default, as DALI)
or spawn (the source must then be picklable). Each computes whole batches
(batch=True callables get the BatchInfo or batch index; iterables and
generator functions run in one worker, which iterates them) or chunks of a
batch's samples (batch=False: one SampleInfo per sample, a batch's samples
split across the workers). Results travel through shared memory: the worker
writes the samples into a file under /dev/shm and sends its name, shapes and
dtypes down a pipe; the pipeline copies them into a batch and unlinks the
file. A source keeps prefetch_queue_depth batches in flight.

Errors: an exception in a worker fails run() with ladle.Error naming the
source and the worker, with the worker's traceback in the message; a worker
that dies (killed, crashed) fails run() naming the source, the worker's pid
and its exit code. A StopIteration of any sample ends the epoch (the batch is
dropped, as in DALI). close() (and garbage collection, and interpreter exit)
stops the workers, kills those that do not stop within a second and removes
every shared-memory file the pool made, also those of results never read.

Differences from DALI: the batch is copied once out of shared memory into
ladle's memory (DALI hands the shared memory to the pipeline); workers are
ordinary processes that exit when the pipeline's process does.
"""

import atexit
import collections
import glob
import itertools
import mmap
import os
import signal
import tempfile
import time
import traceback
import weakref
from multiprocessing import connection as _connection

import numpy as np

from . import _ladle, types

_SHM_DIR = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
_pool_ids = itertools.count(1)
_pools: "weakref.WeakSet[object]" = weakref.WeakSet()
_STOP_WAIT = 1.0  # seconds a worker gets to exit before it is killed


def _samples_of(item, batch):
    """The samples (NumPy arrays) of a source's item: a batch, or one sample."""
    def arr(x):
        if type(x).__module__.startswith("torch") and hasattr(x, "detach"):
            return x.detach().cpu().numpy()
        return np.asarray(x)

    if not batch:
        return [arr(item)]
    if isinstance(item, (list, tuple)):
        return [arr(x) for x in item]
    a = arr(item)
    if a.ndim < 1:
        raise TypeError("the source gave a 0-d array as a batch; a batch is a list of samples or an [N, ...] array")
    return list(a)


def _write(path, arrays):
    """The arrays into a new shared-memory file; returns their descriptions."""
    arrays = [np.ascontiguousarray(a) for a in arrays]
    descs, offset = [], 0
    for a in arrays:
        descs.append((a.dtype.str, a.shape, offset))
        offset += (a.nbytes + 63) // 64 * 64
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    try:
        if offset:
            os.ftruncate(fd, offset)
            with mmap.mmap(fd, offset) as m:
                for a, (_, _, off) in zip(arrays, descs):
                    m[off:off + a.nbytes] = a.tobytes() if a.dtype.hasobject else memoryview(a).cast("B")
    finally:
        os.close(fd)
    return descs, offset


def _read(path, descs, size):
    """The arrays in a shared-memory file, which is then removed."""
    try:
        if not size:
            return [np.empty(shape, np.dtype(dt)) for dt, shape, _ in descs]
        fd = os.open(path, os.O_RDONLY)
        try:
            m = mmap.mmap(fd, size, prot=mmap.PROT_READ)
        finally:
            os.close(fd)
        # Views of the mapping (it lives while they do): feeding copies them into the batch, the one copy.
        return [np.frombuffer(m, np.dtype(dt), int(np.prod(shape, dtype=np.int64)), off).reshape(shape)
                for dt, shape, off in descs]
    finally:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def _worker_main(index, conn, sources, prefix):
    """A worker: computes tasks until told to stop or the pipeline's process is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the pipeline's process's to handle
    parent = os.getppid()
    iterators = {}
    while True:
        try:
            if not conn.poll(0.5):
                if os.getppid() != parent:
                    break
                continue
            msg = conn.recv()
        except (EOFError, OSError):
            break
        if msg is None:
            break
        task, src, kind, arg = msg
        spec = sources[src]
        try:
            if kind == "reset":
                iterators.pop(src, None)
                continue
            if kind == "samples":
                arrays = [_samples_of(spec["source"](info), False)[0] for info in arg]
            elif kind == "batch":
                arrays = _samples_of(spec["source"](arg) if spec["takes_arg"] else spec["source"](), True)
            else:  # "iter": the next item of the source's iterator, kept in this worker
                it = iterators.get(src)
                if it is None:
                    it = iterators[src] = iter(spec["source"]() if spec["factory"] else spec["source"])
                try:
                    item = next(it)
                except StopIteration:
                    if spec["cycle"] not in (True, "quiet"):
                        raise
                    it = iterators[src] = iter(spec["source"]() if spec["factory"] else spec["source"])
                    item = next(it)
                arrays = _samples_of(item, spec["batch"])
            path = os.path.join(_SHM_DIR, f"{prefix}{task}")
            descs, size = _write(path, arrays)
            conn.send((task, "ok", (path, descs, size)))
        except StopIteration:
            conn.send((task, "stop", None))
        except BaseException as e:  # noqa: B036 (the pipeline reports it)
            try:
                conn.send((task, "error", (type(e).__name__, str(e), traceback.format_exc())))
            except Exception:
                break
    os._exit(0)


class _Batch:
    """One scheduled batch: its tasks and, as they arrive, their results."""

    def __init__(self, iteration, epoch):
        self.iteration, self.epoch = iteration, epoch
        self.tasks = []   # task ids in sample order
        self.results = {}  # task id -> ("ok", arrays) | ("stop", None) | ("error", ...)


class WorkerPool:
    """The worker processes of one pipeline and the batches in flight."""

    def __init__(self, sources, num_workers, start_method):
        import multiprocessing

        self.prefix = f"ladle_{os.getpid()}_{next(_pool_ids)}_"
        self.sources = sources  # ParallelSource objects, by index
        specs = [s.spec() for s in sources]
        try:
            ctx = multiprocessing.get_context(start_method)
        except ValueError:
            raise _ladle.InvalidArgumentError(f"Pipeline: py_start_method={start_method!r}: use \"fork\" or "
                                              "\"spawn\"") from None
        self.workers, self.conns = [], []
        self.task_ids = itertools.count(1)
        self.pending = {}  # task id -> (source index, _Batch)
        self.broken = None
        self.closed = False
        try:
            for i in range(num_workers):
                mine, theirs = ctx.Pipe(duplex=True)
                p = ctx.Process(target=_worker_main, args=(i, theirs, specs, self.prefix), daemon=True,
                                name=f"ladle-source-worker-{i}")
                try:
                    p.start()
                except Exception as e:
                    raise _ladle.InvalidArgumentError(
                        f"Pipeline: cannot start source worker {i} with py_start_method={start_method!r}: {e} (with "
                        "\"spawn\" the sources must be picklable: defined at module level)") from e
                theirs.close()
                self.workers.append(p)
                self.conns.append(mine)
        except BaseException:
            self.close()
            raise
        _pools.add(self)

    # --- scheduling ------------------------------------------------------------

    def submit(self, worker, src_index, kind, arg, batch):
        if self.broken is not None:
            raise self.broken
        task = next(self.task_ids)
        self.pending[task] = (src_index, batch)
        batch.tasks.append(task)
        try:
            self.conns[worker].send((task, src_index, kind, arg))
        except OSError:  # the worker is gone
            self.workers[worker].join(1.0)
            self._dead(worker)
        return task

    def reset(self, worker, src_index):
        try:
            self.conns[worker].send((0, src_index, "reset", None))
        except OSError:
            self.workers[worker].join(1.0)
            self._dead(worker)

    def _collect(self, timeout):
        """Receives what is ready (waiting up to `timeout`); raises when a worker died."""
        sentinels = {p.sentinel: i for i, p in enumerate(self.workers)}
        ready = _connection.wait(self.conns + list(sentinels), timeout)
        for r in ready:
            if r in sentinels:
                continue
            try:
                task, status, payload = r.recv()
            except (EOFError, OSError):
                continue
            owner = self.pending.pop(task, None)
            if owner is None:  # a discarded task's result
                if status == "ok" and payload[0]:
                    _unlink(payload[0])
                continue
            if status == "ok":
                path, descs, size = payload
                owner[1].results[task] = ("ok", _read(path, descs, size))
            else:
                owner[1].results[task] = (status, payload)
        for s, i in sentinels.items():
            if s in ready or not self.workers[i].is_alive():
                self._dead(i)

    def _dead(self, i):
        p = self.workers[i]
        p.join(0.1)
        code = p.exitcode
        why = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
        names = sorted({self.sources[src].name for src, _ in self.pending.values()}) or \
            sorted(s.name for s in self.sources)
        self.broken = _ladle.Error(
            f"external_source {', '.join(repr(n) for n in names)}: source worker process {i} (pid {p.pid}) {why} "
            "while computing a batch (parallel=True); the pipeline cannot go on")
        raise self.broken

    def wait(self, batch):
        """Waits until every task of `batch` has a result."""
        while any(t not in batch.results for t in batch.tasks):
            if self.broken is not None:
                raise self.broken
            self._collect(0.1)

    def discard(self, batch):
        """Forgets a scheduled batch: results still to come are thrown away."""
        for task in batch.tasks:
            self.pending.pop(task, None)

    # --- shutdown ---------------------------------------------------------------

    def close(self):
        if self.closed:
            return
        self.closed = True
        for c in self.conns:
            try:
                c.send(None)
            except Exception:
                pass
        deadline = time.monotonic() + _STOP_WAIT
        for p in self.workers:
            p.join(max(0.0, deadline - time.monotonic()))
        for p in self.workers:
            if p.is_alive():
                p.kill()
                p.join(1.0)
        for c in self.conns:
            try:
                c.close()
            except Exception:
                pass
        self.pending.clear()
        for path in glob.glob(os.path.join(_SHM_DIR, self.prefix + "*")):
            _unlink(path)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def _unlink(path):
    try:
        os.unlink(path)
    except OSError:
        pass


@atexit.register
def close_all():
    for pool in list(_pools):
        pool.close()


class ParallelSource:
    """An external_source's `source` run by the pipeline's WorkerPool; the
    interface of pipeline._Source (next, peek, restart, exhausted)."""

    def __init__(self, name, source, cycle, batch, batch_info, batch_size, depth, serial):
        self.name, self.source, self.cycle = name, source, cycle
        self.batch, self.batch_info, self.batch_size = batch, batch_info, batch_size
        self.depth = depth
        self._serial = serial  # a pipeline._Source over the same source: peek (dtype inference) runs here
        self.kind = ("samples" if not batch else "batch") if callable(source) and not serial._factory else "iter"
        self.pool = None
        self.index = None
        self.iteration = 0  # the next batch to schedule, in this epoch
        self.epoch = 0
        self.exhausted = False
        self.scheduled = collections.deque()

    def spec(self):
        return {"source": self.source, "takes_arg": self._serial._takes_arg, "factory": self._serial._factory,
                "cycle": self.cycle, "batch": self.batch}

    def peek(self):
        return self._serial.peek()

    def start(self, pool, index):
        self.pool, self.index = pool, index

    def _worker_of(self, k):
        return (self.index + k) % len(self.pool.workers)

    def _schedule(self):
        while len(self.scheduled) < self.depth:
            b = _Batch(self.iteration, self.epoch)
            if self.kind == "samples":
                n, w = self.batch_size, len(self.pool.workers)
                infos = [types.SampleInfo(self.iteration * n + j, j, self.iteration, self.epoch) for j in range(n)]
                chunk = -(-n // w)
                for c in range(0, n, chunk):
                    self.pool.submit(self._worker_of(c // chunk), self.index, "samples", infos[c:c + chunk], b)
            elif self.kind == "batch":
                arg = types.BatchInfo(self.iteration, self.epoch) if self.batch_info else self.iteration
                self.pool.submit(self._worker_of(self.iteration), self.index, "batch", arg, b)
            else:
                self.pool.submit(self._worker_of(0), self.index, "iter", None, b)
            self.scheduled.append(b)
            self.iteration += 1

    def next(self):
        if self.exhausted:
            return None
        self._schedule()
        b = self.scheduled[0]
        self.pool.wait(b)  # (Ctrl-C here leaves the batch scheduled for the next call)
        self.scheduled.popleft()
        arrays = []
        for task in b.tasks:
            status, payload = b.results[task]
            if status == "error":
                kind, text, tb = payload
                raise _ladle.Error(f"external_source {self.name!r}: the source raised {kind}: {text} (batch "
                                   f"{b.iteration} of epoch {b.epoch}, in a worker process)\n\nThe worker's "
                                   f"traceback:\n{tb}")
            if status == "stop":
                self.exhausted = True
                return None
            arrays += payload
        self._schedule()
        return arrays

    def restart(self):
        """After the end of an epoch was reported: the next epoch (see pipeline._Source.restart)."""
        if self.kind == "iter" and self.cycle != "raise":
            return
        for b in self.scheduled:
            self.pool.discard(b)
        self.scheduled.clear()
        if self.kind == "iter":
            self.pool.reset(self._worker_of(0), self.index)
        self.exhausted = False
        self.iteration = 0
        self.epoch += 1
