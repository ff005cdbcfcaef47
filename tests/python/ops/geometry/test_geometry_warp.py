"""warp_affine and rotate: against the NumPy reference of the kernel's
arithmetic (bit-exact), against DALI 2.4 on the CPU (tolerances below), GPU
against CPU (bit-exact), and bad arguments.

Tolerance against DALI: DALI's CPU warp computes the source position of
pixel x of a row by adding the matrix column to the previous pixel's (x
float additions), ladle (like DALI's GPU kernel) computes each position
directly from the matrix: the positions differ by a few float ulps, so a
bilinear uint8 value may round the other way (|diff| <= 1, on under 2% of
the values) and float32 output differs by under 0.01 (weights differ by
~1e-6, times pixel differences up to 255). NN sampling picks the same
pixels except where a position lies within those ulps of a pixel edge (a
neighbour's value: under 2% of the pixels for rotations, none for the
matrix M below). Shapes are exact."""

import numpy as np
import pytest

import ladle
from ladle import fn, types
from conftest import requires_ops, run_both
from geometry_reference import raises_naming, rotated_canvas, rotation_matrix, run_pipeline, warp

pytestmark = requires_ops("warp_affine", "rotate")

M = [1.1, 0.2, -3.3, -0.15, 0.9, 2.7]


def images(seed=0, n=4, dtype=np.uint8, channels=3):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        shape = (int(rng.integers(5, 40)), int(rng.integers(5, 40)), channels)
        a = rng.integers(0, 256, shape).astype(dtype)
        out.append(a if dtype == np.uint8 else a * np.float32(1.3) - np.float32(20))
    return out


run = run_pipeline


def check_vs_dali(got, want, exact=False, nn=False, ties=False):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.shape == b.shape and a.dtype == b.dtype
        d = np.abs(a.astype(np.float64) - b.astype(np.float64))
        if exact:
            assert d.max() == 0
        elif nn:
            assert (d.max(axis=-1) > 0).mean() < 0.02
        elif a.dtype == np.uint8:
            assert d.max() <= 1 and (ties or (d > 0).mean() < 0.02), (d.max(), (d > 0).mean())
        else:
            assert d.max() < 0.01, d.max()


# --- NumPy reference ---------------------------------------------------------

@pytest.mark.parametrize("linear", [True, False])
@pytest.mark.parametrize("fill", [None, 42.0, 3.7])
@pytest.mark.parametrize("dtypes", [(np.uint8, None), (np.uint8, np.float32), (np.float32, None),
                                    (np.float32, np.uint8)])
def test_warp_affine_equals_numpy_reference(linear, fill, dtypes):
    in_dtype, out_dtype = dtypes
    imgs = images(1, dtype=in_dtype)
    kw = {"interp_type": "LINEAR" if linear else "NN"}
    if fill is not None:
        kw["fill_value"] = fill
    if out_dtype is not None:
        kw["dtype"] = types.to_dtype(out_dtype)
    got = run(lambda x: fn.warp_affine(x, matrix=M, **kw), {"x": imgs})
    for img, g in zip(imgs, got):
        want = warp(img, M, linear=linear, fill=fill, out_dtype=out_dtype)
        assert g.dtype == want.dtype and np.array_equal(g, want)


def test_warp_affine_size_and_inverse_map():
    imgs = images(2)
    src_to_dst = np.array([[1.2, 0.3, 4.0], [-0.2, 0.8, -1.0], [0, 0, 1]])
    inv = np.linalg.inv(src_to_dst)[:2].reshape(6)
    got = run(lambda x: fn.warp_affine(x, matrix=list(src_to_dst[:2].reshape(6)), inverse_map=False,
                                       size=[17.4, 22.6], fill_value=0), {"x": imgs})
    for img, g in zip(imgs, got):
        assert g.shape == (17, 23, 3)
        want = warp(img, inv, (17, 23), fill=0)
        d = np.abs(g.astype(int) - want)  # ladle inverts in double, NumPy too: float32 matrices may differ by an ulp
        assert d.max() <= 1 and (d > 0).mean() < 0.01


def test_warp_affine_identity_is_a_copy():
    imgs = images(3)
    got = run(lambda x: fn.warp_affine(x, matrix=[1, 0, 0, 0, 1, 0]), {"x": imgs})
    assert all(np.array_equal(a, b) for a, b in zip(imgs, got))


def test_warp_affine_per_sample_matrix_and_matrix_input():
    imgs = images(4)
    mats = [np.array([[1, 0.1 * i, i], [0.05 * i, 1, -i]], np.float32) for i in range(4)]
    a = run(lambda x, m: fn.warp_affine(x, matrix=m, fill_value=5), {"x": imgs, "m": mats})
    b = run(lambda x, m: fn.warp_affine(x, m, fill_value=5), {"x": imgs, "m": mats})
    for img, m, ga, gb in zip(imgs, mats, a, b):
        want = warp(img, m, fill=5)
        assert np.array_equal(ga, want) and np.array_equal(gb, want)


@pytest.mark.parametrize("angle", [0.0, 12.0, 30.0, -45.0, 90.0, 137.5, 180.0, -270.0])
def test_rotate_canvas_and_pixels_against_numpy(angle):
    imgs = images(5)
    got = run(lambda x: fn.rotate(x, angle=angle, fill_value=0), {"x": imgs})
    for img, g in zip(imgs, got):
        h, w = img.shape[:2]
        oh, ow = rotated_canvas(h, w, angle)
        assert g.shape == (oh, ow, 3)
        want = warp(img, rotation_matrix(h, w, oh, ow, angle), (oh, ow), fill=0)
        d = np.abs(g.astype(int) - want)  # cosf/sinf vs math.cos rounded: an ulp of the matrix
        assert d.max() <= 1 and (d > 0).mean() < 0.01


def test_rotate_keep_size_size_and_per_sample_angle():
    imgs = images(6)
    angles = np.array([10.0, -20.0, 95.0, 181.0], np.float32)
    keep = run(lambda x, a: fn.rotate(x, angle=a, keep_size=True), {"x": imgs, "a": angles})
    sized = run(lambda x, a: fn.rotate(x, angle=a, size=[21, 9], interp_type=types.INTERP_NN),
                {"x": imgs, "a": angles})
    for img, k, s in zip(imgs, keep, sized):
        assert k.shape == img.shape and s.shape == (21, 9, 3)
    # rotating by 180 degrees twice, or by 90 four times, gives the image back (NN, even canvas)
    even = [im[: im.shape[0] // 2 * 2, : im.shape[1] // 2 * 2] for im in imgs]
    twice = run(lambda x: fn.rotate(fn.rotate(x, angle=180.0, interp_type="NN"), angle=180.0, interp_type="NN"),
                {"x": even})
    assert all(np.array_equal(a, b) for a, b in zip(even, twice))
    quarter = run(lambda x: fn.rotate(x, angle=90.0, interp_type="NN"), {"x": even})
    assert all(np.array_equal(np.rot90(a), b) for a, b in zip(even, quarter))


# --- DALI ------------------------------------------------------------------

@pytest.mark.parametrize("kw", [{}, {"fill_value": 42}, {"interp_type": "NN", "fill_value": 42},
                                {"interp_type": "NN"}, {"inverse_map": False, "size": [17, 23]},
                                {"dtype": "FLOAT", "fill_value": 3.7}])
def test_warp_affine_against_dali(kw):
    def graph(f, t, x):
        args = dict(kw)
        if "interp_type" in args:
            args["interp_type"] = getattr(t, "INTERP_" + args["interp_type"])
        if "dtype" in args:
            args["dtype"] = getattr(t, args["dtype"])
        return f.warp_affine(x, matrix=M, **args)

    got, want = run_both(graph, {"x": [images(7)]}, 4)
    check_vs_dali(got, want, exact=kw.get("interp_type") == "NN")


def test_warp_affine_float_input_against_dali():
    got, want = run_both(lambda f, t, x: f.warp_affine(x, matrix=M, dtype=t.UINT8, fill_value=-3.7),
                         {"x": [images(8, dtype=np.float32)]}, 4)
    check_vs_dali(got, want)


@pytest.mark.parametrize("kw", [{}, {"fill_value": 9, "keep_size": True}, {"size": [20, 31], "fill_value": 0},
                                {"interp_type": "NN"}])
@pytest.mark.parametrize("angle", [30.0, -45.0, 90.0, 137.5, 180.0, 12.0])
def test_rotate_against_dali(kw, angle):
    def graph(f, t, x):
        args = dict(kw)
        if "interp_type" in args:
            args["interp_type"] = t.INTERP_NN
        return f.rotate(x, angle=angle, **args)

    got, want = run_both(graph, {"x": [images(9)]}, 4)
    # A multiple of 90 degrees on a canvas of other parity than the rotated
    # image samples exactly between two pixels: many values are ties x.5,
    # which a position an ulp away rounds the other way (up to ~20% differ by 1).
    ties = angle % 90 == 0 and ("size" in kw or "keep_size" in kw)
    check_vs_dali(got, want, nn="interp_type" in kw, ties=ties)


def test_rotate_per_sample_angles_and_transform_matrix_against_dali():
    angles = np.array([-170.3, 45.0, 91.0, 3.3], np.float32)
    feeds = {"x": [images(10)], "a": [angles]}
    got, want = run_both(lambda f, t, x, a: f.rotate(x, angle=a, fill_value=0), feeds, 4)
    check_vs_dali(got, want)
    got, want = run_both(lambda f, t, x, a: f.warp_affine(
        x, matrix=f.transforms.rotation(angle=a, center=[10, 10]), fill_value=0), feeds, 4)
    check_vs_dali(got, want)
    got, want = run_both(lambda f, t, x, a: f.warp_affine(
        x, f.transforms.scale(f.transforms.rotation(angle=a), scale=[1.5, 0.7]), fill_value=0), feeds, 4)
    check_vs_dali(got, want)


# --- GPU -------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_gpu_equals_cpu(dtype):
    imgs = images(11, dtype=dtype, channels=3)
    angles = np.array([10.0, -33.0, 95.0, 181.0], np.float32)
    for graph in (lambda x, a, d: fn.rotate(x, device=d, angle=a),
                  lambda x, a, d: fn.rotate(x, device=d, angle=a, fill_value=7, interp_type="NN", dtype=types.FLOAT),
                  lambda x, a, d: fn.warp_affine(x, device=d, matrix=fn.transforms.rotation(angle=a), size=[30, 20],
                                                 fill_value=1)):
        cpu = run(lambda x, a: graph(x, a, "cpu"), {"x": imgs, "a": angles})
        gpu = run(lambda x, a: graph(x, a, "gpu"), {"x": imgs, "a": angles}, device="gpu")
        assert all(c.dtype == g.dtype and np.array_equal(c, g) for c, g in zip(cpu, gpu))


# --- bad arguments ---------------------------------------------------------

@pytest.mark.parametrize("make, words", [
    (lambda x: fn.warp_affine(x, matrix=[1, 0, 0, 0, 1]), ["warp_affine", "matrix", "6"]),
    (lambda x: fn.warp_affine(x), ["warp_affine", "matrix"]),
    (lambda x: fn.warp_affine(x, x, matrix=M), ["warp_affine", "matrix"]),
    (lambda x: fn.warp_affine(x, matrix=M, interp_type="CUBIC"), ["warp_affine", "interp_type"]),
    (lambda x: fn.warp_affine(x, matrix=M, dtype=types.UINT16), ["warp_affine", "dtype"]),
    (lambda x: fn.warp_affine(x, matrix=M, dtype=types.UINT8, output_dtype=types.UINT8), ["warp_affine", "dtype"]),
    (lambda x: fn.warp_affine(x, matrix=M, size=[1, 2, 3]), ["warp_affine", "size"]),
    (lambda x: fn.rotate(x, angle=5.0, size=[4]), ["rotate", "size"]),
    (lambda x: fn.warp_affine(x, matrix=M, size=[0, 2]), ["warp_affine", "size"]),
    (lambda x: fn.warp_affine(x, matrix=[1, 2, 0, 2, 4, 0], inverse_map=False), ["warp_affine", "singular"]),
    (lambda x: fn.rotate(x), ["rotate", "angle"]),
    (lambda x: fn.rotate(x, angle=10.0, axis=[0, 0, 1]), ["rotate", "axis"]),
])
def test_bad_arguments(make, words):
    raises_naming(lambda: run(make, {"x": images(12, n=2)}, batch_size=2), words)


def test_bad_inputs():
    with pytest.raises(ladle.Error, match="rotate.*HWC"):
        run(lambda x: fn.rotate(x, angle=3.0), {"x": [np.zeros((4, 5), np.uint8)] * 2}, batch_size=2)
    with pytest.raises(ladle.Error, match="warp_affine.*uint16"):  # int16/int32 are accepted, as in DALI
        run(lambda x: fn.warp_affine(x, matrix=M), {"x": [np.zeros((4, 5, 3), np.uint16)] * 2}, batch_size=2)
    with pytest.raises(ladle.Error, match="warp_affine.*matrix"):
        run(lambda x, m: fn.warp_affine(x, m), {"x": images(13, n=2), "m": [np.zeros(4, np.float32)] * 2},
            batch_size=2)


def test_dynamic_mode_list_arguments():
    """ladle.dynamic: a flat list is one constant matrix; a list of lists, one per sample."""
    import ladle.dynamic as ldd

    imgs = images(14, n=2)
    b = ldd.batch(imgs, layout="HWC")
    const = ldd.warp_affine(b, matrix=M, fill_value=0)
    mats = [[1, 0, 1, 0, 1, 0], M]
    per = ldd.warp_affine(b, matrix=mats, size=[[7, 9], [12, 5]], fill_value=0)
    for img, c, p, m, size in zip(imgs, const.tensors, per.tensors, mats, [(7, 9), (12, 5)]):
        assert np.array_equal(np.array(c), warp(img, M, fill=0))
        assert np.array_equal(np.array(p), warp(img, m, size, fill=0))
    angles = ldd.rotate(b, angle=[10.0, -20.0], keep_size=True)
    assert [tuple(t.shape) for t in angles.tensors] == [im.shape for im in imgs]
