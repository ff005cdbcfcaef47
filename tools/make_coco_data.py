#!/usr/bin/env python3
"""Writes ladle's generated COCO-format detection set (ladle.cocodata): shapes
with exactly known boxes and masks composed onto photographs.

    python3 tools/make_coco_data.py /tmp/coco-shapes -n 2000 -j 16
    python3 tools/make_coco_data.py /tmp/coco-shapes -n 2000 --val 500     # + DIR/val for mAP
    python3 tools/make_coco_data.py /tmp/coco-val -n 200 --seed 1
    python3 tools/make_coco_data.py /tmp/coco-tiny -n 32 --side 96,128 --backgrounds generated

Output: DIR/images/*.jpg and DIR/annotations/instances.json, for
fn.readers.coco(file_root=DIR/images, annotations_file=DIR/annotations/instances.json);
with --val N also a validation set of N other images (the same settings, seed
VAL_SEED_OFFSET + --seed) in DIR/val/images and DIR/val/annotations/instances.json,
where examples/detection/train.py looks for one.
Backgrounds default to the benchmark photographs ($LADLE_PHOTOS, .bench/bench-photos/root
after tools/fetch-bench-data, or ../shared/data/bench-photos/root), else the
package's demo photographs. The same arguments write the same bytes, whatever -j is.
The generator is the file python/ladle/cocodata.py, loaded here by path, so it
runs without ladle's C extension built.
"""

import argparse
import importlib.util
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
VAL_SEED_OFFSET = 1_000_003  # the validation set's seed: far from the seeds a user gives the training sets


def load_cocodata():
    path = os.path.join(HERE, "..", "python", "ladle", "cocodata.py")
    spec = importlib.util.spec_from_file_location("ladle_cocodata", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def pair(text, kind):
    parts = [kind(x) for x in text.split(",")]
    if len(parts) == 1:
        parts = parts * 2
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(f"expected MIN,MAX, got {text!r}")
    return tuple(parts)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("out", metavar="DIR")
    p.add_argument("-n", "--images", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--backgrounds", default=None,
                   help="a folder of photographs, 'demo', 'generated' or 'flat' (default: see above)")
    p.add_argument("--side", type=lambda s: pair(s, int), default=(320, 640),
                   help="MIN,MAX of the longer image side in pixels (default 320,640)")
    p.add_argument("--objects", type=lambda s: pair(s, int), default=(1, 6), help="MIN,MAX objects per image")
    p.add_argument("--size-range", type=lambda s: pair(s, float), default=(0.12, 0.6),
                   help="object diameter as a fraction of the shorter side (default 0.12,0.6)")
    p.add_argument("--rle-fraction", type=float, default=0.15, help="objects with a compressed RLE string")
    p.add_argument("--crowd-fraction", type=float, default=0.05, help="iscrowd objects (uncompressed RLE)")
    p.add_argument("--empty-fraction", type=float, default=0.03, help="images without objects")
    p.add_argument("--quality", type=int, default=90)
    p.add_argument("-j", "--workers", type=int, default=os.cpu_count() or 1)
    p.add_argument("--val", type=int, default=0, metavar="N", help="also N validation images in DIR/val")
    args = p.parse_args(argv)
    cocodata = load_cocodata()
    sets = [(args.out, args.images, args.seed)]
    if args.val:
        sets.append((os.path.join(args.out, "val"), args.val, VAL_SEED_OFFSET + args.seed))
    for out, images, seed in sets:
        start = time.perf_counter()
        info = cocodata.make_coco(out, images=images, seed=seed, backgrounds=args.backgrounds,
                                  side=args.side, objects=args.objects, size_range=args.size_range,
                                  rle_fraction=args.rle_fraction, crowd_fraction=args.crowd_fraction,
                                  empty_fraction=args.empty_fraction, quality=args.quality, workers=args.workers)
        print(f"{info['root']}: {info['images']} images, {info['annotations']} objects, backgrounds "
              f"{info['backgrounds']} ({time.perf_counter() - start:.1f} s)\n"
              f"  file_root={info['file_root']}\n  annotations_file={info['annotations_file']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
