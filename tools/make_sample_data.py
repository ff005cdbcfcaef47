#!/usr/bin/env python3
"""Draws ladle's small built-in image set: 4 classes of coloured shapes on
smooth noisy backgrounds, 8 JPEGs each, into python/ladle/data/sample/<class>/.

The images are synthetic and deterministic (fixed seeds), a few KB each, with
sizes that differ from image to image (so decoded batches are ragged). They
serve the demo, the docs and the Python tests. Re-run after changing it:

    python3 tools/make_sample_data.py [--out python/ladle/data/sample]
"""

import argparse
import os

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

CLASSES = ["circle", "square", "stripes", "triangle"]
PER_CLASS = 8
SIZES = [(320, 240), (300, 260), (256, 320), (336, 224), (288, 288), (320, 200), (240, 320), (352, 256)]


def background(rng, width, height):
    """A two-colour gradient with low-frequency noise (cheap to compress)."""
    c0, c1 = rng.integers(30, 226, size=(2, 3))
    t = np.linspace(0.0, 1.0, width)[None, :, None]
    img = c0[None, None, :] * (1 - t) + c1[None, None, :] * t
    img = np.broadcast_to(img, (height, width, 3)).copy()
    noise = rng.normal(0.0, 18.0, size=(height // 16 + 1, width // 16 + 1, 3))
    noise = np.kron(noise, np.ones((16, 16, 1)))[:height, :width]
    img = np.clip(img + noise, 0, 255).astype(np.uint8)
    return Image.fromarray(img).filter(ImageFilter.GaussianBlur(6))


def draw_shape(draw, rng, kind, width, height):
    colour = tuple(int(v) for v in rng.integers(0, 256, size=3))
    size = int(rng.integers(min(width, height) // 4, min(width, height) // 2))
    cx = int(rng.integers(size, width - size))
    cy = int(rng.integers(size, height - size))
    box = [cx - size, cy - size, cx + size, cy + size]
    if kind == "circle":
        draw.ellipse(box, fill=colour)
    elif kind == "square":
        draw.rectangle(box, fill=colour)
    elif kind == "triangle":
        draw.polygon([(cx, cy - size), (cx - size, cy + size), (cx + size, cy + size)], fill=colour)
    else:  # stripes
        step = max(8, size // 3)
        for x in range(box[0], box[2], 2 * step):
            draw.rectangle([x, box[1], x + step - 1, box[3]], fill=colour)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.join(here, "..", "python", "ladle", "data", "sample")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=default_out, help="output folder (default: the package's data)")
    args = parser.parse_args()

    total = 0
    for label, kind in enumerate(CLASSES):
        folder = os.path.join(args.out, kind)
        os.makedirs(folder, exist_ok=True)
        for i in range(PER_CLASS):
            rng = np.random.default_rng(1000 * label + i)
            width, height = SIZES[i % len(SIZES)]
            img = background(rng, width, height)
            draw_shape(ImageDraw.Draw(img), rng, kind, width, height)
            path = os.path.join(folder, f"{kind}_{i}.jpg")
            img.save(path, "JPEG", quality=85)
            total += os.path.getsize(path)
    print(f"wrote {len(CLASSES) * PER_CLASS} images, {total / 1024:.0f} KB, to {os.path.normpath(args.out)}")


if __name__ == "__main__":
    main()
