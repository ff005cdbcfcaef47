"""The executor's two stages (src/pipeline/executor.c): the host stage (readers,
CPU operators) prepares iteration i+1 on one thread while the device stage runs
iteration i on another. On this CPU-only machine LADLE_EXECUTOR_SPLIT=k forces
the boundary before operator k of a CPU pipeline; every output, skip log,
error and position must then be the bytes of the one-stage executor
(LADLE_EXECUTOR_STAGES=1), for any boundary, thread count and prefetch depth."""

import contextlib
import os
import re
import threading
import time

import numpy as np
import pytest

import ladle
from ladle import fn, pipeline_def, types

from conftest import cuda_usable, requires_ops, sample_jpegs
from test_skip_bad_samples import corrupt_tree  # noqa: F401  (a fixture: the sample set with 4 bad files)

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


KNOBS = ("LADLE_EXECUTOR_SPLIT", "LADLE_EXECUTOR_STAGES", "LADLE_EXECUTOR_SETUP_AHEAD")


@contextlib.contextmanager
def env(**values):
    """The environment variables as given (None: unset) inside the block, restored after it."""
    saved = {k: os.environ.get(k) for k in values}
    for k, v in values.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def staging(split):
    """split: None for the default, 0 for one stage, k >= 1 for a boundary before operator k,
    "k-" for that boundary without the device stage's first node set up ahead."""
    values = dict.fromkeys(KNOBS)
    if isinstance(split, str):
        values["LADLE_EXECUTOR_SETUP_AHEAD"] = "0"
        split = int(split.rstrip("-"))
    if split == 0:
        values["LADLE_EXECUTOR_STAGES"] = "1"
    elif split is not None:
        values["LADLE_EXECUTOR_SPLIT"] = str(split)
    return env(**values)


def built(make, split):
    """make() with the staging knobs as given, built (they are read at build)."""
    with staging(split):
        pipe = make()
        pipe.build()
    return pipe


def samples(tl):
    return [np.array(tl.at(i)).copy() for i in range(len(tl))]


def run_outputs(pipe, iterations):
    return [[samples(tl) for tl in pipe.run()] for _ in range(iterations)]


def assert_same(got, want):
    assert len(got) == len(want)
    for it_got, it_want in zip(got, want):
        assert len(it_got) == len(it_want)
        for out_got, out_want in zip(it_got, it_want):
            assert len(out_got) == len(out_want)
            for g, w in zip(out_got, out_want):
                assert g.dtype == w.dtype and g.shape == w.shape
                assert g.tobytes() == w.tobytes()


def num_ops(make):
    pipe = built(make, 0)
    n = len(pipe.executor_statistics()["operators"])
    pipe.close()
    return n


def compare_splits(make, iterations, splits=None):
    """The outputs of every forced boundary against one stage; returns the one-stage outputs."""
    ref = built(make, 0)
    want = run_outputs(ref, iterations)
    ref.close()
    for split in splits or range(1, num_ops(make)):
        pipe = built(make, split)
        got = run_outputs(pipe, iterations)
        stats = pipe.executor_statistics()
        assert stats["host_stage_seconds"] > 0 and stats["device_stage_seconds"] > 0, split  # two stages ran
        pipe.close()
        assert_same(got, want)
    return want


def training(root, batch_size=5, num_threads=2, prefetch_queue_depth=2, seed=7, **kwargs):
    pipe = ladle.Pipeline(batch_size=batch_size, num_threads=num_threads, prefetch_queue_depth=prefetch_queue_depth,
                          seed=seed, **kwargs)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
        images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
        images = fn.random_resized_crop(images, size=[24, 24])
        images = fn.flip(images, horizontal=fn.random.coin_flip(probability=0.5))
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT16, output_layout=types.NCHW, mean=MEAN, std=STD,
                                          mirror=fn.random.coin_flip(probability=0.5))
        pipe.set_outputs(images, labels)
    return pipe


TRAINING_OPS = ("readers.file", "decoders.image", "random_resized_crop", "flip", "crop_mirror_normalize",
                "random.coin_flip")


@requires_ops(*TRAINING_OPS)
@pytest.mark.parametrize("split", [0, 1, 2, "1-"])
def test_waiting_stage_threads_running_items_give_the_same_bytes(sample_root, split):
    """A thread waiting for its loop runs the items no worker has taken, as
    worker num_threads (core/threads.h); with two stages both stage threads
    do, at once, each in its own nodes (the set-up-ahead copy with scratch of
    its own). LADLE_POOL_WAITER_RUNS=0 leaves every item to the workers: the
    same bytes either way."""
    make = lambda: training(sample_root, num_threads=1)  # one worker: the stage threads run many items
    compare_knob_runs(make, split, lambda pipe: run_outputs(pipe, 8), LADLE_POOL_WAITER_RUNS="0")


@requires_ops(*TRAINING_OPS)
@pytest.mark.parametrize("split", [0, 2, "1-"])
@pytest.mark.parametrize("inline_us", ["0", "1000000000"])
def test_passes_on_the_stage_thread_give_the_same_bytes(sample_root, split, inline_us):
    """A pass whose samples took under LADLE_EXECUTOR_INLINE_US runs on the
    stage's thread alone (pipeline/executor.c): never (0) or, past each
    node's first pass, always (10^9 µs), the same bytes as by default."""
    compare_knob_runs(lambda: training(sample_root), split, lambda pipe: run_outputs(pipe, 8),
                      LADLE_EXECUTOR_INLINE_US=inline_us)


@requires_ops(*TRAINING_OPS)
def test_cheap_passes_run_on_the_stage_thread(sample_root):
    """The random draws' passes take microseconds: past the first, the stage
    thread runs them alone; the decoder's run passes (a JPEG decode per
    sample) stay on the workers. LADLE_EXECUTOR_INLINE_US=0 keeps every pass
    on the workers."""
    def passes(**knob):
        with env(**knob):
            pipe = built(lambda: training(sample_root, batch_size=8), 0)
        run_outputs(pipe, 6)
        ops = pipe.executor_statistics()["operators"]
        pipe.close()
        return {o["op"]: (o["cpu_passes"], o["inline_passes"]) for o in ops}

    ops = passes()
    total, inline = ops["random.coin_flip"]
    assert total >= 12 and inline >= total // 2  # timing: a pass the OS interrupts may take longer
    total, inline = ops["decoders.image"]
    assert total >= 12 and inline <= total // 2  # at most its setup passes (header reads)
    assert all(inline == 0 for _, inline in passes(LADLE_EXECUTOR_INLINE_US="0").values())
    # Any time is cheap: each node's first setup and run pass (not measured yet) alone go to the workers.
    assert all(inline == total - 2 for total, inline in passes(LADLE_EXECUTOR_INLINE_US="1000000000").values())


def compare_knob_runs(make, split, outputs, **knob):
    """outputs(pipe) of make() with the knob (environment variables, read at
    build) and by default: the same bytes."""
    with env(**knob):
        ref = built(make, split)
    want = outputs(ref)
    ref.close()
    pipe = built(make, split)
    got = outputs(pipe)
    pipe.close()
    assert_same(got, want)


@requires_ops(*TRAINING_OPS)
def test_every_boundary_gives_the_one_stage_bytes(sample_root):
    # 32 files, batch 5: 8 iterations go into the second epoch (reshuffled).
    compare_splits(lambda: training(sample_root), 8, splits=[1, 2, 3, 4, 5, 6, "1-"])


@requires_ops(*TRAINING_OPS)
@pytest.mark.parametrize("threads, depth, seed", [(1, 1, 3), (3, 1, 11), (2, 3, 0), (4, 2, 5)])
def test_threads_depths_and_seeds(sample_root, threads, depth, seed):
    make = lambda: training(sample_root, num_threads=threads, prefetch_queue_depth=depth, seed=seed)
    compare_splits(make, 7, splits=[2, 4])


@requires_ops("readers.tfrecord", "decoders.image", "resize")
def test_tfrecord_reader(tmp_path):
    import ladle.tfrecord as tfrec
    from test_tfrecord import bytes_feature, example, int64_feature, write_tfrecord

    jpegs = sample_jpegs()
    files = []
    for t in range(2):
        records = [example({"image/encoded": bytes_feature(jpegs[i][1]), "label": int64_feature(jpegs[i][0])})
                   for i in range(t * 16, (t + 1) * 16)]
        files.append(write_tfrecord(tmp_path / f"s-{t}.tfrecord", records)[0])

    def make():
        pipe = ladle.Pipeline(batch_size=6, num_threads=2, seed=2)
        with pipe:
            out = fn.readers.tfrecord(path=files, name="R", random_shuffle=True, features={
                "image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
                "label": tfrec.FixedLenFeature([1], tfrec.int64, -1)})
            images = fn.resize(fn.decoders.image(out["image/encoded"]), resize_x=12, resize_y=10)
            pipe.set_outputs(fn.rotate(images, angle=fn.random.uniform(range=[-30, 30])), out["label"])
        return pipe

    compare_splits(make, 7)


@pipeline_def(batch_size=6, num_threads=2, seed=9, enable_conditionals=True)
def branching(root):
    jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
    images = fn.resize(fn.decoders.image(jpegs), resize_x=16, resize_y=12)
    if fn.random.coin_flip(probability=0.4):
        out = fn.flip(images, horizontal=1)
        tag = fn.random.uniform(range=[0, 1])
    elif fn.random.coin_flip(probability=0.5):
        out = fn.crop(images, crop=[6, 8])
        tag = fn.random.uniform(range=[10, 11])
    else:
        out = fn.rotate(images, angle=fn.random.uniform(range=[-20, 20]))
        tag = fn.random.uniform(range=[20, 21])
    return out, tag, labels


def test_conditionals_and_merges(sample_root):
    # The merges' demand masks skip the other branches' samples: per stage.
    compare_splits(lambda: branching(sample_root), 6)


def test_external_sources():
    jpegs = [np.frombuffer(data, np.uint8) for _, data in sample_jpegs()]
    sizes = [5, 3, 5, 1, 4, 5]

    def make():
        pipe = ladle.Pipeline(batch_size=5, num_threads=2, seed=4, prefetch_queue_depth=2)
        with pipe:
            enc = fn.external_source(name="E", dtype=types.UINT8, ndim=1)
            scale = fn.external_source(name="S", dtype=types.FLOAT, ndim=0)
            images = fn.resize(fn.decoders.image(enc), resize_x=10, resize_y=10)
            pipe.set_outputs(fn.rotate(images, angle=fn.random.uniform(range=[0, 90])), scale * 2 + 1)
        return pipe

    def outputs(split):
        pipe = built(make, split)
        got, start = [], 0
        for i, n in enumerate(sizes):  # fed ahead by up to two iterations
            pipe.feed_input("E", jpegs[start:start + n])
            pipe.feed_input("S", [np.float32(i + k) for k in range(n)])
            start += n
            if i >= 1:
                got.append([samples(tl) for tl in pipe.run()])
        got.append([samples(tl) for tl in pipe.run()])
        assert [len(it[0]) for it in got] == sizes
        assert (pipe.executor_statistics()["device_stage_seconds"] > 0) == (split > 0)
        pipe.close()
        return got

    want = outputs(0)
    for split in range(3, 7):  # 1, 2: a host stage of external sources alone is one stage
        assert_same(outputs(split), want)


def skipping(root, **kwargs):
    pipe = ladle.Pipeline(batch_size=6, num_threads=2, seed=5, on_error="skip", **kwargs)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="R", pad_last_batch=True)
        images = fn.resize(fn.decoders.image(jpegs), resize_x=8, resize_y=8)
        pipe.set_outputs(fn.flip(images, horizontal=fn.random.coin_flip()), labels)
    return pipe


def skip_log(pipe):
    return [(s["name"], s["record"], s["epoch"], s["iteration"], s["error"]) for s in pipe.skipped_samples()]


def test_skipping_bad_files_logs_the_same_records(corrupt_tree):
    """A bad file fails in whichever stage decodes it; the iteration is finished
    through every node, the next one planned again: the same batches, the same
    log in the same order."""
    root, _ = corrupt_tree
    make = lambda: skipping(root)
    ref = built(make, 0)
    want, want_log = run_outputs(ref, 13), skip_log(ref)  # two epochs of 36 files and one more batch
    ref.close()
    assert len(want_log) == 4
    for split in (1, 2, 3, 4, "1-"):  # 1: the decoder's setup (headers) in the host stage, its run in the device stage
        pipe = built(make, split)
        got = run_outputs(pipe, 13)
        assert skip_log(pipe) == want_log
        assert pipe.executor_statistics()["skipped_samples"] == 4
        pipe.close()
        assert_same(got, want)


def test_the_skip_budget_fails_the_same_iteration(corrupt_tree):
    def results(split):
        pipe = built(lambda: skipping(corrupt_tree[0], max_skipped_samples=2), split)
        got = []
        for _ in range(8):
            try:
                got.append(("ok", [samples(tl) for tl in pipe.run()]))
            except ladle.Error as e:
                got.append(("error", str(e)))
        log = skip_log(pipe)
        pipe.close()
        return got, log

    want, want_log = results(0)
    assert any(kind == "error" and "max_skipped_samples=2" in what for kind, what in want)
    for split in (1, 2, 3):
        got, log = results(split)
        assert log == want_log
        assert [kind for kind, _ in got] == [kind for kind, _ in want]
        for (kind, g), (_, w) in zip(got, want):
            if kind == "error":
                assert g == w
            else:
                assert_same([g], [w])


def test_external_source_skip_drops_the_same_samples():
    jpegs = [np.frombuffer(data, np.uint8) for _, data in sample_jpegs()[:6]]
    bad = np.frombuffer(b"not a jpeg at all" * 10, np.uint8)
    feeds = [jpegs[:2] + [bad] + jpegs[3:5], jpegs[:5], [jpegs[0][:300]] + jpegs[1:4] + [bad], jpegs[1:6]]

    def make():
        pipe = ladle.Pipeline(batch_size=5, num_threads=2, seed=3, on_error="skip")
        with pipe:
            enc = fn.external_source(name="E", dtype=types.UINT8, ndim=1)
            images = fn.resize(fn.decoders.image(enc), resize_x=8, resize_y=8)
            pipe.set_outputs(fn.flip(images, vertical=fn.random.coin_flip()))
        return pipe

    def results(split):
        pipe = built(make, split)
        for f in feeds:
            pipe.feed_input("E", f)
        got = [[samples(tl) for tl in pipe.run()] for _ in feeds]
        log = skip_log(pipe)
        pipe.close()
        return got, log

    want, want_log = results(0)
    assert [len(it[0]) for it in want] == [4, 5, 3, 5]
    for split in (1, 2, 3):
        got, log = results(split)
        assert log == want_log
        assert_same(got, want)


@pipeline_def(batch_size=5, num_threads=2, seed=11, enable_checkpointing=True)
def augmenting(root):
    jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
    images = fn.resize(fn.decoders.image_random_crop(jpegs), resize_x=16, resize_y=16)
    return fn.flip(images, horizontal=fn.random.coin_flip()), labels


def test_checkpoint_resumes_mid_epoch(sample_root):
    ref = built(lambda: augmenting(sample_root), 0)
    expected = run_outputs(ref, 12)
    ref.close()
    for split in (1, 2, 3):
        pipe = built(lambda: augmenting(sample_root), split)
        assert_same(run_outputs(pipe, 4), expected[:4])
        text = pipe.checkpoint()  # iterations delivered: 4, whatever the stages have in flight
        assert_same(run_outputs(pipe, 2), expected[4:6])
        pipe.close()
        resumed = built(lambda: augmenting(sample_root, checkpoint=text), split)
        assert_same(run_outputs(resumed, 8), expected[4:12])
        resumed.close()


def test_set_position_drops_what_is_in_flight(sample_root):
    ref = built(lambda: augmenting(sample_root), 0)
    expected = run_outputs(ref, 10)
    ref.close()
    pipe = built(lambda: augmenting(sample_root), 2)
    for target in (7, 1, 1, 9, 0, 3):
        pipe.set_position(target)
        assert_same(run_outputs(pipe, 1), expected[target:target + 1])
    pipe.close()


def test_close_during_run_from_another_thread(sample_root):
    for split in (1, 3):
        pipe = built(lambda: training(sample_root, prefetch_queue_depth=1), split)
        stop = threading.Event()
        errors = []

        def consume():
            while not stop.is_set():
                try:
                    pipe.run()
                except Exception as e:  # closed under it
                    errors.append(e)
                    return

        t = threading.Thread(target=consume)
        t.start()
        time.sleep(0.2)
        pipe.close()
        stop.set()
        t.join(timeout=60)
        assert not t.is_alive()
        assert all(isinstance(e, ladle.Error) for e in errors)


def test_many_short_runs():
    """Start, a run or two, close: 200 times, so that a race of the two threads
    at start or stop shows (tools/sanitize runs this file under ASan)."""
    def make():
        pipe = ladle.Pipeline(batch_size=3, num_threads=2, seed=1, prefetch_queue_depth=1)
        with pipe:
            a = fn.random.uniform(range=[0, 1], shape=[4])
            b = fn.random.normal(shape=[4]) + a
            pipe.set_outputs(b * 2 + a, fn.random.coin_flip())
        return pipe

    ref = built(make, 0)
    want = run_outputs(ref, 2)
    ref.close()
    for i in range(200):
        pipe = built(make, 1 + i % 3)
        if i % 4:
            assert_same(run_outputs(pipe, 1 + i % 2), want[:1 + i % 2])
        pipe.close()


def test_statistics_with_two_stages(sample_root):
    pipe = built(lambda: training(sample_root, prefetch_queue_depth=1), 2)
    for _ in range(4):
        pipe.run()
    stats = pipe.executor_statistics()
    assert 4 <= stats["iterations"] <= 6
    # The counters are read one after another while both threads work: a node may end in between (1 ms slack).
    busy = sum(op["seconds"] for op in stats["operators"])
    assert 0 < busy <= stats["prepare_seconds"] + 1e-3
    assert stats["host_stage_seconds"] > 0 and stats["device_stage_seconds"] > 0
    assert stats["host_stage_seconds"] + stats["device_stage_seconds"] <= stats["prepare_seconds"] + 1e-3
    host = sum(op["seconds"] for op in stats["operators"][:2])  # the reader and the decoder: the host stage
    assert host <= stats["host_stage_seconds"] + 1e-3
    pipe.close()
    one = built(lambda: training(sample_root), 0)
    one.run()
    stats = one.executor_statistics()
    assert stats["host_stage_seconds"] == 0 and stats["device_stage_seconds"] == 0 and stats["prepare_seconds"] > 0
    one.close()


def test_a_cpu_pipeline_has_one_stage(sample_root):
    pipe = built(lambda: training(sample_root), None)
    pipe.run()
    stats = pipe.executor_statistics()
    assert stats["host_stage_seconds"] == 0 and stats["device_stage_seconds"] == 0
    assert stats["gpu_wait_seconds"] == 0  # nothing runs on a GPU
    assert {op["stage"] for op in stats["operators"]} == {None}
    pipe.close()


def test_operators_report_their_stage(sample_root):
    pipe = built(lambda: training(sample_root), 2)  # the reader and the decoder in the host stage
    pipe.run()
    stages = [op["stage"] for op in pipe.executor_statistics()["operators"]]
    pipe.close()
    assert stages[:2] == ["host", "host"] and set(stages[2:]) == {"device"}


def two_random_ops():
    pipe = ladle.Pipeline(batch_size=2, num_threads=1, seed=1)
    with pipe:
        pipe.set_outputs(fn.random.coin_flip(), fn.random.uniform(range=[0, 1]))
    return pipe


def test_a_split_past_the_last_node_is_one_stage():
    n = num_ops(two_random_ops)
    assert n == 2
    pipe = built(two_random_ops, n)
    pipe.run()
    assert pipe.executor_statistics()["device_stage_seconds"] == 0
    pipe.close()


@pytest.mark.parametrize("value", ["3", "0", "-1", "+1", " 1", "1x", "1.0", "x", "99999999999999999999"])
def test_a_split_that_is_no_node_index_fails_the_build(monkeypatch, value):
    """Anything but a whole number 1 <= k <= the number of nodes (here 2): an
    error at build naming the variable and the value, not one stage without a word."""
    for k in KNOBS:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("LADLE_EXECUTOR_SPLIT", value)
    pipe = two_random_ops()
    with pytest.raises(ladle.Error, match=re.escape(f'LADLE_EXECUTOR_SPLIT="{value}" is not a node index') +
                       r".*1 <= k <= 2"):
        pipe.build()
    pipe.close()


# --- on the GPU: the mixed training pipeline, staged by default -------------------------------------------------


def mixed_training(root, batch_size=16, hw_decoder_load=0.8, on_error=None, **kwargs):
    args = {"on_error": on_error} if on_error else {}
    pipe = ladle.Pipeline(batch_size=batch_size, num_threads=4, seed=13, device_id=0, **args, **kwargs)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader", pad_last_batch=True)
        images = fn.decoders.image(jpegs, device="mixed", output_type=types.RGB, hw_decoder_load=hw_decoder_load)
        images = fn.random_resized_crop(images, size=[64, 64])
        images = fn.flip(images, horizontal=fn.random.coin_flip(probability=0.5))
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT16, output_layout=types.NCHW, mean=MEAN, std=STD,
                                          mirror=fn.random.coin_flip(probability=0.5))
        pipe.set_outputs(images, labels)
    return pipe


def gpu_outputs(pipe, iterations):
    return [[[np.array(tl.as_cpu().at(i)).copy() for i in range(len(tl))] for tl in pipe.run()]
            for _ in range(iterations)]


def require_gpu():
    if not cuda_usable():
        pytest.skip("no usable CUDA device")


@pytest.mark.gpu
@pytest.mark.parametrize("load, depth", [(0.8, 2), (0.0, 1), (1.0, 3)])
def test_gpu_staged_matches_one_stage(sample_root, load, depth):
    require_gpu()
    make = lambda: mixed_training(sample_root, hw_decoder_load=load, prefetch_queue_depth=depth)
    ref = built(make, 0)
    want = gpu_outputs(ref, 6)  # 32 files, batch 16: three epochs
    ref.close()
    pipe = built(make, None)
    got = gpu_outputs(pipe, 6)
    stats = pipe.executor_statistics()
    assert stats["host_stage_seconds"] > 0 and stats["device_stage_seconds"] > 0  # staged by default
    pipe.close()
    assert_same(got, want)


@pytest.mark.gpu
def test_gpu_staged_skip_matches_one_stage(corrupt_tree):
    require_gpu()
    make = lambda: mixed_training(corrupt_tree[0], batch_size=6, on_error="skip")
    ref = built(make, 0)
    want, want_log = gpu_outputs(ref, 13), skip_log(ref)
    ref.close()
    pipe = built(make, None)
    got, log = gpu_outputs(pipe, 13), skip_log(pipe)
    pipe.close()
    assert len(want_log) == 4 and log == want_log
    assert_same(got, want)


@pytest.mark.gpu
def test_gpu_staged_checkpoint_and_close(sample_root):
    require_gpu()
    make = lambda: mixed_training(sample_root, enable_checkpointing=True)
    ref = built(make, 0)
    want = gpu_outputs(ref, 6)
    ref.close()
    pipe = built(make, None)
    assert_same(gpu_outputs(pipe, 2), want[:2])
    text = pipe.checkpoint()
    pipe.close()
    resumed = built(lambda: mixed_training(sample_root, enable_checkpointing=True, checkpoint=text), None)
    assert_same(gpu_outputs(resumed, 4), want[2:6])
    resumed.close()
    for _ in range(20):  # short runs: start, one iteration or none, stop with work in flight
        pipe = built(make, None)
        pipe.run()
        pipe.close()


@pytest.mark.gpu
def test_gpu_cpu_operators_after_the_decoder_run_in_the_host_stage(sample_root):
    # The coin flips were added after the mixed decoder but read nothing from it: they run in the host stage,
    # ahead of it, with the same draws (keyed by operator); LADLE_EXECUTOR_HOIST=0 keeps the order added.
    require_gpu()
    make = lambda: mixed_training(sample_root)
    with env(LADLE_EXECUTOR_HOIST="0"):
        ref = built(make, None)
    want = gpu_outputs(ref, 6)
    ref_ops = ref.executor_statistics()["operators"]
    ref.close()
    pipe = built(make, None)
    got = gpu_outputs(pipe, 6)
    ops = pipe.executor_statistics()["operators"]
    pipe.close()
    assert_same(got, want)
    stage = lambda ops, name: {op["stage"] for op in ops if op["op"] == name}
    assert stage(ops, "random.coin_flip") == {"host"} and stage(ref_ops, "random.coin_flip") == {"device"}
    for name in ("readers.file",):
        assert stage(ops, name) == stage(ref_ops, name) == {"host"}
    for name in ("decoders.image", "random_resized_crop", "flip", "crop_mirror_normalize"):
        assert stage(ops, name) == stage(ref_ops, name) == {"device"}


@pytest.mark.gpu
@pytest.mark.parametrize("load", [0.8, 0.0])
def test_gpu_waiting_stage_threads_running_items_give_the_same_bytes(sample_root, load):
    # A stage thread waiting for its loop runs the items no worker has taken (core/threads.h), as worker
    # num_threads: the CPU decodes of the mixed decoder's share among them. LADLE_POOL_WAITER_RUNS=0 leaves every
    # item to the workers; the outputs must not depend on which thread ran an item.
    require_gpu()
    compare_knob_runs(lambda: mixed_training(sample_root, hw_decoder_load=load), None,
                      lambda pipe: gpu_outputs(pipe, 6), LADLE_POOL_WAITER_RUNS="0")


# --- on the GPU: the mixed decoder on its own stream ---------------------------------------------------------------


def decoded(root, batch_size=8, **kwargs):
    """The mixed decoder's output as a pipeline output (its batch from the side pool, handed to the user), and
    the training chain after it (read on the pipeline's stream)."""
    pipe = ladle.Pipeline(batch_size=batch_size, num_threads=4, seed=5, device_id=0, **kwargs)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader", pad_last_batch=True)
        images = fn.decoders.image(jpegs, device="mixed", output_type=types.RGB, hw_decoder_load=0.75)
        small = fn.resize(images, resize_x=40, resize_y=30)
        pipe.set_outputs(images, small, labels)
    return pipe


@pytest.mark.gpu
@pytest.mark.parametrize("depth", [1, 3])
def test_gpu_own_stream_gives_the_same_bytes(sample_root, depth):
    # LADLE_OWN_STREAM=0 puts the decoder back on the pipeline's stream; both must give the same bytes, also for
    # the decoder's own output held by the user across iterations, and with two pipelines sharing the decoder.
    require_gpu()
    with env(LADLE_OWN_STREAM="0"):
        ref = decoded(sample_root, prefetch_queue_depth=depth)
        ref.build()
    want = gpu_outputs(ref, 9)
    ref.close()
    pipes = [decoded(sample_root, prefetch_queue_depth=depth) for _ in range(2)]
    for p in pipes:
        p.build()
    held = [pipes[0].run() for _ in range(2)]  # kept by the user while more iterations run
    got = [[[np.array(tl.as_cpu().at(i)).copy() for i in range(len(tl))] for tl in it] for it in held]
    for k in range(7):
        got.append(gpu_outputs(pipes[0], 1)[0])
        assert_same(gpu_outputs(pipes[1], 1), [want[k]])
    for p in pipes:
        p.close()
    assert_same(got, want)
