#!/usr/bin/env python3
"""Measures ladle.torchvision's Resize against the installed torchvision's
tensor resize (uint8, antialias=True, BILINEAR and BICUBIC): prints the
versions and, per interpolation, the max and mean absolute difference and
the share of pixels that differ, over the images and sizes of
tests/python/test_torchvision_api.py plus 200 random ones (downscales and
upscales, 3 channels, photo-like gradients plus noise).

The bounds that test_resize_within_one_level asserts per torchvision version
come from this script's output (see RESIZE_BOUND there).

Usage: PYTHONPATH=python python3 tests/python/reference/torchvision_resize_check.py
"""
import sys

import numpy as np

# ladle first: torchvision 0.16's wheel brings a libjpeg.so.62 of its own
# (without jpeg_crop_scanline); loaded first, it would stand in for the
# system's libjpeg-turbo that ladle's extension links to.
import ladle  # noqa: F401
import torch
import torchvision

try:  # torchvision >= 0.15
    import torchvision.transforms.v2.functional as tvF
except ImportError:
    import torchvision.transforms.functional as tvF

import ladle.torchvision as T

TEST_SHAPES = [(37, 53), (64, 48), (100, 75), (31, 31), (80, 121)]
TEST_SIZES = [32, 57, (20, 30), (70, 40)]


def random_image(h, w, seed, noise=30):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255 / w, y * 255 / h, (x + y) * 127 / (h + w)], 0)
    return torch.from_numpy(np.clip(base + rng.normal(0, noise, (3, h, w)), 0, 255).astype(np.uint8))


def cases():
    for i, (h, w) in enumerate(TEST_SHAPES):
        for size in TEST_SIZES:
            yield random_image(h, w, i), size
    rng = np.random.default_rng(1234)
    for k in range(200):
        h, w = (int(v) for v in rng.integers(8, 300, 2))
        size = (int(rng.integers(4, 300)), int(rng.integers(4, 300))) if k % 2 else int(rng.integers(4, 300))
        yield random_image(h, w, 100 + k, noise=float(rng.choice([0, 10, 30, 80]))), size


def main():
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, python {sys.version.split()[0]}")
    for interp in ("BILINEAR", "BICUBIC"):
        t_cache = {}
        worst, total, differ, count = 0, 0.0, 0, 0
        for img, size in cases():
            key = size if isinstance(size, int) else tuple(size)
            if key not in t_cache:
                t_cache[key] = T.Compose([T.Resize(size, interpolation=getattr(T.InterpolationMode, interp))])
            ours = t_cache[key](img).to(torch.int32)
            ref = tvF.resize(img, [size] if isinstance(size, int) else list(size),
                             interpolation=getattr(tvF.InterpolationMode, interp), antialias=True).to(torch.int32)
            d = (ours - ref).abs()
            worst = max(worst, int(d.max()))
            total += float(d.sum())
            differ += int((d > 0).sum())
            count += d.numel()
        print(f"{interp:8s} max {worst}  mean {total / count:.4f}  pixels differing {100 * differ / count:.2f}%")


if __name__ == "__main__":
    main()
