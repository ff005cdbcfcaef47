"""copy, transpose, stack, cat, pad, slice, element_extract: NumPy formulas
(np.transpose, np.stack, np.concatenate, np.pad, slicing) on random ragged
batches of every dtype, DALI on the same graphs (bit-exact: elements are
moved, not computed), GPU against CPU, and bad arguments."""

import numpy as np
import pytest

from conftest import requires_ops
from tensor_helpers import assert_same, check_error, ragged, run_lib

pytestmark = requires_ops("copy", "transpose", "stack", "cat", "pad", "slice", "element_extract")

DTYPES = [np.uint8, np.int32, np.int64, np.float32, np.float16]
SHAPES = [(4, 5, 3), (2, 7, 3), (6, 1, 3)]


def one(lib, graph, feeds, layouts=None, device="cpu"):
    return run_lib(lib, graph, feeds, len(next(iter(feeds.values()))), device=device, layouts=layouts)[0]


@pytest.mark.parametrize("dtype", DTYPES)
def test_copy_and_transpose_match_numpy(dtype):
    batch = ragged(np.random.default_rng(1), dtype, SHAPES)
    got, layout = one("ladle", lambda fn, t, x: fn.copy(x), {"x": batch}, {"x": "HWC"})
    assert layout == "HWC"
    for g, x in zip(got, batch):
        np.testing.assert_array_equal(g, x)
    got, layout = one("ladle", lambda fn, t, x: fn.transpose(x, perm=[2, 0, 1]), {"x": batch}, {"x": "HWC"})
    assert layout == "CHW"
    for g, x in zip(got, batch):
        np.testing.assert_array_equal(g, np.transpose(x, (2, 0, 1)))
    got, layout = one("ladle", lambda fn, t, x: fn.transpose(x, perm=[1, 2, 0], transpose_layout=False),
                      {"x": batch}, {"x": "HWC"})
    assert layout == "HWC"
    for g, x in zip(got, batch):
        np.testing.assert_array_equal(g, np.transpose(x, (1, 2, 0)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_stack_and_cat_match_numpy(dtype):
    rng = np.random.default_rng(2)
    a, b = ragged(rng, dtype, SHAPES), ragged(rng, dtype, SHAPES)
    c = ragged(rng, dtype, [(s[0], 2, s[2]) for s in SHAPES])
    feeds = {"a": a, "b": b, "c": c}
    lay = {"a": "HWC", "b": "HWC", "c": "HWC"}
    for axis in (0, 1, 3, -1):
        got, layout = one("ladle", lambda fn, t, a, b, c: fn.stack(a, b, a, axis=axis), feeds, lay)
        assert layout == ""
        for g, x, y in zip(got, a, b):
            np.testing.assert_array_equal(g, np.stack([x, y, x], axis=axis))
    got, layout = one("ladle", lambda fn, t, a, b, c: fn.stack(a, b, axis=1, axis_name="N"), feeds, lay)
    assert layout == "HNWC"
    got, layout = one("ladle", lambda fn, t, a, b, c: fn.cat(a, c, b, axis_name="W"), feeds, lay)
    assert layout == "HWC"
    for g, x, z, y in zip(got, a, c, b):
        np.testing.assert_array_equal(g, np.concatenate([x, z, y], axis=1))
    for axis in (0, 2, -1):
        got, _ = one("ladle", lambda fn, t, a, b, c: fn.cat(a, b, axis=axis), feeds, lay)
        for g, x, y in zip(got, a, b):
            np.testing.assert_array_equal(g, np.concatenate([x, y], axis=axis))


@pytest.mark.parametrize("dtype", DTYPES)
def test_pad_matches_numpy(dtype):
    batch = ragged(np.random.default_rng(3), dtype, SHAPES)
    got, layout = one("ladle", lambda fn, t, x: fn.pad(x, fill_value=-1), {"x": batch}, {"x": "HWC"})
    assert layout == "HWC"
    big = np.max([x.shape for x in batch], axis=0)
    fill = np.array(-1).astype(dtype)  # as the cast would (uint8 saturates to 0)
    fill = 0 if dtype == np.uint8 else fill
    for g, x in zip(got, batch):
        np.testing.assert_array_equal(g, np.pad(x, [(0, m - e) for m, e in zip(big, x.shape)], constant_values=fill))
    # one axis by name, at least 5, aligned to 4; the other axes untouched
    got, _ = one("ladle", lambda fn, t, x: fn.pad(x, axis_names="W", shape=[5], align=4, fill_value=7), {"x": batch},
                 {"x": "HWC"})
    for g, x in zip(got, batch):
        w = -(-max(5, x.shape[1]) // 4) * 4
        np.testing.assert_array_equal(g, np.pad(x, [(0, 0), (0, w - x.shape[1]), (0, 0)], constant_values=7))


@pytest.mark.parametrize("dtype", DTYPES)
def test_slice_matches_numpy(dtype):
    batch = ragged(np.random.default_rng(4), dtype, SHAPES)
    got, _ = one("ladle", lambda fn, t, x: fn.slice(x, start=[1, 0], end=[2, 2], axes=[0, 2]), {"x": batch}, {"x": "HWC"})
    for g, x in zip(got, batch):
        np.testing.assert_array_equal(g, x[1:2, :, 0:2])
    # pad out of bounds: the reference pads with NumPy and slices the padded array
    graph = lambda fn, t, x: fn.slice(x, start=[-2, 1], shape=[4, 3], axes=[0, 1],  # noqa: E731
                                      out_of_bounds_policy="pad", fill_values=[9])
    got, _ = one("ladle", graph, {"x": batch}, {"x": "HWC"})
    for g, x in zip(got, batch):
        padded = np.pad(x, [(2, 4), (0, 4), (0, 0)], constant_values=9)
        np.testing.assert_array_equal(g, padded[0:4, 1:4])
    # trim_to_shape
    graph = lambda fn, t, x: fn.slice(x, start=[-2, 1], shape=[4, 3], axes=[0, 1],  # noqa: E731
                                      out_of_bounds_policy="trim_to_shape")
    got, _ = one("ladle", graph, {"x": batch}, {"x": "HWC"})
    for g, x in zip(got, batch):
        np.testing.assert_array_equal(g, x[0:2, 1:4])


def test_slice_inputs_and_channel_fill():
    batch = ragged(np.random.default_rng(5), np.float32, [(6, 8, 3), (4, 4, 3)])
    anchors = [np.array([0.25, 0.5], np.float32), np.array([0.0, 0.0], np.float32)]
    shapes = [np.array([0.5, 0.5], np.float32), np.array([1.0, 0.5], np.float32)]
    graph = lambda fn, t, x, host_a, host_s: fn.slice(x, host_a, host_s)  # noqa: E731 (axes W, H by default)
    got, _ = run_lib("ladle", graph, {"x": batch, "host_a": anchors, "host_s": shapes}, 2, layouts={"x": "HWC"})[0]
    for g, x, a, s in zip(got, batch, anchors, shapes):
        h, w = x.shape[:2]
        x0, y0 = int(np.round(a[0] * w)), int(np.round(a[1] * h))
        x1, y1 = int(np.round(a[0] * w + s[0] * w)), int(np.round(a[1] * h + s[1] * h))
        np.testing.assert_array_equal(g, x[y0:y1, x0:x1])
    graph = lambda fn, t, x: fn.slice(x, start=[-1], shape=[9], axes=[1],  # noqa: E731
                                      out_of_bounds_policy="pad", fill_values=[1, 2, 3])
    got, _ = run_lib("ladle", graph, {"x": batch}, 2, layouts={"x": "HWC"})[0]
    for g, x in zip(got, batch):
        want = np.empty((x.shape[0], 9, 3), np.float32)
        want[:] = [1, 2, 3]
        want[:, 1:1 + x.shape[1]] = x[:, :8]
        np.testing.assert_array_equal(g, want)


def test_element_extract_matches_numpy():
    batch = ragged(np.random.default_rng(6), np.int32, [(3, 2, 2), (5, 1, 2)])
    outs = run_lib("ladle", lambda fn, t, x: fn.element_extract(x, element_map=[2, 0]), {"x": batch}, 2,
                   layouts={"x": "FHW"})
    for k, frame in enumerate([2, 0]):
        got, layout = outs[k]
        assert layout == "HW"
        for g, x in zip(got, batch):
            np.testing.assert_array_equal(g, x[frame])


A = [np.arange(60, dtype=np.int32).reshape(3, 5, 4) - 20, np.arange(24, dtype=np.int32).reshape(2, 3, 4)]
DALI_CASES = {
    "copy": lambda fn, t, x: fn.copy(x),
    "transpose": lambda fn, t, x: fn.transpose(x, perm=[2, 0, 1]),
    "transpose_output_layout": lambda fn, t, x: fn.transpose(x, perm=[1, 0, 2], output_layout="ABC"),
    "stack": lambda fn, t, x: fn.stack(x, x, axis=1, axis_name="X"),
    "stack_last": lambda fn, t, x: fn.stack(x, x, x, axis=-1),
    "cat": lambda fn, t, x: fn.cat(x, x, axis=2),
    "cat_name": lambda fn, t, x: fn.cat(x, x, x, axis_name="W"),
    "pad": lambda fn, t, x: fn.pad(x, fill_value=-3),
    "pad_align": lambda fn, t, x: fn.pad(x, axis_names="H", align=4),
    "pad_shape": lambda fn, t, x: fn.pad(x, axes=[0, 1], shape=[4, -1], fill_value=5),
    "slice": lambda fn, t, x: fn.slice(x, start=[1], end=[3], axes=[2]),
    "slice_rel_wh": lambda fn, t, x: fn.slice(x, rel_start=[0.25, 0.0], rel_shape=[0.5, 1.0]),
    "slice_rel_end": lambda fn, t, x: fn.slice(x, rel_start=[0.1, 0.2], rel_end=[0.8, 0.9]),
    "slice_pad": lambda fn, t, x: fn.slice(x, start=[-1, 0], shape=[3, 5], axes=[1, 2], out_of_bounds_policy="pad",
                                           fill_values=[7]),
    "slice_pad_channels": lambda fn, t, x: fn.slice(x, start=[-1], shape=[7], axes=[0], out_of_bounds_policy="pad",
                                                    fill_values=[1, 2, 3, 4]),
    "slice_trim": lambda fn, t, x: fn.slice(x, start=[-1, 0], shape=[3, 5], axes=[1, 2],
                                            out_of_bounds_policy="trim_to_shape"),
    "element_extract": lambda fn, t, x: fn.element_extract(fn.per_frame(x, replace=True), element_map=[1]),
}


@pytest.mark.parametrize("case", sorted(DALI_CASES))
def test_copies_match_dali(case):
    got = run_lib("ladle", DALI_CASES[case], {"x": A}, 2, layouts={"x": "HWC"})
    want = run_lib("dali", DALI_CASES[case], {"x": A}, 2, layouts={"x": "HWC"})
    assert_same(got, want)


# slice with anchor and shape as inputs (in elements), read on the host
SLICE_INPUT_FEEDS = {"x": A, "host_a": [np.array([1, 1], np.int32), np.array([0, 1], np.int32)],
                     "host_s": [np.array([2, 2], np.int32), np.array([3, 1], np.int32)]}


def slice_by_inputs(fn, t, x, host_a, host_s):
    return fn.slice(x, host_a, host_s, normalized_anchor=False, normalized_shape=False)


def test_slice_inputs_match_dali():
    assert_same(run_lib("ladle", slice_by_inputs, SLICE_INPUT_FEEDS, 2, layouts={"x": "HWC"}),
                run_lib("dali", slice_by_inputs, SLICE_INPUT_FEEDS, 2, layouts={"x": "HWC"}))


@pytest.mark.gpu
@pytest.mark.parametrize("case", sorted(DALI_CASES))
@pytest.mark.parametrize("dtype", DTYPES)
def test_copies_gpu_equal_cpu(case, dtype):
    batch = ragged(np.random.default_rng(7), dtype, [(3, 5, 4), (2, 3, 4), (4, 4, 4)])
    assert_same(run_lib("ladle", DALI_CASES[case], {"x": batch}, 3, device="gpu", layouts={"x": "HWC"}),
                run_lib("ladle", DALI_CASES[case], {"x": batch}, 3, layouts={"x": "HWC"}))


@pytest.mark.gpu
def test_slice_inputs_on_the_host_with_gpu_data():
    assert_same(run_lib("ladle", slice_by_inputs, SLICE_INPUT_FEEDS, 2, device="gpu", layouts={"x": "HWC"}),
                run_lib("ladle", slice_by_inputs, SLICE_INPUT_FEEDS, 2, layouts={"x": "HWC"}))


def test_copies_bad_arguments():
    x = {"x": [np.zeros((2, 3, 4), np.uint8)]}
    hwc = {"x": "HWC"}
    check_error(lambda fn, t, x: fn.transpose(x, perm=[0, 1]), x, hwc, "transpose", "perm")
    check_error(lambda fn, t, x: fn.transpose(x, perm=[0, 1, 1]), x, hwc, "transpose", "perm", "permutation")
    check_error(lambda fn, t, x: fn.stack(x, x, axis=4), x, hwc, "stack", "axis")
    check_error(lambda fn, t, x: fn.cat(x, x, axis_name="D"), x, hwc, "cat", "axis_name")
    check_error(lambda fn, t, x: fn.cat(x, fn.cast(x, dtype=t.INT32)), x, hwc, "cat", "input 1", "int32")
    check_error(lambda fn, t, x: fn.stack(x, fn.transpose(x, perm=[1, 0, 2], transpose_layout=False)), x, hwc, "stack", "input 1", "extent")
    check_error(lambda fn, t, x: fn.cat(x, fn.reshape(x, shape=[-1])), x, hwc, "cat", "input 1", "dimensions")
    check_error(lambda fn, t, x: fn.pad(x, axes=[7]), x, hwc, "pad", "axes")
    check_error(lambda fn, t, x: fn.pad(x, axes=[0, 1], shape=[2]), x, hwc, "pad", "shape")
    check_error(lambda fn, t, x: fn.pad(x, align=[0]), x, hwc, "pad", "align")
    check_error(lambda fn, t, x: fn.slice(x, start=[0, 0], end=[9, 1]), x, hwc, "slice", "out_of_bounds_policy")
    check_error(lambda fn, t, x: fn.slice(x, start=[0], end=[1]), x, hwc, "slice", "start", "2 sliced axes")
    check_error(lambda fn, t, x: fn.slice(x, start=[0, 0], rel_start=[0, 0]), x, hwc, "slice", "rel_start")
    check_error(lambda fn, t, x: fn.slice(x, shape=[1, 1], out_of_bounds_policy="wrap"), x, hwc, "slice",
                "out_of_bounds_policy")
    check_error(lambda fn, t, x: fn.slice(x, start=[-1], shape=[3], axes=[0], out_of_bounds_policy="pad",
                                          fill_values=[1, 2]), x, hwc, "slice", "fill_values")
    check_error(lambda fn, t, x: fn.element_extract(x, element_map=[0]), x, hwc, "element_extract", "'F'")
    check_error(lambda fn, t, x: fn.element_extract(fn.per_frame(x, replace=True), element_map=[5]), x, hwc,
                "element_extract", "element_map")
