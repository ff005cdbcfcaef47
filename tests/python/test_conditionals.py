"""enable_conditionals=True: per-sample `if` on DataNodes, joined sample by
sample, with the values each sample would get from its own branch alone."""

import numpy as np
import pytest

import ladle
from ladle import fn, pipeline_def, types

OFFSET = 7  # a free variable of the pipeline function (closure)


def images(n):
    rng = np.random.default_rng(5)
    return [rng.integers(0, 255, (4 + i % 3, 6, 3), dtype=np.uint8) for i in range(n)]


@pipeline_def(batch_size=8, num_threads=2, seed=3, enable_conditionals=True)
def branching():
    x = fn.external_source(name="x", layout="HWC")
    cond = fn.random.coin_flip(probability=0.5)
    if cond:
        out = fn.flip(x, horizontal=1)
        tag = fn.random.uniform(range=[0, 1])
    elif fn.random.coin_flip(probability=0.5):
        out = fn.crop(x, crop=[2, 2])  # another shape: the join is ragged
        tag = fn.random.uniform(range=[10, 11])
    else:
        out = x
        tag = fn.random.uniform(range=[20, 20 + OFFSET])
    return out, tag, cond


def test_each_sample_takes_its_branch():
    data = images(8)
    pipe = branching()
    pipe.feed_input("x", data)
    out, tag, cond = pipe.run()
    pipe.close()
    for i in range(8):
        o, t = np.array(out.at(i)), float(np.array(tag.at(i)))
        if int(np.array(cond.at(i))):
            np.testing.assert_array_equal(o, data[i][:, ::-1])
            assert 0 <= t < 1
        elif o.shape[:2] == (2, 2):
            h, w = data[i].shape[:2]
            y0, x0 = round(0.5 * (h - 2)), round(0.5 * (w - 2))
            np.testing.assert_array_equal(o, data[i][y0:y0 + 2, x0:x0 + 2])
            assert 10 <= t < 11
        else:
            np.testing.assert_array_equal(o, data[i])
            assert 20 <= t < 20 + OFFSET
    assert len({int(np.array(cond.at(i))) for i in range(8)}) == 2  # both branches were taken


def test_a_sample_gets_what_its_branch_alone_gives():
    # The same random op outside any `if` draws the same values as inside the branch that kept them.
    @pipeline_def(batch_size=8, num_threads=2, seed=3, enable_conditionals=True)
    def inside():
        if fn.random.coin_flip(probability=0.5, seed=1):
            v = fn.random.uniform(range=[0, 1], seed=2)
        else:
            v = fn.random.uniform(range=[5, 6], seed=3)
        return v

    @pipeline_def(batch_size=8, num_threads=2, seed=3)
    def alone():
        return (fn.random.coin_flip(probability=0.5, seed=1), fn.random.uniform(range=[0, 1], seed=2),
                fn.random.uniform(range=[5, 6], seed=3))

    a, b = inside(), alone()
    (v,) = a.run()
    c, t, f = b.run()
    for i in range(8):
        want = t.at(i) if int(np.array(c.at(i))) else f.at(i)
        assert float(np.array(v.at(i))) == float(np.array(want))
    a.close()
    b.close()


def test_python_conditions_stay_python():
    @pipeline_def(batch_size=2, num_threads=1, enable_conditionals=True)
    def pipe(flip):
        x = fn.external_source(name="x", layout="HWC")
        if flip:  # a Python bool: a plain `if`
            x = fn.flip(x)
        return x

    data = images(2)
    for flag in (True, False):
        p = pipe(flag)
        p.feed_input("x", data)
        (out,) = p.run()
        np.testing.assert_array_equal(np.array(out.at(0)), data[0][:, ::-1] if flag else data[0])
        p.close()


def test_unsupported_forms_are_explained():
    @pipeline_def(batch_size=2, num_threads=1, enable_conditionals=True)
    def one_branch():
        if fn.random.coin_flip():
            y = fn.random.uniform()
        return y

    with pytest.raises(ladle.InvalidArgumentError, match="Variable 'y' must also be initialized in the `else` branch"):
        one_branch()

    @pipeline_def(batch_size=2, num_threads=1, enable_conditionals=True)
    def returns():
        for _ in range(2):  # an early return in a loop (outside loops, early returns are supported)
            if fn.random.coin_flip():
                return fn.random.uniform()
        return fn.random.uniform()

    with pytest.raises(ladle.InvalidArgumentError, match="`return` on a DataNode condition is not supported"):
        returns()

    @pipeline_def(batch_size=2, num_threads=1, enable_conditionals=True)
    def types_differ():
        if fn.random.coin_flip():
            y = fn.random.uniform()
        else:
            y = fn.random.coin_flip()
        return y

    with pytest.raises(ladle.InvalidArgumentError, match=r"branches of the `if` give float32 .* and int32"):
        types_differ().build()

    @pipeline_def(batch_size=2, num_threads=1)
    def without():
        if fn.random.coin_flip():
            pass
        return fn.random.uniform()

    with pytest.raises(TypeError, match="enable_conditionals=True"):
        without()


@pytest.mark.gpu
def test_gpu_branches_join_on_the_gpu():
    @pipeline_def(batch_size=8, num_threads=2, device_id=0, seed=3, enable_conditionals=True)
    def gpu_pipe():
        x = fn.external_source(name="x", layout="HWC").gpu()
        if fn.random.coin_flip():
            x = fn.flip(x)
        return x, fn.random.coin_flip()

    data = images(8)
    p = gpu_pipe()
    p.feed_input("x", data)
    (out, _) = p.run()
    cpu = out.as_cpu()
    p.close()
    flipped = sum(np.array_equal(np.array(cpu.at(i)), data[i][:, ::-1]) for i in range(8))
    same = sum(np.array_equal(np.array(cpu.at(i)), data[i]) for i in range(8))
    assert flipped + same == 8 and flipped and same
