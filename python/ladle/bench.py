"""python -m ladle.bench --data DIR: how fast the README's training pipeline
reads your images on this machine.

Runs the pipeline of python -m ladle.demo (decode a random crop, resize to
224x224, mirror half, normalize to float16 CHW) on DIR (one subfolder of
JPEGs per class, as fn.readers.file takes), shows a progress bar (tqdm's
when tqdm is installed, else a plain one) and prints images/s: the whole
timed run, and the median of its iterations. The first --warmup iterations
(pools and caches filling) are not timed.
"""

import argparse
import os
import statistics
import sys
import time

import ladle
from ladle._cli import image_folder, int_at_least
from ladle.demo import training_pipeline


class _PlainBar:
    """A one-line progress bar on stderr, for machines without tqdm."""

    def __init__(self, total, desc, file=None, width=30):
        self.total, self.desc, self.n, self.width = total, desc, 0, width
        self.file = file or sys.stderr
        self.start = time.perf_counter()
        self.postfix = ""

    def update(self, n=1):
        self.n += n
        done = int(self.width * self.n / self.total)
        elapsed = time.perf_counter() - self.start
        rate = self.n / elapsed if elapsed > 0 else 0.0
        self.file.write(f"\r{self.desc}: [{'#' * done}{'.' * (self.width - done)}] {self.n}/{self.total} "
                        f"{rate:.1f} it/s {self.postfix}")
        self.file.flush()

    def set_postfix_str(self, text):
        self.postfix = text

    def close(self):
        self.file.write("\n")
        self.file.flush()


def progress_bar(total, desc, plain=False):
    """tqdm's bar when installed (and not `plain`), else _PlainBar."""
    if not plain:
        try:
            from tqdm import tqdm
        except ImportError:
            pass
        else:
            return tqdm(total=total, desc=desc, unit="it", file=sys.stderr)
    return _PlainBar(total, desc)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m ladle.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=image_folder, default=ladle.sample_photos_root(),
                        help="a folder with one subfolder of JPEGs per class (default: the built-in photographs)")
    parser.add_argument("--batch-size", type=int_at_least(1), default=64)
    parser.add_argument("--threads", type=int_at_least(1), default=os.cpu_count() or 1,
                        help="worker threads (default: the machine's cores)")
    parser.add_argument("--iters", type=int_at_least(1), default=50, help="timed iterations (default 50)")
    parser.add_argument("--warmup", type=int_at_least(0), default=3, help="untimed iterations first (default 3)")
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu",
                        help="cpu, or gpu: decode with nvJPEG (device='mixed') and augment on the GPU")
    parser.add_argument("--size", type=int_at_least(1), default=224, help="output side (default 224)")
    parser.add_argument("--seed", type=int_at_least(0), default=0)
    parser.add_argument("--plain", action="store_true", help="a plain progress bar even when tqdm is installed")
    args = parser.parse_args(argv)

    pipe = training_pipeline(args.data, size=args.size, device=args.device, batch_size=args.batch_size,
                             num_threads=args.threads, seed=args.seed,
                             device_id=0 if args.device == "gpu" else None)
    try:
        try:
            pipe.build()
        except ladle.Error as e:  # no images there, no GPU, ...
            parser.error(f"{e}")
        print(f"ladle {ladle.__version__}: {pipe.epoch_size('Reader')} images in {args.data}; "
              f"batch {args.batch_size}, {args.threads} threads, device {args.device}")
        for _ in range(args.warmup):
            pipe.run()
        bar = progress_bar(args.iters, "ladle.bench", plain=args.plain)
        times = []
        start = time.perf_counter()
        try:
            for _ in range(args.iters):
                t0 = time.perf_counter()
                images, _labels = pipe.run()
                times.append(time.perf_counter() - t0)
                bar.set_postfix_str(f"{args.batch_size * len(times) / (time.perf_counter() - start):.0f} images/s")
                bar.update(1)
        finally:
            bar.close()
        elapsed = time.perf_counter() - start
    finally:
        pipe.close()
    count = args.iters * args.batch_size
    median = statistics.median(times)
    print(f"{count} images in {elapsed:.2f} s: {count / elapsed:.0f} images/s "
          f"(median iteration {median * 1e3:.1f} ms: {args.batch_size / median:.0f} images/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
