"""Capture mode of ladle.dynamic (reader.next_epoch(capture=True), DALI's
capture mode): the loop body traced in its first step and run as one
pipeline afterwards gives the bytes of eager mode, falls back to eager calls
where the body changes, and refuses what would change random numbers."""

import warnings

import numpy as np
import pytest

import ladle
sample_data_root = ladle.sample_data_root

ldd = pytest.importorskip("ladle.dynamic")

MEAN, STD = [0.485 * 255, 0.456 * 255, 0.406 * 255], [0.229 * 255, 0.224 * 255, 0.225 * 255]


def train_step(jpegs, rng, device=None):
    images = ldd.decoders.image_random_crop(jpegs, rng=rng, device=device)
    images = ldd.resize(images, resize_x=40, resize_y=32)
    mirror = ldd.random.coin_flip(batch_size=len(jpegs), probability=0.5, rng=rng)
    return ldd.crop_mirror_normalize(images, dtype=ldd.float16, output_layout="CHW", mean=MEAN, std=STD,
                                     mirror=mirror)


def run_epochs(capture, epochs=2, batch_size=3, step=train_step, seed=7):
    ctx = ldd.EvalContext(num_threads=2)
    reader = ldd.readers.File(file_root=sample_data_root(), random_shuffle=True, seed=seed)
    rng = ldd.random.RNG(seed=seed)
    out = []
    with ctx:
        for _ in range(epochs):
            for jpegs, labels in reader.next_epoch(batch_size=batch_size, capture=capture):
                x = step(jpegs, rng)
                out.append((x.torch().cpu().numpy(), labels.torch().cpu().numpy()))  # GPU results copied to compare
    state = rng.get_state()
    reader.close()
    ctx.close()
    return out, state


def assert_same(a, b):
    assert len(a) == len(b) and len(a) > 2
    for (xa, ya), (xb, yb) in zip(a, b):
        np.testing.assert_array_equal(xa, xb)
        np.testing.assert_array_equal(ya, yb)


def test_captured_training_loop_gives_eager_bytes():
    eager, eager_state = run_epochs(False)
    captured, captured_state = run_epochs(True)
    assert_same(eager, captured)
    assert eager_state == captured_state  # the generator moved as in eager mode


def test_capture_builds_one_graph_and_answers_from_it():
    reader = ldd.readers.File(file_root=sample_data_root(), seed=3)
    rng = ldd.random.RNG(seed=3)
    seen = []
    for jpegs, _ in reader.next_epoch(batch_size=2, capture=True):
        x = train_step(jpegs, rng)
        seen.append(x._capture is not None)
    loop = reader._capture
    assert loop.state == "captured" and loop.pipe is not None
    assert [n.info.name for n in loop.nodes] == ["decoders.image_random_crop", "resize", "random.coin_flip",
                                                 "crop_mirror_normalize"]
    assert all(seen)
    reader.close()


def test_intermediate_results_read_by_the_body_are_computed_with_the_same_bytes():
    def step(jpegs, rng):
        images = ldd.decoders.image_random_crop(jpegs, rng=rng)
        small = ldd.resize(images, resize_x=20, resize_y=16)
        shapes = [t.shape for t in images.tensors]  # reads an intermediate the graph does not output
        assert all(len(s) == 3 for s in shapes)
        return ldd.flip(small, horizontal=1)

    assert_same(run_epochs(False, step=step)[0], run_epochs(True, step=step)[0])


def test_a_body_that_changes_falls_back_to_eager_calls():
    calls = {"n": 0}

    def step(jpegs, rng):
        calls["n"] += 1
        images = ldd.decoders.image(jpegs)
        if calls["n"] % 2 == 0:  # Python control flow: another call on even steps
            images = ldd.flip(images, vertical=1)
        width = 24 + (calls["n"] % 3) * 8  # an argument that changes between steps
        return ldd.resize(images, resize_x=width, resize_y=16)

    eager = run_epochs(False, step=step)[0]
    calls["n"] = 0
    captured = run_epochs(True, step=step)[0]
    assert_same(eager, captured)


def test_data_made_in_the_body_runs_eagerly():
    def step(jpegs, rng):
        images = ldd.resize(ldd.decoders.image(jpegs), resize_x=8, resize_y=8)
        bias = ldd.batch([np.full((8, 8, 3), len(jpegs), np.uint8)] * len(jpegs), layout="HWC")
        return ldd.cast(images, dtype=ldd.float32) + ldd.cast(bias, dtype=ldd.float32)

    assert_same(run_epochs(False, step=step)[0], run_epochs(True, step=step)[0])


def test_a_random_call_that_changes_is_refused():
    calls = {"n": 0}

    def step(jpegs, rng):
        calls["n"] += 1
        images = ldd.decoders.image(jpegs)
        p = 0.5 if calls["n"] == 1 else 0.25  # the random call's argument changes after the traced step
        mirror = ldd.random.coin_flip(batch_size=len(jpegs), probability=p, rng=rng)
        return ldd.flip(ldd.resize(images, resize_x=16, resize_y=16), horizontal=mirror)

    with pytest.raises(ldd.CaptureError, match="random.coin_flip"):
        run_epochs(True, step=step)


def test_a_step_with_other_random_draws_is_refused():
    calls = {"n": 0}

    def step(jpegs, rng):
        calls["n"] += 1
        images = ldd.decoders.image(jpegs)
        if calls["n"] == 2:
            rng()  # one more draw than the traced step made
        mirror = ldd.random.coin_flip(batch_size=len(jpegs), rng=rng)
        return ldd.flip(ldd.resize(images, resize_x=16, resize_y=16), horizontal=mirror)

    with pytest.raises(ldd.CaptureError):
        run_epochs(True, step=step)


def test_a_body_without_operators_warns_and_runs():
    reader = ldd.readers.File(file_root=sample_data_root(), seed=1)
    n = 0
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for jpegs, labels in reader.next_epoch(batch_size=4, capture=True):
            n += len(jpegs)
    assert n == reader.epoch_size
    assert any("no call that can be captured" in str(x.message) for x in w)
    reader.close()


def test_breaking_out_keeps_the_reader_state_and_the_next_epoch_right():
    def first_steps(capture, stop):
        reader = ldd.readers.File(file_root=sample_data_root(), random_shuffle=True, seed=5)
        rng = ldd.random.RNG(seed=5)
        out = []
        for i, (jpegs, _) in enumerate(reader.next_epoch(batch_size=2, capture=capture)):
            out.append(np.array(train_step(jpegs, rng).torch()))
            if i == stop:
                break
        state = reader.get_state()
        for jpegs, _ in reader.next_epoch(batch_size=2, capture=capture):
            out.append(np.array(train_step(jpegs, rng).torch()))
        reader.close()
        return out, state

    eager, eager_state = first_steps(False, 2)
    captured, captured_state = first_steps(True, 2)
    assert eager_state == captured_state
    assert len(eager) == len(captured)
    for a, b in zip(eager, captured):
        np.testing.assert_array_equal(a, b)


def test_capture_needs_batches():
    reader = ldd.readers.File(file_root=sample_data_root())
    with pytest.raises(ladle.InvalidArgumentError, match="capture=True"):
        reader.next_epoch(capture=True)
    reader.close()


@pytest.mark.gpu
def test_captured_gpu_training_loop_gives_eager_bytes():
    # On the GPU the captured graph fuses resize into crop_mirror_normalize (same bytes as two kernels).
    def step(jpegs, rng):
        return train_step(jpegs, rng, device="gpu")

    eager, eager_state = run_epochs(False, step=step, batch_size=8)
    captured, captured_state = run_epochs(True, step=step, batch_size=8)
    assert_same(eager, captured)
    assert eager_state == captured_state
