"""reshape, reinterpret, squeeze, expand_dims, per_frame: NumPy formulas on
random ragged batches of every dtype, DALI on the same graphs (bit-exact:
no arithmetic), GPU against CPU, zero copy, and bad arguments."""

import numpy as np
import pytest

from conftest import requires_ops
from tensor_helpers import assert_same, check_error, ragged, run_lib

pytestmark = requires_ops("reshape", "reinterpret", "squeeze", "expand_dims", "per_frame")

DTYPES = [np.uint8, np.int32, np.int64, np.float32, np.float16]


@pytest.mark.parametrize("dtype", DTYPES)
def test_reshape_matches_numpy(dtype):
    rng = np.random.default_rng(1)
    batch = ragged(rng, dtype, [(4, 6, 3), (2, 6, 3), (1, 6, 3)])
    (got, layout), = run_lib("ladle", lambda fn, t, x: fn.reshape(x, shape=[-1, 9]), {"x": batch}, 3,
                             layouts={"x": "HWC"})
    assert layout == ""
    for g, x in zip(got, batch):
        np.testing.assert_array_equal(g, np.reshape(x, (-1, 9)))
    (got, layout), = run_lib("ladle", lambda fn, t, x: fn.reshape(x, rel_shape=[0.5, 2, 1]), {"x": batch[:2]}, 2,
                             layouts={"x": "HWC"})
    assert layout == "HWC"
    for g, x in zip(got, batch[:2]):
        np.testing.assert_array_equal(g, x.reshape(x.shape[0] // 2, 12, 3))
    (got, layout), = run_lib("ladle", lambda fn, t, x: fn.reshape(x, src_dims=[2, -1, 1, 0]), {"x": batch}, 3)
    for g, x in zip(got, batch):
        np.testing.assert_array_equal(g, x.reshape(x.shape[2], 1, x.shape[1], x.shape[0]))


def test_reshape_per_sample_shape_from_a_node():
    rng = np.random.default_rng(2)
    batch = ragged(rng, np.int32, [(4, 6), (3, 2)])
    shapes = [np.array([3, 8], np.int32), np.array([6, 1], np.int32)]
    graph = lambda fn, t, x, host_s: fn.reshape(x, shape=host_s, layout="AB")  # noqa: E731
    (got, layout), = run_lib("ladle", graph, {"x": batch, "host_s": shapes}, 2)
    assert layout == "AB"
    for g, x, s in zip(got, batch, shapes):
        np.testing.assert_array_equal(g, x.reshape(s))
    # and as input 1, as DALI allows
    graph = lambda fn, t, x, host_s: fn.reshape(x, host_s, layout="AB")  # noqa: E731
    (got, _), = run_lib("ladle", graph, {"x": batch, "host_s": shapes}, 2)
    for g, x, s in zip(got, batch, shapes):
        np.testing.assert_array_equal(g, x.reshape(s))


@pytest.mark.parametrize("dtype", DTYPES)
def test_reinterpret_matches_numpy_view(dtype):
    rng = np.random.default_rng(3)
    batch = ragged(rng, dtype, [(2, 3, 8), (5, 1, 8)])
    (got, layout), = run_lib("ladle", lambda fn, t, x: fn.reinterpret(x, dtype=t.UINT8), {"x": batch}, 2,
                             layouts={"x": "HWC"})
    assert layout == "HWC"
    for g, x in zip(got, batch):
        np.testing.assert_array_equal(g, x.view(np.uint8))
    (got, _), = run_lib("ladle", lambda fn, t, x: fn.reinterpret(x, dtype=t.INT32, shape=[-1]), {"x": batch}, 2)
    for g, x in zip(got, batch):
        np.testing.assert_array_equal(g, x.reshape(-1).view(np.int32))


@pytest.mark.parametrize("dtype", DTYPES)
def test_squeeze_and_expand_dims_match_numpy(dtype):
    rng = np.random.default_rng(4)
    batch = ragged(rng, dtype, [(1, 5, 1), (1, 2, 1)])
    (got, layout), = run_lib("ladle", lambda fn, t, x: fn.squeeze(x, axes=[2]), {"x": batch}, 2, layouts={"x": "HWC"})
    assert layout == "HW"
    for g, x in zip(got, batch):
        np.testing.assert_array_equal(g, np.squeeze(x, axis=2))
    (got, layout), = run_lib("ladle", lambda fn, t, x: fn.squeeze(x, axis_names="HC"), {"x": batch}, 2,
                             layouts={"x": "HWC"})
    assert layout == "W"
    for g, x in zip(got, batch):
        np.testing.assert_array_equal(g, np.squeeze(x, axis=(0, 2)))
    (got, layout), = run_lib("ladle", lambda fn, t, x: fn.expand_dims(x, axes=[0, 4], new_axis_names="FX"),
                             {"x": batch}, 2, layouts={"x": "HWC"})
    assert layout == "FHWCX"
    for g, x in zip(got, batch):
        np.testing.assert_array_equal(g, np.expand_dims(x, axis=(0, 4)))


def test_per_frame_layouts():
    batch = [np.zeros((2, 3, 4), np.uint8)]
    assert run_lib("ladle", lambda fn, t, x: fn.per_frame(x), {"x": batch}, 1)[0][1] == "F**"
    assert run_lib("ladle", lambda fn, t, x: fn.per_frame(x), {"x": batch}, 1, layouts={"x": "FHW"})[0][1] == "FHW"
    assert run_lib("ladle", lambda fn, t, x: fn.per_frame(x, replace=True), {"x": batch}, 1,
                   layouts={"x": "HWC"})[0][1] == "FWC"


A = [np.arange(24, dtype=np.int32).reshape(2, 3, 4), np.arange(12, dtype=np.int32).reshape(1, 3, 4) - 5]
DALI_CASES = {
    "reshape_shape": (lambda fn, t, x: fn.reshape(x, shape=[6, -1]), "HWC"),
    "reshape_same_rank": (lambda fn, t, x: fn.reshape(x, shape=[-1, 3, 4]), "HWC"),
    "reshape_rel": (lambda fn, t, x: fn.reshape(x, rel_shape=[1, -1]), "HWC"),
    "reshape_layout": (lambda fn, t, x: fn.reshape(x, shape=[-1, 12], layout="AB"), "HWC"),
    # src_dims alone: DALI 2.4 fails on a fed input ("Unexpected dimensionality of output 0"); the NumPy test covers it
    "reinterpret": (lambda fn, t, x: fn.reinterpret(x, dtype=t.UINT8), "HWC"),
    "reinterpret_shape": (lambda fn, t, x: fn.reinterpret(x, dtype=t.UINT8, shape=[-1]), "HWC"),
    "squeeze": (lambda fn, t, x: fn.squeeze(fn.reshape(x, rel_shape=[1, 1, 1, 1], src_dims=[0, 1, -1, 2]), axes=[2]),
                None),
    "expand_dims": (lambda fn, t, x: fn.expand_dims(x, axes=[0, 3], new_axis_names="FX"), "HWC"),
    "expand_dims_no_names": (lambda fn, t, x: fn.expand_dims(x, axes=[1]), "HWC"),
    "per_frame": (lambda fn, t, x: fn.per_frame(x, replace=True), "HWC"),
    "per_frame_no_layout": (lambda fn, t, x: fn.per_frame(x), None),
}


@pytest.mark.parametrize("case", sorted(DALI_CASES))
def test_views_match_dali(case):
    graph, layout = DALI_CASES[case]
    layouts = {"x": layout} if layout else {}
    got = run_lib("ladle", graph, {"x": A}, 2, layouts=layouts)
    want = run_lib("dali", graph, {"x": A}, 2, layouts=layouts)
    assert_same(got, want)


def test_views_share_memory_with_their_input():
    """The view is the input's memory: the NumPy arrays of both outputs
    (zero-copy DLPack) alias."""
    import ladle

    pipe = ladle.Pipeline(batch_size=2, num_threads=1)
    with pipe:
        x = ladle.fn.external_source(name="x", dtype=ladle.types.INT32, ndim=2)
        pipe.set_outputs(x, ladle.fn.reshape(x, shape=[-1]), ladle.fn.expand_dims(x, axes=[0]))
    pipe.build()
    pipe.feed_input("x", [np.arange(6, dtype=np.int32).reshape(2, 3)] * 2)
    outs = pipe.run()
    arrays = [np.from_dlpack(o.as_tensor()) if hasattr(o, "as_tensor") else np.asarray(o.at(0)) for o in outs]
    base = arrays[0]
    for a in arrays[1:]:
        assert np.shares_memory(a, base) or a.__array_interface__["data"][0] == base.__array_interface__["data"][0]
    pipe.close()


@pytest.mark.gpu
@pytest.mark.parametrize("case", sorted(DALI_CASES))
def test_views_gpu_equal_cpu(case):
    graph, layout = DALI_CASES[case]
    layouts = {"x": layout} if layout else {}
    assert_same(run_lib("ladle", graph, {"x": A}, 2, device="gpu", layouts=layouts),
                run_lib("ladle", graph, {"x": A}, 2, layouts=layouts))


def test_view_bad_arguments():
    x = {"x": [np.zeros((2, 3, 1), np.uint8)]}
    hwc = {"x": "HWC"}
    check_error(lambda fn, t, x: fn.reshape(x, shape=[4, -1]), x, hwc, "reshape", "shape")
    check_error(lambda fn, t, x: fn.reshape(x, shape=[-1, -1]), x, hwc, "reshape", "shape", "-1")
    check_error(lambda fn, t, x: fn.reshape(x, shape=[6], rel_shape=[1.0]), x, hwc, "reshape", "rel_shape")
    check_error(lambda fn, t, x: fn.reshape(x, shape=[6], layout="AB"), x, hwc, "reshape", "layout")
    check_error(lambda fn, t, x: fn.reinterpret(x, dtype=t.INT32), x, hwc, "reinterpret", "innermost")
    check_error(lambda fn, t, x: fn.squeeze(x), x, hwc, "squeeze", "axes", "axis_names")
    check_error(lambda fn, t, x: fn.squeeze(x, axes=[1]), x, hwc, "squeeze", "extent 3")
    check_error(lambda fn, t, x: fn.squeeze(x, axes=[5]), x, hwc, "squeeze", "axes", "out of range")
    check_error(lambda fn, t, x: fn.squeeze(x, axis_names="D"), x, hwc, "squeeze", "axis_names", "'D'")
    check_error(lambda fn, t, x: fn.expand_dims(x, axes=[4]), x, hwc, "expand_dims", "axes")
    check_error(lambda fn, t, x: fn.expand_dims(x, axes=[0], new_axis_names="AB"), x, hwc, "expand_dims",
                "new_axis_names")
    check_error(lambda fn, t, x: fn.per_frame(x), x, hwc, "per_frame", "replace")


def test_dynamic_mode_list_arguments():
    """ladle.dynamic: a flat list is a list argument's constant; a list of
    lists gives one list per sample."""
    import ladle.dynamic as ldd

    b = ldd.batch([np.arange(6, dtype=np.int32), np.arange(12, dtype=np.int32)])
    out = ldd.reshape(b, shape=[-1, 2])
    assert [np.asarray(t).shape for t in out.tensors] == [(3, 2), (6, 2)]
    out = ldd.reshape(b, shape=[[2, 3], [3, 4]], layout="AB")
    assert [np.asarray(t).shape for t in out.tensors] == [(2, 3), (3, 4)]
    np.testing.assert_array_equal(np.asarray(out.tensors[1]), np.arange(12).reshape(3, 4))
