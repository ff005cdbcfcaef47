"""filter (2-D correlation) against a NumPy formula written here (np.pad's
border modes), against DALI 2.4 (run_both); the GPU kernel against the CPU."""

import numpy as np
import pytest

import ladle
from ladle import fn, types
from conftest import requires_ops, run_both

pytestmark = requires_ops("filter")

PAD = {"reflect_101": "reflect", "reflect_1001": "symmetric", "wrap": "wrap", "clamp": "edge", "constant": "constant"}


def reference(x, k, border="reflect_101", mode="same", anchor=None, fill=0, out_dtype=None):
    """x: HWC; correlation in float64 of each channel (rounded once at the end)."""
    r, s = k.shape
    x64 = x.astype(np.float64)
    if mode == "valid":
        padded, oh, ow = x64, x.shape[0] - r + 1, x.shape[1] - s + 1
    else:
        ay, ax = anchor if anchor is not None else (r // 2, s // 2)
        pads = ((ay, r - 1 - ay), (ax, s - 1 - ax), (0, 0))
        extra = dict(constant_values=fill) if border == "constant" else {}
        padded, oh, ow = np.pad(x64, pads, mode=PAD[border], **extra), x.shape[0], x.shape[1]
    out = np.zeros((oh, ow, x.shape[2]))
    for i in range(r):
        for j in range(s):
            out += k[i, j] * padded[i:i + oh, j:j + ow]
    dt = np.dtype(out_dtype or x.dtype)
    if dt.kind != "f":
        out = np.clip(np.rint(out), np.iinfo(dt).min, np.iinfo(dt).max)
    return out.astype(dt)


def data(seed, dtype=np.uint8, n=3):
    rng = np.random.default_rng(seed)
    shapes = [(int(rng.integers(4, 30)), int(rng.integers(4, 30)), 3) for _ in range(n)]
    if dtype == np.float32:
        return [rng.normal(0, 50, s).astype(np.float32) for s in shapes]
    return [rng.integers(0, np.iinfo(dtype).max if dtype != np.int16 else 1000, s).astype(dtype) for s in shapes]


def kernels(seed, n=3, shape=None):
    rng = np.random.default_rng(seed)
    return [rng.normal(0, 0.3, shape or (int(rng.integers(1, 6)), int(rng.integers(1, 6)))).astype(np.float32)
            for _ in range(n)]


def run(batch, filters, gpu=False, fills=None, **kw):
    pipe = ladle.Pipeline(batch_size=len(batch), num_threads=2, device_id=0 if gpu else None)
    with pipe:
        x = fn.external_source(name="x", dtype=types.to_dali_type(batch[0].dtype), ndim=3, layout="HWC")
        k = fn.external_source(name="k", dtype=types.FLOAT, ndim=2)
        extra = [fn.external_source(name="f", dtype=types.to_dali_type(batch[0].dtype), ndim=0)] if fills else []
        pipe.set_outputs(fn.filter(x.gpu() if gpu else x, k, *extra, **kw))
    pipe.feed_input("x", batch)
    pipe.feed_input("k", filters)
    if fills:
        pipe.feed_input("f", [np.array(v, batch[0].dtype) for v in fills])
    (out,) = pipe.run()
    got = [np.array(out.as_cpu().at(i) if gpu else out.at(i)) for i in range(len(batch))]
    pipe.close()
    return got


@pytest.mark.parametrize("border", list(PAD))
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32])
def test_formula(border, dtype):
    batch, filters = data(1, dtype), kernels(2)
    fills = [7, 0, 200] if border == "constant" else None
    got = run(batch, filters, border=border, fills=fills)
    for i, (x, k, y) in enumerate(zip(batch, filters, got)):
        want = reference(x, k, border, fill=fills[i] if fills else 0)
        assert y.dtype == want.dtype and y.shape == want.shape
        if dtype == np.float32:
            np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-3)  # float32 sums vs float64
        else:
            assert np.abs(y.astype(int) - want).max() <= 1  # float32 sums may round the other way at .5


def test_valid_mode_anchor_and_dtype():
    batch, filters = data(3), kernels(4, shape=(3, 4))
    got = run(batch, filters, mode="valid", dtype=types.FLOAT)
    for x, k, y in zip(batch, filters, got):
        np.testing.assert_allclose(y, reference(x, k, mode="valid", out_dtype=np.float32), rtol=1e-5, atol=1e-3)
    got = run(batch, filters, anchor=[0, 3], border="clamp")
    for x, k, y in zip(batch, filters, got):
        assert np.abs(y.astype(int) - reference(x, k, "clamp", anchor=(0, 3))).max() <= 1


def test_against_dali():
    batch, filters = [x for x in data(5, n=6) if min(x.shape[:2]) >= 5][:3], kernels(6)
    for kw in ({}, {"border": "wrap"}, {"border": "clamp", "anchor": [0, 0]}, {"mode": "valid"},
               {"dtype": "float"}):
        def graph(fn, types, x, k):
            args = dict(kw)
            if "dtype" in args:
                args["dtype"] = types.FLOAT
            return fn.filter(x, k, **args)

        ours, dali = run_both(graph, {"x": [batch], "k": [filters]}, len(batch))
        for a, b in zip(ours, dali):
            assert a.shape == b.shape and a.dtype == b.dtype
            if a.dtype == np.uint8:
                assert np.abs(a.astype(int) - b).max() <= 1  # both sum in float32, possibly in other orders
            else:
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-3)


def test_errors():
    def build(x_dtype=types.UINT8, k_ndim=2, **kw):
        pipe = ladle.Pipeline(batch_size=1, num_threads=1, device_id=None)
        try:
            with pipe:
                x = fn.external_source(name="x", dtype=x_dtype, ndim=3, layout="HWC")
                k = fn.external_source(name="k", dtype=types.FLOAT, ndim=k_ndim)
                pipe.set_outputs(fn.filter(x, k, **kw))
            pipe.feed_input("x", [np.zeros((4, 4, 3), np.uint8)])
            pipe.feed_input("k", [np.ones((3, 3) if k_ndim == 2 else (3,), np.float32)])
            pipe.run()
        finally:
            pipe.close()

    with pytest.raises(ladle.Error, match="filter.*input 1.*2-D float32"):
        build(k_ndim=1)
    with pytest.raises(ladle.Error, match="filter.*border"):
        build(border="mirror")
    with pytest.raises(ladle.Error, match="filter.*'dtype'"):
        build(dtype=types.INT32)
    with pytest.raises(ladle.Error, match="filter.*'anchor'.*outside"):
        build(anchor=[5, 0])
    with pytest.raises(ladle.Error, match="filter.*valid.*larger than the sample"):
        pipe = ladle.Pipeline(batch_size=1, num_threads=1, device_id=None)
        with pipe:
            x = fn.external_source(name="x", dtype=types.UINT8, ndim=3, layout="HWC")
            k = fn.external_source(name="k", dtype=types.FLOAT, ndim=2)
            pipe.set_outputs(fn.filter(x, k, mode="valid"))
        pipe.feed_input("x", [np.zeros((2, 4, 3), np.uint8)])
        pipe.feed_input("k", [np.ones((3, 3), np.float32)])
        try:
            pipe.run()
        finally:
            pipe.close()
    with pytest.raises(ladle.Error, match="filter.*int32"):
        build(x_dtype=types.INT32)


@pytest.mark.gpu
@pytest.mark.parametrize("border", list(PAD))
def test_gpu_matches_cpu(border):
    batch, filters = data(7) + [np.random.default_rng(0).integers(0, 256, (300, 200, 3), dtype=np.uint8)], kernels(8, 4)
    fills = [3, 9, 250, 0] if border == "constant" else None
    for a, b in zip(run(batch, filters, border=border, fills=fills),
                    run(batch, filters, gpu=True, border=border, fills=fills)):
        np.testing.assert_array_equal(a, b)  # the same float operations in the same order, no FMA
