"""math.arithmetic (DataNode operators, ladle.math, ladle.dynamic) against
NumPy formulas written here with DALI's semantics, and against DALI 2.4."""

import numpy as np
import pytest

import ladle
import ladle.dynamic as ldd
from ladle import fn, types
from conftest import requires_ops, run_both

pytestmark = requires_ops("math.arithmetic")

T = {"uint8": types.UINT8, "int32": types.INT32, "int64": types.INT64, "float16": types.FLOAT16,
     "float32": types.FLOAT}
INTS = ("uint8", "int32", "int64")
FLOATS = ("float16", "float32")


def promote(a, b):
    """DALI's type promotion, for the types ladle has (DALI's docs' table)."""
    if a == b:
        return a
    if (a in FLOATS) != (b in FLOATS):
        return a if a in FLOATS else b
    order = ("uint8", "int32", "int64", "float16", "float32")
    return max(a, b, key=order.index)


def run(build, *arrays, batch=2):
    """build(*nodes) on external sources fed `arrays` (every sample the same)."""
    pipe = ladle.Pipeline(batch_size=batch, num_threads=2, device_id=None)
    with pipe:
        nodes = [fn.external_source(name=f"s{i}", dtype=T[a.dtype.name], ndim=a.ndim) for i, a in enumerate(arrays)]
        out = build(*nodes)
        pipe.set_outputs(out)
    try:
        for i, a in enumerate(arrays):
            pipe.feed_input(f"s{i}", [a] * batch)
        (tl,) = pipe.run()
        return np.array(tl.at(0))
    finally:
        pipe.close()


def rand(dtype, shape, rng, nonzero=False):
    if dtype in FLOATS:
        x = rng.uniform(-4, 4, shape).astype(dtype)
        if nonzero:
            x[x == 0] = 1
        return x
    lo = 0 if dtype == "uint8" else -50
    x = rng.integers(lo, 100, shape).astype(dtype)
    if nonzero:
        x[x == 0] = 3
    return x


def trunc_div(a, b):
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def int_pow(a, b, t):
    """Integer power with wrap-around (DALI's), exponents >= 0 (rand's operand b is small and >= 0 for pow)."""
    out = np.empty(a.shape, t)
    with np.errstate(over="ignore"):
        for idx in np.ndindex(a.shape):
            out[idx] = np.array((int(a[idx]) ** int(b[idx])) % 2**64, np.uint64).astype(t)
    return out


# op, Python expression, NumPy formula (on the promoted operands), result-type rule
BINARY = [
    ("add", lambda a, b: a + b, lambda a, b, t: (a.astype(np.int64) + b).astype(t) if t in INTS else a + b, "same"),
    ("sub", lambda a, b: a - b, lambda a, b, t: (a.astype(np.int64) - b).astype(t) if t in INTS else a - b, "same"),
    ("mul", lambda a, b: a * b, lambda a, b, t: (a.astype(np.int64) * b).astype(t) if t in INTS else a * b, "same"),
    ("fdiv", lambda a, b: a / b, lambda a, b, t: a.astype(np.float32) / b.astype(np.float32), "float"),
    ("div", lambda a, b: a // b, lambda a, b, t: trunc_div(a, b) if t in INTS else a / b, "same"),
    ("mod", lambda a, b: a % b, lambda a, b, t: np.fmod(a, b), "same"),
    ("eq", lambda a, b: a == b, lambda a, b, t: a == b, "bool"),
    ("neq", lambda a, b: a != b, lambda a, b, t: a != b, "bool"),
    ("lt", lambda a, b: a < b, lambda a, b, t: a < b, "bool"),
    ("leq", lambda a, b: a <= b, lambda a, b, t: a <= b, "bool"),
    ("gt", lambda a, b: a > b, lambda a, b, t: a > b, "bool"),
    ("geq", lambda a, b: a >= b, lambda a, b, t: a >= b, "bool"),
    ("min", lambda a, b: ladle.math.min(a, b), lambda a, b, t: np.minimum(a, b), "same"),
    ("max", lambda a, b: ladle.math.max(a, b), lambda a, b, t: np.maximum(a, b), "same"),
    ("pow", lambda a, b: a ** b, lambda a, b, t: int_pow(a, b, t) if t in INTS else np.power(a, b), "same"),
    ("fpow", lambda a, b: ladle.math.fpow(a, b),
     lambda a, b, t: np.power(a.astype(np.float32), b.astype(np.float32)), "float"),
    ("atan2", lambda a, b: ladle.math.atan2(a, b),
     lambda a, b, t: np.arctan2(a.astype(np.float32), b.astype(np.float32)), "float"),
]
BITWISE = [
    ("bitand", lambda a, b: a & b, np.bitwise_and),
    ("bitor", lambda a, b: a | b, np.bitwise_or),
    ("bitxor", lambda a, b: a ^ b, np.bitwise_xor),
]
TYPE_PAIRS = [(a, b) for a in T for b in T]


def result_type(rule, a, b):
    t = promote(a, b)
    if rule == "float" and t in INTS:
        return "float32"
    return "bool" if rule == "bool" else t  # DALI: comparisons give bool


@pytest.mark.parametrize("op,expr,ref,rule", BINARY, ids=[b[0] for b in BINARY])
@pytest.mark.parametrize("ta,tb", TYPE_PAIRS, ids=[f"{a}-{b}" for a, b in TYPE_PAIRS])
def test_binary_vs_numpy(op, expr, ref, rule, ta, tb):
    rng = np.random.default_rng(hash((op, ta, tb)) % 2**32)
    a, b = rand(ta, (3, 5), rng), rand(tb, (3, 5), rng, nonzero=op in ("div", "mod", "fdiv"))
    if op == "pow":
        b = (np.abs(b) % 5 if tb in INTS else b).astype(tb)
    got = run(expr, a, b)
    t = result_type(rule, ta, tb)
    assert got.dtype == np.dtype(t)
    with np.errstate(all="ignore"):
        want = ref(a.astype(promote(ta, tb)), b.astype(promote(ta, tb)), promote(ta, tb))
        want = np.asarray(want).astype(t)
    if t in FLOATS:
        # float16 results: computed in float32, rounded once (NumPy computes in float16: 1 ulp apart);
        # atan2/pow: libm's float functions against NumPy's (double-rounded) ones, a few ulps.
        tol = 2e-3 if t == "float16" else 2e-6
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op,expr,ref", BITWISE, ids=[b[0] for b in BITWISE])
@pytest.mark.parametrize("ta,tb", [(a, b) for a in INTS for b in INTS])
def test_bitwise_vs_numpy(op, expr, ref, ta, tb):
    rng = np.random.default_rng(7)
    a, b = rand(ta, (4,), rng), rand(tb, (4,), rng)
    t = promote(ta, tb)
    got = run(expr, a, b)
    assert got.dtype == np.dtype(t)
    np.testing.assert_array_equal(got, ref(a.astype(t), b.astype(t)))
    np.testing.assert_array_equal(run(lambda x: ~x, a), np.invert(a))
    np.testing.assert_array_equal(run(lambda x: x << 3, a), (a.astype(np.int64) << 3).astype(promote(ta, "int32")))
    np.testing.assert_array_equal(run(lambda x: x >> 2, a), (a.astype(np.int64) >> 2).astype(promote(ta, "int32")))


UNARY = {
    "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "cbrt": np.cbrt, "exp": np.exp, "log": np.log,
    "log2": np.log2, "log10": np.log10, "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin,
    "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "floor": np.floor, "ceil": np.ceil,
    "fabs": np.fabs,
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", ["uint8", "int32", "float32", "float16"])
def test_unary_float_functions_vs_numpy(name, dtype):
    rng = np.random.default_rng(3)
    a = rand(dtype, (17,), rng)
    if name in ("asin", "acos", "atanh"):
        a = (a / 101).astype(dtype) if dtype in FLOATS else np.zeros(17, dtype)
    got = run(getattr(ladle.math, name), a)
    t = dtype if dtype in FLOATS else "float32"
    assert got.dtype == np.dtype(t)
    with np.errstate(all="ignore"):
        want = UNARY[name](a.astype(np.float64)).astype(t)
    # libm's float functions are within 1-2 ulps of the exact value; float16 results round once more.
    tol = 2e-3 if t == "float16" else 1e-6
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


def test_integer_semantics_like_dali():
    a = np.array([7, -7, 7, -7], np.int32)
    b = np.array([2, 2, -2, -2], np.int32)
    np.testing.assert_array_equal(run(lambda x, y: x // y, a, b), [3, -3, -3, 3])
    np.testing.assert_array_equal(run(lambda x, y: x % y, a, b), [1, -1, 1, -1])
    np.testing.assert_array_equal(run(lambda x, y: x ** y, np.array([2, -2, 3, 0], np.int32),
                                      np.array([3, 3, -1, 0], np.int32)), [8, -8, 0, 1])
    u = np.array([2, 200], np.uint8)
    np.testing.assert_array_equal(run(lambda x: -x, u), [254, 56])
    np.testing.assert_array_equal(run(lambda x: x + x, u), [4, 144])
    assert run(lambda x: x + 1, u).dtype == np.int32  # a Python int is an int32 constant
    assert run(lambda x: x + True, u).dtype == np.uint8
    assert run(lambda x: x + np.int64(1), u).dtype == np.int64
    assert run(lambda x: x * 0.5, u).dtype == np.float32
    big = run(lambda x: x + 2**40, u)  # beyond int32: ladle types it int64 (DALI has no such constant)
    assert big.dtype == np.int64 and big.tolist() == [2**40 + 2, 2**40 + 200]
    assert run(lambda x: abs(x), np.array([-3], np.int32)).tolist() == [3]
    np.testing.assert_array_equal(run(lambda x: ladle.math.clamp(x, 1.5, 3), np.array([1, 2, 5], np.int32)),
                                  np.array([1.5, 2, 3], np.float32))
    np.testing.assert_array_equal(run(lambda x: 10 - x, u), (10 - u.astype(np.int32)))
    np.testing.assert_array_equal(run(lambda x: 1 / x, np.array([4.0], np.float32)), [0.25])


@pytest.mark.parametrize("sa,sb", [((3, 4), (1, 4)), ((3, 4), (4,)), ((3, 4), (3, 1)), ((3, 4), ()),
                                   ((2, 1, 4), (1, 3, 1)), ((1,), (3, 4))])
def test_broadcasting_like_numpy(sa, sb):
    rng = np.random.default_rng(1)
    a, b = rand("float32", sa, rng), rand("float32", sb, rng)
    np.testing.assert_array_equal(run(lambda x, y: x * y, a, b), a * b)


def test_errors_name_operator_and_argument():
    f = np.ones((3, 4), np.float32)
    with pytest.raises(ladle.Error, match=r"math\.arithmetic.*'bitand' takes integers"):
        run(lambda x: x & x, f)
    with pytest.raises(ladle.Error, match=r"cannot be broadcast"):
        run(lambda x, y: x + y, f, np.ones((5, 4), np.float32))
    with pytest.raises(ladle.Error, match=r"division by zero"):
        run(lambda x: x // 0, np.ones(3, np.int32))
    with pytest.raises(ladle.Error, match=r"argument 'op'"):
        run(lambda x: fn.math.arithmetic(x, op="nope"), f)
    with pytest.raises(ladle.Error, match=r"'clamp' takes 3 operand"):
        run(lambda x: fn.math.arithmetic(x, op="clamp"), f)
    with pytest.raises(ladle.Error, match=r"argument 'operands'.*cannot read"):
        run(lambda x: fn.math.arithmetic(x, op="plus", operands=["x"]), f)
    with pytest.raises(ladle.Error, match=r"cannot be broadcast"):
        run(lambda x: x + np.array([1, 2]), f)


@requires_ops("constant")
def test_array_constants_broadcast():
    rng = np.random.default_rng(4)
    x = rand("uint8", (2, 5, 3), rng)
    mean = np.array([10.5, 20.25, 30.0])
    got = run(lambda a: (a - mean) * [1, 2, 3], x)
    assert got.dtype == np.float32  # float64 arrays become float32 constants, as in DALI
    np.testing.assert_allclose(got, (x - mean.astype(np.float32)) * np.array([1, 2, 3], np.int32), rtol=1e-6)
    assert run(lambda a: a + np.array([1, 2, 3], np.uint8), x).dtype == np.uint8
    np.testing.assert_array_equal(run(lambda a: a + np.array([[5]], np.int32), x), x.astype(np.int32) + 5)
    y = ldd.batch([x, x]) - mean
    np.testing.assert_allclose(np.asarray(y.tensors[1]), x - mean.astype(np.float32))


@requires_ops("constant")
def test_constant_vs_dali():
    def graph(fn_, types_, a):
        return (fn_.constant(fdata=[1.5, 2.5, 3.5, 4.5], shape=[2, 2]), fn_.constant(idata=[7], shape=[3]),
                fn_.constant(idata=[1, 2, 3], dtype=types_.UINT8), a + fn_.constant(fdata=[0.5, 1.5, 2.5]),
                a * [2, 3, 4])

    a = [np.ones((4, 3), np.float32) * (i + 1) for i in range(2)]
    mine, dali = run_both(graph, {"a": [a]}, batch_size=2)
    for k, (m, d) in enumerate(zip(mine, dali)):
        for s, t in zip(m, d):
            assert s.dtype == t.dtype and s.shape == t.shape, k
            np.testing.assert_array_equal(s, t)
    mine, dali = run_both(lambda fn_, types_, a: (a + types_.Constant(2, dtype=types_.UINT8),
                                                   a * types_.Constant([1, 2, 3], shape=[1, 3]),
                                                   types_.Constant(np.arange(4.0), layout="W") + 0),
                          {"a": [a]}, batch_size=2)
    for k, (m, d) in enumerate(zip(mine, dali)):
        for s, t in zip(m, d):
            assert s.dtype == t.dtype and s.shape == t.shape, k
            np.testing.assert_array_equal(s, t)
    with pytest.raises(ladle.Error, match=r"constant: give exactly one of the arguments 'fdata' and 'idata'"):
        run(lambda a: a + fn.constant(shape=[2]), a[0])
    with pytest.raises(ladle.Error, match=r"3 values do not fill the shape"):
        run(lambda a: a + fn.constant(idata=[1, 2, 3], shape=[2, 2]), a[0])


def test_float_semantics_like_dali():
    a = np.array([7.5, -7.5, 7.5, -7.5], np.float32)
    b = np.array([2, 2, -2, -2], np.float32)
    np.testing.assert_array_equal(run(lambda x, y: x % y, a, b), np.fmod(a, b))
    np.testing.assert_array_equal(run(lambda x, y: x // y, a, b), a / b)  # DALI: // of floats divides


def test_against_dali():
    rng = np.random.default_rng(5)
    a = [rand("uint8", (4, 6, 3), rng) for _ in range(3)]
    b = [rand("int32", (4, 6, 3), rng, nonzero=True) for _ in range(3)]
    c = [rand("float32", (1, 6, 1), rng) for _ in range(3)]

    def graph(fn_, types_, a, b, c):
        m = ladle.math if fn_ is fn else __import__("nvidia.dali.math", fromlist=["math"])
        return (a + b, a - 3, a * c, a / b, a // b, a % b, b ** 2, a == b, a < 100, a & b, a | 5, a ^ b, -b,
                abs(b), (a * 0.5 + 1), m.sqrt(a), m.exp(c), m.log(a + 1), m.sin(c), m.atan2(c, a + 1),
                m.min(a, b), m.max(a, c), m.clamp(b, -10, 10), m.fpow(c, 2), m.floor(c * 3), m.ceil(c * 3),
                m.rsqrt(a + 1), m.cbrt(b), m.tanh(c), m.abs(c))

    mine, dali = run_both(graph, {"a": [a], "b": [b], "c": [c]}, batch_size=3)
    for k, (x, y) in enumerate(zip(mine, dali)):
        for s, t in zip(x, y):
            assert s.dtype == t.dtype, k
            assert s.shape == t.shape, k
            if s.dtype.kind == "f":
                # the same float32 formula; libm's and DALI's (CUDA-derived) transcendental
                # implementations may differ in the last bits
                np.testing.assert_allclose(s, t, rtol=1e-6, atol=1e-6, err_msg=str(k))
            else:
                np.testing.assert_array_equal(s, t.astype(s.dtype), err_msg=str(k))


def test_dynamic_batches_and_tensors():
    x = ldd.batch([np.arange(6, dtype=np.uint8).reshape(2, 3), np.arange(3, dtype=np.uint8)[None]])
    y = x * 2 + 1
    assert isinstance(y, ldd.Batch) and y.dtype == types.INT32
    np.testing.assert_array_equal(np.asarray(y.tensors[1]), [[1, 3, 5]])
    z = ladle.math.sqrt(x)
    np.testing.assert_allclose(np.asarray(z.tensors[0]), np.sqrt(np.arange(6).reshape(2, 3)), rtol=1e-6)
    t = ldd.tensor(np.array([1.0, -2.0], np.float32))
    assert isinstance(-t, ldd.Tensor)
    np.testing.assert_array_equal(np.asarray(2 - t), [1.0, 4.0])
    np.testing.assert_array_equal(np.asarray(t > 0), [1, 0])
    assert {t: 1}[t] == 1  # still hashable


@pytest.mark.gpu
def test_gpu_matches_cpu():
    rng = np.random.default_rng(11)
    a, b = rand("int32", (5, 7), rng, nonzero=True), rand("float32", (1, 7), rng)

    def both(expr):
        outs = []
        for gpu in (False, True):
            pipe = ladle.Pipeline(batch_size=2, num_threads=2, device_id=0)
            with pipe:
                x = fn.external_source(name="a", dtype=types.INT32, ndim=2)
                y = fn.external_source(name="b", dtype=types.FLOAT, ndim=2)
                if gpu:
                    x, y = x.gpu(), y.gpu()
                pipe.set_outputs(expr(x, y))
            pipe.feed_input("a", [a, a])
            pipe.feed_input("b", [b, b])
            outs.append(np.array(pipe.run()[0].as_cpu().at(0)))
            pipe.close()
        return outs

    for expr in (lambda x, y: x // 3 + x % 5, lambda x, y: x * y - 1, lambda x, y: x < y, lambda x, y: x ** 2):
        c, g = both(expr)
        np.testing.assert_array_equal(c, g)  # integer results and correctly rounded float operations
    c, g = both(lambda x, y: ladle.math.exp(y) + ladle.math.sin(x))
    # CUDA's expf/sinf vs libm: a few ulps of each term (measured: 6e-8 absolute where the sum nearly cancels).
    np.testing.assert_allclose(c, g, rtol=1e-6, atol=1e-6)



@pytest.mark.gpu
def test_dynamic_gpu_matches_cpu():
    x = ldd.batch([np.arange(6, dtype=np.float32).reshape(2, 3)] * 2)
    g = x.gpu()
    for expr in (lambda a: a * 2 + 1, lambda a: a // 2, lambda a: ladle.math.clamp(a, 1, 4)):
        got = expr(g)
        assert got.device == "gpu"
        np.testing.assert_array_equal(np.asarray(got.cpu().tensors[1]), np.asarray(expr(x).tensors[1]))
    np.testing.assert_array_equal(np.asarray((g + x).cpu().tensors[0]), 2 * np.asarray(x.tensors[0]))


def test_ragged_batch_per_sample_scalar_and_layout():
    pipe = ladle.Pipeline(batch_size=3, num_threads=2, device_id=None, seed=1)
    with pipe:
        a = fn.external_source(name="a", dtype=types.UINT8, ndim=3, layout="HWC")
        r = fn.random.uniform(range=[0.5, 1.5])
        pipe.set_outputs(a * r, r, a[..., 0] > 3)
    xs = [np.random.default_rng(i).integers(0, 9, (2 + i, 3, 3)).astype(np.uint8) for i in range(3)]
    try:
        pipe.feed_input("a", xs)
        out, r, cmp = pipe.run()
        assert out.layout() == "HWC" and cmp.layout() == "HW"
        for i, x in enumerate(xs):
            scale = np.array(r.at(i))
            np.testing.assert_array_equal(np.array(out.at(i)), x.astype(np.float32) * scale)
            np.testing.assert_array_equal(np.array(cmp.at(i)), x[..., 0] > 3)
    finally:
        pipe.close()


@pytest.mark.parametrize("dtype", list(T))
def test_unary_same_type_and_clamp_vs_numpy(dtype):
    rng = np.random.default_rng(8)
    a = rand(dtype, (4, 6), rng)
    wrap = (lambda v: v.astype(np.int64)) if dtype in INTS else (lambda v: v)
    for got, want in ((run(lambda x: -x, a), (-wrap(a)).astype(dtype)),
                      (run(lambda x: abs(x), a), np.abs(wrap(a)).astype(dtype)),
                      (run(lambda x: fn.math.arithmetic(x, op="plus"), a), a),
                      (run(lambda x, lo, hi: ladle.math.clamp(x, lo, hi), a, np.full((1, 6), 10, dtype),
                           np.full((4, 1), 40, dtype)), np.clip(a, 10, 40))):
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got, want)


def test_comparisons_drive_conditionals():
    @ladle.pipeline_def(batch_size=4, num_threads=1, device_id=None, enable_conditionals=True)
    def pipe_fn():
        x = fn.external_source(name="x", dtype=types.INT32, ndim=1)
        if x[0] > 1:
            y = x * 10
        else:
            y = -x
        return y

    pipe = pipe_fn()
    try:
        xs = [np.array([v, v + 1], np.int32) for v in range(4)]
        pipe.feed_input("x", xs)
        (out,) = pipe.run()
        for v, x in enumerate(xs):
            np.testing.assert_array_equal(np.array(out.at(v)), x * 10 if v > 1 else -x)
    finally:
        pipe.close()
