"""Per-sample demand (src/pipeline/demand.h): after a merge's predicate is
computed, the CPU operators of the branch a sample does not take skip that
sample. Results must be those of computing everything (LADLE_NO_DEMAND=1),
and a branch that would fail on the samples it does not get must not run
on them."""

import os

import numpy as np
import pytest

import ladle
from ladle import fn, pipeline_def, types
from ladle.auto_aug import auto_augment, rand_augment, trivial_augment


def images(n, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (int(rng.integers(8, 30)), int(rng.integers(8, 30)), 3), dtype=np.uint8)
            for _ in range(n)]


def run(graph, feeds, no_demand, iterations=2):
    if no_demand:
        os.environ["LADLE_NO_DEMAND"] = "1"
    try:
        pipe = ladle.Pipeline(batch_size=len(next(iter(feeds.values()))), num_threads=2, device_id=None, seed=3)
        with pipe:
            nodes = {name: fn.external_source(name=name, dtype=types.UINT8, ndim=np.asarray(v[0]).ndim,
                                              layout="HWC" if np.asarray(v[0]).ndim == 3 else None)
                     for name, v in feeds.items()}
            pipe.set_outputs(graph(**nodes))
        out = []
        for _ in range(iterations):
            for name, v in feeds.items():
                pipe.feed_input(name, v)
            out.append([np.array(t) for t in pipe.run()[0]])
        pipe.close()
        return out
    finally:
        os.environ.pop("LADLE_NO_DEMAND", None)


@pytest.mark.parametrize("scheme", [
    lambda x: trivial_augment.trivial_augment_wide(x, seed=1),
    lambda x: rand_augment.rand_augment(x, n=2, m=13, seed=2),
    lambda x: auto_augment.auto_augment(x, policy_name="reduced_cifar10", seed=3),
])
def test_same_results_as_computing_everything(scheme):
    feeds = {"x": images(16)}
    a, b = run(scheme, feeds, False), run(scheme, feeds, True)
    for it in range(2):
        for u, v in zip(a[it], b[it]):
            np.testing.assert_array_equal(u, v)


def test_untaken_branch_does_not_run():
    # mode="valid" with a 9x9 filter fails on images smaller than 9 pixels: those take the other branch.
    rng = np.random.default_rng(1)
    xs = [rng.integers(0, 256, (s, s, 3), dtype=np.uint8) for s in (5, 12, 7, 20)]
    big = [np.array(x.shape[0] >= 9, np.uint8) for x in xs]

    @pipeline_def(batch_size=4, num_threads=2, device_id=None, enable_conditionals=True)
    def pipe():
        x = fn.external_source(name="x", dtype=types.UINT8, ndim=3, layout="HWC")
        flag = fn.external_source(name="flag", dtype=types.UINT8, ndim=0)
        if flag:
            y = fn.resize(fn.filter(x, types.Constant(np.full((9, 9), 1 / 81, np.float32)), mode="valid"),
                          size=[4, 4])
        else:
            y = fn.resize(x, size=[4, 4])
        return y

    p = pipe()
    p.build()
    p.feed_input("x", xs)
    p.feed_input("flag", big)
    (out,) = p.run()
    assert [np.array(out.at(i)).shape for i in range(4)] == [(4, 4, 3)] * 4
    p.close()
    # Without demand the filter runs on every sample and fails on the small ones: the skip is what saved them.
    os.environ["LADLE_NO_DEMAND"] = "1"
    try:
        p = pipe()
        p.build()
        p.feed_input("x", xs)
        p.feed_input("flag", big)
        with pytest.raises(ladle.Error, match="filter.*larger than the sample"):
            p.run()
        p.close()
    finally:
        os.environ.pop("LADLE_NO_DEMAND", None)


def test_nested_and_shared_values():
    """A value read by both branches, and by a later consumer, stays computed for every sample."""
    feeds = {"x": images(12, 2)}

    def graph(x):
        idx = fn.random.uniform(values=[0, 1, 2], dtype=types.INT32)
        first, second = idx == 0, idx < 2  # computed before the branches: they can skip
        shared = x // 2
        a = shared + 1
        b = fn.flip(shared, horizontal=1)
        c = fn.reductions.max(shared, axis_names="HW", keep_dims=True) + x * 0
        merge = getattr(fn, "_conditional").merge
        inner = merge(a, b, predicate=first)
        return merge(inner, c, predicate=second) + shared * 0

    a, b = run(graph, feeds, False), run(graph, feeds, True)
    for u, v in zip(a[0] + a[1], b[0] + b[1]):
        np.testing.assert_array_equal(u, v)


def test_batch_statistics_see_every_sample():
    """normalize(batch=True) reads every sample's statistics: it computes them all, inside a branch too."""
    feeds = {"x": images(10, 3)}

    def graph(x):
        pick = fn.random.coin_flip(probability=0.5) == 1
        xf = fn.cast(x, dtype=types.FLOAT)
        return getattr(fn, "_conditional").merge(fn.normalize(xf, batch=True), xf, predicate=pick)

    a, b = run(graph, feeds, False), run(graph, feeds, True)
    for u, v in zip(a[0] + a[1], b[0] + b[1]):
        np.testing.assert_array_equal(u, v)
