"""_tensor_subscript and shapes (DataNode subscripts and DataNode.shape())
against NumPy and DALI 2.4."""

import numpy as np
import pytest

import ladle
import ladle.dynamic as ldd
from ladle import fn, types
from conftest import requires_ops, run_both
from test_math_arithmetic import run


@requires_ops("shapes")
def test_shapes_vs_numpy_and_dali():
    a = [np.zeros((2, 3, 4), np.uint8), np.zeros((5, 1, 2), np.uint8)]
    got = run(lambda x: x.shape(), a[0])
    assert got.dtype == np.int64 and got.tolist() == [2, 3, 4]
    assert run(lambda x: fn.shapes(x, dtype=types.INT32), a[0]).dtype == np.int32
    mine, dali = run_both(lambda fn_, types_, a: (fn_.shapes(a, dtype=types_.INT32), a.shape()), {"a": [a]}, 2)
    for x, y in zip(mine, dali):
        for s, t in zip(x, y):
            assert s.dtype == t.dtype and s.tolist() == t.tolist()


SUBSCRIPTS = [
    lambda a: a[1:3, ::2], lambda a: a[-1], lambda a: a[..., 0], lambda a: a[::-1], lambda a: a[:, -2:],
    lambda a: a[1:100], lambda a: a[::-2, 3:0:-1], lambda a: a[2, 1], lambda a: a[..., 1:, 0],
    lambda a: a[-3:-1, ..., ::3], lambda a: a[5:1], lambda a: a[:], lambda a: a[0, ...],
]


@requires_ops("_tensor_subscript")
@pytest.mark.parametrize("k", range(len(SUBSCRIPTS)))
@pytest.mark.parametrize("dtype", ["uint8", "int64", "float16", "float32"])
def test_subscripts_vs_numpy(k, dtype):
    x = np.random.default_rng(k).integers(0, 100, (4, 5, 3)).astype(dtype)
    got = run(SUBSCRIPTS[k], x)
    want = SUBSCRIPTS[k](x)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@requires_ops("_tensor_subscript")
def test_subscripts_per_sample_and_against_dali():
    xs = [np.arange(24, dtype=np.int32).reshape(4, 6) * (i + 1) for i in range(3)]
    idx = [np.array(v, np.int32) for v in (0, -1, 2)]

    def graph(fn_, types_, x, i):
        return x[i], x[i:, ::2], x[1:3, -2], x[::-1, 1:5:2], x[-1]

    mine, dali = run_both(graph, {"x": [xs], "i": [idx]}, batch_size=3)
    for k, (m, d) in enumerate(zip(mine, dali)):
        for s, t in zip(m, d):
            assert s.dtype == t.dtype and s.shape == t.shape, k
            np.testing.assert_array_equal(s, t)
    np.testing.assert_array_equal(mine[0][1], xs[1][-1])


@requires_ops("_tensor_subscript")
def test_subscript_errors():
    x = np.zeros((4, 5), np.float32)
    with pytest.raises(ladle.Error, match=r"_tensor_subscript.*index 7 is out of range for dimension 0"):
        run(lambda a: a[7], x)
    with pytest.raises(ladle.Error, match=r"_tensor_subscript.*3 subscripts for an input of 2"):
        run(lambda a: a[:, :, 0], x)
    with pytest.raises(ladle.Error, match=r"'step_0' must not be 0"):
        run(lambda a: a[::0], x)
    with pytest.raises(TypeError):
        run(lambda a: a[1.5], x)
    with pytest.raises(IndexError):
        run(lambda a: a[..., ...], x)


@pytest.mark.gpu
@requires_ops("_tensor_subscript")
def test_subscript_gpu_matches_cpu():
    x = np.random.default_rng(2).integers(0, 100, (6, 7, 3)).astype(np.uint8)
    pipe = ladle.Pipeline(batch_size=2, num_threads=2, device_id=0)
    with pipe:
        a = fn.external_source(name="a", dtype=types.UINT8, ndim=3)
        g = a.gpu()
        pipe.set_outputs(a[1:5, ::-2, 0], g[1:5, ::-2, 0], g[..., 1] + 1)
    pipe.feed_input("a", [x, x])
    cpu, gpu, plus = pipe.run()
    np.testing.assert_array_equal(np.array(cpu.at(1)), np.array(gpu.as_cpu().at(1)))  # a copy: exact
    np.testing.assert_array_equal(np.array(plus.as_cpu().at(0)), x[..., 1].astype(np.int32) + 1)
    pipe.close()


def test_dynamic_tensor_subscript():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(np.asarray(ldd.tensor(x)[1:, ::-1]), x[1:, ::-1])
    rows = [np.asarray(r) for r in ldd.tensor(x)]
    np.testing.assert_array_equal(np.stack(rows), x)


def test_data_node_is_not_iterable():
    pipe = ladle.Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        a = fn.external_source(name="a", dtype=types.FLOAT, ndim=2)
        with pytest.raises(TypeError, match="not iterable"):
            x, y = a
    pipe.close()
