#!/usr/bin/env python3
"""ladle's dynamic mode: the per-call cost of small operators, and the ImageNet
training pipeline written in dynamic mode against the same pipeline in
pipeline mode and against DALI's dynamic mode (nvidia.dali.experimental.dynamic)
when it imports, in the same run.

Per-call overhead: the median wall time of one call of a small operator on a
batch of 8 tiny images (cast, flip, random.coin_flip(batch_size=8)), in
ladle's eager and deferred modes and in DALI's dynamic mode, in microseconds.

Training pipeline (read -> decode with a random crop -> resize 224 -> random
mirror -> normalize -> float16 CHW -> torch), on the GPU when there is one
(--device), else on the CPU:
  ladle-pipeline   ladle pipeline mode (prefetching executor)
  ladle-dynamic    the same calls through ladle.dynamic, eager
  ladle-deferred   the same in EvalMode.deferred (calls fed to their graphs at once, or by the worker
                   thread once their inputs exist; results taken when used)
  ladle-captured   the same loop with reader.next_epoch(capture=True): the body traced in the first
                   step, later steps run as one pipeline ahead of the loop
  dali-dynamic     DALI's dynamic mode (skipped, with the reason, when DALI does not import)
  dali-captured    DALI's dynamic mode with next_epoch(capture=True) (DALI 2.3+)
Each figure is the median of --passes passes of --images images after one
warm-up pass. Results: a table and JSON under bench/results/
<date>-<host>-<commit>-dynamic.json (or --json PATH).

    python3 bench/dynamic_bench.py --data /tmp/imagenet-like/train --batch-size 64 --threads 2
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
from common import spread  # noqa: E402


def per_call_us(fn, calls, repeats):
    for _ in range(max(10, calls // 10)):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t0) / calls * 1e6)
    return spread(times)


def overhead(ladle, args):
    import numpy as np

    ldd = __import__("ladle.dynamic", fromlist=["_"])
    small = np.zeros((8, 4, 4, 3), np.uint8)
    b = ldd.batch(small, layout="HWC")
    out = {}
    cases = {
        "cast": lambda: ldd.cast(b, dtype=ldd.float32),
        "flip": lambda: ldd.flip(b, horizontal=1),
        "random.coin_flip": lambda: ldd.random.coin_flip(batch_size=8),
    }
    for name, call in cases.items():
        out[f"ladle-eager {name}"] = per_call_us(call, args.calls, args.repeats)

        def deferred(call=call):
            with ldd.EvalMode.deferred:
                r = call()
            r.evaluate()

        out[f"ladle-deferred {name}"] = per_call_us(deferred, args.calls, args.repeats)
    ndd, reason = import_ndd()
    if ndd is None:
        out["dali-dynamic"] = {"skipped": reason}
        return out
    nb = ndd.batch(list(small), layout="HWC")
    dali_cases = {
        "cast": lambda: ndd.cast(nb, dtype=ndd.float32).evaluate(),
        "flip": lambda: ndd.flip(nb, horizontal=1).evaluate(),
        "random.coin_flip": lambda: ndd.random.coin_flip(batch_size=8, device="cpu").evaluate(),
    }
    for name, call in dali_cases.items():
        out[f"dali-dynamic {name}"] = per_call_us(call, max(20, args.calls // 10), args.repeats)
    return out


def import_ndd():
    try:
        import nvidia.dali.experimental.dynamic as ndd
        return ndd, None
    except Exception as e:  # not installed, or its backend does not load
        return None, f"DALI's dynamic mode does not import: {e}"


MEAN, STD = common.MEAN_255, common.STD_255


def ladle_pipeline(ladle, args, gpu):
    from ladle import fn, types

    pipe = ladle.Pipeline(batch_size=args.batch_size, num_threads=args.threads, device_id=0 if gpu else None,
                          seed=1)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=args.data, random_shuffle=True, name="Reader")
        images = fn.decoders.image_random_crop(jpegs, device="mixed" if gpu else "cpu")
        images = fn.resize(images, resize_x=224, resize_y=224)
        mirror = fn.random.coin_flip(probability=0.5)
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT16, output_layout="CHW", mean=MEAN, std=STD,
                                          mirror=mirror)
        pipe.set_outputs(images, labels)
    pipe.build()
    from ladle.tensors import to_torch_tensor

    def batches():
        while True:
            x, y = pipe.run()
            yield to_torch_tensor(x), to_torch_tensor(y)

    return batches(), pipe.close


def ladle_dynamic(ladle, args, gpu, deferred=False, capture=False):
    ldd = __import__("ladle.dynamic", fromlist=["_"])
    ctx = ldd.EvalContext(num_threads=args.threads)
    reader = ldd.readers.File(file_root=args.data, random_shuffle=True, seed=1)
    rng = ldd.random.RNG(seed=1)
    device = "gpu" if gpu else "cpu"

    def step(jpegs):
        images = ldd.decoders.image_random_crop(jpegs, device=device, rng=rng)
        images = ldd.resize(images, resize_x=224, resize_y=224)
        mirror = ldd.random.coin_flip(batch_size=len(jpegs), probability=0.5, rng=rng)
        return ldd.crop_mirror_normalize(images, dtype=ldd.float16, output_layout="CHW", mean=MEAN, std=STD,
                                         mirror=mirror)

    def batches():
        with ctx:
            while True:
                for jpegs, labels in reader.next_epoch(batch_size=args.batch_size, capture=capture):
                    if deferred:
                        with ldd.EvalMode.deferred:
                            x = step(jpegs)
                    else:
                        x = step(jpegs)
                    yield x.torch(), labels.torch()

    def close():
        reader.close()
        ctx.close()

    return batches(), close


def dali_dynamic(args, gpu, capture=False):
    ndd, reason = import_ndd()
    if ndd is None:
        raise RuntimeError(reason)
    import nvidia.dali.types as T

    reader = ndd.readers.File(file_root=args.data, random_shuffle=True, seed=1)
    rng = ndd.random.RNG(seed=1)
    device = "gpu" if gpu else "cpu"

    def batches():
        while True:
            epoch = reader.next_epoch(batch_size=args.batch_size, capture=True) if capture else \
                reader.next_epoch(batch_size=args.batch_size)
            for jpegs, labels in epoch:
                images = ndd.decoders.image_random_crop(jpegs, device=device, rng=rng)
                images = ndd.resize(images, resize_x=224, resize_y=224)
                mirror = ndd.random.coin_flip(batch_size=images.batch_size, probability=0.5, rng=rng, device="cpu")
                x = ndd.crop_mirror_normalize(images, dtype=T.FLOAT16, output_layout="CHW", mean=MEAN, std=STD,
                                              mirror=mirror)
                yield x.torch(), labels.torch()

    return batches(), lambda: None


def images_per_second(make, args, torch):
    it, close = make()
    try:
        passes = []
        for p in range(args.passes + 1):
            t0, n = time.perf_counter(), 0
            while n < args.images:
                x, _ = next(it)
                n += x.shape[0]
            if torch is not None and x.is_cuda:
                torch.cuda.synchronize()
            if p:  # the first pass warms up
                passes.append(n / (time.perf_counter() - t0))
        return spread(passes)
    finally:
        close()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="an image tree (class folders); default: ladle's sample images")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=common.usable_cores())
    parser.add_argument("--images", type=int, default=512, help="images per timed pass")
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--calls", type=int, default=500, help="calls per timing of the per-call overhead")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", choices=["auto", "cpu", "gpu"], default="auto")
    parser.add_argument("--skip", action="append", default=[], help="a loader to leave out (repeatable)")
    parser.add_argument("--json", help="result path (default: bench/results/<date>-<host>-<commit>-dynamic.json)")
    args = parser.parse_args(argv)

    ladle, reason = common.import_ladle()
    if ladle is None:
        print(reason, file=sys.stderr)
        return 1
    torch, _, _ = common.import_torch()
    args.data = args.data or ladle.sample_data_root()
    gpu = args.device == "gpu" or (args.device == "auto" and common.cuda_ready(torch)
                                   and ladle.build_info().get("cuda_devices", 0))
    machine = common.machine_info(torch)
    commit, dirty, _ = common.commit_info()

    print("per-call overhead (microseconds, median of %d x %d calls):" % (args.repeats, args.calls))
    calls = overhead(ladle, args)
    for name, v in calls.items():
        print(f"  {name:34s} " + (f"{v['median']:10.1f}" if "median" in v else v["skipped"]))

    loaders = {
        "ladle-pipeline": lambda: ladle_pipeline(ladle, args, gpu),
        "ladle-dynamic": lambda: ladle_dynamic(ladle, args, gpu),
        "ladle-deferred": lambda: ladle_dynamic(ladle, args, gpu, deferred=True),
        "ladle-captured": lambda: ladle_dynamic(ladle, args, gpu, capture=True),
        "dali-dynamic": lambda: dali_dynamic(args, gpu),
        "dali-captured": lambda: dali_dynamic(args, gpu, capture=True),
    }
    results = {}
    print(f"training pipeline on the {'GPU' if gpu else 'CPU'}, batch {args.batch_size}, {args.threads} threads "
          f"(images/s, median of {args.passes}):")
    for name, make in loaders.items():
        if name in args.skip:
            continue
        try:
            results[name] = images_per_second(make, args, torch)
            print(f"  {name:16s} {results[name]['median']:10.1f}")
        except Exception as e:  # a loader that cannot run here is reported, the others go on
            results[name] = {"skipped": f"{type(e).__name__}: {e}"}
            print(f"  {name:16s} skipped: {results[name]['skipped']}")
    base = results.get("ladle-pipeline", {}).get("median")
    for name in ("ladle-dynamic", "ladle-deferred", "ladle-captured", "dali-dynamic", "dali-captured"):
        if base and "median" in results.get(name, {}):
            results[name]["of_pipeline_mode"] = round(results[name]["median"] / base, 3)

    doc = {"schema": common.SCHEMA, "benchmark": "dynamic", "date": common.now_iso(), "commit": commit,
           "dirty": dirty, "machine": machine, "software": common.software_info(ladle, torch),
           "settings": {k: v for k, v in vars(args).items() if k != "json"}, "device": "gpu" if gpu else "cpu",
           "peers": [k for k in results if not k.startswith("ladle")], "per_call_us": calls, "images_per_s": results}
    path = args.json or os.path.join(common.RESULTS_DIR, common.result_name(doc["date"], common.host_tag(machine),
                                                                            commit, "dynamic"))
    common.write_json(path, doc)
    print("wrote " + path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
