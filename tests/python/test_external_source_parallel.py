"""external_source(parallel=True): sources in worker processes, against the
same source run serially, NumPy and DALI; errors and deaths of workers named;
no process or shared-memory file left behind, however the pipeline ends."""

import glob
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import ladle
from conftest import dali_or_skip
from ladle import fn, pipeline_def, types

BATCH = 4
EPOCH = 10  # samples per epoch of the per-sample source: 2 full batches, the third cut short (dropped)


def per_sample(info):
    if info.idx_in_epoch >= EPOCH:
        raise StopIteration
    return np.full((1 + info.idx_in_batch, 2), info.idx_in_epoch + 100 * info.epoch_idx, np.int32)


def per_batch(info):
    if info.iteration >= 3:
        raise StopIteration
    return [np.full((3,), info.iteration * 10 + k + 1000 * info.epoch_idx, np.float32) for k in range(BATCH)]


def by_index(i):
    return np.arange(BATCH * 2, dtype=np.int64).reshape(BATCH, 2) + i


def generator():
    for i in range(3):
        yield [np.full((2, 2), i * 10 + k, np.uint8) for k in range(BATCH)]


LISTED = [[np.full((1,), i * 10 + k, np.int16) for k in range(BATCH)] for i in range(2)]


def failing(info):
    if info.idx_in_epoch == 5:
        raise ValueError("sample five is bad")
    return np.zeros(2, np.int32)


def dying(info):
    if info.idx_in_epoch == 5:
        os.kill(os.getpid(), signal.SIGKILL)
    return np.zeros(2, np.int32)


def slow(info):
    time.sleep(0.05)
    return np.full((1000,), info.idx_in_epoch, np.float32)


def shm_files():
    return sorted(glob.glob(f"/dev/shm/ladle_{os.getpid()}_*"))


def epochs(pipe, count):
    """The batches (lists of NumPy samples) of `count` epochs."""
    out = []
    for _ in range(count):
        epoch = []
        while True:
            try:
                (tl,) = pipe.run()
            except StopIteration:
                break
            epoch.append([np.array(tl.at(i)) for i in range(len(tl))])
        out.append(epoch)
    return out


def make(source, workers=3, start="fork", **kw):
    @pipeline_def(batch_size=BATCH, num_threads=1, py_num_workers=workers, py_start_method=start)
    def pipe():
        return fn.external_source(source=source, parallel=True, name="src", **kw)
    return pipe()


def serial(source, **kw):
    @pipeline_def(batch_size=BATCH, num_threads=1)
    def pipe():
        return fn.external_source(source=source, name="src", **kw)
    return pipe()


def assert_same(a, b):
    assert len(a) == len(b)
    for ea, eb in zip(a, b):
        assert len(ea) == len(eb)
        for ba, bb in zip(ea, eb):
            for x, y in zip(ba, bb):
                assert x.dtype == y.dtype
                np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("depth", [1, 3])
def test_per_sample_source_matches_numpy_over_epochs(depth):
    pipe = make(per_sample, batch=False, prefetch_queue_depth=depth)
    got = epochs(pipe, 2)
    pipe.close()
    for e, epoch in enumerate(got):
        assert len(epoch) == 2  # the short third batch ends the epoch (DALI drops it)
        for b, batch in enumerate(epoch):
            for j, x in enumerate(batch):
                np.testing.assert_array_equal(x, np.full((1 + j, 2), b * BATCH + j + 100 * e, np.int32))
    assert shm_files() == []


def test_per_sample_source_matches_dali():
    dali = dali_or_skip()
    import nvidia.dali.fn as dfn

    pipe = dali.Pipeline(batch_size=BATCH, num_threads=1, device_id=None, py_num_workers=2)
    with pipe:
        pipe.set_outputs(dfn.external_source(source=per_sample, parallel=True, batch=False))
    pipe.build()
    theirs = []
    for _ in range(2):
        epoch = []
        while True:
            try:
                (tl,) = pipe.run()
            except StopIteration:
                pipe.reset()
                break
            epoch.append([np.array(tl.at(i)) for i in range(len(tl))])
        theirs.append(epoch)
    del pipe
    mine = make(per_sample, workers=2, batch=False)
    assert_same(epochs(mine, 2), theirs)
    mine.close()


@pytest.mark.parametrize("source,kw", [(per_batch, {"batch": True, "batch_info": True}),
                                       (by_index, {"batch": True}),
                                       (generator, {"batch": True, "cycle": "raise"}),
                                       (LISTED, {"batch": True, "cycle": "raise"})],
                         ids=["batch_info", "index", "generator", "list"])
def test_batch_sources_match_the_serial_source(source, kw):
    count = 1 if source is by_index else 2
    if source is by_index:  # never ends: compare 5 batches
        p, s = make(source, **kw), serial(source, **kw)
        for _ in range(5):
            np.testing.assert_array_equal(p.run()[0].as_array(), s.run()[0].as_array())
        p.close(), s.close()
        return
    p, s = make(source, **kw), serial(source, **kw)
    assert_same(epochs(p, count), epochs(s, count))
    p.close(), s.close()


def test_spawn_start_method():
    pipe = make(per_sample, batch=False, workers=2, start="spawn")
    got = epochs(pipe, 1)
    pipe.close()
    assert len(got[0]) == 2 and int(got[0][1][0][0, 0]) == BATCH


def test_an_exception_in_a_worker_names_the_source():
    pipe = make(failing, batch=False, workers=2)
    with pytest.raises(ladle.Error) as info:
        for _ in range(3):
            pipe.run()
    text = str(info.value)
    assert "external_source 'src'" in text and "ValueError: sample five is bad" in text
    assert "in failing" in text  # the worker's traceback
    pipe.close()
    assert shm_files() == []


def test_a_dying_worker_names_the_source_and_the_pipeline_stops_cleanly():
    pipe = make(dying, batch=False, workers=2)
    with pytest.raises(ladle.Error, match=r"external_source 'src': source worker process \d \(pid \d+\) was killed "
                                          r"by signal 9"):
        for _ in range(3):
            pipe.run()  # (the first builds, which prepares the first batches)
    pids = [w.pid for w in pipe._workers.workers]
    with pytest.raises(ladle.Error, match="was killed"):  # and stays so
        pipe.run()
    pipe.close()
    assert not any(os.path.exists(f"/proc/{pid}") and _alive(pid) for pid in pids)
    assert shm_files() == []


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


def test_close_mid_run_leaves_no_process_and_no_shared_memory():
    pipe = make(slow, batch=False, workers=3, prefetch_queue_depth=4)
    pipe.run()
    pids = [w.pid for w in pipe._workers.workers]
    t0 = time.monotonic()
    pipe.close()  # batches are in flight
    assert time.monotonic() - t0 < 10
    assert not any(_alive(pid) for pid in pids)
    assert shm_files() == []


def test_exit_without_close_leaves_nothing():
    code = textwrap.dedent(f"""
        import sys, os
        sys.path[:0] = {[os.path.dirname(__file__), os.path.dirname(ladle.__path__[0])]!r}
        import test_external_source_parallel as t
        p = t.make(t.slow, workers=2, batch=False, prefetch_queue_depth=3)
        p.run()
        print(os.getpid(), *[w.pid for w in p._workers.workers])
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    pid, *workers = map(int, r.stdout.split())
    deadline = time.monotonic() + 10
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(w) for w in workers)
    assert glob.glob(f"/dev/shm/ladle_{pid}_*") == []


def test_dali_argument_rules():
    @pipeline_def(batch_size=BATCH, num_threads=1)
    def pipe(kw):
        return fn.external_source(name="src", **kw)

    with pytest.raises(ladle.InvalidArgumentError, match="'prefetch_queue_depth' is valid only for parallel"):
        pipe(dict(source=per_sample, batch=False, prefetch_queue_depth=2))
    with pytest.raises(ladle.InvalidArgumentError, match="'no_copy' cannot be False"):
        pipe(dict(source=per_sample, parallel=True, no_copy=False))
    with pytest.raises(TypeError, match="must accept exactly one argument"):
        pipe(dict(source=lambda: np.zeros(1), parallel=True))
    with pytest.raises(TypeError, match="must be run in batch mode"):
        pipe(dict(source=generator, parallel=True, batch=False))
    with pytest.raises(ladle.InvalidArgumentError, match="prefetch_queue_depth must be a positive integer"):
        pipe(dict(source=per_sample, parallel=True, prefetch_queue_depth=0))
    with pytest.raises(ladle.InvalidArgumentError, match="iterator or generator object"):
        pipe(dict(source=iter(LISTED), parallel=True, batch=True))
    with pytest.raises(ladle.InvalidArgumentError, match="py_start_method"):
        ladle.Pipeline(batch_size=2, py_start_method="forkserver")
    with pytest.raises(ladle.InvalidArgumentError, match="py_num_workers >= 1"):
        make(per_sample, batch=False, workers=0).build()


def test_parallel_takes_batches_by_default_as_dali_does():
    # DALI 2.4's documentation says parallel=True sets batch=False; its fn.external_source calls the source
    # with batch indices (seen with DALI 2.4 on this machine). ladle follows what DALI does.
    pipe = make(by_index)
    (tl,) = pipe.run()
    np.testing.assert_array_equal(tl.as_array(), by_index(0))
    pipe.close()


def test_types_are_inferred_from_the_first_sample():
    pipe = make(per_batch, batch=True, batch_info=True)
    (tl,) = pipe.run()
    assert tl.dtype == types.FLOAT
    pipe.close()
