"""Generated image data sets for examples, tests and benchmarks.

``make_shapes(root)`` writes a small, learnable classification set: one
coloured shape per JPEG on a noisy background, in the layout ImageFolder and
``fn.readers.file(file_root=...)`` read::

    root/train/00_disc/00000.jpg ... root/train/09_hexagon/...
    root/val/00_disc/...

Class c is shape ``c % 10`` (disc, ring, square, frame, triangle, diamond,
plus, cross, star, hexagon) in a hue of its own (the golden-ratio sequence),
so a tiny CNN tells the classes apart after a few epochs while chance is
1/classes. Position, size (35-75% of the shorter side), a rotation of at most
15 degrees (so plus and cross stay different), the shape's saturation and
brightness, and the background are drawn per image. Everything is a function of
``seed`` and the image's (split, class, index), so the same arguments write the
same files whatever ``workers`` is (with the same Pillow/libjpeg).

For an ImageNet-like set (sizes around 500x375, varying aspect ratios)::

    python -m ladle.datasets /data/shapes-1k --classes 1000 --train-per-class 100 \\
        --val-per-class 10 --size 500x375 --jitter 0.25 --workers 16
"""

import argparse
import colorsys
import math
import os
import sys

import numpy as np

SHAPES = ("disc", "ring", "square", "frame", "triangle", "diamond", "plus", "cross", "star", "hexagon")
_SPLITS = {"train": 0, "val": 1}


def class_names(classes):
    """The folder name of every class: "<index>_<shape>", zero-padded so that
    sorting the names gives the class order."""
    width = max(2, len(str(classes - 1)))
    return [f"{c:0{width}d}_{SHAPES[c % len(SHAPES)]}" for c in range(classes)]


def _class_hue(c):
    return (c * 0.6180339887498949) % 1.0


def _polygon(cx, cy, radius, points, angle, inner=None):
    """Vertices of a regular polygon (or a star when `inner` is a radius ratio)."""
    out = []
    steps = points * 2 if inner else points
    for k in range(steps):
        r = radius * (inner if inner and k % 2 else 1.0)
        a = angle + 2 * math.pi * k / steps - math.pi / 2
        out.append((cx + r * math.cos(a), cy + r * math.sin(a)))
    return out


def _rotated(points, cx, cy, angle):
    c, s = math.cos(angle), math.sin(angle)
    return [(cx + (x - cx) * c - (y - cy) * s, cy + (x - cx) * s + (y - cy) * c) for x, y in points]


def _draw_shape(draw, shape, cx, cy, radius, angle, color):
    r = radius
    thick = max(1.0, r * 0.35)
    if shape == "disc":
        draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=color)
    elif shape == "ring":
        draw.ellipse([cx - r, cy - r, cx + r, cy + r], outline=color, width=max(1, int(round(thick * 0.8))))
    elif shape in ("square", "frame"):
        s = r * 0.85
        corners = _rotated([(cx - s, cy - s), (cx + s, cy - s), (cx + s, cy + s), (cx - s, cy + s)], cx, cy, angle)
        if shape == "square":
            draw.polygon(corners, fill=color)
        else:
            width = max(1, int(round(thick * 0.7)))
            draw.line(corners + [corners[0]], fill=color, width=width, joint="curve")
    elif shape == "triangle":
        draw.polygon(_polygon(cx, cy, r, 3, angle), fill=color)
    elif shape == "diamond":
        draw.polygon(_polygon(cx, cy, r, 4, angle), fill=color)
    elif shape in ("plus", "cross"):
        base = angle + (math.pi / 4 if shape == "cross" else 0.0)
        width = max(1, int(round(thick)))
        for k in range(2):
            a = base + k * math.pi / 2
            dx, dy = r * math.cos(a), r * math.sin(a)
            draw.line([(cx - dx, cy - dy), (cx + dx, cy + dy)], fill=color, width=width)
    elif shape == "star":
        draw.polygon(_polygon(cx, cy, r, 5, angle, inner=0.45), fill=color)
    elif shape == "hexagon":
        draw.polygon(_polygon(cx, cy, r, 6, angle), fill=color)
    else:  # pragma: no cover - SHAPES lists every case
        raise ValueError(shape)


def render(cls, rng, width, height):
    """One image of class `cls` as a PIL RGB image, drawn with generator `rng`."""
    from PIL import Image, ImageDraw

    bg_hue = rng.random()
    bg = np.array(colorsys.hsv_to_rgb(bg_hue, rng.uniform(0.0, 0.35), rng.uniform(0.1, 0.9))) * 255
    pixels = bg + rng.normal(0.0, 18.0, size=(height, width, 3))
    img = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), "RGB")
    hue = (_class_hue(cls) + rng.uniform(-0.03, 0.03)) % 1.0
    color = tuple(int(round(v * 255)) for v in colorsys.hsv_to_rgb(hue, rng.uniform(0.65, 1.0), rng.uniform(0.7, 1.0)))
    short = min(width, height)
    radius = 0.5 * short * rng.uniform(0.35, 0.75)
    cx = rng.uniform(radius, width - radius)
    cy = rng.uniform(radius, height - radius)
    angle = math.radians(rng.uniform(-15.0, 15.0))
    _draw_shape(ImageDraw.Draw(img), SHAPES[cls % len(SHAPES)], cx, cy, radius, angle, color)
    return img


def _image_size(rng, size, jitter):
    width, height = size
    if jitter:
        scale = math.exp(rng.uniform(-jitter, jitter))
        aspect = math.exp(rng.uniform(-jitter, jitter))
        width, height = width * scale * math.sqrt(aspect), height * scale / math.sqrt(aspect)
    return max(8, int(round(width))), max(8, int(round(height)))


def _write_one(job):
    path, split, cls, index, size, jitter, seed, quality = job
    rng = np.random.default_rng([seed, _SPLITS[split], cls, index])
    width, height = _image_size(rng, size, jitter)
    render(cls, rng, width, height).save(path, "JPEG", quality=quality)
    return path


def _parse_size(size):
    if isinstance(size, str):
        parts = size.lower().split("x")
        size = (int(parts[0]), int(parts[-1]))
    elif isinstance(size, int):
        size = (size, size)
    width, height = (int(v) for v in size)
    if width < 8 or height < 8:
        raise ValueError(f"image size {width}x{height} is too small (at least 8x8)")
    return width, height


def make_shapes(root, classes=10, train_per_class=100, val_per_class=20, size=64, jitter=0.0, seed=0,
                quality=90, workers=1, overwrite=False):
    """Writes the shapes data set under `root` (train/ and val/, one folder per
    class) and returns {"root", "classes", "train", "val"} (image counts).

    size: an int (square), (width, height) or "WxH"; jitter > 0 draws each
    image's scale and aspect ratio from exp(U(-jitter, jitter)). Existing
    files are kept unless `overwrite` (so a second call is cheap)."""
    if classes < 1 or train_per_class < 0 or val_per_class < 0:
        raise ValueError("classes must be >= 1 and the image counts >= 0")
    size = _parse_size(size)
    names = class_names(classes)
    jobs = []
    counts = {}
    for split, per_class in (("train", train_per_class), ("val", val_per_class)):
        counts[split] = classes * per_class
        for cls, name in enumerate(names):
            folder = os.path.join(root, split, name)
            os.makedirs(folder, exist_ok=True)
            for index in range(per_class):
                path = os.path.join(folder, f"{index:05d}.jpg")
                if overwrite or not os.path.exists(path):
                    jobs.append((path, split, cls, index, size, float(jitter), int(seed), int(quality)))
    if workers > 1 and len(jobs) > 64:
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            for _ in pool.imap_unordered(_write_one, jobs, chunksize=64):
                pass
    else:
        for job in jobs:
            _write_one(job)
    return {"root": os.path.abspath(root), "classes": classes, **counts}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m ladle.datasets",
                                     description="Writes the generated shapes data set (train/ and val/).")
    parser.add_argument("root", help="output folder")
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--train-per-class", type=int, default=100)
    parser.add_argument("--val-per-class", type=int, default=20)
    parser.add_argument("--size", default="64", help="N or WxH (default 64)")
    parser.add_argument("--jitter", type=float, default=0.0, help="log-range of scale and aspect ratio per image")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quality", type=int, default=90)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--overwrite", action="store_true")
    args = parser.parse_args(argv)
    info = make_shapes(args.root, classes=args.classes, train_per_class=args.train_per_class,
                       val_per_class=args.val_per_class, size=args.size, jitter=args.jitter, seed=args.seed,
                       quality=args.quality, workers=args.workers, overwrite=args.overwrite)
    print(f"{info['root']}: {info['classes']} classes, {info['train']} train and {info['val']} val images")
    return 0


if __name__ == "__main__":
    sys.exit(main())
