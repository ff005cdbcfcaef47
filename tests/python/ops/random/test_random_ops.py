"""random.* and noise.* operators: statistics with bounds from the sample
size (fixed seeds: deterministic), reproducibility, independence of the
thread count, shapes/dtypes/ranges against DALI (its generator differs, so
values cannot be compared), GPU against CPU, bad arguments."""

import numpy as np
import pytest

import ladle
from ladle import fn, types
from conftest import requires_ops, run_both

pytestmark = requires_ops("random.normal", "random.beta", "random.choice", "noise.gaussian", "noise.salt_and_pepper",
                          "noise.shot")

N = 20000  # values per statistic: bounds below are 6 standard errors


def run(graph, batch_size=2, feeds=None, num_threads=2, seed=7, iterations=1, device_id=None):
    pipe = ladle.Pipeline(batch_size=batch_size, num_threads=num_threads, seed=seed, device_id=device_id)
    with pipe:
        nodes = {}
        for name, arrays in (feeds or {}).items():
            nodes[name] = fn.external_source(name=name, dtype=types.UINT8 if arrays[0].dtype == np.uint8 else
                                             types.FLOAT if arrays[0].dtype == np.float32 else types.INT32,
                                             ndim=arrays[0].ndim, layout="HWC" if arrays[0].ndim == 3 else None)
        outs = graph(**nodes)
        outs = outs if isinstance(outs, tuple) else (outs,)
        pipe.set_outputs(*outs)
    got = [[] for _ in outs]
    for _ in range(iterations):
        for name, arrays in (feeds or {}).items():
            pipe.feed_input(name, arrays)
        for k, tl in enumerate(pipe.run()):
            tl = tl.as_cpu() if hasattr(tl, "as_cpu") else tl
            got[k] += [np.array(tl.at(i)) for i in range(len(tl))]
    pipe.close()
    return got if len(got) > 1 else got[0]


def check_mean_var(x, mean, var, kurtosis_excess=0.0):
    x = np.asarray(x, np.float64).ravel()
    n = len(x)
    assert abs(x.mean() - mean) <= 6 * np.sqrt(var / n)
    # sd of the sample variance: var * sqrt(2/(n-1) + kurtosis_excess/n)
    assert abs(x.var() - var) <= 6 * var * np.sqrt(2 / (n - 1) + kurtosis_excess / n)


def test_normal_statistics_and_dtype():
    a, b = run(lambda: (fn.random.normal(shape=[N]), fn.random.normal(mean=3, stddev=0.5, shape=[N])))
    assert a[0].dtype == np.float32 and a[0].shape == (N,)
    check_mean_var(a[0], 0, 1)
    check_mean_var(b[1], 3, 0.25)
    assert not np.array_equal(a[0], a[1])  # each sample its own stream
    ints = run(lambda: fn.random.normal(mean=10, stddev=3, shape=[N], dtype=types.INT32))
    assert ints[0].dtype == np.int32
    check_mean_var(ints[0], 10, 9 + 1 / 12, 0.1)  # rounding adds a uniform(-0.5, 0.5): var + 1/12


@pytest.mark.parametrize("alpha,beta", [(2.0, 5.0), (0.5, 0.5), (1.0, 1.0), (0.2, 3.0)])
def test_beta_statistics(alpha, beta):
    x = run(lambda: fn.random.beta(alpha=alpha, beta=beta, shape=[N]))[0]
    assert x.dtype == np.float32 and x.min() >= 0 and x.max() <= 1
    s = alpha + beta
    var = alpha * beta / (s * s * (s + 1))
    kurt = 6 * ((alpha - beta) ** 2 * (s + 1) - alpha * beta * (s + 2)) / (alpha * beta * (s + 2) * (s + 3))
    check_mean_var(x, alpha / s, var, kurt)


def test_uniform_and_coin_flip_vectors():
    u, c = run(lambda: (fn.random.uniform(range=[2, 4], shape=[N]), fn.random.coin_flip(probability=0.3, shape=[N])))
    check_mean_var(u[0], 3, 4 / 12, -1.2)
    assert u[0].min() >= 2 and u[0].max() < 4
    assert abs(c[0].mean() - 0.3) <= 6 * np.sqrt(0.21 / N) and set(np.unique(c[0])) == {0, 1}


def test_choice_values_and_probabilities():
    values = np.array([5, 7, 11], np.int32)
    a = [values, values]
    x = run(lambda a: fn.random.choice(a, p=[0.2, 0.5, 0.3], shape=[N]), feeds={"a": a})[0]
    assert x.dtype == np.int32 and set(np.unique(x)) <= {5, 7, 11}
    for v, p in zip(values, [0.2, 0.5, 0.3]):
        assert abs(np.mean(x == v) - p) <= 6 * np.sqrt(p * (1 - p) / N)
    n = run(lambda a: fn.random.choice(a, shape=[N]), feeds={"a": [np.array(4, np.int32)] * 2})[0]
    counts = np.bincount(n, minlength=4)
    assert n.min() >= 0 and n.max() <= 3 and np.all(np.abs(counts / N - 0.25) <= 6 * np.sqrt(0.1875 / N))
    scalar = run(lambda a: fn.random.choice(a), feeds={"a": a})[0]
    assert scalar.shape == () and scalar in values


def test_noise_gaussian_statistics():
    img = np.full((100, 200, 1), 100, np.float32)
    x = run(lambda x: fn.noise.gaussian(x, mean=1.0, stddev=4.0), feeds={"x": [img, img]})[0]
    assert x.dtype == np.float32 and x.shape == img.shape
    check_mean_var(x - 100, 1.0, 16.0)
    u8 = run(lambda x: fn.noise.gaussian(x, stddev=50.0), feeds={"x": [np.full((50, 50, 3), 250, np.uint8)] * 2})[0]
    assert u8.dtype == np.uint8 and u8.max() == 255  # saturates


def test_salt_and_pepper_statistics_and_per_channel():
    img = np.full((100, 100, 3), 128, np.uint8)
    x = run(lambda x: fn.noise.salt_and_pepper(x, prob=0.2, salt_vs_pepper=0.25), feeds={"x": [img, img]})[0]
    pix = x.reshape(-1, 3)
    assert np.all((pix == pix[:, :1]).all(1))  # per_channel=False: a pixel's channels together
    n = len(pix)
    salt, pepper = np.mean(pix[:, 0] == 255), np.mean(pix[:, 0] == 0)
    assert abs(salt - 0.05) <= 6 * np.sqrt(0.05 * 0.95 / n) and abs(pepper - 0.15) <= 6 * np.sqrt(0.15 * 0.85 / n)
    y = run(lambda x: fn.noise.salt_and_pepper(x, prob=0.5, per_channel=True, salt_val=200, pepper_val=10),
            feeds={"x": [img, img]})[0]
    assert set(np.unique(y)) == {10, 128, 200}
    assert np.mean((y.reshape(-1, 3) == y.reshape(-1, 3)[:, :1]).all(1)) < 0.5  # channels independent
    f = run(lambda x: fn.noise.salt_and_pepper(x, prob=1.0), feeds={"x": [np.zeros((10, 10, 1), np.float32)] * 2})[0]
    assert set(np.unique(f)) == {-1.0, 1.0}  # float defaults


@pytest.mark.parametrize("level,factor", [(100, 20.0), (200, 1.0), (3, 0.5), (250, 0.05)])
def test_shot_noise_statistics(level, factor):
    img = np.full((100, 100, 1), level, np.float32)
    x = run(lambda x: fn.noise.shot(x, factor=factor), feeds={"x": [img, img]})[0]
    # out = factor * Poisson(level / factor): mean level, variance factor * level
    lam = level / factor
    check_mean_var(x, level, factor * level, 1 / lam)
    assert np.allclose(x / factor, np.round(x / factor), atol=1e-3)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
                                   np.float16, np.float32, np.float64, np.bool_], ids=lambda d: np.dtype(d).name)
def test_salt_and_pepper_default_values(dtype):
    # DALI 2.4: the type's maximum and minimum for integers (checked with its CPU operator), 1 and -1 for floats;
    # BOOL (which DALI refuses): 1 and 0.
    x = np.ones((40, 40, 1), dtype)
    y = run_inferred("cpu", lambda x: fn.noise.salt_and_pepper(x, prob=1.0), {"x": [x]})[0][0][0]
    if np.issubdtype(dtype, np.integer):
        want = {np.iinfo(dtype).min, np.iinfo(dtype).max}
    else:
        want = {0, 1} if dtype == np.bool_ else {-1.0, 1.0}
    assert y.dtype == dtype and set(np.unique(y).tolist()) == want


def test_noise_statistics_uint8():
    # op_bench's settings on uint8 images: the kernels made per dtype, checked by the distribution they draw.
    img = np.full((100, 100, 3), 128, np.uint8)
    g, sp = run(lambda x: (fn.noise.gaussian(x, stddev=10.0), fn.noise.salt_and_pepper(x, prob=0.3, per_channel=True)),
                feeds={"x": [img, img]})
    dark = np.full((100, 100, 3), 64, np.uint8)  # 20 * Poisson(3.2): saturates at 255 (k >= 13) with p ~ 1e-5
    sh = run(lambda x: fn.noise.shot(x, factor=20.0), feeds={"x": [dark, dark]})
    check_mean_var(g[0].astype(np.float64) - 128, 0, 100 + 1 / 12, 0.0)  # rounding adds a uniform(-0.5, 0.5)
    v = sp[0].ravel()
    n = v.size
    for value, p in ((255, 0.15), (0, 0.15), (128, 0.7)):
        assert abs(np.mean(v == value) - p) <= 6 * np.sqrt(p * (1 - p) / n), value
    check_mean_var(sh[0], 64, 20 * 64, 1 / 3.2)
    assert np.all((sh[0] % 20 == 0) | (sh[0] == 255))


def test_reproducible_and_independent_of_threads():
    img = (np.arange(40 * 30 * 3) % 256).astype(np.uint8).reshape(40, 30, 3)

    def graph(x):
        return (fn.random.normal(shape=[50]), fn.random.beta(alpha=0.7, beta=2.0, shape=[20]),
                fn.noise.shot(x), fn.noise.salt_and_pepper(x), fn.noise.gaussian(x, stddev=10),
                fn.random.uniform(shape=[5]), fn.random.coin_flip())

    a = run(graph, batch_size=4, feeds={"x": [img] * 4}, num_threads=1, iterations=2)
    b = run(graph, batch_size=4, feeds={"x": [img] * 4}, num_threads=3, iterations=2)
    for x, y in zip(a, b):
        for s, t in zip(x, y):
            np.testing.assert_array_equal(s, t)
    c = run(graph, batch_size=4, feeds={"x": [img] * 4}, num_threads=2, iterations=2, seed=8)
    assert not np.array_equal(a[0][0], c[0][0])
    assert not np.array_equal(a[0][0], a[0][4])  # the second iteration draws anew


def test_op_seed_fixes_the_stream():
    a = run(lambda: fn.random.normal(shape=[10], seed=123), seed=1)
    b = run(lambda: (fn.random.uniform(), fn.random.normal(shape=[10], seed=123)), seed=2)[1]
    np.testing.assert_array_equal(a[0], b[0])


def test_against_dali_shapes_dtypes_ranges():
    # Different generators (DALI: curand/std::mt19937 per sample; ladle: Philox substreams): only shapes,
    # dtypes, ranges and loose statistics can agree.
    img = np.full((64, 64, 3), 128, np.uint8)
    got, want = run_both(lambda fn, types, x: (fn.random.normal(shape=[2000]), fn.random.beta(alpha=2.0, beta=3.0,
                                                                                             shape=[2000]),
                                               fn.noise.gaussian(x, stddev=5.0), fn.noise.salt_and_pepper(x),
                                               fn.noise.shot(x), fn.random.uniform(range=[1, 2], shape=[3, 4])),
                         {"x": [[img, img]]}, 2)
    for k, (g, w) in enumerate(zip(got, want)):
        for s, t in zip(g, w):
            assert s.shape == t.shape and s.dtype == t.dtype, k
            assert abs(float(s.astype(np.float64).mean()) - float(t.astype(np.float64).mean())) <= \
                6 * max(float(t.astype(np.float64).std()), 1e-3) / np.sqrt(t.size) + 0.5, k
            assert s.min() >= min(t.min(), 0) - 1e-6 or k in (0, 2)  # unbounded ones: normal, gaussian noise
    assert got[1][0].min() >= 0 and got[1][0].max() <= 1
    assert got[5][0].min() >= 1 and got[5][0].max() < 2


def test_bad_arguments():
    with pytest.raises(ladle.Error, match=r"random\.beta.*alpha"):
        run(lambda: fn.random.beta(alpha=0.0))
    with pytest.raises(ladle.Error, match=r"random\.choice.*'p' has 2 values.*3 choices"):
        run(lambda a: fn.random.choice(a, p=[0.5, 0.5]), feeds={"a": [np.array([1, 2, 3], np.int32)] * 2})
    with pytest.raises(ladle.Error, match=r"random\.choice.*'a'.*1-D"):
        run(lambda a: fn.random.choice(a), feeds={"a": [np.zeros((2, 2), np.int32)] * 2})
    with pytest.raises(ladle.Error, match=r"random\.choice.*must be >= 1"):
        run(lambda a: fn.random.choice(a), feeds={"a": [np.array(0, np.int32)] * 2})
    with pytest.raises(ladle.Error, match=r"noise\.salt_and_pepper.*prob"):
        run(lambda x: fn.noise.salt_and_pepper(x, prob=1.5), feeds={"x": [np.zeros((4, 4, 3), np.uint8)] * 2})
    with pytest.raises(ladle.Error, match=r"random\.normal.*stddev"):
        run(lambda: fn.random.normal(stddev=-1.0))


# --- GPU against CPU ---------------------------------------------------------------

def cpu_and_gpu(graph, feeds=None, batch_size=3):
    cpu = run(lambda **k: graph("cpu", **k), batch_size=batch_size, feeds=feeds)
    gpu = run(lambda **k: graph("gpu", **{n: v.gpu() for n, v in k.items()}), batch_size=batch_size, feeds=feeds,
              device_id=0)
    return cpu, gpu


@pytest.mark.gpu
def test_gpu_generators_equal_cpu():
    def graph(dev):
        return (fn.random.coin_flip(device=dev, shape=[999]), fn.random.uniform(device=dev, shape=[777]),
                fn.random.uniform(device=dev, values=[1, 5, 9], shape=[300]),
                fn.random.normal(device=dev, shape=[1000], mean=2), fn.random.beta(device=dev, alpha=0.4, shape=[500]))

    cpu, gpu = cpu_and_gpu(graph)
    for k, (c, g) in enumerate(zip(cpu, gpu)):
        for s, t in zip(c, g):
            if k < 3:
                np.testing.assert_array_equal(s, t)  # integer/+*< arithmetic only: bit-identical
            else:
                # log/cos/pow differ by an ulp of a double between libm and CUDA: float32 results within 1e-6;
                # a beta rejection test landing within that ulp would pick another sample: allow 0.1%
                close = np.isclose(s, t, rtol=1e-6, atol=1e-6)
                assert close.mean() >= 0.999, k


@pytest.mark.gpu
def test_gpu_noise_and_choice_equal_cpu():
    img = (np.arange(30 * 40 * 3) * 7 % 256).astype(np.uint8).reshape(30, 40, 3)

    def graph(dev, x, a):
        return (fn.noise.salt_and_pepper(x, device=dev), fn.noise.salt_and_pepper(x, device=dev, per_channel=True),
                fn.random.choice(a, device=dev, shape=[100], p=[0.1, 0.2, 0.7]),
                fn.noise.gaussian(x, device=dev, stddev=20), fn.noise.shot(x, device=dev, factor=0.5))

    cpu, gpu = cpu_and_gpu(graph, feeds={"x": [img] * 3, "a": [np.array([3, 4, 5], np.int32)] * 3})
    for k, (c, g) in enumerate(zip(cpu, gpu)):
        for s, t in zip(c, g):
            if k < 3:
                np.testing.assert_array_equal(s, t)
            else:  # uint8 after rounding: a transcendental ulp moves a value across .5 very rarely
                assert np.mean(s != t) <= 1e-3 and np.abs(s.astype(int) - t).max() <= 255


NOISE_DTYPES = [np.uint8, np.int8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64, np.float16,
                np.float32, np.float64, np.bool_]


DTYPES = {np.uint8: types.UINT8, np.int8: types.INT8, np.int16: types.INT16, np.uint16: types.UINT16,
          np.int32: types.INT32, np.uint32: types.UINT32, np.int64: types.INT64, np.uint64: types.UINT64,
          np.float16: types.FLOAT16, np.float32: types.FLOAT, np.float64: types.FLOAT64, np.bool_: types.BOOL}


def noise_input(rng, shape, dtype):
    if dtype == np.bool_:
        return rng.randint(0, 2, shape).astype(dtype)
    if np.issubdtype(dtype, np.integer):
        lo = 0 if np.issubdtype(dtype, np.unsignedinteger) else -60
        return rng.randint(lo, 300 if dtype != np.int8 else 128, shape).astype(dtype)
    return (rng.rand(*shape) * 300 - 20).astype(dtype)


def noise_graph(dev, x, sd, prob, factor):
    return (fn.noise.gaussian(x, device=dev, stddev=sd, mean=0.25), fn.noise.salt_and_pepper(x, device=dev, prob=prob),
            fn.noise.salt_and_pepper(x, device=dev, per_channel=True, prob=prob, salt_vs_pepper=0.3),
            fn.noise.shot(x, device=dev, factor=factor), fn.noise.shot(x, device=dev, factor=0.3))


def run_inferred(dev, graph, feeds, iterations=1):
    """graph(**nodes) on `dev` with external sources that take the fed dtype; one list of outputs per iteration."""
    batch = len(next(iter(feeds.values())))
    pipe = ladle.Pipeline(batch_size=batch, num_threads=2, seed=9, device_id=None if dev == "cpu" else 0)
    with pipe:
        src = {k: fn.external_source(name=k, dtype=DTYPES[np.asarray(v[0]).dtype.type], ndim=np.ndim(v[0]),
                                     layout="HWC" if k == "x" else None) for k, v in feeds.items()}
        if dev == "gpu":
            src["x"] = src["x"].gpu()
        outs = graph(**src)
        pipe.set_outputs(*(outs if isinstance(outs, tuple) else (outs,)))
    got = []
    for _ in range(iterations):
        for k, v in feeds.items():
            pipe.feed_input(k, v)
        got.append([[np.array((tl.as_cpu() if hasattr(tl, "as_cpu") else tl).at(i)) for i in range(batch)]
                    for tl in pipe.run()])
    pipe.close()
    return got


def run_noise_both(dtype, iterations=1):
    """noise.* of every kind on the CPU and the GPU: odd shapes, a 1-pixel and an empty sample, 1 to 4 channels,
    per-sample stddev / prob / factor (tensor arguments)."""
    rng = np.random.RandomState(5)
    shapes = [(17, 23, 3), (1, 1, 3), (0, 7, 3), (40, 9, 4), (5, 3, 1), (3, 331, 2)]
    x = [noise_input(rng, s, dtype) for s in shapes]
    feeds = {"x": x, "sd": [np.float32(v) for v in (0.5, 3, 10, 40, 0.1, 7)],
             "prob": [np.float32(v) for v in (0.05, 0.5, 1.0, 0.3, 0.0, 0.2)],
             "factor": [np.float32(v) for v in (20, 0.05, 1, 3.5, 0, 0.7)]}
    cpu, gpu = (run_inferred(dev, lambda x, sd, prob, factor: noise_graph(dev, x, sd, prob, factor), feeds,
                             iterations) for dev in ("cpu", "gpu"))
    return x, cpu, gpu


def test_noise_every_dtype_cpu():
    # The CPU side of the GPU test below: shapes and dtypes kept; prob 0 and factor 0 return the input.
    for dtype in NOISE_DTYPES:
        rng = np.random.RandomState(1)
        x = [noise_input(rng, s, dtype) for s in [(4, 5, 3), (0, 2, 3), (1, 1, 1)]]
        got = run_inferred("cpu", lambda x: (fn.noise.gaussian(x, stddev=2), fn.noise.salt_and_pepper(x, prob=0.0),
                                             fn.noise.shot(x, factor=0.0)), {"x": x})[0]
        for k, outs in enumerate(got):
            for s, t in zip(outs, x):
                assert s.dtype == t.dtype and s.shape == t.shape, (dtype, k)
                if k:
                    np.testing.assert_array_equal(s, t)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", NOISE_DTYPES, ids=lambda d: np.dtype(d).name)
def test_gpu_noise_every_dtype_equal_cpu(dtype):
    x, cpu, gpu = run_noise_both(dtype, iterations=2)
    for it in range(2):
        for k, (c, g) in enumerate(zip(cpu[it], gpu[it])):
            for i, (s, t) in enumerate(zip(c, g)):
                assert s.dtype == t.dtype == x[i].dtype and s.shape == t.shape == x[i].shape, (k, i)
                if k in (1, 2):  # salt and pepper: comparisons and copies only
                    np.testing.assert_array_equal(s, t)
                elif k == 0 and np.issubdtype(dtype, np.floating):
                    # log/cos: an ulp of a double between libm and CUDA, then rounded to the output type
                    np.testing.assert_allclose(s.astype(np.float64), t.astype(np.float64),
                                               rtol=1e-3 if dtype == np.float16 else 1e-6, atol=1e-6)
                else:  # a rounding at .5 (gaussian), a flipped Poisson stopping/rejection test (shot)
                    assert np.count_nonzero(s != t) <= 1 + s.size // 1000, (k, i)
