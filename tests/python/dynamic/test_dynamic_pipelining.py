"""Deferred execution of ladle.dynamic overlaps calls (each call's graph is
fed at once when its inputs are data, and its outputs are taken when used),
and gives the bytes of eager mode whatever order the results are read in."""

import numpy as np
import pytest

import ladle

ldd = pytest.importorskip("ladle.dynamic")
pytest.importorskip("torch")

MEAN, STD = [0.485 * 255, 0.456 * 255, 0.406 * 255], [0.229 * 255, 0.224 * 255, 0.225 * 255]


def step(jpegs, rng):
    images = ldd.decoders.image_random_crop(jpegs, rng=rng)
    images = ldd.resize(images, resize_x=40, resize_y=32)
    mirror = ldd.random.coin_flip(batch_size=len(jpegs), probability=0.5, rng=rng)
    return ldd.crop_mirror_normalize(images, dtype=ldd.float16, output_layout="CHW", mean=MEAN, std=STD,
                                     mirror=mirror)


def epoch(deferred, read_late, batch_size=5):
    ctx = ldd.EvalContext(num_threads=2)
    reader = ldd.readers.File(file_root=ladle.sample_data_root(), random_shuffle=True, seed=11)
    rng = ldd.random.RNG(seed=11)
    results = []
    with ctx:
        for jpegs, labels in reader.next_epoch(batch_size=batch_size):
            if deferred:
                with ldd.EvalMode.deferred:
                    x = step(jpegs, rng)
            else:
                x = step(jpegs, rng)
            results.append((x, labels))
            if not read_late:
                results[-1] = (np.array(x.torch()), np.array(labels.torch()))
        if read_late:  # every step queued before any result is read: graphs work side by side
            results = [(np.array(x.torch()), np.array(y.torch())) for x, y in reversed(results)][::-1]
    reader.close()
    ctx.close()
    return results


def assert_same(a, b):
    assert len(a) == len(b) > 2
    for (xa, ya), (xb, yb) in zip(a, b):
        np.testing.assert_array_equal(xa, xb)
        np.testing.assert_array_equal(ya, yb)


@pytest.mark.parametrize("read_late", [False, True])
def test_deferred_loop_gives_eager_bytes(read_late):
    assert_same(epoch(False, False), epoch(True, read_late))


def test_independent_deferred_calls_are_fed_at_once():
    enc = ldd.batch([np.frombuffer(open(p, "rb").read(), np.uint8) for p in _jpegs()[:6]])
    eager = [ldd.flip(ldd.decoders.image(enc), horizontal=h) for h in (0, 1)]
    ctx = ldd.EvalContext(num_threads=2)
    with ctx, ldd.EvalMode.deferred:
        decoded = [ldd.decoders.image(enc) for _ in range(12)]  # more than a graph's feeding limit
        for d in decoded[:-1]:
            assert d._future[0]._submitted is not None  # fed by the calling thread, not the worker
        flipped = [ldd.flip(d, horizontal=i % 2) for i, d in enumerate(decoded)]
    for i, f in enumerate(flipped):
        for got, want in zip(f.tensors, eager[i % 2].tensors):
            np.testing.assert_array_equal(np.array(got), np.array(want))
    ctx.close()


def test_deferred_errors_do_not_spoil_later_calls():
    good = ldd.batch([np.frombuffer(open(_jpegs()[0], "rb").read(), np.uint8)])
    bad = ldd.batch([np.zeros(10, np.uint8)])
    with ldd.EvalMode.deferred:
        a = ldd.decoders.image(good)
        b = ldd.decoders.image(bad)
        c = ldd.decoders.image(good)
    np.testing.assert_array_equal(np.array(c.tensors[0]), np.array(ldd.decoders.image(good).tensors[0]))
    with pytest.raises(ladle.Error, match="decoders.image"):
        b.evaluate()
    np.testing.assert_array_equal(np.array(a.tensors[0]), np.array(c.tensors[0]))


def _jpegs():
    import os

    root = ladle.sample_data_root()
    return [os.path.join(root, c, f) for c in sorted(os.listdir(root)) for f in sorted(os.listdir(os.path.join(root, c)))]
