"""one_hot and lookup_table: NumPy formulas on random classes of every
integer input type, DALI on the same graphs (exact: the values are the
arguments converted once), GPU against CPU, and bad arguments."""

import numpy as np
import pytest

from conftest import requires_ops
from tensor_helpers import assert_same, check_error, run_lib

pytestmark = requires_ops("one_hot", "lookup_table")

INT_TYPES = [np.uint8, np.int32, np.int64]


def classes(dtype, shapes, lo=-2, hi=9, seed=0):
    rng = np.random.default_rng(seed)
    lo = max(lo, 0) if dtype == np.uint8 else lo
    return [rng.integers(lo, hi, size=s).astype(dtype) for s in shapes]


@pytest.mark.parametrize("dtype", INT_TYPES)
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot_matches_numpy(dtype, axis):
    batch = classes(dtype, [(3, 4), (1, 2), (5, 1)])
    graph = lambda fn, t, x: fn.one_hot(x, num_classes=6, axis=axis, on_value=2.5, off_value=-1)  # noqa: E731
    (got, _), = run_lib("ladle", graph, {"x": batch}, 3)
    for g, x in zip(got, batch):
        eye = np.where(np.arange(6) == x[..., None].astype(np.int64), 2.5, -1).astype(np.float32)
        np.testing.assert_array_equal(g, np.moveaxis(eye, -1, axis if axis >= 0 else -1))


@pytest.mark.parametrize("dtype", INT_TYPES)
def test_lookup_table_matches_numpy(dtype):
    batch = classes(dtype, [(7,), (6,), (0,)], hi=12)
    keys, values = [0, 3, 4, 11], [1.5, -2, 100, 7]
    graph = lambda fn, t, x: fn.lookup_table(x, keys=keys, values=values, default_value=-9)  # noqa: E731
    (got, _), = run_lib("ladle", graph, {"x": batch}, 3)
    table = dict(zip(keys, values))
    for g, x in zip(got, batch):
        want = np.array([table.get(int(v), -9) for v in x.ravel()], np.float32).reshape(x.shape)
        np.testing.assert_array_equal(g, want)


DALI_CASES = {
    # DALI makes a sample of one element ([1]) a [num_classes] vector; ladle's ranks are fixed at build, so
    # [1] gives [1, num_classes] (squeeze it first): not compared here.
    "one_hot_axis0": (lambda fn, t, x: fn.one_hot(x, num_classes=4, axis=0),
                      [np.array([1, 2, 3], np.int32), np.array([0, 7], np.int32)]),
    "one_hot_uint8_out": (lambda fn, t, x: fn.one_hot(x, num_classes=3, dtype=t.UINT8, on_value=200, off_value=4),
                          [np.array([[0, 1], [2, 9]], np.int64), np.array([[1]], np.int64)]),
    "one_hot_float_classes": (lambda fn, t, x: fn.one_hot(x, num_classes=4),
                              [np.array([1.7, 2.2, -0.5], np.float32), np.array([3.9], np.float32)]),
    "lookup": (lambda fn, t, x: fn.lookup_table(x, keys=[1, 3], values=[10, 30], default_value=-1),
               [np.array([0, 1, 2, 3], np.uint8), np.array([3, 3], np.uint8)]),
    "lookup_int32_out": (lambda fn, t, x: fn.lookup_table(x, keys=[0, 65535], values=[2.7, -3e10], dtype=t.INT32),
                         [np.array([0, 65535, -1], np.int32), np.array([5], np.int32)]),
}


@pytest.mark.parametrize("case", sorted(DALI_CASES))
def test_encode_matches_dali(case):
    graph, batch = DALI_CASES[case]
    assert_same(run_lib("ladle", graph, {"x": batch}, 2), run_lib("dali", graph, {"x": batch}, 2))


@pytest.mark.gpu
@pytest.mark.parametrize("case", sorted(c for c in DALI_CASES if "float_classes" not in c))
def test_encode_gpu_equal_cpu(case):
    graph, batch = DALI_CASES[case]
    assert_same(run_lib("ladle", graph, {"x": batch}, 2, device="gpu"), run_lib("ladle", graph, {"x": batch}, 2))


def test_encode_bad_arguments():
    x = {"x": [np.zeros((3,), np.int32)]}
    f = {"x": [np.zeros((3,), np.float32)]}
    check_error(lambda fn, t, x: fn.one_hot(x, num_classes=3, axis=2), x, {}, "one_hot", "axis")
    check_error(lambda fn, t, x: fn.one_hot(x, num_classes=3, axis_name="AB"), x, {}, "one_hot", "axis_name")
    check_error(lambda fn, t, x: fn.one_hot(x, num_classes=-1), x, {}, "one_hot", "num_classes")
    check_error(lambda fn, t, x: fn.lookup_table(x, keys=[1, 2], values=[1.0]), x, {}, "lookup_table", "keys", "values")
    check_error(lambda fn, t, x: fn.lookup_table(x, keys=[70000], values=[1.0]), x, {}, "lookup_table", "keys")
    check_error(lambda fn, t, x: fn.lookup_table(x, keys=[1], values=[1.0]), f, {}, "lookup_table", "float32")
