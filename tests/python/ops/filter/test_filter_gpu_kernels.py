"""The filter family's CUDA kernels against their CPU operators on random inputs, bit-identical: normalize
(uint8 statistics from exact integer sums, so the same whatever the GPU's summation order; other types summed
in the CPU's chunk order) over every arrangement of reduced axes the kernels tell apart; filter (shared-memory
tiles) with per-sample filters of different sizes, every border mode, every layout, and the fast kernel of
batches with one 3x3 or 5x5 filter size; gaussian_blur's typed
passes. Odd sample sizes put later samples of a batch at odd addresses (unaligned rows). Also normalize's CPU
statistics against NumPy in float64."""

import numpy as np
import pytest

import ladle
from ladle import types
from conftest import requires_ops

pytestmark = requires_ops("normalize", "filter", "gaussian_blur")

DT = {np.uint8: types.UINT8, np.int8: types.INT8, np.int16: types.INT16, np.uint16: types.UINT16,
      np.int32: types.INT32, np.float32: types.FLOAT, np.float64: types.FLOAT64}


def run_dev(dev, feeds, graph, layout, extra=None):
    """graph(fn, x, *extra_nodes, dev) on one device; returns per output the list of sample arrays."""
    batch = feeds[0]
    pipe = ladle.Pipeline(batch_size=len(batch), num_threads=2, device_id=0 if dev == "gpu" else None)
    with pipe:
        x = ladle.fn.external_source(name="x", dtype=DT[batch[0].dtype.type], ndim=batch[0].ndim, layout=layout)
        nodes = [ladle.fn.external_source(name=f"e{k}", dtype=DT[f[0].dtype.type], ndim=f[0].ndim)
                 for k, f in enumerate(feeds[1:])]
        outs = graph(ladle.fn, x.gpu() if dev == "gpu" else x, *nodes, dev=dev)
        pipe.set_outputs(*(outs if isinstance(outs, tuple) else (outs,)))
    pipe.feed_input("x", batch)
    for k, f in enumerate(feeds[1:]):
        pipe.feed_input(f"e{k}", f)
    try:
        res = pipe.run()
        return [[np.array((o.as_cpu() if dev == "gpu" else o).at(i)) for i in range(len(batch))] for o in res]
    finally:
        pipe.close()


def assert_same(feeds, graph, layout):
    cpu, gpu = run_dev("cpu", feeds, graph, layout), run_dev("gpu", feeds, graph, layout)
    for k, (a_out, b_out) in enumerate(zip(cpu, gpu)):
        for i, (a, b) in enumerate(zip(a_out, b_out)):
            assert a.dtype == b.dtype and a.shape == b.shape, (k, i)
            assert a.tobytes() == b.tobytes(), f"output {k}, sample {i}: max diff {np.abs(a - b).max()}"


def samples(seed, dtype, shapes):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return [rng.normal(20, 30, s).astype(dtype) for s in shapes]
    info = np.iinfo(dtype)
    return [rng.integers(max(info.min, -3000), min(info.max, 3000) + 1, s).astype(dtype) for s in shapes]


HWC_SHAPES = [(1, 1, 3), (37, 1, 3), (1, 53, 3), (301, 300, 3), (23, 45, 3), (9, 131, 3), (64, 64, 3)]


def norm_graph(fn, x, dev):
    return (fn.normalize(x, device=dev),                                       # everything reduced
            fn.normalize(x, device=dev, axis_names="HW"),                      # reduced outside the channels
            fn.normalize(x, device=dev, axes=[2], ddof=1, epsilon=0.5),        # per pixel: channels reduced
            fn.normalize(x, device=dev, axes=[0], scale=3, shift=1),           # W*C groups (> 256 columns)
            fn.normalize(x, device=dev, axes=[1]),                             # reduced in the middle
            fn.normalize(x, device=dev, axes=[0, 1, 2], mean=40.0),
            fn.normalize(x, device=dev, axis_names="HW", stddev=7.0),
            fn.normalize(x, device=dev, axis_names="HW", dtype=types.UINT8, scale=40, shift=128),
            fn.normalize(x, device=dev, axis_names="HW", dtype=types.INT16, scale=1000))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.float32])
def test_gpu_normalize_equals_cpu(dtype):
    assert_same([samples(1, dtype, HWC_SHAPES)], norm_graph, "HWC")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_gpu_normalize_batch_equals_cpu(dtype):
    batch = samples(2, dtype, [(17, 33, 3), (1, 1, 3), (200, 151, 3), (5, 8, 3)])
    assert_same([batch], lambda fn, x, dev: (fn.normalize(x, device=dev, batch=True, axis_names="HW"),
                                             fn.normalize(x, device=dev, batch=True, axes=[0, 1], ddof=2)), "HWC")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_gpu_normalize_layouts_equal_cpu(dtype):
    """CHW (groups outside the reduced axes), FHWC (reduced axes between kept ones), big chunks."""
    chw = samples(3, dtype, [(3, 41, 29), (2, 1, 1), (4, 260, 333)])
    assert_same([chw], lambda fn, x, dev: (fn.normalize(x, device=dev, axis_names="HW"),
                                           fn.normalize(x, device=dev, axis_names="C")), "CHW")
    fhwc = samples(4, dtype, [(2, 13, 17, 3), (1, 1, 1, 1), (3, 40, 50, 2)])
    assert_same([fhwc], lambda fn, x, dev: (fn.normalize(x, device=dev, axis_names="HW"),
                                            fn.normalize(x, device=dev, axis_names="FW"),
                                            fn.normalize(x, device=dev, axis_names="FHWC")), "FHWC")


def test_normalize_uint8_statistics_numpy():
    """uint8 mean and stddev (exact integer sums) against NumPy in float64, to float32 rounding."""
    batch = samples(5, np.uint8, [(120, 97, 3), (1, 1, 3), (2, 3, 3)])
    got = run_dev("cpu", [batch], lambda fn, x, dev: fn.normalize(x, axis_names="HW", ddof=0), "HWC")[0]
    for x, y in zip(batch, got):
        x64 = x.astype(np.float64)
        mean, std = x64.mean(axis=(0, 1)), x64.std(axis=(0, 1))
        want = np.where(std > 0, (x64 - mean) / np.where(std > 0, std, 1), 0)
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def kernels(seed, sizes):
    rng = np.random.default_rng(seed)
    return [rng.normal(0, 0.3, s).astype(np.float32) for s in sizes]


FILTER_SIZES = [(5, 5), (1, 1), (3, 7), (7, 2), (9, 9), (1, 13), (41, 41), (3, 3)]


@pytest.mark.gpu
@pytest.mark.parametrize("border", ["reflect_101", "reflect_1001", "wrap", "clamp", "constant"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32])
def test_gpu_filter_equals_cpu(border, dtype):
    """Per-sample filters of different sizes (3x3 and 5x5: fixed-size sums; 41x41: the generic path), odd sizes,
    1x1 samples."""
    shapes = [(403, 463, 3), (1, 1, 3), (2, 37, 3), (57, 3, 3), (31, 33, 3), (129, 260, 3), (45, 50, 3), (77, 301, 3)]
    batch, filters = samples(6, dtype, shapes), kernels(7, FILTER_SIZES)
    feeds = [batch, filters]
    if border == "constant":
        feeds.append([np.array(v, dtype) for v in (3, 9, 100, 0, 7, 1, 2, 50)])

    def graph(fn, x, k, *fill, dev):
        return (fn.filter(x, k, *fill, device=dev, border=border),
                fn.filter(x, k, *fill, device=dev, border=border, dtype=types.FLOAT, anchor=[0, 0]))
    assert_same(feeds, graph, "HWC")


@pytest.mark.gpu
@pytest.mark.parametrize("border", ["reflect_101", "reflect_1001", "wrap", "clamp", "constant"])
@pytest.mark.parametrize("size", [3, 5])
def test_gpu_filter_fast_path_equals_cpu(border, size):
    """uint8 batches whose filters all have one size (3x3 or 5x5, different values per sample): the fast kernel,
    HWC (3 elements a pixel) and HW / CHW (1), with edge tiles, 1-pixel, 1-row, 1-column samples and samples
    smaller than the filter; uint8 and float output, the default and a corner anchor, mode valid."""
    shapes = [(403, 463, 3), (1, 1, 3), (1, 37, 3), (57, 1, 3), (2, 2, 3), (129, 260, 3), (45, 50, 3), (17, 301, 3)]
    batch, filters = samples(13, np.uint8, shapes), kernels(14, [(size, size)] * len(shapes))
    feeds = [batch, filters]
    if border == "constant":
        feeds.append([np.array(v, np.uint8) for v in (3, 9, 100, 0, 7, 1, 2, 50)])

    def graph(fn, x, k, *fill, dev):
        return (fn.filter(x, k, *fill, device=dev, border=border),
                fn.filter(x, k, *fill, device=dev, border=border, dtype=types.FLOAT, anchor=[0, size - 1]))
    assert_same(feeds, graph, "HWC")
    hw = samples(15, np.uint8, [(300, 411), (1, 1), (5, 1), (1, 9), (64, 129)])
    assert_same([hw, kernels(16, [(size, size)] * 5)] + ([[np.array(v, np.uint8) for v in (1, 2, 3, 4, 5)]]
                                                        if border == "constant" else []),
                lambda fn, x, k, *fill, dev: fn.filter(x, k, *fill, device=dev, border=border), "HW")
    chw = samples(17, np.uint8, [(3, 40, 41), (2, 9, 300), (1, size, size)])
    assert_same([chw, kernels(18, [(size, size)] * 3)],
                lambda fn, x, k, dev: fn.filter(x, k, device=dev, mode="valid", border=border), "CHW")


@pytest.mark.gpu
def test_gpu_filter_layouts_and_valid_equal_cpu():
    chw, filters = samples(8, np.uint8, [(3, 40, 41), (2, 9, 300), (1, 7, 7)]), kernels(9, [(5, 5), (3, 4), (7, 7)])
    assert_same([chw, filters], lambda fn, x, k, dev: (fn.filter(x, k, device=dev),
                                                       fn.filter(x, k, device=dev, mode="valid")), "CHW")
    fhwc, filters = samples(10, np.float32, [(2, 30, 21, 4), (3, 8, 8, 1)]), kernels(11, [(3, 3), (8, 1)])
    assert_same([fhwc, filters], lambda fn, x, k, dev: (fn.filter(x, k, device=dev, border="wrap"),
                                                        fn.filter(x, k, device=dev, mode="valid")), "FHWC")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32])
def test_gpu_gaussian_blur_equals_cpu(dtype):
    """The blur's passes (typed loads and stores for uint8 and float, the generic path for others): windows
    larger than the sample (reflections repeated), window 1, float output, an ImageNet-sized sample."""
    batch = samples(12, dtype, [(403, 463, 3), (1, 1, 3), (3, 70, 3), (61, 2, 3), (33, 47, 3)])
    assert_same([batch], lambda fn, x, dev: (fn.gaussian_blur(x, device=dev, sigma=1.5),
                                             fn.gaussian_blur(x, device=dev, window_size=[21, 1]),
                                             fn.gaussian_blur(x, device=dev, sigma=[0.7, 3.1], dtype=types.FLOAT)),
                "HWC")


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint16, np.float64])
def test_normalize_reads_every_dtype_numpy(dtype):
    """Inputs other than uint8, int32, int64 and float32 were once read as float32 bits."""
    batch = samples(13, dtype, [(7, 9, 3), (2, 1, 3)])
    got = run_dev("cpu", [batch], lambda fn, x, dev: fn.normalize(x, axis_names="HW"), "HWC")[0]
    for x, y in zip(batch, got):
        x64 = x.astype(np.float64)
        mean, std = x64.mean(axis=(0, 1)), x64.std(axis=(0, 1))
        np.testing.assert_allclose(y, (x64 - mean) / std, rtol=1e-4, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint16])
def test_gpu_normalize_other_dtypes_equal_cpu(dtype):
    assert_same([samples(14, dtype, [(7, 9, 3), (2, 1, 3), (40, 33, 3)])],
                lambda fn, x, dev: (fn.normalize(x, device=dev), fn.normalize(x, device=dev, axis_names="HW")), "HWC")
