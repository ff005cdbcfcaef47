"""python -m ladle.demo: runs the README's training pipeline on the CPU.

Reads JPEGs (by default the built-in photographs, ladle.sample_photos_root()),
decodes a random crop of each, resizes it to 224x224, mirrors half of them
and normalizes them to float16 CHW, as an ImageNet training loader does
(docs/DESIGN.md describes the library behind it). Prints images/s and writes
a PNG grid of augmented samples (normalization undone) to --out.
"""

import argparse
import math
import os
import struct
import sys
import time
import zlib

import numpy as np

import ladle
from ladle import fn, pipeline_def, types
from ladle._cli import image_folder, int_at_least

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


@pipeline_def
def training_pipeline(root, size=224, device="cpu"):
    """The README's training pipeline; device="gpu" decodes with device="mixed"
    (nvJPEG) and runs the rest on the GPU."""
    jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
    images = fn.decoders.image_random_crop(jpegs, device="mixed" if device == "gpu" else "cpu",
                                           output_type=types.RGB)
    images = fn.resize(images, resize_x=size, resize_y=size)
    images = fn.crop_mirror_normalize(images, dtype=types.FLOAT16, output_layout="CHW", mean=MEAN, std=STD,
                                      mirror=fn.random.coin_flip(probability=0.5))
    return images, labels


def write_png(path, rgb):
    """Writes an HxWx3 uint8 array as an 8-bit RGB PNG (zlib + struct only)."""
    rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
    height, width, _ = rgb.shape
    rows = np.concatenate([np.zeros((height, 1), np.uint8), rgb.reshape(height, width * 3)], axis=1)

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8 bits, RGB, no interlace
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(chunk(b"IHDR", header))
        f.write(chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)))
        f.write(chunk(b"IEND", b""))


def make_grid(images, columns=4, gap=4):
    """[N, 3, H, W] normalized float16 images -> one HxWx3 uint8 picture."""
    mean = np.array(MEAN, np.float32).reshape(1, 3, 1, 1)
    std = np.array(STD, np.float32).reshape(1, 3, 1, 1)
    pixels = np.clip(images.astype(np.float32) * std + mean + 0.5, 0, 255).astype(np.uint8)
    pixels = pixels.transpose(0, 2, 3, 1)  # NHWC
    n, h, w, _ = pixels.shape
    rows = math.ceil(n / columns)
    grid = np.full((rows * (h + gap) + gap, columns * (w + gap) + gap, 3), 255, np.uint8)
    for i in range(n):
        y, x = gap + (i // columns) * (h + gap), gap + (i % columns) * (w + gap)
        grid[y:y + h, x:x + w] = pixels[i]
    return grid


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m ladle.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=image_folder, default=ladle.sample_photos_root(),
                        help="a folder with one subfolder of JPEGs per class (default: the built-in photographs)")
    parser.add_argument("--batch-size", type=int_at_least(1), default=32)
    parser.add_argument("--threads", type=int_at_least(1), default=min(4, os.cpu_count() or 1))
    parser.add_argument("--iters", type=int_at_least(1), default=None,
                        help="iterations to time (default: about 320 images' worth)")
    parser.add_argument("--seed", type=int_at_least(0), default=0)
    parser.add_argument("--out", default="ladle-demo.png", help="PNG grid of augmented samples")
    args = parser.parse_args(argv)
    iters = args.iters or max(1, math.ceil(320 / args.batch_size))

    pipe = training_pipeline(args.data, batch_size=args.batch_size, num_threads=args.threads, seed=args.seed)
    try:
        try:
            pipe.build()
        except ladle.Error as e:  # e.g. a folder without images: the reader says which
            parser.error(f"--data {args.data}: {e}")
        print(f"ladle {ladle.__version__}: {pipe.epoch_size('Reader')} images in {args.data}; "
              f"batch {args.batch_size}, {args.threads} threads")
        images, labels = pipe.run()  # warm-up: pools and caches fill here
        grid = make_grid(images.as_array()[:16])
        first_labels = labels.as_array().reshape(-1)[:16].tolist()

        start = time.perf_counter()
        for _ in range(iters):
            images, labels = pipe.run()
        elapsed = time.perf_counter() - start
    finally:
        pipe.close()

    count = iters * args.batch_size
    print(f"{count} images in {elapsed:.2f} s: {count / elapsed:.0f} images/s "
          f"(output {images.shape()[0]} {images.dtype.numpy_name} {images.layout()})")
    write_png(args.out, grid)
    print(f"wrote {args.out}: the first {min(16, args.batch_size)} augmented samples, labels {first_labels}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
