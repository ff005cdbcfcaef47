"""fn.reductions.* against NumPy formulas written here and against DALI 2.4
on the CPU (run_both); the GPU kernels against the CPU ones."""

import numpy as np
import pytest

import ladle
from ladle import fn, types
from conftest import requires_ops, run_both

NAMES = ("sum", "min", "max", "mean", "mean_square", "rms", "std_dev", "variance")
pytestmark = requires_ops(*("reductions." + n for n in NAMES))


def samples(seed, dtype, n=3):
    rng = np.random.default_rng(seed)
    shapes = [(int(rng.integers(1, 40)), int(rng.integers(1, 50)), 3) for _ in range(n)]
    if np.dtype(dtype).kind == "f":
        return [rng.normal(3, 10, s).astype(dtype) for s in shapes]
    info = np.iinfo(dtype)
    return [rng.integers(max(info.min, -1000), min(info.max, 1000) + 1, s).astype(dtype) for s in shapes]


def run(graph, batch, gpu=False):
    pipe = ladle.Pipeline(batch_size=len(batch), num_threads=2, device_id=0 if gpu else None)
    with pipe:
        x = fn.external_source(name="x", dtype=types.to_dali_type(batch[0].dtype), ndim=batch[0].ndim,
                               layout="HWC" if batch[0].ndim == 3 else None)
        outs = graph(x.gpu() if gpu else x)
        pipe.set_outputs(*(outs if isinstance(outs, tuple) else (outs,)))
    pipe.feed_input("x", batch)
    got = [[np.array(t.as_cpu().at(i) if gpu else t.at(i)) for i in range(len(t))] for t in pipe.run()]
    pipe.close()
    return got


def numpy_ref(name, x, axes, keep, ddof=0):
    x64 = x.astype(np.float64)
    if name == "sum":
        return np.sum(x.astype(np.float64 if x.dtype.kind == "f" else (np.uint64 if x.dtype.kind == "u" else np.int64)),
                      axis=axes, keepdims=keep)
    if name in ("min", "max"):
        return getattr(np, "a" + name)(x, axis=axes, keepdims=keep)
    if name == "mean":
        return np.mean(x64, axis=axes, keepdims=keep)
    if name == "mean_square":
        return np.mean(x64 * x64, axis=axes, keepdims=keep)
    if name == "rms":
        return np.sqrt(np.mean(x64 * x64, axis=axes, keepdims=keep))
    v = np.var(x64, axis=axes, keepdims=keep, ddof=ddof)
    return np.sqrt(v) if name == "std_dev" else v


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int32, np.float32])
@pytest.mark.parametrize("axes,keep", [(None, False), ((0, 1), True), ((0, 1), False), ((2,), False), ((1,), True)])
def test_against_numpy(dtype, axes, keep):
    batch = samples(3, dtype)
    kw = dict(keep_dims=keep)
    if axes is not None:
        kw["axes"] = list(axes)

    def graph(x):
        mean = fn.reductions.mean(x, **kw)
        return tuple(getattr(fn.reductions, n)(x, **kw) for n in NAMES[:6]) + (
            fn.reductions.std_dev(x, mean, **kw), fn.reductions.variance(x, mean, ddof=1, **kw))

    got = run(graph, batch)
    for k, name in enumerate(NAMES):
        for i, x in enumerate(batch):
            ref = numpy_ref(name, x, axes, keep, ddof=1 if name == "variance" else 0)
            out = got[k][i]
            assert out.shape == np.shape(ref), (name, out.shape, np.shape(ref))
            if name in ("sum", "min", "max") and x.dtype.kind != "f":
                np.testing.assert_array_equal(out, ref)  # exact integers
                assert out.dtype == (x.dtype if name != "sum" else (np.uint64 if x.dtype.kind == "u" else np.int64))
            else:
                assert out.dtype == np.float32
                # double accumulation rounded once to float32; std/var use the float32 mean (input 1)
                np.testing.assert_allclose(out, ref, rtol=2e-6 if name not in ("std_dev", "variance") else 1e-5,
                                           atol=1e-6)


def test_axis_names_and_layout():
    batch = samples(5, np.uint8)
    got = run(lambda x: (fn.reductions.max(x, axis_names="HW"), fn.reductions.mean(x, axis_names="C", keep_dims=True),
                         fn.reductions.sum(x, axis_names="HW", dtype=types.FLOAT)), batch)
    for i, x in enumerate(batch):
        np.testing.assert_array_equal(got[0][i], x.max(axis=(0, 1)))
        np.testing.assert_allclose(got[1][i], x.mean(axis=2, keepdims=True), rtol=1e-6)
        assert got[2][i].dtype == np.float32
        np.testing.assert_array_equal(got[2][i], x.sum(axis=(0, 1)).astype(np.float32))
    pipe = ladle.Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        x = fn.external_source(name="x", dtype=types.UINT8, ndim=3, layout="HWC")
        pipe.set_outputs(fn.reductions.min(x, axis_names="HW"), fn.reductions.min(x, axes=[2], keep_dims=True))
    pipe.feed_input("x", batch[:1])
    a, b = pipe.run()
    assert a.layout() == "C" and b.layout() == "HWC"
    pipe.close()


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.uint16, np.float32])
def test_against_dali(dtype):
    batch = samples(7, dtype)

    def graph(fn, types, x):
        m = fn.reductions.mean(x, axis_names="HW")
        return (fn.reductions.sum(x), fn.reductions.min(x, axes=[0, 1], keep_dims=True), fn.reductions.max(x, axes=-1),
                m, fn.reductions.mean_square(x), fn.reductions.rms(x, axes=[0]),
                fn.reductions.std_dev(x, m, axis_names="HW"), fn.reductions.variance(x, m, axis_names="HW", ddof=1))

    ours, dali = run_both(graph, {"x": [batch]}, len(batch))
    for k, (a, b) in enumerate(zip(ours, dali)):
        for x, y in zip(a, b):
            assert x.dtype == y.dtype and x.shape == y.shape, (k, x.dtype, y.dtype, x.shape, y.shape)
            if x.dtype.kind in "iu":
                np.testing.assert_array_equal(x, y)
            else:
                # DALI accumulates in its own order and precision: a few float32 ulps apart.
                np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-4)


def test_min_max_propagate_nan():
    x = np.arange(2 * 40 * 3, dtype=np.float32).reshape(2, 40, 3)
    x[1, 17, 0] = np.nan  # neither first nor last in any order of the members
    got = run(lambda x: (fn.reductions.min(x, axes=[0, 1]), fn.reductions.max(x, axes=[0, 1]),
                         fn.reductions.min(x, axes=[2])), [x])
    np.testing.assert_array_equal(got[0][0], np.min(x, axis=(0, 1)))
    np.testing.assert_array_equal(got[1][0], np.max(x, axis=(0, 1)))
    np.testing.assert_array_equal(got[2][0], np.min(x, axis=2))


def test_errors():
    def build(graph, dtype=types.UINT8):
        pipe = ladle.Pipeline(batch_size=1, num_threads=1, device_id=None)
        with pipe:
            x = fn.external_source(name="x", dtype=dtype, ndim=3, layout="HWC")
            pipe.set_outputs(graph(x))
        try:
            pipe.feed_input("x", [np.zeros((2, 2, 3), np.uint8 if dtype == types.UINT8 else np.float32)])
            pipe.run()
        finally:
            pipe.close()

    with pytest.raises(ladle.Error, match="reductions.sum.*axes.*not both"):
        build(lambda x: fn.reductions.sum(x, axes=[0], axis_names="H"))
    with pytest.raises(ladle.Error, match="reductions.mean.*axis_names.*'Q'"):
        build(lambda x: fn.reductions.mean(x, axis_names="Q"))
    with pytest.raises(ladle.Error, match="reductions.max.*axes.*out of range"):
        build(lambda x: fn.reductions.max(x, axes=[3]))
    with pytest.raises(ladle.Error, match="reductions.variance.*mean.*float32"):
        build(lambda x: fn.reductions.variance(x, fn.reductions.max(x, axis_names="HW"), axis_names="HW"))
    with pytest.raises(ladle.Error, match="reductions.std_dev.*ddof"):
        build(lambda x: fn.reductions.std_dev(x, fn.reductions.mean(x), ddof=12))
    with pytest.raises(ladle.Error, match="reductions.std_dev.*mean.*3 values"):
        build(lambda x: fn.reductions.std_dev(x, fn.reductions.mean(x, axis_names="HW")))


GPU_DTYPES = [np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32, np.uint64, np.int64, np.float32,
              np.float64]


def gpu_samples(dtype):
    """Random samples (odd sizes), one large (several chunks of members), one
    of one element, one with 2 pixels (fewer members than a warp's lanes)."""
    rng = np.random.default_rng(11)
    shapes = [(int(rng.integers(1, 40)), int(rng.integers(1, 50)), 3) for _ in range(3)]
    shapes += [(301, 299, 3), (1, 1, 3), (1, 2, 3)]
    if np.dtype(dtype).kind == "f":
        return [rng.normal(3, 10, s).astype(dtype) for s in shapes]
    info = np.iinfo(dtype)
    return [rng.integers(max(info.min, -1000), min(info.max, 1000) + 1, s).astype(dtype) for s in shapes]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", GPU_DTYPES)
@pytest.mark.parametrize("axes,keep", [(None, False), ((), False), ((0, 1), False), ((0, 1), True), ((2,), False),
                                       ((2,), True), ((0,), False), ((1,), False), ((0, 2), True), ((1, 2), False)])
def test_gpu_matches_cpu(dtype, axes, keep):
    batch = gpu_samples(dtype)
    kw = dict(keep_dims=keep)
    if axes is not None:
        kw["axes"] = list(axes)

    def graph(x):
        m = fn.reductions.mean(x, **kw)
        return tuple(getattr(fn.reductions, n)(x, **kw) for n in NAMES[:6]) + (
            fn.reductions.std_dev(x, m, **kw), fn.reductions.variance(x, m, **kw),
            fn.reductions.sum(x, dtype=types.FLOAT64, **kw))

    cpu, gpu = run(graph, batch), run(graph, batch, gpu=True)
    for k, (a, b) in enumerate(zip(cpu, gpu)):
        for i, (x, y) in enumerate(zip(a, b)):
            # reduce_core.h's order (a warp's lanes, then a butterfly) on both, no FMA: bit-identical
            assert x.dtype == y.dtype and x.shape == y.shape, (k, i)
            assert x.tobytes() == y.tobytes(), (k, i, x, y)


def empty_axis_sums(gpu):
    batch = [np.zeros((0, 4, 3), np.uint8), np.ones((2, 4, 3), np.uint8)]
    return [run(lambda x: (fn.reductions.sum(x, axes=axes), fn.reductions.sum(x, axes=axes, dtype=types.FLOAT)),
                batch, gpu=gpu) for axes in ([0], [0, 1])]


def test_sum_of_empty_axis():
    for ints, floats in empty_axis_sums(False):
        assert ints[0].shape[-1] == 3 and not ints[0].any() and (ints[1] == ints[1].flat[0]).all()
        assert floats[0].dtype == np.float32 and not floats[0].any() and not np.signbit(floats[0]).any()


@pytest.mark.gpu
def test_gpu_sum_of_empty_axis():
    for a, b in zip(empty_axis_sums(False), empty_axis_sums(True)):
        for x, y in zip(a, b):
            for u, v in zip(x, y):
                assert u.tobytes() == v.tobytes()
