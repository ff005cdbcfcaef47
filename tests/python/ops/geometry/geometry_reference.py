"""Shared by the geometry tests: a ladle pipeline runner, and NumPy
references of ladle's affine warps (warp_affine, rotate) and of the canvas
DALI's rotate chooses. They repeat the
kernel's float32 operations one by one, so ladle's CPU output equals them
bit for bit; DALI's CPU kernel steps the source coordinates by adding the
matrix column pixel after pixel, hence the tolerances of the DALI tests."""

import math

import numpy as np
import pytest

import ladle
from conftest import cuda_usable
from ladle import fn, types

_DEVICE = 0 if cuda_usable() else None  # GPU cases need a device; CPU ones run either way

f32 = np.float32


def raises_naming(call, words):
    """call() fails with a ladle.Error whose message holds every one of `words`."""
    with pytest.raises(ladle.Error) as e:
        call()
    msg = str(e.value)
    assert all(w in msg for w in words), msg


def run_pipeline(graph, feeds, batch_size=4, device="cpu"):
    """graph(**nodes) in a ladle pipeline fed `feeds` (name -> batch: a list
    of arrays, or an [N] array of scalars); the output's samples as NumPy
    arrays (copied to the host). device="gpu": HWC inputs are moved to the GPU."""
    pipe = ladle.Pipeline(batch_size=batch_size, num_threads=2, seed=3, device_id=_DEVICE)
    try:
        with pipe:
            nodes = {}
            for name, batch in feeds.items():
                first = np.asarray(batch[0])
                node = fn.external_source(name=name, dtype=types.to_dtype(first.dtype), ndim=first.ndim,
                                          layout="HWC" if first.ndim == 3 else None)
                nodes[name] = node.gpu() if device == "gpu" and first.ndim == 3 else node
            pipe.set_outputs(graph(**nodes))
        for name, batch in feeds.items():
            pipe.feed_input(name, batch)
        tl = pipe.run()[0]
        tl = tl.as_cpu() if tl.device == "gpu" else tl
        return [np.array(tl.at(i)) for i in range(len(tl))]
    finally:
        pipe.close()


def to_uint8(v):
    """Round half away from zero (C's roundf; DALI's CPU ConvertSat) and saturate."""
    v = np.asarray(v, np.float64)
    return np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5), 0, 255).astype(np.uint8)


def warp(img, m, out_hw=None, linear=True, fill=None, out_dtype=None):
    """dst(x, y) = src(m0 (x+.5) + m1 (y+.5) + m2, m3 (x+.5) + m4 (y+.5) + m5),
    sampled NN (floor) or bilinear (at -0.5, DALI's sampler), taps outside
    clamped to the border or `fill` (converted to the output type, then the
    input type)."""
    m = np.asarray(m, np.float32).reshape(6)
    h, w, c = img.shape
    oh, ow = out_hw or (h, w)
    out_dtype = np.dtype(out_dtype or img.dtype)
    src = img.astype(np.float32)
    fill_out = fill_in = None
    if fill is not None:
        fill_out = f32(fill) if out_dtype == np.float32 else f32(to_uint8(f32(fill)))
        fill_in = fill_out if img.dtype == np.float32 else f32(to_uint8(fill_out))
    ys, xs = np.meshgrid(np.arange(oh), np.arange(ow), indexing="ij")
    fx, fy = xs.astype(f32) + f32(0.5), ys.astype(f32) + f32(0.5)
    sx = (m[0] * fx + m[1] * fy) + m[2]
    sy = (m[3] * fx + m[4] * fy) + m[5]

    def tap(xi, yi):
        inside = (xi >= 0) & (xi < w) & (yi >= 0) & (yi < h)
        v = src[np.clip(yi, 0, h - 1), np.clip(xi, 0, w - 1)]
        if fill is not None:
            v = np.where(inside[..., None], v, fill_in)
        return v

    def floor_int(v):
        return np.floor(np.clip(v, -2.0 ** 30, 2.0 ** 30)).astype(np.int64)

    if not linear:
        xi, yi = floor_int(sx), floor_int(sy)
        v = tap(xi, yi)
        if fill is not None:
            inside = (xi >= 0) & (xi < w) & (yi >= 0) & (yi < h)
            v = np.where(inside[..., None], v, fill_out)
    else:
        sx, sy = sx - f32(0.5), sy - f32(0.5)
        x0, y0 = floor_int(sx), floor_int(sy)
        qx, qy = (sx - x0.astype(f32))[..., None], (sy - y0.astype(f32))[..., None]
        px = f32(1) - qx
        s0 = tap(x0, y0) * px + tap(x0 + 1, y0) * qx
        s1 = tap(x0, y0 + 1) * px + tap(x0 + 1, y0 + 1) * qx
        v = s0 + (s1 - s0) * qy
    v = np.broadcast_to(v, (oh, ow, c)).astype(np.float32)
    return v if out_dtype == np.float32 else to_uint8(v)


def rotated_canvas(h, w, angle_deg):
    """DALI's rotate canvas: the bounding box less 0.01, ceiled, then grown
    by one where its parity differs from the input side dominating it."""
    a = float(f32(angle_deg) * f32(math.pi / 180.0))
    c, s = abs(math.cos(a)), abs(math.sin(a))
    ow, oh = math.ceil(c * w + s * h - 0.01), math.ceil(c * h + s * w - 0.01)
    pw, ph = (w % 2, h % 2) if s <= c else (h % 2, w % 2)
    return oh + (oh % 2 != ph), ow + (ow % 2 != pw)


def rotation_matrix(h, w, oh, ow, angle_deg):
    """The destination-to-source matrix of rotate, in float32 as DALI composes it."""
    a = f32(angle_deg) * f32(math.pi / 180.0)
    c, s = f32(math.cos(a)), f32(math.sin(a))
    hw, hh = f32(ow) * f32(0.5), f32(oh) * f32(0.5)
    # cosf/sinf of a float may differ from double cos rounded by one ulp: the
    # tests compare ladle with this within that.
    return [c, -s, (c * -hw + -s * -hh) + f32(w) * f32(0.5), s, c, (s * -hw + c * -hh) + f32(h) * f32(0.5)]
