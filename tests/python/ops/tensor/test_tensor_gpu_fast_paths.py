"""GPU against CPU (bit-identical: elements are moved, not computed) on
geometries that take the GPU strided copy's fast paths (dimensions merged,
2..16-byte units, 32-bit indexing) and their fallbacks: odd and aligned
extents, slice starts on and off 16-byte boundaries, pads with fill values,
cat/stack, transposes, 1/2/4/8-byte dtypes; and cast to the same type (a
copy in 16/4/1-byte units)."""

import numpy as np
import pytest

from conftest import requires_ops
from tensor_helpers import assert_same, ragged, run_lib

pytestmark = requires_ops("copy", "transpose", "stack", "cat", "pad", "slice", "cast")

DTYPES = [np.uint8, np.int16, np.float32, np.float64]
SHAPES = [[(37, 64, 3), (16, 33, 4), (1, 1, 1), (40, 17, 2)],  # odd and aligned extents
          [(8, 32, 4), (8, 32, 4), (8, 32, 4)],               # dense, 16-byte multiples
          [(3, 1000, 1), (5, 999, 1)]]

CASES = {
    "copy": lambda fn, t, x: fn.copy(x),
    "transpose": lambda fn, t, x: fn.transpose(x, perm=[2, 0, 1]),
    "transpose_inner_kept": lambda fn, t, x: fn.transpose(x, perm=[1, 0, 2]),
    "slice_aligned": lambda fn, t, x: fn.slice(x, start=[0, 16], shape=[1, 16], axes=[0, 1],
                                               out_of_bounds_policy="pad", fill_values=[3]),
    "slice_odd": lambda fn, t, x: fn.slice(x, start=[1, 3], shape=[5, 7], axes=[0, 1],
                                           out_of_bounds_policy="pad", fill_values=[9]),
    "slice_outside": lambda fn, t, x: fn.slice(x, start=[-3, -16], shape=[9, 48], axes=[0, 1],
                                               out_of_bounds_policy="pad", fill_values=[4]),
    "slice_channels": lambda fn, t, x: fn.slice(x, start=[-2], shape=[6], axes=[2], out_of_bounds_policy="pad",
                                                fill_values=[1, 2, 3, 4, 5, 6]),
    "pad": lambda fn, t, x: fn.pad(x, fill_value=7),
    "pad_align": lambda fn, t, x: fn.pad(x, axes=[1], align=[16], fill_value=5),
    "cat": lambda fn, t, x: fn.cat(x, x, axis=1),
    "cat_inner": lambda fn, t, x: fn.cat(x, x, x, axis=2),
    "stack": lambda fn, t, x: fn.stack(x, x, axis=0),
    "stack_inner": lambda fn, t, x: fn.stack(x, x, axis=3),
    "stack_middle": lambda fn, t, x: fn.stack(x, x, x, axis=1),
    "cat_channels_4": lambda fn, t, x: fn.cat(x, fn.slice(x, start=[1], shape=[1], axes=[2], out_of_bounds_policy="pad"),
                                              x, x, axis=2),
    "cat_rows": lambda fn, t, x: fn.cat(x, x, axis=0),
    "pad_hw": lambda fn, t, x: fn.pad(x, axis_names="HW", fill_value=3),
    "pad_shape": lambda fn, t, x: fn.pad(x, axes=[0, 1], shape=[41, 70], fill_value=-1),
}
# every permutation of a rank-3 transpose (tiled for a small dimension swapped with a large one)
for _perm in ([0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]):
    CASES["transpose_" + "".join(map(str, _perm))] = (lambda p: lambda fn, t, x: fn.transpose(x, perm=p))(_perm)


@pytest.mark.gpu
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", range(len(SHAPES)))
def test_strided_fast_paths_gpu_equal_cpu(case, dtype, shapes):
    batch = ragged(np.random.default_rng(11 + shapes), dtype, SHAPES[shapes])
    assert_same(run_lib("ladle", CASES[case], {"x": batch}, len(batch), device="gpu", layouts={"x": "HWC"}),
                run_lib("ladle", CASES[case], {"x": batch}, len(batch), layouts={"x": "HWC"}))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_cast_same_type_gpu_equal_cpu(dtype):
    batch = ragged(np.random.default_rng(5), dtype, SHAPES[0])
    name = {np.uint8: "UINT8", np.int16: "INT16", np.float32: "FLOAT", np.float64: "FLOAT64"}[dtype]

    def graph(fn, t, x):
        window = fn.slice(x, start=[0, 1], shape=[1, 5], axes=[0, 1], out_of_bounds_policy="pad")
        return fn.cast(x, dtype=getattr(t, name)), fn.cast(window, dtype=getattr(t, name))

    assert_same(run_lib("ladle", graph, {"x": batch}, len(batch), device="gpu", layouts={"x": "HWC"}),
                run_lib("ladle", graph, {"x": batch}, len(batch), layouts={"x": "HWC"}))


CAST_PAIRS = [(np.uint8, "FLOAT16"), (np.uint8, "FLOAT"), (np.uint8, "INT32"), (np.float32, "UINT8"),
              (np.float32, "FLOAT16"), (np.float32, "FLOAT64"), (np.int16, "FLOAT"), (np.float64, "FLOAT16")]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,target", CAST_PAIRS)
def test_cast_gpu_equal_cpu(dtype, target):
    """cast's per-pair kernels (and the generic one for the rest) against the CPU, bit for bit."""
    rng = np.random.default_rng(7)
    batch = ragged(rng, dtype, SHAPES[0])
    if np.issubdtype(dtype, np.floating):
        batch = [(b.astype(np.float64) * 150.0 + 60.0).astype(dtype) for b in batch]

    def graph(fn, t, x):
        return fn.cast(x, dtype=getattr(t, target))

    assert_same(run_lib("ladle", graph, {"x": batch}, len(batch), device="gpu", layouts={"x": "HWC"}),
                run_lib("ladle", graph, {"x": batch}, len(batch), layouts={"x": "HWC"}))
