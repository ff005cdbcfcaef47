"""fn.cast between every pair of ladle's 12 dtypes: against a NumPy formula
written here (round half to even, saturate, NaN -> 0, x != 0 for bool), on
random and edge values (inf, nan, halves, the types' limits), against DALI 2.4
(run_both, where DALI's rules are the same: see DALI_DIFFERS), and the GPU
kernel against the CPU one, bit for bit."""

import warnings

import numpy as np
import pytest

import ladle
from ladle import fn, types
from conftest import run_both

DTYPES = ["uint8", "int8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "float32", "float64", "bool"]
INTS = [t for t in DTYPES if t not in ("float16", "float32", "float64", "bool")]
FLOATS = ["float16", "float32", "float64"]


def edge_values(src):
    """Edge cases representable in `src` (floats: also ones that overflow it to inf)."""
    if src == "bool":
        return np.array([False, True])
    if src in FLOATS:
        halves = [k + 0.5 for k in (0, 1, 2, 126, 127, 254, 255, 32766, 32767, 65534, 65535, 2**31 - 1, 2**32 - 1)]
        halves += [-h for h in halves] + [-128.5, -129.5, -32768.5, -32769.5, -(2.0**31) - 0.5]
        limits = []
        for t in INTS:
            info = np.iinfo(t)
            limits += [float(info.min), float(info.max), float(info.min) - 1, float(info.max) + 1]
        specials = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e-30, 0.49999997, 1e30, -1e30, 2.0**63,
                    2.0**64, -(2.0**63), 1.5 * 2.0**63, 65504.0, 65519.99, 65520.0, 6e-8, 3e-8, 2.0**-24 * 1.5,
                    1e300, -1e300, 5e-324, 2.0**53 + 1, 2.0**24 + 1, 9007199254740993.0]
        with np.errstate(over="ignore"):
            return np.array(halves + limits + specials, np.float64).astype(src)
    info = np.iinfo(src)
    cands = [info.min, info.max, info.min + 1, info.max - 1, 0, 1, -1, 127, 128, -128, -129, 255, 256, 32767,
             32768, -32768, -32769, 65535, 65536, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**32 - 1, 2**32,
             2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1, 16777217, 65519, 65520, 65521]
    return np.array([v for v in cands if info.min <= v <= info.max], src)


def random_values(src, n, rng):
    if src == "bool":
        return rng.integers(0, 2, n).astype(bool)
    if src in FLOATS:
        mag = 10.0 ** rng.uniform(-3, 21 if src != "float16" else 4.8, n)
        x = rng.choice([-1.0, 1.0], n) * mag
        x[: n // 4] = np.round(x[: n // 4] * 2) / 2  # many exact halves
        return x.astype(src)
    info = np.iinfo(src)
    return rng.integers(info.min, info.max, n, dtype=src, endpoint=True)


def values(src, rng, n=400):
    return np.concatenate([edge_values(src), random_values(src, n, rng)])


def reference(x, dst):
    """The cast rules, in NumPy (and Python integers where NumPy would wrap)."""
    if dst == "bool":
        return x != 0
    if x.dtype == np.bool_:
        x = x.astype(np.uint8)
    if dst in FLOATS:
        with np.errstate(over="ignore", invalid="ignore"):
            return x.astype(dst)  # NumPy rounds to nearest even, once (float64 -> float16 directly too)
    info = np.iinfo(dst)
    if x.dtype.kind == "f":
        r = np.rint(x.astype(np.float64))  # half to even
        out = []
        for v in r:
            if np.isnan(v):
                out.append(0)
            elif v >= float(info.max) + 1:  # float(max) + 1 is a power of two: exact
                out.append(int(info.max))
            elif v < float(info.min):
                out.append(int(info.min))
            else:
                out.append(int(v))
        return np.array(out, dst)
    return np.array([min(max(int(v), int(info.min)), int(info.max)) for v in x], dst)


def assert_same(got, want, what):
    assert got.dtype == want.dtype, what
    if got.dtype.kind == "f":
        np.testing.assert_array_equal(got, want, err_msg=what)  # NaN == NaN here
        assert (np.signbit(got) == np.signbit(want))[~np.isnan(want)].all(), what + " (sign of zero)"
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def cast_all(src_values, device="cpu"):
    """fn.cast of one sample to every dtype, on `device`."""
    src = src_values.dtype.name
    pipe = ladle.Pipeline(batch_size=1, num_threads=1, device_id=0 if device == "gpu" else None)
    with pipe:
        x = fn.external_source(name="x", dtype=types.to_dtype(src), ndim=1, layout="")
        if device == "gpu":
            x = x.gpu()
        pipe.set_outputs(*[fn.cast(x, dtype=types.to_dtype(d), device=device) for d in DTYPES])
    pipe.feed_input("x", [src_values])
    outs = [np.array(tl.as_cpu().at(0)) for tl in pipe.run()]
    pipe.close()
    return dict(zip(DTYPES, outs))


@pytest.mark.parametrize("src", DTYPES)
def test_cast_every_pair_matches_numpy_formula(src):
    x = values(src, np.random.default_rng(DTYPES.index(src)))
    got = cast_all(x)
    for dst in DTYPES:
        assert_same(got[dst], reference(x, dst), f"{src} -> {dst}")


def test_cast_examples():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 300.7, -300.7, np.nan, np.inf, -np.inf, 0.25], np.float32)
    got = cast_all(x)
    assert got["uint8"].tolist() == [0, 2, 2, 0, 0, 255, 0, 0, 255, 0, 0]
    assert got["int8"].tolist() == [0, 2, 2, 0, -2, 127, -128, 0, 127, -128, 0]
    assert got["uint64"].tolist() == [0, 2, 2, 0, 0, 301, 0, 0, 2**64 - 1, 0, 0]
    assert got["bool"].tolist() == [True] * 10 + [True]
    ints = cast_all(np.array([-(2**63), -1, 2**63 - 1, 70000], np.int64))
    assert ints["uint64"].tolist() == [0, 0, 2**63 - 1, 70000]
    assert ints["int16"].tolist() == [-32768, -1, 32767, 32767]
    assert ints["float16"].tolist()[-1] == np.inf
    big = cast_all(np.array([2**64 - 1, 2**63], np.uint64))
    assert big["int64"].tolist() == [2**63 - 1, 2**63 - 1] and big["uint32"].tolist() == [2**32 - 1] * 2
    # float64 stays exact through the pipeline (no float32 on the way)
    d = np.array([0.1, 1e300, 2.0**53 + 2, -1e-310], np.float64)
    np.testing.assert_array_equal(cast_all(d)["float64"], d)
    np.testing.assert_array_equal(cast_all(np.array([2**53 + 2, -(2**60)], np.int64))["float64"],
                                  [2.0**53 + 2, -(2.0**60)])


def test_float64_to_float16_rounds_once():
    # Exactly between two halves after rounding to float32, but above the midpoint as a double:
    # rounding twice (via float32) would give the even half 1.0; once gives 1 + 2^-10.
    d = np.array([1.0 + 2.0**-11 + 2.0**-40, 1.0 + 2.0**-11, -(1.0 + 2.0**-11 + 2.0**-40)], np.float64)
    got = cast_all(d)["float16"]
    np.testing.assert_array_equal(got, d.astype(np.float16))
    assert got[0] == np.float16(1.0 + 2.0**-10) and got[1] == np.float16(1.0)


def half_ties(x):
    """Elements exactly halfway between two float16 values (DALI's CPU rounds those away
    from zero, ladle and NumPy to even)."""
    v = x.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        h = v.astype(np.float16)
        d = v - h.astype(np.float64)
        other = np.nextafter(h, np.where(d > 0, np.float16(np.inf), np.float16(-np.inf))).astype(np.float64)
        return np.isfinite(v) & (d != 0) & (np.abs(other - v) == np.abs(d))


def dali_differs(x, dst):
    """Where DALI 2.4's CPU cast has other rules: it rounds float -> integer halves away
    from zero (ladle: to even, as its GPU cast and NumPy's rint do), NaN -> integer is
    INT_MIN or 2^63 for some pairs there (ladle: 0), float -> bool rounds first there
    (0 < |x| < 0.5 is false; ladle: x != 0), and ties to float16 round away from zero
    there (ladle: to even, as IEEE and NumPy)."""
    bad = np.zeros(x.shape, bool)
    if x.dtype.kind == "f" and dst not in FLOATS:
        v = x.astype(np.float64)
        with np.errstate(invalid="ignore"):
            bad |= (v - np.floor(v)) == 0.5
    if dst == "float16" and x.dtype != np.bool_:
        bad |= half_ties(x)
        if x.dtype == np.float64:  # DALI goes through float32 (rounding twice): ties there
            bad |= half_ties(x.astype(np.float32))
    if x.dtype.kind == "f":
        if dst != "bool" and dst not in FLOATS:
            bad |= np.isnan(x)
        if dst == "bool":
            bad |= (np.abs(x) < 0.5) & (x != 0) | np.isnan(x)
    return bad


@pytest.mark.parametrize("src", DTYPES)
def test_cast_matches_dali(src):
    x = values(src, np.random.default_rng(100 + DTYPES.index(src)))
    ours, theirs = run_both(lambda fn, types, x: tuple(fn.cast(x, dtype=getattr(types, n)) for n in
                                                       ["UINT8", "INT8", "INT16", "UINT16", "INT32", "UINT32",
                                                        "INT64", "UINT64", "FLOAT16", "FLOAT", "FLOAT64", "BOOL"]),
                            {"x": [[x]]}, batch_size=1)
    for dst, a, b in zip(DTYPES, ours, theirs):
        keep = ~dali_differs(x, dst)
        assert_same(a[0][keep], b[0][keep], f"{src} -> {dst} (ladle vs DALI)")


def test_cast_bad_dtype_names_operator_and_argument():
    with pytest.raises(ladle.InvalidArgumentError, match=r"cast.*'dtype'"):
        with ladle.Pipeline(batch_size=1):
            fn.cast(fn.external_source(dtype=types.FLOAT, ndim=1), dtype=np.complex64)
    with pytest.raises(ladle.InvalidArgumentError, match=r"cast.*'dtype'.*not a data type|cast.*'dtype'"):
        with ladle.Pipeline(batch_size=1):
            fn.cast(fn.external_source(dtype=types.FLOAT, ndim=1), dtype=99)


@pytest.mark.gpu
@pytest.mark.parametrize("src", DTYPES)
def test_cast_gpu_is_bit_identical_to_cpu(src):
    x = values(src, np.random.default_rng(200 + DTYPES.index(src)), n=5000)
    cpu, gpu = cast_all(x), cast_all(x, device="gpu")
    for dst in DTYPES:
        assert cpu[dst].tobytes() == gpu[dst].tobytes(), f"{src} -> {dst}"


def test_random_ops_take_every_dtype():
    for name in DTYPES:
        pipe = ladle.Pipeline(batch_size=4, num_threads=1, seed=3)
        with pipe:
            c = fn.random.coin_flip(dtype=types.to_dtype(name), shape=[16])
            u = fn.random.uniform(range=[-300.0, 300.0], dtype=types.to_dtype(name), shape=[16], seed=7)
            exact = fn.random.uniform(range=[-300.0, 300.0], dtype=types.FLOAT64, shape=[16], seed=7)
            pipe.set_outputs(c, u, exact)
        cb, ub, eb = pipe.run()
        pipe.close()
        for i in range(4):
            assert cb.at(i).dtype == np.dtype(name) and set(cb.at(i).astype(int).tolist()) <= {0, 1}
            # the same draws as in float64, converted by the cast rules
            assert_same(np.array(ub.at(i)), reference(np.array(eb.at(i)), name), name)
