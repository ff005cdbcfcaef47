"""transforms.*: matrices against NumPy formulas and products (float32
output of double arithmetic: within 1e-6 relative), against DALI 2.4 (within
2e-6: DALI's own float rounding), per-sample arguments, composition order,
and bad arguments."""

import math

import numpy as np
import pytest

import ladle
from ladle import fn
from conftest import requires_ops, run_both
from geometry_reference import raises_naming

pytestmark = requires_ops("transforms.translation", "transforms.scale", "transforms.rotation",
                          "transforms.shear", "transforms.crop", "transforms.combine")


def run(graph, feeds=None, batch_size=4):
    pipe = ladle.Pipeline(batch_size=batch_size, num_threads=2, seed=1)
    try:
        with pipe:
            nodes = {name: fn.external_source(name=name, dtype=ladle.types.FLOAT, ndim=np.asarray(b[0]).ndim)
                     for name, b in (feeds or {}).items()}
            outs = graph(**nodes)
            pipe.set_outputs(*(outs if isinstance(outs, tuple) else (outs,)))
        for name, batch in (feeds or {}).items():
            pipe.feed_input(name, batch)
        return [[np.array(tl.at(i)) for i in range(len(tl))] for tl in pipe.run()]
    finally:
        pipe.close()


def h(m):
    """n x (n+1) -> homogeneous (n+1) x (n+1)."""
    m = np.asarray(m, np.float64)
    n = m.shape[0]
    return np.vstack([m, np.eye(n + 1)[n:]])


def about(lin, center):
    lin = np.asarray(lin, np.float64)
    c = np.asarray(center, np.float64)
    return np.hstack([lin, (c - lin @ c)[:, None]])


def close(a, b):
    assert a.dtype == np.float32 and a.shape == np.shape(b)
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


ANGLES = np.array([-170.3, 45.0, 91.0, 3.3], np.float32)
OFFSETS = [np.array(v, np.float32) for v in ([1.5, -2.0], [0, 3], [7, 7], [-1, 0.25])]


def test_formulas():
    outs = run(lambda: (fn.transforms.translation(offset=[3, -4]),
                        fn.transforms.scale(scale=[2, 0.5], center=[1, 2]),
                        fn.transforms.rotation(angle=30.0, center=[3, 4]),
                        fn.transforms.shear(shear=[0.3, -0.2], center=[5, 5]),
                        fn.transforms.shear(angles=[10, -20]),
                        fn.transforms.crop(from_start=[10, 20], from_end=[30, 60], to_start=[-1], to_end=[1]),
                        fn.transforms.crop(from_start=[4, 0], from_end=[1, 3], absolute=True),
                        fn.transforms.scale(scale=[2], ndim=3),
                        fn.transforms.rotation(angle=40.0, axis=[0, 0, 2])), batch_size=1)
    got = [o[0] for o in outs]
    c, s = math.cos(math.radians(30)), math.sin(math.radians(30))
    want = [
        [[1, 0, 3], [0, 1, -4]],
        about(np.diag([2, 0.5]), [1, 2]),
        about([[c, -s], [s, c]], [3, 4]),
        about([[1, 0.3], [-0.2, 1]], [5, 5]),
        [[1, math.tan(math.radians(10)), 0], [math.tan(math.radians(-20)), 1, 0]],
        [[2 / 20, 0, -1 - 10 * 2 / 20], [0, 2 / 40, -1 - 20 * 2 / 40]],
        [[1 / 3, 0, -1 / 3], [0, 1 / 3, 0]],
        np.hstack([np.diag([2.0, 2, 2]), np.zeros((3, 1))]),
        np.hstack([[[math.cos(math.radians(40)), -math.sin(math.radians(40)), 0],
                    [math.sin(math.radians(40)), math.cos(math.radians(40)), 0], [0, 0, 1]], np.zeros((3, 1))]),
    ]
    for g, w in zip(got, want):
        close(g, w)


def test_composition_order_matches_numpy_products():
    outs = run(lambda a, o: (fn.transforms.translation(fn.transforms.rotation(angle=a), offset=o),
                             fn.transforms.translation(fn.transforms.rotation(angle=a), offset=o, reverse_order=True),
                             fn.transforms.combine(fn.transforms.rotation(angle=a), fn.transforms.translation(offset=o),
                                                   fn.transforms.scale(scale=[2, 3])),
                             fn.transforms.combine(fn.transforms.rotation(angle=a), fn.transforms.translation(offset=o),
                                                   reverse_order=True)),
               {"a": ANGLES, "o": OFFSETS})
    for i, (a, o) in enumerate(zip(ANGLES, OFFSETS)):
        c, s = math.cos(math.radians(float(a))), math.sin(math.radians(float(a)))
        R = h([[c, -s, 0], [s, c, 0]])
        T = h([[1, 0, o[0]], [0, 1, o[1]]])
        S = h([[2, 0, 0], [0, 3, 0]])
        close(outs[0][i], (T @ R)[:2])   # the new transform after the input
        close(outs[1][i], (R @ T)[:2])   # reverse_order: before it
        close(outs[2][i], (S @ T @ R)[:2])  # combine: the first applied first
        close(outs[3][i], (R @ T)[:2])


def test_against_dali():
    def g(f, t, a, o):
        T = f.transforms
        r = T.rotation(angle=a, center=[3, 4])
        return (T.translation(offset=o), T.scale(scale=[2, 0.5], center=[1, 2]), T.scale(r, scale=[3]), r,
                T.rotation(angle=a, axis=[1, 2, 3]), T.rotation(angle=30.0, axis=[0, 0, 1], center=[1, 2, 3]),
                T.shear(shear=[0.3, -0.2], center=[5, 5]), T.shear(angles=[10, -20]),
                T.shear(shear=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6]),
                T.crop(from_start=[10, 20], from_end=[30, 60], to_start=[0, 0], to_end=[1, 1]),
                T.crop(from_start=[4, 0], from_end=[1, 3], to_start=[1], to_end=[0], absolute=True),
                T.translation(r, offset=o, reverse_order=True),
                T.combine(r, T.translation(offset=o), T.scale(scale=[2, 3])),
                T.combine(r, T.translation(offset=o), reverse_order=True), T.scale(scale=[2], ndim=3))

    got, want = run_both(g, {"a": [ANGLES], "o": [OFFSETS]}, 4)
    for x, y in zip(got, want):
        for p, q in zip(x, y):
            assert p.shape == q.shape and p.dtype == q.dtype == np.float32
            np.testing.assert_allclose(p, q, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("make, words", [
    (lambda: fn.transforms.translation(), ["transforms.translation", "offset", "required"]),
    (lambda: fn.transforms.translation(offset=[1, 2, 3, 4]), ["transforms.translation", "offset"]),
    (lambda: fn.transforms.scale(scale=[2]), ["transforms.scale", "ndim"]),
    (lambda: fn.transforms.scale(scale=[2, 3], ndim=3), ["transforms.scale", "ndim"]),
    (lambda: fn.transforms.scale(scale=[2, 3], center=[1]), ["transforms.scale", "center"]),
    (lambda: fn.transforms.rotation(angle=3.0, axis=[0, 0, 0]), ["transforms.rotation", "axis"]),
    (lambda: fn.transforms.rotation(angle=3.0, axis=[0, 1]), ["transforms.rotation", "axis"]),
    (lambda: fn.transforms.shear(), ["transforms.shear", "shear", "angles"]),
    (lambda: fn.transforms.shear(shear=[1, 2], angles=[1, 2]), ["transforms.shear", "shear", "angles"]),
    (lambda: fn.transforms.shear(shear=[1, 2, 3]), ["transforms.shear", "shear"]),
    (lambda: fn.transforms.shear(angles=[95, 0]), ["transforms.shear", "angles"]),
    (lambda: fn.transforms.crop(from_start=[1, 1], from_end=[1, 2]), ["transforms.crop", "empty"]),
    (lambda: fn.transforms.crop(from_start=[0, 0], to_start=[0, 0, 0]), ["transforms.crop", "expected 3"]),
    (lambda: fn.transforms.translation(fn.transforms.rotation(angle=1.0, axis=[0, 0, 1]), offset=[1, 2]),
     ["transforms.translation", "3-D"]),
    (lambda: fn.transforms.combine(fn.transforms.translation(offset=[1]), fn.transforms.translation(offset=[1, 2])),
     ["transforms.combine", "input 1"]),
])
def test_bad_arguments(make, words):
    raises_naming(lambda: run(make, batch_size=2), words)


def test_combine_needs_two_inputs():
    with pytest.raises(ladle.Error, match="transforms.combine"):
        run(lambda: fn.transforms.combine(fn.transforms.translation(offset=[1, 2])), batch_size=1)
