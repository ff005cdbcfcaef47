"""The GPU kernels of resize, rotate, warp_affine and paste against their CPU
kernels through the operators (issue 9's faster kernels): bit-exact on random
images of odd sizes (1x1 included), 1, 3 and 4 channels, uint8 and float32
(warps: int16 and int32 too), every interpolation each operator has, per-sample
sizes, angles and matrices, fill values, and resize windows (roi)."""

import numpy as np
import pytest

from ladle import fn, types
from conftest import requires_ops
from geometry_reference import run_pipeline

pytestmark = [pytest.mark.gpu, requires_ops("resize", "rotate", "warp_affine", "paste")]


def images(seed, n=5, dtype=np.uint8, channels=3, lo=1, hi=60):
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        h, w = (1, 1) if k == 0 else (int(rng.integers(lo, hi)), int(rng.integers(lo, hi)))
        a = rng.integers(0, 256, (h, w, channels))
        if dtype == np.float32:
            out.append((a * 1.3 - 20).astype(np.float32))
        else:
            out.append(a.astype(dtype))
    return out


def same_on_both(graph, feeds, batch_size=5):
    cpu = run_pipeline(lambda **k: graph("cpu", **k), feeds, batch_size)
    gpu = run_pipeline(lambda **k: graph("gpu", **k), feeds, batch_size, device="gpu")
    assert len(cpu) == len(gpu)
    for i, (c, g) in enumerate(zip(cpu, gpu)):
        assert c.dtype == g.dtype and c.shape == g.shape, i
        assert np.array_equal(c, g), (i, c.shape, int(np.count_nonzero(c != g)))


INTERPS = ["INTERP_NN", "INTERP_LINEAR", "INTERP_CUBIC", "INTERP_LANCZOS3", "INTERP_TRIANGULAR", "INTERP_GAUSSIAN"]


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
@pytest.mark.parametrize("channels", [1, 3, 4])
@pytest.mark.parametrize("interp", INTERPS)
def test_resize_sizes(dtype, channels, interp):
    imgs = images(len(interp) + channels, dtype=dtype, channels=channels, hi=300)
    kind = getattr(types, interp)
    rx = np.array([1, 224, 37, 500, 3], np.float32)
    ry = np.array([1, 224, 301, 2, 450], np.float32)
    for antialias in (True, False):
        same_on_both(lambda d, x, rx, ry: fn.resize(x, device=d, interp_type=kind, antialias=antialias,
                                                    resize_x=rx, resize_y=ry), {"x": imgs, "rx": rx, "ry": ry})
    same_on_both(lambda d, x: fn.resize(x, device=d, interp_type=kind, resize_shorter=25), {"x": imgs})


@pytest.mark.parametrize("resampling", ["dali", "pil"])
def test_resize_roi_and_upscale(resampling):
    imgs = images(7, hi=120)
    start = [0.8, 0.1] if resampling == "dali" else [0.2, 0.1]  # "pil" has no flipped roi
    same_on_both(lambda d, x: fn.resize(x, device=d, resampling=resampling, size=[64, 48], roi_start=start,
                                        roi_end=[0.3 if resampling == "dali" else 0.7, 0.9], roi_relative=True),
                 {"x": imgs})
    same_on_both(lambda d, x: fn.resize(x, device=d, resampling=resampling, size=[333, 257],
                                        interp_type=types.INTERP_CUBIC), {"x": imgs})
    same_on_both(lambda d, x: fn.resize(x, device=d, resampling=resampling, size=[5, 7], min_filter=types.INTERP_LINEAR,
                                        mag_filter=types.INTERP_NN), {"x": images(8, lo=200, hi=700)})


@pytest.mark.parametrize("interp", INTERPS)
@pytest.mark.parametrize("antialias", [True, False])
def test_random_resized_crop(interp, antialias):
    """The GPU builds random_resized_crop's filter tables from each sample's
    window (resampling="dali"): the same bytes as the CPU's tables give, for
    downscaled, upscaled and 1-pixel outputs (fixed op seed: the same windows)."""
    kind = getattr(types, interp)
    imgs = images(40 + len(interp), n=7, hi=400)
    for size in ([224, 224], [1, 1], [301, 17], [3, 500]):
        same_on_both(lambda d, x: fn.random_resized_crop(x, device=d, size=size, interp_type=kind,
                                                         antialias=antialias, seed=11), {"x": imgs}, batch_size=7)
    imgs = images(50, n=6, dtype=np.float32, channels=4, hi=90)
    same_on_both(lambda d, x: fn.random_resized_crop(x, device=d, size=[64, 80], interp_type=kind,
                                                     antialias=antialias, random_area=[0.01, 1.0], seed=5),
                 {"x": imgs}, batch_size=6)


def test_random_resized_crop_fused():
    """random_resized_crop -> crop_mirror_normalize on the GPU runs as one fused
    kernel on tables the GPU planned; the same values as the CPU's two operators."""
    imgs = images(61, n=6, hi=350)
    same_on_both(lambda d, x: fn.crop_mirror_normalize(
        fn.random_resized_crop(x, device=d, size=[96, 112], seed=9), device=d, dtype=types.FLOAT,
        mean=[10.0, 20.0, 30.0], std=[2.0, 3.0, 4.0], mirror=1), {"x": imgs}, batch_size=6)


@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.int16, np.int32])
@pytest.mark.parametrize("channels", [1, 3, 4])
def test_warps(dtype, channels):
    imgs = images(20 + channels, dtype=dtype, channels=channels, hi=90)
    angles = np.array([17.0, -33.0, 95.0, 181.0, 0.0], np.float32)
    for interp in ("NN", "LINEAR"):
        same_on_both(lambda d, x, a: fn.rotate(x, device=d, angle=a, interp_type=interp, fill_value=0),
                     {"x": imgs, "a": angles})
        same_on_both(lambda d, x, a: fn.rotate(x, device=d, angle=a, interp_type=interp, keep_size=True),
                     {"x": imgs, "a": angles})
        same_on_both(lambda d, x, a: fn.warp_affine(x, device=d, matrix=fn.transforms.rotation(angle=a, center=[9, 4]),
                                                    size=[41, 23], interp_type=interp, fill_value=300,
                                                    dtype=types.FLOAT), {"x": imgs, "a": angles})
        same_on_both(lambda d, x: fn.warp_affine(x, device=d, matrix=[0.9, 0.1, 10, -0.1, 0.9, 20], fill_value=7,
                                                 interp_type=interp), {"x": imgs})


@pytest.mark.parametrize("channels", [1, 3, 4])
def test_rotate_right_angles_and_fills(channels):
    """uint8 rotate (the kernel's fast path: taps inside read by words, pixels outside only the fill): right
    angles, angles near 0 and 360, fill values that round, saturate or are absent, float output."""
    imgs = images(40 + channels, channels=channels, hi=130)
    angles = np.array([90.0, 180.0, 270.0, -0.001, 359.0], np.float32)
    for fill in (0, 37.6, 300, None):
        kw = {} if fill is None else {"fill_value": fill}
        same_on_both(lambda d, x, a: fn.rotate(x, device=d, angle=a, **kw), {"x": imgs, "a": angles})
    same_on_both(lambda d, x, a: fn.rotate(x, device=d, angle=a, fill_value=5, dtype=types.FLOAT),
                 {"x": imgs, "a": np.array([17.0, 90.0, -123.0, 0.0, 45.0], np.float32)})


@pytest.mark.parametrize("channels", [1, 3, 4])
def test_paste(channels):
    imgs = images(30 + channels, channels=channels, hi=80)
    ratio = np.array([1.0, 2.0, 1.37, 3.1, 1.01], np.float32)
    px = np.array([0.5, 0.0, 1.0, 0.3, 0.77], np.float32)
    fill = [9, 200, 31, 255][:channels]
    same_on_both(lambda d, x, r, p: fn.paste(x, device=d, ratio=r, paste_x=p, paste_y=0.5, fill_value=fill,
                                             n_channels=channels), {"x": imgs, "r": ratio, "p": px})
