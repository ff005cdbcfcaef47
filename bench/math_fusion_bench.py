#!/usr/bin/env python3
"""Element-wise chains merged into one pass (math.arithmetic, pipeline/plan.c)
against the same chain run one operator at a time (LADLE_NO_FUSION=1, in a
child process): a 5-step chain ((x * 0.5 + 1) - 0.25) * 2 / 3 on a batch of
--batch-size float32 tensors of 224x224x3, on the CPU (--threads workers) or
the GPU (fed as a CUDA tensor).

Per mode, the best and the median of --runs iterations after --warmup:
  wall_ms   feed + run of one iteration (GPU: until the stream is done)
  chain_ms  the executor's time in the math.arithmetic nodes per iteration
            (CPU: their passes over the samples; GPU: queueing the launches)
  cpu_ms    CPU time of the process (all threads) per iteration: less
            disturbed than wall time by other work on a shared machine
CPU figures on a shared machine are noisy: take the best of several runs.
Results: a table and JSON under bench/results/<date>-<host>-<commit>-math-fusion.json
(or --json PATH).

    python3 bench/math_fusion_bench.py --device cpu --threads 2
    python3 bench/math_fusion_bench.py --device gpu
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

STEPS = 5


def chain(x):
    return ((x * 0.5 + 1) - 0.25) * 2 / 3.0


def measure(args):
    """One mode in this process: {"wall_ms": [...], "chain_ms": [...], "fused_nodes": n}."""
    ladle, reason = common.import_ladle()
    if ladle is None:
        raise SystemExit(reason)
    import numpy as np
    from ladle import fn, types

    gpu = args.device == "gpu"
    torch = None
    if gpu:
        torch, _, _ = common.import_torch()
        if not common.cuda_ready(torch):
            raise SystemExit("--device gpu needs torch with CUDA")
    data = np.random.default_rng(0).uniform(0, 255, (args.batch_size, 224, 224, 3)).astype(np.float32)
    feed = torch.from_numpy(data).cuda() if gpu else data
    pipe = ladle.Pipeline(batch_size=args.batch_size, num_threads=args.threads, device_id=0 if gpu else None,
                          prefetch_queue_depth=1)
    with pipe:
        x = fn.external_source(name="x", dtype=types.FLOAT, ndim=3, layout="HWC",
                               device="gpu" if gpu else "cpu", no_copy=True)
        pipe.set_outputs(chain(x))
    walls, chains, cpus, last = [], [], [], 0.0
    try:
        for i in range(args.warmup + args.runs):
            t0, c0 = time.perf_counter(), time.process_time()
            pipe.feed_input("x", feed)
            (out,) = pipe.run()
            if gpu:
                torch.cuda.synchronize()
            t1, c1 = time.perf_counter(), time.process_time()
            del out
            ops = [op for op in pipe.executor_statistics()["operators"] if op["op"] == "math.arithmetic"]
            total = sum(op["seconds"] for op in ops)
            if i >= args.warmup:
                walls.append((t1 - t0) * 1e3)
                chains.append((total - last) * 1e3)
                cpus.append((c1 - c0) * 1e3)
            last = total
        fused = sum(op["fused"] for op in ops)
    finally:
        pipe.close()
    return {"wall_ms": walls, "chain_ms": chains, "cpu_ms": cpus, "fused_nodes": fused, "math_nodes": len(ops)}


def summary(values):
    return {"best": round(min(values), 3), "median": round(statistics.median(values), 3), "n": len(values)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--json", help="result path (default: bench/results/...)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(measure(args)))
        return
    child = [sys.executable, os.path.abspath(__file__), "--child", "--device", args.device, "--batch-size",
             str(args.batch_size), "--threads", str(args.threads), "--runs", str(args.runs), "--warmup",
             str(args.warmup)]
    results = {}
    for mode, env in (("fused", {}), ("unfused", {"LADLE_NO_FUSION": "1"})):
        out = subprocess.run(child, env=dict(os.environ, **env), capture_output=True, text=True, check=True)
        results[mode] = json.loads(out.stdout.strip().splitlines()[-1])
    ladle, _ = common.import_ladle()
    torch, _, _ = common.import_torch()
    machine = common.machine_info(torch)
    commit, dirty, _ = common.commit_info()
    print(f"{STEPS}-step float32 chain, batch {args.batch_size} x 224x224x3, device {args.device}, "
          f"{args.threads} threads, {args.runs} runs after {args.warmup} warm-up")
    print(f"{'mode':<9} {'nodes fused':>11} {'wall best':>10} {'wall med':>9} {'chain best':>11} {'chain med':>10} "
          f"{'cpu best':>9} {'cpu med':>8}  (ms)")
    for mode, r in results.items():
        w, c, u = summary(r["wall_ms"]), summary(r["chain_ms"]), summary(r["cpu_ms"])
        print(f"{mode:<9} {r['fused_nodes']:>5} of {r['math_nodes']:<3} {w['best']:>10.2f} {w['median']:>9.2f} "
              f"{c['best']:>11.2f} {c['median']:>10.2f} {u['best']:>9.2f} {u['median']:>8.2f}")
        r["wall_summary"], r["chain_summary"], r["cpu_summary"] = w, c, u
    speedup = results["unfused"]["chain_summary"]["best"] / max(results["fused"]["chain_summary"]["best"], 1e-9)
    cpu_ratio = results["unfused"]["cpu_summary"]["best"] / max(results["fused"]["cpu_summary"]["best"], 1e-9)
    print(f"chain speed-up (best over best): {speedup:.2f}x wall in the chain, {cpu_ratio:.2f}x CPU time")
    doc = {"schema": common.SCHEMA, "benchmark": "math-fusion", "date": common.now_iso(), "commit": commit,
           "dirty": dirty, "machine": machine, "software": common.software_info(ladle, torch),
           "peers": "the same chain with LADLE_NO_FUSION=1 in the same run",
           "params": {"device": args.device, "batch_size": args.batch_size, "threads": args.threads,
                      "runs": args.runs, "warmup": args.warmup, "steps": STEPS, "shape": [224, 224, 3]},
           "results": results, "chain_speedup_best": round(speedup, 3),
           "cpu_time_ratio_best": round(cpu_ratio, 3)}
    path = args.json or os.path.join(common.RESULTS_DIR, common.result_name(doc["date"], common.host_tag(machine),
                                                                              commit, "math-fusion"))
    common.write_json(path, doc)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
