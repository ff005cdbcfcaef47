#!/usr/bin/env python3
"""Training speed with each data source: ResNet-50 and ResNet-18, mixed precision
(autocast float16 + GradScaler), channels-last, SGD, batch 256, a fixed number of
iterations after warm-up iterations.

Data sources:
  synthetic  one random float16 batch already on the GPU: the model's own speed (the upper bound)
  ladle      ladle's training pipeline (device="mixed" where it runs, else the CPU pipeline + copy),
             num_threads = --ladle-threads: by default 4 cores fewer than the machine has, left to
             the training process (its Python thread, autograd's thread, the CUDA driver)
  pytorch    torchvision ImageFolder + DataLoader (PIL, num_workers = --threads, pin_memory)

The figure is images/s over the timed iterations, split into --chunks equal
parts (a device synchronization at each boundary) for the spread. Each data
source runs in its own child process, so a crash in one is reported and the
others still run. With --json FILE the figures are added to FILE (a
pipeline_bench result) under "training"; bench/plot.py draws them.

When examples/imagenet/train.py exists, it is also run (one short epoch:
--iters-per-epoch, then its validation pass) for each model and data source
(--synthetic, --data-backend ladle, --data-backend pytorch) with --amp
--channels-last, and its ##Perf figure is recorded under "script" (--script
none turns that off; --loop off leaves out this program's own loop).

    python3 bench/train_bench.py --data /tmp/imagenet-like/train --json bench/results/<file>.json
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
from common import Deadline, spread  # noqa: E402

SCRIPT = os.path.join(common.REPO, "examples", "imagenet", "train.py")


# =========================== child: one data source, every model ===========================

class Synthetic:
    def __init__(self, torch, batch_size, device):
        g = torch.Generator(device=device)
        g.manual_seed(0)
        self.x = torch.randn(batch_size, 3, 224, 224, device=device, generator=g).half()
        self.y = torch.randint(0, 1000, (batch_size,), device=device, generator=g)
        self.notes = [f"one random float16 NCHW batch on the {'GPU' if device == 'cuda' else 'CPU'}, reused"]
        self.queue_depth = 0

    def next(self):
        return self.x, self.y

    def close(self):
        pass


def make_source(backend, args, torch, torchvision, ladle):
    from loaders import DaliLoader, LadleLoader, TorchvisionLoader, ladle_gpu_ops
    cuda = torch.cuda.is_available()
    if backend == "synthetic":
        return Synthetic(torch, args.batch_size, "cuda" if cuda else "cpu"), "synthetic"
    if backend == "pytorch":
        return TorchvisionLoader(torch, torchvision, args.data, "train", args.batch_size, args.threads,
                                 seed=args.seed, to_gpu=cuda), "torchvision DataLoader"
    if backend == "dali":
        device = "mixed" if cuda else "cpu"
        return (DaliLoader(torch, args.data, "train", device, args.batch_size, args.ladle_threads, seed=args.seed,
                           to_gpu=cuda, prefetch=args.prefetch, hw_decoder_load=args.dali_hw_load),
                f"DALI {device}" + (f", hw_decoder_load {args.dali_hw_load}" if args.dali_hw_load else ""))
    if ladle is None:
        raise RuntimeError("ladle does not import")
    device = args.ladle_device
    if device == "auto":
        device = "mixed" if ladle_gpu_ops(ladle) is None else "cpu"
    return (LadleLoader(ladle, torch, args.data, "train", device, args.batch_size, args.ladle_threads, seed=args.seed,
                        to_gpu=cuda, prefetch=args.prefetch, hw_decoder_load=args.ladle_hw_load,
                        decoder_args={"decoder_balance": args.ladle_balance} if args.ladle_balance else None),
            f"ladle {device}" + (f", hw_decoder_load {args.ladle_hw_load}" if args.ladle_hw_load is not None else "")
            + (f", decoder_balance {args.ladle_balance}" if args.ladle_balance else ""))


def train_run(torch, torchvision, arch, source, args):
    import torch.nn.functional as F
    cuda = torch.cuda.is_available()  # False only in the --allow-cpu smoke test
    device = "cuda" if cuda else "cpu"

    def sync():
        if cuda:
            torch.cuda.synchronize()

    torch.backends.cudnn.benchmark = True
    model = getattr(torchvision.models, arch)(num_classes=1000).to(device).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1 * args.batch_size / 256, momentum=0.9, weight_decay=1e-4)
    if cuda:
        scaler = torch.amp.GradScaler("cuda") if hasattr(torch.amp, "GradScaler") else torch.cuda.amp.GradScaler()
    else:
        scaler = torch.cuda.amp.GradScaler(enabled=False)
    model.train()

    def step():
        x, y = source.next()
        x = x.contiguous(memory_format=torch.channels_last)
        if not cuda:
            x = x.float()  # the CPU smoke test runs in float32
        with torch.autocast(device, dtype=torch.float16 if cuda else torch.bfloat16, enabled=cuda):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    if cuda:
        torch.cuda.reset_peak_memory_stats()
    # Warm-up also drains the batches a loader prepared ahead while the model
    # warmed up (a DataLoader: workers x 2); timing them would flatter it.
    warmup = max(args.warmup_iters, 3 * source.queue_depth + 10)
    t0 = time.perf_counter()
    for _ in range(warmup):
        step()
    sync()
    warm = time.perf_counter() - t0
    per_chunk = max(1, args.iters // args.chunks)
    rates = []
    stats0 = common.executor_statistics(source)  # ladle: where its executor's time goes while training
    before = common.cpu_times(common.process_tree())
    t_all = time.perf_counter()
    for _ in range(args.chunks):
        t = time.perf_counter()
        for _ in range(per_chunk):
            loss = step()
        sync()
        rates.append(per_chunk * args.batch_size / (time.perf_counter() - t))
    wall = time.perf_counter() - t_all
    busy = common.cpu_seconds_between(before, common.cpu_times(common.process_tree())) / wall
    executor = common.stats_between(stats0, common.executor_statistics(source), wall)
    loss = float(loss)
    return {
        # wait_share: the training loop's time in the loader's run() (the loader starved it); near 0 with a
        # step slower than synthetic means contention (cores, driver, SMs), not a slow loader
        **({"executor": executor} if executor else {}),
        "images_per_s": spread(rates),
        "iters": per_chunk * args.chunks,
        "warmup_s": round(warm, 2),
        "warmup_iters": warmup,
        "cores_busy": round(busy, 2),
        "final_loss": round(loss, 3) if loss == loss else "nan",
        "torch_peak_allocated_mb": round(torch.cuda.max_memory_allocated() / 2**20) if cuda else None,
    }


def child_main(args):
    torch, torchvision, reason = common.import_torch()
    ladle, _ = common.import_ladle()
    state = {"runs": {}, "current": None}

    def save():
        common.write_json(args.child_out, state)

    deadline = Deadline(max(1.0, args.deadline - time.time()) if args.deadline else 0)
    backend = args.child
    try:
        source, data = make_source(backend, args, torch, torchvision, ladle)
    except Exception as e:  # noqa: BLE001
        from loaders import Unavailable
        key = "skipped" if isinstance(e, Unavailable) else "failed"
        for arch in args.archs:
            state["runs"][arch] = {key: f"{type(e).__name__}: {e}" if key == "failed" else str(e)}
        save()
        return 0
    try:
        for arch in args.archs:
            if deadline.passed():
                state["runs"][arch] = {"skipped": "time budget spent"}
                continue
            state["current"] = arch
            save()
            try:
                res = train_run(torch, torchvision, arch, source, args)
                res["data"] = data
                res["notes"] = list(getattr(source, "notes", []))
            except Exception as e:  # noqa: BLE001
                res = {"failed": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()[-2000:]}
            state["runs"][arch] = res
            state["current"] = None
            save()
            ips = res.get("images_per_s")
            print(f"  {arch} / {backend}: " + (f"{ips['median']:,.0f} images/s (min {ips['min']:,.0f}, "
                                                f"max {ips['max']:,.0f})" if ips else str(res)[:300]), flush=True)
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
    finally:
        source.close()
    return 0


# =========================== parent ===========================

def run_child(args, backend, deadline):
    with tempfile.TemporaryDirectory(prefix="ladle-train-") as tmp:
        out = os.path.join(tmp, "out.json")
        cmd = [sys.executable, os.path.abspath(__file__), "--child", backend, "--child-out", out,
               "--data", args.data, "--archs", ",".join(args.archs), "--batch-size", str(args.batch_size),
               "--iters", str(args.iters), "--warmup-iters", str(args.warmup_iters), "--chunks", str(args.chunks),
               "--threads", str(args.threads), "--ladle-threads", str(args.ladle_threads), "--ladle-device", args.ladle_device, "--seed", str(args.seed),
               "--prefetch", str(args.prefetch)]
        for opt, value in (("--dali-hw-load", args.dali_hw_load), ("--ladle-hw-load", args.ladle_hw_load),
                           ("--ladle-balance", args.ladle_balance)):
            if value is not None:
                cmd += [opt, str(value)]
        if args.allow_cpu:
            cmd.append("--allow-cpu")
        if deadline.end is not None:
            cmd += ["--deadline", str(time.time() + deadline.left())]
        proc = subprocess.Popen(cmd, env=common.child_env(backend == "dali"))
        why = None
        try:
            rc = proc.wait(timeout=None if deadline.end is None else max(5.0, deadline.left() + args.grace))
            if rc:
                why = f"the child process exited with {rc}"
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            why = "killed: it ran past the time budget"
        state = common.read_json(out) if os.path.exists(out) else {"runs": {}}
    runs = state.get("runs", {})
    if state.get("current"):
        runs[state["current"]] = {"failed": f"crashed: {why}"}
    for arch in args.archs:
        runs.setdefault(arch, {"failed": f"no result: {why}"} if why else {"skipped": "not run"})
    return runs


def run_script(args, deadline):
    """examples/imagenet/train.py, one short epoch per model and backend: its ##Perf figure
    (images/s over its print intervals after the first)."""
    root = os.path.dirname(os.path.abspath(args.data.rstrip("/")))
    if not (os.path.isdir(os.path.join(root, "train")) and os.path.isdir(os.path.join(root, "val"))):
        return {"skipped": f"{root} has no train/ and val/ folders for train.py"}
    out = {}
    iters = args.script_iters
    for arch in args.archs:
        for backend in [b for b in args.backends if b in SCRIPT_BACKENDS]:
            if deadline.left() < 20:
                out.setdefault(arch, {})[backend] = {"skipped": "time budget spent"}
                continue
            cmd = [sys.executable, args.script, root, "-a", arch, "-b", str(args.batch_size), "--epochs", "1",
                   "--iters-per-epoch", str(iters), "--channels-last",
                   "-j", str(args.threads if backend == "pytorch" else args.ladle_threads),
                   "-p", str(args.script_print_freq), "--save", ""]
            cmd += ["--synthetic"] if backend == "synthetic" else ["--data-backend", backend]
            if not args.allow_cpu:  # AMP on a CPU (bfloat16) is far too slow for the smoke test
                cmd.append("--amp")
            limit = min(args.script_timeout, max(1.0, deadline.left()))
            t0 = time.perf_counter()
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=limit, cwd=common.REPO)
                text, rc = p.stdout + p.stderr, p.returncode
            except subprocess.TimeoutExpired as e:
                text = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
                rc = "timeout"
            perf = [float(m) for m in re.findall(r"##Perf\s+([\d.]+)", text)]
            res = {"command": " ".join(["examples/imagenet/train.py"] + cmd[2:]), "rc": rc,
                   "seconds": round(time.perf_counter() - t0, 1), "perf": perf[-1] if perf else None,
                   "result_lines": re.findall(r"##\w+.*", text)[-6:],
                   "data_line": next((ln for ln in text.splitlines() if ln.startswith("=>")), None)}
            if rc != 0 or not perf:
                res["failed"] = f"train.py exited with {rc}" + ("" if perf else ", no ##Perf line")
                res["tail"] = text[-1500:]
            out.setdefault(arch, {})[backend] = res
            print(f"  train.py {arch} {backend}: rc {rc}, ##Perf {res['perf']}", flush=True)
    return out


SCRIPT_BACKENDS = ("synthetic", "ladle", "pytorch")  # what examples/imagenet/train.py takes


def headline(runs):
    out = {}
    for arch, b in runs.items():
        ips = {k: v["images_per_s"]["median"] for k, v in b.items() if "images_per_s" in v}
        h = {}
        if "ladle" in ips and "synthetic" in ips:
            h["ladle_vs_synthetic"] = round(ips["ladle"] / ips["synthetic"], 3)
            h["goal_within_5_percent"] = h["ladle_vs_synthetic"] >= 0.95
        if "dali" in ips and "synthetic" in ips:
            h["dali_vs_synthetic"] = round(ips["dali"] / ips["synthetic"], 3)
        if "ladle" in ips and "dali" in ips:
            h["ladle_vs_dali"] = round(ips["ladle"] / ips["dali"], 3)
        if "pytorch" in ips and "synthetic" in ips:
            h["pytorch_vs_synthetic"] = round(ips["pytorch"] / ips["synthetic"], 3)
        if "ladle" in ips and "pytorch" in ips:
            lm = common.IMAGENET_TRAIN_IMAGES / ips["ladle"] / 60
            pm = common.IMAGENET_TRAIN_IMAGES / ips["pytorch"] / 60
            h["epoch_minutes_saved_vs_pytorch"] = round(pm - lm, 2)
            h["epoch_time_cut_vs_pytorch"] = round(1 - lm / pm, 3)
        out[arch] = h
    return out


def parent_main(args):
    torch, torchvision, reason = common.import_torch()
    training = {"batch_size": args.batch_size, "iters": (args.iters // args.chunks) * args.chunks,
                "warmup_iters": args.warmup_iters, "threads": args.threads,
                "ladle_threads": args.ladle_threads, "data": os.path.abspath(args.data),
                "model": "torchvision.models.<arch>(num_classes=1000), channels_last, autocast float16 + GradScaler, "
                         "SGD momentum 0.9", "runs": {}}
    failures = []
    if not common.cuda_ready(torch) and args.allow_cpu:
        training["cpu_smoke_test"] = "no GPU: run on the CPU in float32 to check this program; not a figure"
        training["model"] = training["model"].replace("autocast float16 + GradScaler", "float32 (CPU smoke test)")
    if not common.cuda_ready(torch) and not (args.allow_cpu and torch is not None and torchvision is not None):
        training["skipped"] = reason or "no CUDA device: training is measured on the GPU machine only"
        print(f"training benchmark skipped: {training['skipped']}")
    else:
        deadline = Deadline(args.time_budget)
        for backend in (args.backends if args.loop == "on" else []):
            print(f"[train] {backend}", flush=True)
            if deadline.passed():
                runs = {a: {"skipped": "time budget spent"} for a in args.archs}
            else:
                runs = run_child(args, backend, deadline)
            for arch, res in runs.items():
                training["runs"].setdefault(arch, {})[backend] = res
                if "failed" in res:
                    failures.append(f"{arch}/{backend}")
        for arch, b in training["runs"].items():
            synth = b.get("synthetic", {}).get("images_per_s")
            for res in b.values():
                ips = res.get("images_per_s")
                if ips:
                    res["imagenet_epoch_minutes"] = round(common.IMAGENET_TRAIN_IMAGES / ips["median"] / 60, 2)
                    if synth:
                        res["vs_synthetic"] = round(ips["median"] / synth["median"], 3)
        training["headline"] = headline(training["runs"])
        script = SCRIPT if args.script == "auto" else args.script
        if script != "none" and os.path.exists(script):
            args.script = script
            print(f"[train] {os.path.relpath(script, common.REPO)}", flush=True)
            training["script"] = run_script(args, deadline)
            converted = {}
            for arch, b in training["script"].items():
                if isinstance(b, dict):
                    failures += [f"train.py/{arch}/{k}" for k, v in b.items() if isinstance(v, dict) and "failed" in v]
                    converted[arch] = {k: {"images_per_s": {"median": v["perf"]}} for k, v in b.items()
                                       if isinstance(v, dict) and v.get("perf")}
            training["headline_script"] = headline(converted)
        elif args.script != "none":
            training["script"] = {"skipped": f"{os.path.relpath(script, common.REPO)} does not exist"}

    path = args.json
    if path and os.path.exists(path):
        report = common.read_json(path)
    else:
        commit, dirty, source = common.commit_info()
        report = {"schema": common.SCHEMA, "kind": "training", "label": args.label, "date": common.now_iso(),
                  "commit": commit, "commit_dirty": dirty, "commit_source": source,
                  "machine": common.machine_info(torch), "software": common.software_info(None, torch, torchvision)}
        if not path:
            path = os.path.join(args.out_dir, common.result_name(report["date"], args.host or common.host_tag(
                report["machine"]), commit, "train" + (f"-{args.label}" if args.label else "")))
    report["training"] = training
    report.setdefault("commands", []).append(" ".join([os.path.relpath(sys.argv[0], common.REPO)] + sys.argv[1:]))
    common.write_json(path, report)
    import report as report_mod
    report_mod.print_training(training)
    print(f"\nwrote {path}")
    if failures:
        print(f"failed: {', '.join(failures)}")
        return 1
    return 0


def parse_args(argv=None):
    def csv(s):
        return [x.strip() for x in s.split(",") if x.strip()]

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--data", default="/tmp/imagenet-like/train")
    p.add_argument("--archs", type=csv, default=["resnet50", "resnet18"])
    p.add_argument("--backends", type=csv, default=["synthetic", "ladle", "dali", "pytorch"],
                   help="synthetic, ladle, dali (NVIDIA DALI, the same graph; skipped when it does not import), "
                        "pytorch")
    p.add_argument("--dali-hw-load", type=float, default=None,
                   help="DALI's hw_decoder_load (default: DALI's own default)")
    p.add_argument("--ladle-hw-load", type=float, default=None,
                   help="ladle's hw_decoder_load (default: ladle's own default)")
    p.add_argument("--ladle-balance", choices=["fixed", "adaptive"], default=None,
                   help="ladle's decoder_balance (default: ladle's own default, fixed)")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--iters", type=int, default=100, help="timed iterations")
    p.add_argument("--warmup-iters", type=int, default=20)
    p.add_argument("--chunks", type=int, default=5, help="the timed iterations are split into this many parts")
    p.add_argument("--threads", type=int, default=common.usable_cores(), help="DataLoader num_workers")
    p.add_argument("--ladle-threads", type=int, default=max(1, common.usable_cores() - 4),
                   help="ladle num_threads (default: 4 fewer than the cores, left to the training process)")
    p.add_argument("--ladle-device", choices=["auto", "mixed", "cpu"], default="auto")
    p.add_argument("--prefetch", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--script", default="auto", help="train.py to run as well (auto: examples/imagenet/train.py "
                                                    "if it exists; none: don't)")
    p.add_argument("--script-timeout", type=float, default=150, help="seconds per train.py run")
    p.add_argument("--script-iters", type=int, default=180, help="train.py --iters-per-epoch")
    p.add_argument("--script-print-freq", type=int, default=60,
                   help="train.py -p; its ##Perf leaves out the first interval, which must outlast the "
                        "DataLoader's initial queue (16 workers x 2 batches)")
    p.add_argument("--loop", choices=["on", "off"], default="on",
                   help="off: only train.py (when it exists), not this program's own training loop")
    p.add_argument("--time-budget", type=float, default=0)
    p.add_argument("--grace", type=float, default=45)
    p.add_argument("--json", default=None, help="add the figures to this result file (else write a new one)")
    p.add_argument("--out-dir", default=common.RESULTS_DIR)
    p.add_argument("--host", default=None)
    p.add_argument("--label", default=None)
    p.add_argument("--allow-cpu", action="store_true",
                   help="without a GPU, run on the CPU (float32): a smoke test of this program, not a figure")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--child-out", help=argparse.SUPPRESS)
    p.add_argument("--deadline", type=float, default=0, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.child:
        return child_main(args)
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
