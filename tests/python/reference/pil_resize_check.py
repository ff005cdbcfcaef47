#!/usr/bin/env python3
"""Compares ladle's CPU resize kernels (src/ops/kernels/resize.c) with Pillow.

Builds the kernels into a temporary shared library, resizes random images with
both, and prints the max / mean absolute difference per filter for:
  - downscale 500x375 -> 224x224 and upscale 100x80 -> 224x224, uint8 RGB,
    against Pillow's BILINEAR / BICUBIC / LANCZOS (which antialias);
  - a fractional crop box (Pillow's `box=`) against ladle's source window;
  - float32 single-channel against Pillow's "F" mode, which has no
    intermediate rounding: this isolates the filter weights.

Pillow rounds and clips the intermediate (horizontally resized) image to
uint8; ladle keeps it in float. So uint8 results may differ by 1 for LINEAR,
and by more for CUBIC/LANCZOS where Pillow clips overshoot in the middle.

Usage: python3 tests/python/reference/pil_resize_check.py [--assert]
With --assert it exits non-zero when a difference exceeds its bound.
"""
import ctypes
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

ROOT = pathlib.Path(__file__).resolve().parents[3]

LINEAR, CUBIC, LANCZOS3 = 1, 2, 3
PIL_FILTER = {LINEAR: Image.BILINEAR, CUBIC: Image.BICUBIC, LANCZOS3: Image.LANCZOS}
NAME = {LINEAR: "LINEAR/BILINEAR", CUBIC: "CUBIC/BICUBIC", LANCZOS3: "LANCZOS3/LANCZOS"}


class Axis(ctypes.Structure):
    _fields_ = [("out_size", ctypes.c_int), ("taps", ctypes.c_int),
                ("start", ctypes.POINTER(ctypes.c_int32)), ("weights", ctypes.POINTER(ctypes.c_float)),
                ("in_size", ctypes.c_int), ("in_lo", ctypes.c_int), ("in_hi", ctypes.c_int)]


def build(tmp):
    lib = pathlib.Path(tmp) / "libladle_kernels.so"
    subprocess.check_call(["gcc", "-std=gnu11", "-O2", "-shared", "-fPIC", "-I", str(ROOT / "include"),
                           "-I", str(ROOT / "src"), str(ROOT / "src/core/error.c"),
                           str(ROOT / "src/ops/kernels/resize.c"), "-o", str(lib), "-lm"])
    k = ctypes.CDLL(str(lib))
    k.ladle__resize_axis_plan.argtypes = [ctypes.POINTER(Axis), ctypes.c_int, ctypes.c_double,
                                          ctypes.c_double, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    k.ladle__resize_axis_free.argtypes = [ctypes.POINTER(Axis)]
    k.ladle__resize_scratch_size.argtypes = [ctypes.POINTER(Axis), ctypes.POINTER(Axis), ctypes.c_int,
                                             ctypes.c_int]
    k.ladle__resize_scratch_size.restype = ctypes.c_size_t
    k.ladle__resize_u8.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                                   ctypes.c_int, ctypes.POINTER(Axis), ctypes.POINTER(Axis), ctypes.c_void_p]
    k.ladle__resize_f32.argtypes = k.ladle__resize_u8.argtypes
    return k


def ladle_resize(k, img, out_w, out_h, interp, box=None, antialias=1):
    """img: HxWxC uint8 or float32 array; box: (x0, y0, x1, y1) like Pillow's."""
    h, w, c = img.shape
    x0, y0, x1, y1 = box if box else (0, 0, w, h)
    ax, ay = Axis(), Axis()
    assert k.ladle__resize_axis_plan(ctypes.byref(ax), w, x0, x1 - x0, out_w, interp, antialias) == 0
    assert k.ladle__resize_axis_plan(ctypes.byref(ay), h, y0, y1 - y0, out_h, interp, antialias) == 0
    scratch = np.empty(k.ladle__resize_scratch_size(ctypes.byref(ax), ctypes.byref(ay), h, c), np.uint8)
    img = np.ascontiguousarray(img)
    out = np.empty((out_h, out_w, c), img.dtype)
    if img.dtype == np.uint8:
        k.ladle__resize_u8(out.ctypes.data, img.ctypes.data, h, w * c, c, ctypes.byref(ax), ctypes.byref(ay),
                           scratch.ctypes.data)
    else:
        k.ladle__resize_f32(out.ctypes.data, img.ctypes.data, h, w * c, c, ctypes.byref(ax), ctypes.byref(ay),
                            scratch.ctypes.data)
    k.ladle__resize_axis_free(ctypes.byref(ax))
    k.ladle__resize_axis_free(ctypes.byref(ay))
    return out


def smooth_image(rng, h, w):
    """A photo-like image: random low-frequency content plus mild noise."""
    small = rng.integers(0, 256, (h // 16 + 2, w // 16 + 2, 3), dtype=np.uint8)
    big = np.asarray(Image.fromarray(small).resize((w, h), Image.BICUBIC), np.float64)
    return np.clip(big + rng.normal(0, 6, big.shape), 0, 255).astype(np.uint8)


def main():
    check = "--assert" in sys.argv
    failures = []
    rng = np.random.default_rng(2024)
    with tempfile.TemporaryDirectory() as tmp:
        k = build(tmp)
        cases = [("down 500x375->224x224", 375, 500, None), ("up 100x80->224x224", 80, 100, None),
                 ("box (37.25,20.5)-(411.75,333.25)->224", 375, 500, (37.25, 20.5, 411.75, 333.25))]
        # --assert bounds: LINEAR within 1 (the target); CUBIC/LANCZOS3 within
        # 3 on photo-like images. On noise, Pillow's clipped intermediate makes
        # CUBIC/LANCZOS differ more, so the last column runs ladle as Pillow
        # runs (two passes, uint8 in between): within 2, the 2 coming from
        # exact .5 ties, which Pillow rounds up and ladle to even, in both passes.
        print(f"{'case':40s} {'filter':18s} {'image':7s} {'max':>5s} {'mean':>8s} {'>1 (%)':>7s}"
              f" {'2-pass max':>10s}")
        for label, h, w, box in cases:
            for kind in ("noise", "smooth"):
                img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8) if kind == "noise" else smooth_image(rng, h, w)
                for interp in (LINEAR, CUBIC, LANCZOS3):
                    ref = np.asarray(Image.fromarray(img).resize((224, 224), PIL_FILTER[interp], box=box), np.int32)
                    got = ladle_resize(k, img, 224, 224, interp, box).astype(np.int32)
                    d = np.abs(ref - got)
                    # Pillow's order: horizontal pass, round to uint8, vertical pass.
                    x0, y0, x1, y1 = box if box else (0, 0, w, h)
                    mid = ladle_resize(k, img, 224, h, interp, (x0, 0, x1, h))
                    two = ladle_resize(k, mid, 224, 224, interp, (0, y0, 224, y1)).astype(np.int32)
                    d2 = np.abs(ref - two)
                    print(f"{label:40s} {NAME[interp]:18s} {kind:7s} {d.max():5d} {d.mean():8.4f} "
                          f"{100.0 * (d > 1).mean():7.3f} {d2.max():10d}")
                    if (interp == LINEAR and d.max() > 1) or d2.max() > 2 or (kind == "smooth" and d.max() > 3):
                        failures.append((label, NAME[interp], kind, int(d.max()), int(d2.max())))

        print("\nfloat32, one channel, against Pillow mode 'F' (no intermediate rounding):")
        for label, h, w, box in cases:
            img = rng.random((h, w), dtype=np.float32) * 255
            for interp in (LINEAR, CUBIC, LANCZOS3):
                ref = np.asarray(Image.fromarray(img, "F").resize((224, 224), PIL_FILTER[interp], box=box))
                got = ladle_resize(k, img[:, :, None], 224, 224, interp, box)[:, :, 0]
                d = np.abs(ref.astype(np.float64) - got)
                print(f"{label:40s} {NAME[interp]:18s} max {d.max():.2e} mean {d.mean():.2e}")
                if d.max() > 1e-3:
                    failures.append((label, NAME[interp], "float32", float(d.max())))

    if failures:
        print("\nover the bounds:", failures)
    if check and failures:
        sys.exit(1)


if __name__ == "__main__":
    main()
