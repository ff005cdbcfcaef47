"""Several GPUs of one host: one process per GPU, as torchrun starts them.

    python bench/multi_gpu_bench.py --data /tmp/imagenet-like --gpus 1,2,4,8 \
        --loaders ladle-mixed,dali-mixed [--train --archs resnet50,resnet18 --backends synthetic,ladle,dali]

Pipeline throughput: for each N and loader (bench/loaders.py: the same
training graph in ladle and DALI), N rank processes start with torchrun's
environment (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE). Rank r reads
shard r of N (shard_id/num_shards), decodes on GPU r (device_id =
LOCAL_RANK) and is pinned to its own 1/N of the cores, with that many
threads. The ranks warm up, start timing together, and each counts the
batches it delivers in --seconds; the total is the sum of the ranks'
images/s, the per-GPU figure that total over N, "cores busy" the CPU
seconds of all ranks over the timed window.

Training (--train): examples/imagenet/train.py under the same environment
(DDP with NCCL on GPUs, gloo on the CPU), --iters-per-epoch iterations of
batch --batch per rank; its ##Perf (all ranks' images/s) and ##Top-1
(reduced over the ranks) are read from rank 0. Scaling efficiency is
images/s at N over N times images/s at 1.

On the CPU (--device cpu: the ladle-cpu/dali-cpu loaders, gloo) this runs on
any machine, which is how the test checks it; the figures that matter come
from a machine with several GPUs (README, "Several GPUs").
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tools"))

import common  # noqa: E402
from torchrun_env import free_port, rank_env as torchrun_env  # noqa: E402

TRAIN_SCRIPT = os.path.join(HERE, "..", "examples", "imagenet", "train.py")


def rank_env(rank, world, port, dali=False):
    return torchrun_env(common.child_env(dali), rank, world, port)


def die_with_parent(cores=None):
    """In a rank's child, before exec: SIGTERM when the bench process dies (a
    killed run leaves no ranks behind), and its own cores."""
    import ctypes
    import signal

    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    if cores:
        os.sched_setaffinity(0, cores)


def rank_cores(rank, world):
    """Rank `rank`'s even share of this process's cores (at least one)."""
    cores = sorted(os.sched_getaffinity(0))
    per = max(1, len(cores) // world)
    return cores[rank * per:(rank + 1) * per] or cores[-1:]


# --- one rank of the pipeline measurement ----------------------------------------

def rank_main(args):
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ["LOCAL_RANK"])
    cores = rank_cores(rank, world)
    os.sched_setaffinity(0, cores)
    import loaders

    torch = common.import_torch()[0]
    gpu = args.device == "gpu"
    if gpu:
        torch.cuda.set_device(local)
    ladle = common.import_ladle()[0] if args.loader.startswith("ladle") else None
    loader = loaders.make_loader(args.loader, ladle=ladle, torch=torch, torchvision=None, root=args.root,
                                 batch_size=args.batch, threads=len(cores), seed=args.seed, to_gpu=gpu,
                                 shard=(rank, world), device_id=local)
    for _ in range(args.warmup):
        loader.next()
    loader.sync()
    print("READY", flush=True)
    if sys.stdin.readline().strip() != "GO":
        return 1
    before = common.cpu_times(common.process_tree())
    start = time.perf_counter()
    batches = 0
    while time.perf_counter() - start < args.seconds:
        loader.next()
        batches += 1
    loader.sync()
    elapsed = time.perf_counter() - start
    cpu = common.cpu_seconds_between(before, common.cpu_times(common.process_tree()))
    rss, _ = common.host_memory_mb(common.process_tree())
    print("RESULT " + json.dumps({"rank": rank, "images": batches * args.batch, "seconds": elapsed,
                                  "cpu_seconds": cpu, "cores": len(cores), "rss_mb": rss}), flush=True)
    loader.close()
    return 0


def measure_pipeline(args, loader, world):
    """Starts `world` ranks of `loader`, times them together; the run's row."""
    port = free_port()
    procs = []
    for rank in range(world):
        cmd = [sys.executable, os.path.abspath(__file__), "--rank-worker", "--loader", loader, "--root", args.root,
               "--batch", str(args.batch), "--seconds", str(args.seconds), "--warmup", str(args.warmup),
               "--seed", str(args.seed), "--device", args.device]
        procs.append(subprocess.Popen(cmd, env=rank_env(rank, world, port, dali=loader.startswith("dali")),
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True, preexec_fn=die_with_parent))
    logs = [[] for _ in procs]

    def read_until(i, word):
        for line in procs[i].stdout:
            if line.startswith(word):
                return line
            logs[i].append(line)
        return None

    try:
        if not all(read_until(i, "READY") for i in range(world)):
            return {"error": "a rank did not start: " + "".join(sum(logs, []))[-2000:]}
        utils = [common.GpuUtilization(gpu=i).start() for i in range(world)] if args.device == "gpu" else []
        for p in procs:
            p.stdin.write("GO\n")
            p.stdin.flush()
        results = [read_until(i, "RESULT") for i in range(world)]
        gpu_util = [u.stop() for u in utils]
    finally:
        for p in procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
    if not all(results):
        return {"error": "a rank failed: " + "".join(sum(logs, []))[-2000:]}
    ranks = [json.loads(r[len("RESULT "):]) for r in results]
    total = sum(r["images"] / r["seconds"] for r in ranks)
    window = max(r["seconds"] for r in ranks)
    return {"images_per_s": round(total, 1), "per_gpu": round(total / world, 1),
            "cores_busy": round(sum(r["cpu_seconds"] for r in ranks) / window, 2),
            "rank_images_per_s": [round(r["images"] / r["seconds"], 1) for r in ranks],
            "cores_per_rank": ranks[0]["cores"], "rss_mb": [r["rss_mb"] for r in ranks],
            "gpu_utilization": gpu_util or None}


# --- DDP training through examples/imagenet/train.py ----------------------------

def measure_training(args, arch, backend, world):
    port = free_port()
    cores = len(os.sched_getaffinity(0)) // world
    cmd = [sys.executable, TRAIN_SCRIPT, args.data, "-a", arch, "-b", str(args.batch), "--epochs", "1",
           "--iters-per-epoch", str(args.iters), "-p", str(max(1, args.iters // 4)), "--save", "",
           "--warmup-epochs", "0", "-j", str(max(2, cores - 4) if args.device == "gpu" else 1)]
    if backend == "synthetic":
        cmd += ["--synthetic"]
    else:
        cmd += ["--data-backend", backend if args.device == "gpu" else backend + "-cpu"]
    if args.device == "gpu":
        cmd += ["--amp", "--channels-last"]
    else:
        cmd += ["--cpu", "--image-size", str(args.cpu_image_size)]
    env_extra = {"PYTHONPATH": os.path.join(HERE, "..", "python") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    procs = []
    for rank in range(world):
        env = rank_env(rank, world, port, dali=backend.startswith("dali"))
        env.update(env_extra)
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                      preexec_fn=lambda r=rank: die_with_parent(rank_cores(r, world))))
    outs = []
    for p in procs:
        try:
            out, _ = p.communicate(timeout=args.train_timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
            out += "\n(timed out)"
        outs.append((p.returncode, out))
    out = outs[0][1]
    perf = re.search(r"^##Perf ([\d.]+)$", out, re.M)
    top1 = re.search(r"^##Top-1 ([\d.]+)$", out, re.M)
    if any(c != 0 for c, _ in outs) or not perf:
        bad = next((o for c, o in outs if c != 0), out)
        return {"error": bad[-2000:]}
    return {"images_per_s": float(perf.group(1)), "per_gpu": round(float(perf.group(1)) / world, 1),
            "top1": float(top1.group(1)) if top1 else None, "command": " ".join(cmd[1:])}


# --- the run --------------------------------------------------------------------

def efficiency(rows):
    """Adds scaling efficiency (images/s at N / (N x images/s at 1)) to rows of one kind."""
    one = {r["name"]: r["images_per_s"] for r in rows if r["world"] == 1 and "images_per_s" in r}
    for r in rows:
        if "images_per_s" in r and r["name"] in one:
            r["scaling_efficiency"] = round(r["images_per_s"] / (r["world"] * one[r["name"]]), 3)


def table(title, rows):
    lines = [title, f"{'what':<24} {'N':>2} {'images/s':>10} {'per GPU':>9} {'eff.':>6} {'cores':>6}  note"]
    for r in rows:
        if "error" in r:
            lines.append(f"{r['name']:<24} {r['world']:>2} {'-':>10} {'-':>9} {'-':>6} {'-':>6}  "
                         f"{r['error'].strip().splitlines()[-1][:80] if r['error'].strip() else 'failed'}")
            continue
        eff = f"{r['scaling_efficiency']:.2f}" if "scaling_efficiency" in r else "-"
        cores = f"{r['cores_busy']:.1f}" if "cores_busy" in r else "-"
        note = f"top-1 {r['top1']:.1f}" if r.get("top1") is not None else ""
        lines.append(f"{r['name']:<24} {r['world']:>2} {r['images_per_s']:>10,.0f} {r['per_gpu']:>9,.0f} "
                     f"{eff:>6} {cores:>6}  {note}")
    return "\n".join(lines)


def parent_main(args):
    torch, torchvision, _ = common.import_torch()
    gpus = torch.cuda.device_count() if (torch is not None and args.device == "gpu") else 0
    worlds = [n for n in args.gpus if args.device == "cpu" or n <= gpus]
    skipped = [n for n in args.gpus if n not in worlds]
    args.root = os.path.join(args.data, "train") if os.path.isdir(os.path.join(args.data, "train")) else args.data
    report = {"machine": common.machine_info(torch), "software": common.software_info(common.import_ladle()[0], torch, torchvision),
              "commit": common.commit_info(), "date": common.now_iso(), "device": args.device,
              "batch_size": args.batch, "seconds": args.seconds, "worlds": worlds,
              "worlds_not_run": {str(n): f"this machine has {gpus} GPUs" for n in skipped},
              "command": " ".join([os.path.basename(sys.executable)] + sys.argv), "pipeline": [], "training": []}
    for loader in args.loaders:
        for world in worlds:
            row = {"name": loader, "world": world, **measure_pipeline(args, loader, world)}
            report["pipeline"].append(row)
            print(json.dumps(row), flush=True)
    efficiency(report["pipeline"])
    if args.train:
        for arch in args.archs:
            for backend in args.backends:
                for world in worlds:
                    row = {"name": f"{arch} {backend}", "world": world,
                           **measure_training(args, arch, backend, world)}
                    report["training"].append(row)
                    print(json.dumps(row), flush=True)
        efficiency(report["training"])
    text = table("pipeline (training graph, one process per GPU)", report["pipeline"])
    if report["training"]:
        text += "\n\n" + table(f"DDP training, batch {args.batch} per rank", report["training"])
    print(text)
    if args.output:
        common.write_json(args.output, report)
    return 0 if all("error" not in r for r in report["pipeline"] + report["training"]) else 1


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", help="image tree (train/ and val/, or class folders)")
    p.add_argument("--gpus", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2, 4, 8],
                   help="process counts N (on GPUs, those above the GPU count are left out and listed)")
    p.add_argument("--device", choices=["gpu", "cpu"], default="gpu")
    p.add_argument("--loaders", type=lambda s: s.split(","), default=None,
                   help="bench/loaders.py names (default ladle-mixed,dali-mixed; on the CPU ladle-cpu,dali-cpu)")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--seconds", type=float, default=15.0, help="timed window per measurement")
    p.add_argument("--warmup", type=int, default=10, help="batches per rank before timing")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--train", action="store_true", help="also DDP training through examples/imagenet/train.py")
    p.add_argument("--archs", type=lambda s: s.split(","), default=["resnet50", "resnet18"])
    p.add_argument("--backends", type=lambda s: s.split(","), default=["synthetic", "ladle", "dali"])
    p.add_argument("--iters", type=int, default=60, help="training iterations per run")
    p.add_argument("--cpu-image-size", type=int, default=64, help="training crop on the CPU (--device cpu)")
    p.add_argument("--train-timeout", type=float, default=600)
    p.add_argument("--output", help="JSON report path")
    # one rank of the pipeline measurement (started by the parent)
    p.add_argument("--rank-worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--loader", help=argparse.SUPPRESS)
    p.add_argument("--root", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.loaders is None:
        args.loaders = ["ladle-mixed", "dali-mixed"] if args.device == "gpu" else ["ladle-cpu", "dali-cpu"]
    if not args.rank_worker and not args.data:
        p.error("--data is required")
    return args


def main(argv=None):
    args = parse_args(argv)
    return rank_main(args) if args.rank_worker else parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
