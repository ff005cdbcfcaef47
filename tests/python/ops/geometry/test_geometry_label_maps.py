"""Label maps (single-channel uint8/int16/int32 masks) through the geometry
operators with nearest-neighbour sampling: bit-exact against DALI 2.4
(run_both) for resize, crop, flip, paste, rotate and warp_affine; int32
labels beyond float's 24 bits survive NN warps; an object drawn into an
image and its mask stays covered exactly by the mask through the same
crop/flip/resize/paste; CPU and GPU agree."""

import numpy as np
import pytest

import ladle
from ladle import fn, types

from conftest import run_both

RNG = np.random.default_rng(0)


def masks(dtype, n=4, labels=7):
    out = []
    for _ in range(n):
        h, w = int(RNG.integers(5, 40)), int(RNG.integers(5, 40))
        out.append(RNG.integers(0, labels, (h, w, 1)).astype(dtype))
    return out


NN_OPS = {
    "resize_up": (lambda fn, t, x: fn.resize(x, resize_x=53, resize_y=47, interp_type=t.INTERP_NN), ["uint8"]),
    "resize_down": (lambda fn, t, x: fn.resize(x, resize_x=7, resize_y=11, interp_type=t.INTERP_NN), ["uint8"]),
    "resize_shorter": (lambda fn, t, x: fn.resize(x, resize_shorter=23, interp_type=t.INTERP_NN), ["uint8"]),
    "resize_roi": (lambda fn, t, x: fn.resize(x, size=[17, 19], roi_start=[1, 2], roi_end=[4.5, 4], roi_relative=False,
                                              interp_type=t.INTERP_NN), ["uint8"]),
    "crop": (lambda fn, t, x: fn.crop(x, crop=(4, 4), crop_pos_x=0.3, crop_pos_y=0.7), ["uint8", "int32"]),
    "flip": (lambda fn, t, x: fn.flip(x, horizontal=1, vertical=1), ["uint8", "int32"]),
    "paste": (lambda fn, t, x: fn.paste(x, ratio=1.7, paste_x=0.2, paste_y=0.6, n_channels=1, fill_value=(0,)),
              ["uint8"]),
    "rotate": (lambda fn, t, x: fn.rotate(x, angle=90, interp_type=t.INTERP_NN, fill_value=0),
               ["uint8", "int16", "int32"]),
    # Coefficients exact in binary: the source coordinates are exact, so no rounding decides a pixel.
    "warp": (lambda fn, t, x: fn.warp_affine(x, matrix=[1.25, 0.5, -3.0, -0.25, 0.75, 2.5], interp_type=t.INTERP_NN,
                                             fill_value=0), ["uint8", "int16", "int32"]),
}


@pytest.mark.parametrize("name", sorted(NN_OPS))
def test_nn_geometry_on_masks_is_bit_exact_with_dali(name):
    graph, dtypes = NN_OPS[name]
    for dt in dtypes:
        got, want = run_both(graph, {"x": [masks(dt)]}, 4)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype == np.dtype(dt) and g.shape == w.shape, (name, dt, g.shape, w.shape)
            np.testing.assert_array_equal(g, w, err_msg=f"{name} {dt}")


def test_nn_resize_takes_only_input_labels():
    m = masks("uint8", 4, labels=3)
    for g in fn_run(lambda x: fn.resize(x, resize_x=61, resize_y=5, interp_type=types.INTERP_NN), m):
        assert set(np.unique(g)) <= {0, 1, 2}


def fn_run(graph, samples, **pipe_args):
    pipe = ladle.Pipeline(batch_size=len(samples), num_threads=2, **pipe_args)
    try:
        with pipe:
            x = fn.external_source(name="x", dtype={"uint8": types.UINT8, "int32": types.INT32,
                                                    "int16": types.INT16}[samples[0].dtype.name], ndim=3,
                                   layout="HWC")
            pipe.set_outputs(graph(x))
        pipe.feed_input("x", samples)
        out = pipe.run()[0]
        if hasattr(out, "as_cpu"):
            out = out.as_cpu()
        return [np.array(out.at(i)) for i in range(len(samples))]
    finally:
        pipe.close()


def test_int32_labels_beyond_float_precision_survive_nn_warps():
    m = (np.arange(6 * 7, dtype=np.int64).reshape(6, 7, 1) * 1000003 + (1 << 30) + 1).astype(np.int32)
    for graph in (lambda x: fn.rotate(x, angle=90, interp_type=types.INTERP_NN, fill_value=0),
                  lambda x: fn.warp_affine(x, matrix=[1, 0, 1, 0, 1, 0], interp_type=types.INTERP_NN, fill_value=0)):
        got = fn_run(graph, [m])[0]
        assert set(np.unique(got)) - {0} <= set(np.unique(m))
    got = fn_run(lambda x: fn.rotate(x, angle=90, interp_type=types.INTERP_NN), [m])[0]
    np.testing.assert_array_equal(got[..., 0], np.rot90(m[..., 0]))


def test_nn_warp_follows_its_formula_and_dali_away_from_ties():
    """General matrices: ladle computes sx = (m0*(x+.5) + m1*(y+.5)) + m2 per pixel in float32 (as DALI's GPU
    kernel); DALI's CPU kernel adds m0 along each row, so the two may pick different pixels where a source
    coordinate lies within float rounding of an integer, and only there."""
    H, W = 30, 40
    m = (np.arange(H)[:, None] * 1000 + np.arange(W)[None, :]).astype(np.int32)[..., None]  # value = coordinates
    M = [1.1, 0.2, -3.3, -0.1, 0.9, 2.2]
    got, want = run_both(lambda fn, t, x: fn.warp_affine(x, matrix=M, interp_type=t.INTERP_NN, fill_value=-1,
                                                         size=[H, W]), {"x": [[m]]}, 1)
    f = np.float32
    ys, xs = np.mgrid[0:H, 0:W]
    sx = (f(M[0]) * (xs.astype(f) + f(0.5)) + f(M[1]) * (ys.astype(f) + f(0.5))) + f(M[2])
    sy = (f(M[3]) * (xs.astype(f) + f(0.5)) + f(M[4]) * (ys.astype(f) + f(0.5))) + f(M[5])
    xi, yi = np.floor(sx).astype(int), np.floor(sy).astype(int)
    inside = (xi >= 0) & (yi >= 0) & (xi < W) & (yi < H)
    ref = np.where(inside, yi.clip(0, H - 1) * 1000 + xi.clip(0, W - 1), -1)
    np.testing.assert_array_equal(got[0][..., 0], ref)
    exact_x, exact_y = M[0] * (xs + .5) + M[1] * (ys + .5) + M[2], M[3] * (xs + .5) + M[4] * (ys + .5) + M[5]
    near_tie = (np.abs(exact_x - np.round(exact_x)) < 1e-4) | (np.abs(exact_y - np.round(exact_y)) < 1e-4)
    differ = got[0][..., 0] != want[0][..., 0]
    assert not (differ & ~near_tie).any()


def draw_scene(seed):
    """An RGB image with a few solid objects on a noise background whose colours the objects never take, and the
    label map of the objects."""
    rng = np.random.default_rng(seed)
    h, w = int(rng.integers(30, 60)), int(rng.integers(30, 60))
    img = rng.integers(0, 100, (h, w, 3)).astype(np.uint8)  # background values < 100
    mask = np.zeros((h, w, 1), np.uint8)
    yy, xx = np.mgrid[0:h, 0:w]
    for label, colour in ((1, (250, 10, 10)), (2, (10, 250, 10)), (3, (200, 200, 250))):
        cy, cx, r = rng.integers(5, h - 5), rng.integers(5, w - 5), rng.integers(3, 9)
        disk = (yy - cy) ** 2 + (xx - cx) ** 2 <= r * r
        img[disk] = colour
        mask[disk] = label
    return img, mask


COLOURS = {1: (250, 10, 10), 2: (10, 250, 10), 3: (200, 200, 250)}


def same_geometry(fn, t, x, n_channels):
    """The same crop, flip, resize (NN) and paste, whatever the channels."""
    x = fn.crop(x, crop=(24, 26), crop_pos_x=0.4, crop_pos_y=0.6, out_of_bounds_policy="pad")
    x = fn.flip(x, horizontal=1)
    x = fn.resize(x, resize_x=41, resize_y=37, interp_type=t.INTERP_NN)
    return fn.paste(x, ratio=1.5, paste_x=0.3, paste_y=0.7, n_channels=n_channels, fill_value=(0,) * n_channels)


@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_mask_still_covers_the_object_after_the_same_geometry(device):
    scenes = [draw_scene(s) for s in range(4)]
    pipe = ladle.Pipeline(batch_size=4, num_threads=2, device_id=0 if device == "gpu" else None)
    try:
        with pipe:
            img = fn.external_source(name="img", dtype=types.UINT8, ndim=3, layout="HWC")
            msk = fn.external_source(name="msk", dtype=types.UINT8, ndim=3, layout="HWC")
            if device == "gpu":
                img, msk = img.gpu(), msk.gpu()
            pipe.set_outputs(same_geometry(fn, types, img, 3), same_geometry(fn, types, msk, 1))
        pipe.feed_input("img", [s[0] for s in scenes])
        pipe.feed_input("msk", [s[1] for s in scenes])
        out_img, out_msk = [o.as_cpu() if hasattr(o, "as_cpu") else o for o in pipe.run()]
    finally:
        pipe.close()
    found = 0
    for i in range(4):
        im, mk = np.array(out_img.at(i)), np.array(out_msk.at(i))[..., 0]
        assert im.shape[:2] == mk.shape
        for label, colour in COLOURS.items():
            obj = np.all(im == np.array(colour, np.uint8), axis=-1)
            np.testing.assert_array_equal(mk == label, obj)  # exactly the object's pixels
            found += int(obj.sum())
        assert set(np.unique(mk)) <= {0, 1, 2, 3}
    assert found > 0


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(NN_OPS))
def test_nn_geometry_on_masks_gpu_matches_cpu(name):
    graph, dtypes = NN_OPS[name]
    for dt in dtypes:
        samples = masks(dt)
        cpu = fn_run(lambda x: graph(fn, types, x), samples)
        gpu = fn_run(lambda x: graph(fn, types, x.gpu()), samples, device_id=0)
        for c, g in zip(cpu, gpu):
            np.testing.assert_array_equal(c, g)
