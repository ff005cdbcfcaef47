"""ladle.dynamic's random operators: call k of a generator seeded S draws what
the first iteration of a pipeline with seed mix(S, k) draws, operator by
operator (every random operator of the schema), and steady-state calls build
no pipeline."""

import numpy as np
import pytest

import ladle
from ladle import fn, types
from conftest import cuda_usable, sample_jpegs

ldd = pytest.importorskip("ladle.dynamic")
from ladle.dynamic import _exec, _random  # noqa: E402

N = 5


def _jpegs():
    return [np.frombuffer(data, dtype=np.uint8) for _, data in sample_jpegs()[:N]]


def _inputs(name, schema):
    """Data for one operator: none (random.*), encoded JPEGs (decoders),
    int32 values (random.choice), else decoded HWC images."""
    if schema["min_inputs"] == 0:
        return []
    if name.startswith("decoders."):
        return [_jpegs()]
    if name == "random.choice":
        return [[np.array(v, np.int32) for v in (3, 7, 11, 5, 9)]]
    images = ldd.decoders.image(ldd.batch(_jpegs()))
    return [[np.array(t) for t in ldd.resize(images, resize_x=40, resize_y=30).tensors]]


ARGS = {"random_resized_crop": {"size": [24, 24]}}


def _random_ops():
    return sorted(k for k, s in ladle.pipeline.op_schemas().items() if "random" in s["flags"])


def _pipeline_first_iteration(name, inputs, seed, args):
    """The operator in a pipeline (external sources -> op) with `seed`: its first iteration."""
    pipe = ladle.Pipeline(batch_size=N, num_threads=2, seed=seed, device_id=None)
    try:
        with pipe:
            nodes = [fn.external_source(name=f"in{i}", dtype=types.to_dtype(x[0].dtype), ndim=x[0].ndim,
                                        layout="HWC" if x[0].ndim == 3 else None) for i, x in enumerate(inputs)]
            op = _exec._fn_op(name)
            out = op(*nodes, **args)
            pipe.set_outputs(*(out if isinstance(out, tuple) else (out,)))
        for i, x in enumerate(inputs):
            pipe.feed_input(f"in{i}", x)
        outs = pipe.run()
        return [[np.array(tl.at(i)) for i in range(len(tl))] for tl in outs]
    finally:
        pipe.close()


@pytest.mark.parametrize("name", _random_ops())
def test_random_operator_equals_pipeline(name):
    schema = ladle.pipeline.op_schemas()[name]
    inputs = _inputs(name, schema)
    args = ARGS.get(name, {})
    dyn = ldd
    for part in name.split("."):
        dyn = getattr(dyn, part)
    rng = ldd.random.RNG(seed=77)
    batches = [ldd.batch(x) if x[0].ndim != 3 else ldd.batch(x, layout="HWC") for x in inputs]
    size = {} if inputs else {"batch_size": N}
    for k in range(3):  # calls 0..2 of this generator; the graph is built once
        got = dyn(*batches, rng=rng, **size, **args)
        got = got if isinstance(got, tuple) else (got,)
        want = _pipeline_first_iteration(name, inputs, _random._mix(77, k), args)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            samples = [np.array(t) for t in g.tensors]
            assert len(samples) == N
            for s, ws in zip(samples, w):
                assert s.dtype == ws.dtype and s.shape == ws.shape
                np.testing.assert_array_equal(s, ws)


def test_steady_state_calls_build_nothing(monkeypatch):
    ramp = (np.arange(20 * 30 * 3) % 251).astype(np.uint8).reshape(20, 30, 3)
    images = ldd.batch([ramp + i for i in range(4)], layout="HWC")
    made = []
    real = _exec._make
    monkeypatch.setattr(_exec, "_make", lambda *a, **k: made.append(a) or real(*a, **k))
    with ldd.EvalContext(num_threads=1):
        for _ in range(2):  # warm-up: one build per signature
            ldd.random.coin_flip(batch_size=4)
            ldd.random_resized_crop(images, size=[8, 8])
            ldd.flip(images, horizontal=1)
        warm = len(made)
        assert warm == 3
        coins = [np.array(ldd.random.coin_flip(batch_size=4)).tolist() for _ in range(30)]
        crops = [np.array(ldd.random_resized_crop(images, size=[8, 8])) for _ in range(10)]
        assert len(made) == warm
    assert len({tuple(c) for c in coins}) > 5  # new numbers per call
    assert any(not np.array_equal(crops[0], c) for c in crops[1:])


def test_rng_state_and_default_generator():
    rng = ldd.random.RNG(seed=3)
    first = [np.array(ldd.random.uniform(batch_size=4, rng=rng)).tolist() for _ in range(2)]
    state = rng.get_state()
    after = [np.array(ldd.random.uniform(batch_size=4, rng=rng)).tolist() for _ in range(2)]
    clone = ldd.random.RNG(state=state)
    assert [np.array(ldd.random.uniform(batch_size=4, rng=clone)).tolist() for _ in range(2)] == after
    rng.set_state(state)
    assert [np.array(ldd.random.uniform(batch_size=4, rng=rng)).tolist() for _ in range(2)] == after
    again = ldd.random.RNG(seed=3)
    assert [np.array(ldd.random.uniform(batch_size=4, rng=again)).tolist() for _ in range(2)] == first
    a, b = ldd.random.RNG(seed=9), ldd.random.RNG(seed=9)
    b.advance(1)
    a()
    assert a.get_state() == b.get_state() and a.clone().get_state() == a.get_state()
    # The default generator is what set_seed restarts.
    ldd.random.set_seed(21)
    x = np.array(ldd.random.uniform(batch_size=4)).tolist()
    assert x == np.array(ldd.random.uniform(batch_size=4, rng=ldd.random.RNG(seed=21))).tolist()
    assert ldd.random.get_default_rng() is ldd.random.get_default_rng()
    with pytest.raises(ladle.InvalidArgumentError, match="not a ladle RNG state"):
        ldd.random.RNG(state="garbage")
    with pytest.raises(ladle.InvalidArgumentError, match="'rng'"):
        ldd.random.uniform(batch_size=2, rng=42)
    with pytest.raises(ladle.InvalidArgumentError, match="rng"):
        ldd.flip(ldd.batch([np.zeros((2, 2, 3), np.uint8)]), rng=rng)


@pytest.mark.gpu
def test_random_gpu_equals_cpu():
    if not cuda_usable():
        pytest.skip("no GPU")
    images = ldd.decoders.image(ldd.batch(_jpegs()))
    cpu = ldd.random_resized_crop(images, size=[24, 24], rng=ldd.random.RNG(seed=4))
    gpu = ldd.random_resized_crop(images.gpu(), size=[24, 24], rng=ldd.random.RNG(seed=4))
    assert gpu.device == "gpu"
    for c, g in zip(cpu.tensors, gpu.cpu().tensors):
        assert np.abs(np.array(c).astype(int) - np.array(g).astype(int)).max() <= 1  # GPU resampling rounding
