"""CPU cost of ladle.auto_aug's per-sample selection: ms per batch of
224x224x3 uint8 images (fed by external_source, CPU pipeline) for each
suite augmentation alone, for the schemes (which run every candidate on
every sample and keep each sample's own, see ladle.auto_aug), and for a
plain copy. "split estimate" is what running each sample's chosen
augmentation only would cost: the mean of the single augmentations (plus
the schemes' bookkeeping, not counted). Prints a table; --json writes the
result with machine, date and commit.

    PYTHONPATH=python python3 bench/auto_aug_bench.py --batch 64 --threads 2
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

ladle, why = common.import_ladle()
if ladle is None:
    sys.exit(why)
from ladle import fn, types  # noqa: E402
from ladle.auto_aug import augmentations as A, auto_augment, rand_augment, trivial_augment  # noqa: E402
from ladle.auto_aug.core import signed_bin  # noqa: E402


def time_graph(graph, batch, threads, iterations):
    pipe = ladle.Pipeline(batch_size=len(batch), num_threads=threads, device_id=None, seed=1, prefetch_queue_depth=1)
    with pipe:
        x = fn.external_source(name="x", dtype=types.UINT8, ndim=3, layout="HWC")
        pipe.set_outputs(graph(x))
    times = []
    for it in range(iterations + 2):
        pipe.feed_input("x", batch)
        t = time.perf_counter()
        pipe.run()
        if it >= 2:  # warm-up: pools sized
            times.append((time.perf_counter() - t) * 1000)
    pipe.close()
    return statistics.median(times)


def single(aug):
    def graph(x):
        if aug.mag_range is None:
            return aug(x)
        mb = signed_bin(7, random_sign=fn.random.uniform(values=[0, 1], dtype=types.INT32)) if aug.randomly_negate \
            else 7
        return aug(x, magnitude_bin=mb, num_magnitude_bins=11)
    return graph


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iterations", type=int, default=5)
    ap.add_argument("--json", help="write the result here")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    batch = [rng.integers(0, 256, (224, 224, 3), dtype=np.uint8) for _ in range(args.batch)]
    rows = {"copy (x + 0)": time_graph(lambda x: x + np.uint8(0), batch, args.threads, args.iterations)}
    suite = trivial_augment.get_trivial_augment_wide_suite()
    for aug in suite:
        rows[aug.name] = time_graph(single(aug), batch, args.threads, args.iterations)
    split = statistics.mean(rows[a.name] for a in suite)
    rows["split estimate (mean of the 14)"] = split
    schemes = {
        "trivial_augment_wide": lambda x: trivial_augment.trivial_augment_wide(x, seed=3),
        "rand_augment n=2 m=9": lambda x: rand_augment.rand_augment(x, n=2, m=9, seed=3),
        "auto_augment image_net": lambda x: auto_augment.auto_augment_image_net(x, seed=3),
    }
    for name, graph in schemes.items():
        rows[name] = time_graph(graph, batch, args.threads, args.iterations)
    print(f"ladle.auto_aug CPU cost: batch {args.batch} x 224x224x3 uint8, {args.threads} threads, "
          f"median of {args.iterations}")
    for name, ms in rows.items():
        print(f"  {name:34s} {ms:9.1f} ms/batch")
    if args.json:
        commit, dirty, _ = common.commit_info()
        common.write_json(args.json, {"schema": common.SCHEMA, "date": common.now_iso(), "commit": commit,
                                      "dirty": dirty, "machine": common.machine_info(), "batch": args.batch,
                                      "threads": args.threads, "ms_per_batch": rows})


if __name__ == "__main__":
    main()
