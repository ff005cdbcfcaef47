#!/usr/bin/env python3
"""Images per second of the ImageNet input pipelines: ladle against torchvision,
on the same images, in the same run.

Training pipeline: read -> decode -> random resized crop 224 -> random mirror ->
normalize -> float16 NCHW (on the GPU when there is one). Validation pipeline:
resize the shorter side to 256 -> center crop 224 -> the same normalization.

Loaders (each skipped, with the reason printed, where it cannot run):
  ladle-mixed        ladle, nvJPEG decoding + GPU operators (device="mixed")
  ladle-cpu          ladle, CPU pipeline (+ a copy to the GPU when there is one)
  tv-dataloader      torchvision ImageFolder + DataLoader (PIL decode, num_workers = --threads,
                     pin_memory + .cuda() when there is a GPU)
  tv-gpu             torchvision.io.decode_jpeg(list, device="cuda") + per-image transforms on the GPU
  ladle-mixed-val, ladle-cpu-val, tv-dataloader-val: the validation pipeline

Each figure is the median of --passes timed passes after one warm-up pass; a pass
is a fixed number of images (default: one epoch of the set, in whole batches).
Every file is read once before timing, so the page cache is warm. Cost per
loader: CPU cores busy (CPU time of this process and its children over wall
time), host RSS/PSS, and GPU memory added (device memory in use, sampled at the
end of each pass, minus the level before the loader was built).

Each group of measurements runs in a child process, so a crash in one loader
is reported and the others still run. Results: a printed table and JSON under
bench/results/<date>-<host>-<commit>.json (or --json PATH).

    python3 bench/pipeline_bench.py --data /tmp/imagenet-like/train --val /tmp/imagenet-like/val \\
        --threads 16 --batch-size 256 --scaling
"""

import argparse
import gc
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
from common import (Deadline, GpuUtilization, cpu_seconds_between, cpu_times, gpu_used_mb,  # noqa: E402
                    host_memory_mb, process_tree, spread)

MIN_PASS_BATCHES = 8  # a timed pass is never shorter than this, whatever the set's size

TRAIN_LOADERS = ["ladle-mixed", "ladle-cpu", "dali-mixed", "dali-cpu", "tv-dataloader", "tv-gpu"]
VAL_LOADERS = ["ladle-mixed-val", "ladle-cpu-val", "dali-mixed-val", "dali-cpu-val", "tv-dataloader-val"]


# =========================== child: runs measurements ===========================

class Context:
    def __init__(self, args):
        self.args = args
        self.ladle, self.ladle_reason = common.import_ladle()
        self.torch, self.torchvision, self.torch_reason = common.import_torch()
        self.cuda = common.cuda_ready(self.torch)
        if self.cuda:
            self.torch.cuda.init()
            self.torch.empty(1, device="cuda")  # the context exists before any baseline is read
        self.to_gpu = self.cuda and not args.no_gpu_copy

    def resolve_device(self, device):
        """ "auto" -> "mixed" where ladle's GPU pipeline can run, else "cpu". """
        if device != "auto":
            return device
        if self.ladle is not None:
            from loaders import ladle_gpu_ops
            if ladle_gpu_ops(self.ladle) is None:
                return "mixed"
        return "cpu"


def _cleanup(ctx):
    gc.collect()
    if ctx.cuda:
        ctx.torch.cuda.synchronize()
        ctx.torch.cuda.empty_cache()


def _output_info(x):
    device = str(getattr(x, "device", "cpu"))
    return {"shape": [int(d) for d in x.shape], "dtype": str(x.dtype).replace("torch.", ""), "device": device}


def measure(ctx, spec, deadline):
    """Runs one measurement; returns its result dict (raises loaders.Unavailable)."""
    from loaders import make_loader, describe
    torch = ctx.torch
    name, batch, threads = spec["loader"], spec["batch_size"], spec["threads"]
    _cleanup(ctx)
    pids = process_tree()
    rss_before, pss_before = host_memory_mb(pids)
    gpu_before = gpu_used_mb(torch)

    start = time.perf_counter()
    loader = make_loader(name, ladle=ctx.ladle, torch=torch, torchvision=ctx.torchvision, root=spec["root"],
                         batch_size=batch, threads=threads, seed=ctx.args.seed, to_gpu=ctx.to_gpu,
                         prefetch=ctx.args.prefetch, tv_version=ctx.args.tv_transforms)
    rss_peak, pss_peak, gpu_peak = rss_before, pss_before, gpu_before

    def sample_memory():
        nonlocal rss_peak, pss_peak, gpu_peak
        rss, pss = host_memory_mb(process_tree())
        rss_peak = max(rss_peak, rss)
        if pss is not None and pss_peak is not None:
            pss_peak = max(pss_peak, pss)
        g = gpu_used_mb(torch)
        if g is not None:
            gpu_peak = max(gpu_peak, g)

    try:
        built = time.perf_counter()
        x, _ = loader.next()
        loader.sync()
        first = time.perf_counter()
        result = describe(name, batch, threads)
        result.update(id=spec["id"], notes=list(loader.notes), output=_output_info(x))
        result["to_gpu"] = bool(ctx.to_gpu or result["decode"] in ("mixed", "gpu"))
        del x

        # Warm-up pass (its first batch includes filling the pipeline). It must
        # also drain what the loader prepared ahead while it started (DataLoader:
        # workers x prefetch_factor batches), or the first timed passes would
        # collect ready batches: at least queue depth + 4 batches and 1 s.
        min_warm = loader.queue_depth + 4
        if spec.get("pass_images"):
            n_batches = max(spec["pass_images"] // batch, MIN_PASS_BATCHES)
            count, t0 = 1, time.perf_counter()
            while count < max(n_batches, min_warm) or time.perf_counter() - built < 1.0:
                loader.next()
                count += 1
            loader.sync()
        else:  # time-based: run >= pass_seconds, then size the timed passes from the rate seen
            count, t0 = 0, time.perf_counter()
            while count < min_warm or time.perf_counter() - t0 < spec["pass_seconds"]:
                loader.next()
                count += 1
            loader.sync()
            rate = count / (time.perf_counter() - t0)  # batches/s, first batch excluded
            n_batches = max(MIN_PASS_BATCHES, round(rate * spec["pass_seconds"]))
        warm_end = time.perf_counter()
        sample_memory()

        rates, seconds, cpu_total, wall_total = [], [], 0.0, 0.0
        cut_short = False
        util = GpuUtilization().start() if result["to_gpu"] else None
        for p in range(spec["passes"]):
            if p > 0 and deadline.passed():
                cut_short = True
                break
            before = cpu_times(process_tree())
            t0 = time.perf_counter()
            for _ in range(n_batches):
                loader.next()
            loader.sync()
            dt = time.perf_counter() - t0
            after = cpu_times(process_tree())
            cpu_total += cpu_seconds_between(before, after)
            wall_total += dt
            rates.append(n_batches * batch / dt)
            seconds.append(round(dt, 3))
            sample_memory()
        result["gpu_utilization"] = util.stop() if util else None
        if hasattr(loader, "decoder_routes"):  # ladle: images per decoder route, warm-up included
            result["decoder_routes"] = loader.decoder_routes()
    finally:
        loader.close()
        del loader
        _cleanup(ctx)

    ips = spread(rates)
    busy = cpu_total / wall_total if wall_total else None
    result.update({
        "load_average_1min_after": round(os.getloadavg()[0], 2),  # others' work on a shared machine shows here
        "startup_s": round(built - start, 3),
        "first_batch_s": round(first - built, 3),
        "warmup_s": round(warm_end - built, 3),
        "warmup_batches": count,
        "images_per_pass": n_batches * batch,
        "passes": len(rates),
        "pass_seconds": seconds,
        "images_per_s": ips,
        "cores_busy": round(busy, 2) if busy is not None else None,
        "cpu_ms_per_image": round(1000 * cpu_total / (len(rates) * n_batches * batch), 3) if rates else None,
        "images_per_s_per_thread": round(ips["median"] / result["threads"], 1),
        "images_per_s_per_busy_core": round(ips["median"] / busy, 1) if busy else None,
        "host_memory_mb": {"rss_before": rss_before, "rss_peak": rss_peak,
                           "pss_before": pss_before, "pss_peak": pss_peak},
        "gpu_memory_mb": None if gpu_before is None else
        {"before": gpu_before, "peak": gpu_peak, "added": round(gpu_peak - gpu_before, 1)},
        "cut_short": cut_short,
    })
    return result


def measure_cold(ctx, spec, deadline):
    """One epoch from a dropped page cache, loader start-up included."""
    from loaders import make_loader, describe
    fs = common.filesystem_of(spec["root"])
    if fs in ("tmpfs", "ramfs", "overlay"):
        return {"skipped": f"the data is on {fs}: dropping the page cache would not make it cold"}
    reason = common.drop_caches()
    if reason:
        return {"skipped": reason}
    name, batch, threads = spec["loader"], spec["batch_size"], spec["threads"]
    start = time.perf_counter()
    loader = make_loader(name, ladle=ctx.ladle, torch=ctx.torch, torchvision=ctx.torchvision, root=spec["root"],
                         batch_size=batch, threads=threads, seed=ctx.args.seed, to_gpu=ctx.to_gpu,
                         prefetch=ctx.args.prefetch, tv_version=ctx.args.tv_transforms)
    try:
        n_batches = max(spec["pass_images"] // batch, MIN_PASS_BATCHES)
        for _ in range(n_batches):
            loader.next()
        loader.sync()
        dt = time.perf_counter() - start
    finally:
        loader.close()
        _cleanup(ctx)
    result = describe(name, batch, threads)
    result.update(id=spec["id"], images=n_batches * batch, seconds=round(dt, 3),
                  images_per_s=round(n_batches * batch / dt, 1), filesystem=fs,
                  notes=["page cache dropped before the loader was built; one pass, start-up included"])
    return result


def child_main(args):
    with open(args.child) as f:
        specs = json.load(f)
    ctx = Context(args)
    deadline = Deadline(max(1.0, args.deadline - time.time()) if args.deadline else 0)
    state = {"machine": common.machine_info(ctx.torch),
             "software": common.software_info(ctx.ladle, ctx.torch, ctx.torchvision),
             "imports": {"ladle": ctx.ladle_reason, "torch": ctx.torch_reason},
             "done": {}, "current": None}

    def save():
        common.write_json(args.child_out, state)

    for spec in specs:
        sid = spec["id"]
        if deadline.passed():
            state["done"][sid] = {"skipped": "time budget spent"}
            continue
        if spec["loader"].startswith("ladle") and ctx.ladle is None:
            state["done"][sid] = {"skipped": ctx.ladle_reason}
            continue
        if spec.get("device") is not None:
            spec["loader"] = "ladle-mixed" if ctx.resolve_device(spec["device"]) == "mixed" else "ladle-cpu"
        state["current"] = sid
        save()
        from loaders import Unavailable
        try:
            res = measure_cold(ctx, spec, deadline) if spec.get("cold") else measure(ctx, spec, deadline)
        except Unavailable as e:
            res = {"skipped": str(e)}
        except Exception as e:  # noqa: BLE001 - one loader's failure is a result, the rest still run
            res = {"failed": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()[-2000:]}
        state["done"][sid] = res
        state["current"] = None
        save()
        print(_line(sid, res), flush=True)
    save()
    return 0


def _line(sid, res):
    if "skipped" in res:
        return f"  {sid}: skipped ({res['skipped']})"
    if "failed" in res:
        return f"  {sid}: FAILED: {res['failed']}"
    if "seconds" in res and "images_per_s" in res and not isinstance(res["images_per_s"], dict):
        return f"  {sid}: {res['images_per_s']:,.0f} images/s cold ({res['images']} images in {res['seconds']} s)"
    ips = res["images_per_s"]
    gpu = res.get("gpu_memory_mb") or {}
    return (f"  {sid}: {ips['median']:,.0f} images/s (min {ips['min']:,.0f}, max {ips['max']:,.0f}; "
            f"{res['passes']} passes of {res['images_per_pass']}), cores busy {res['cores_busy']}, "
            f"RSS {res['host_memory_mb']['rss_peak']:,.0f} MiB"
            + (f", GPU +{gpu['added']:,.0f} MiB" if gpu else ""))


# =========================== parent: plans, runs children, reports ===========================

def plan(args, train_desc, val_desc):
    batch, threads = args.batch_size, args.threads
    from loaders import LOADERS, parse_name
    wanted = [x.strip() for x in args.loaders.split(",") if x.strip()]
    if "all" in wanted:
        wanted = TRAIN_LOADERS + VAL_LOADERS
    unknown = []
    for w in wanted:
        try:
            parse_name(w)
        except (KeyError, ValueError):
            unknown.append(w)
    if unknown:
        raise SystemExit(f"unknown loader(s): {', '.join(unknown)}; choose from "
                         f"{', '.join(TRAIN_LOADERS + VAL_LOADERS)} (mixed ones may end in @hw=LOAD and "
                         "@hyb=PIXELS)")
    # --hw-loads: each mixed loader again at these hw_decoder_load values (DALI's best
    # setting differs from its default; the result records which was best).
    for load in args.hw_loads:
        for base in [w for w in wanted if "@" not in w and w.split("-")[1] == "mixed"]:
            if f"{base}@hw={load}" not in wanted:
                wanted.append(f"{base}@hw={load}")
    # --hybrid-thresholds: each ladle mixed loader (with each of its @hw variants) again
    # at these hybrid_huffman_threshold values.
    for threshold in args.hybrid_thresholds:
        for name in [w for w in wanted if w.startswith("ladle-mixed") and "@hyb=" not in w]:
            if f"{name}@hyb={threshold}" not in wanted:
                wanted.append(f"{name}@hyb={threshold}")

    def images(desc):
        return args.pass_images or desc["images"]

    # Run in this order, so that a tight time budget loses the least important
    # figures: training pipelines (ladle, DALI, torchvision), validation, scaling, cold.
    libraries = ("ladle", "dali", "torchvision")
    order = tuple(f"{lib}-train" for lib in libraries) + tuple(f"{lib}-val" for lib in libraries) + ("scaling", "cold")
    groups = {g: [] for g in order}
    for name in wanted:
        base = parse_name(name)[0]
        is_val = base in VAL_LOADERS
        desc = val_desc if is_val else train_desc
        spec = {"id": name, "loader": name, "root": desc["root"], "batch_size": batch, "threads": threads,
                "pass_images": images(desc), "passes": args.passes, "section": "results"}
        groups[LOADERS[base][0] + ("-val" if is_val else "-train")].append(spec)

    if args.scaling:
        cores = common.usable_cores()
        thread_list = sorted({t for t in args.scaling_threads if t <= cores} | ({cores} if cores < max(args.scaling_threads) else set()))
        for device in (["cpu", "mixed"] if args.scaling_device == "both" else [args.scaling_device]):
            for t in thread_list:
                groups["scaling"].append({"id": f"scaling/{device}/threads={t}", "device": device, "loader": "ladle-?",
                                          "root": train_desc["root"], "batch_size": batch, "threads": t,
                                          "pass_seconds": args.scaling_pass_seconds, "passes": args.scaling_passes,
                                          "section": "scaling", "axis": "threads"})
            for b in args.scaling_batches:
                groups["scaling"].append({"id": f"scaling/{device}/batch={b}", "device": device, "loader": "ladle-?",
                                          "root": train_desc["root"], "batch_size": b, "threads": threads,
                                          "pass_seconds": args.scaling_pass_seconds, "passes": args.scaling_passes,
                                          "section": "scaling", "axis": "batch_size"})
    if args.cold:
        for name in ("ladle-mixed", "ladle-cpu", "dali-mixed", "dali-cpu", "tv-dataloader"):
            if name in wanted:
                groups["cold"].append({"id": f"cold/{name}", "loader": name, "root": train_desc["root"],
                                       "batch_size": batch, "threads": threads, "pass_images": images(train_desc),
                                       "cold": True, "section": "cold"})
    return [(g, groups[g]) for g in order if groups[g]]


class Stop(Exception):
    pass


def run_group(args, specs, deadline, on_update):
    """Runs specs in child processes, restarting after a crash without the
    measurement that crashed. Returns {id: result} and the child's machine info."""
    done, info = {}, {}
    remaining = list(specs)
    while remaining:
        if deadline.passed():
            for s in remaining:
                done[s["id"]] = {"skipped": "time budget spent"}
            break
        with tempfile.TemporaryDirectory(prefix="ladle-bench-") as tmp:
            spec_path, out_path = os.path.join(tmp, "specs.json"), os.path.join(tmp, "out.json")
            with open(spec_path, "w") as f:
                json.dump(remaining, f)
            cmd = [sys.executable, os.path.abspath(__file__), "--child", spec_path, "--child-out", out_path]
            cmd += _forwarded(args)
            if deadline.end is not None:
                cmd += ["--deadline", str(time.time() + deadline.left())]
            proc = subprocess.Popen(cmd, env=common.child_env(any(s["loader"].startswith("dali") for s in remaining)))
            try:
                wait = None if deadline.end is None else max(5.0, deadline.left() + args.grace)
                rc = proc.wait(timeout=wait)
                why = None if rc == 0 else f"the child process exited with {rc}" + (
                    f" (signal {-rc})" if rc < 0 else "")
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                why = "killed: it ran past the time budget"
            except BaseException:
                proc.kill()
                proc.wait()
                raise
            state = {}
            if os.path.exists(out_path):
                state = common.read_json(out_path)
        info = {k: state[k] for k in ("machine", "software", "imports") if k in state} or info
        done.update(state.get("done", {}))
        current = state.get("current")
        if current:
            done[current] = {"failed": f"crashed: {why}; see the output above"}
        elif why and not state.get("done"):
            for s in remaining:
                done.setdefault(s["id"], {"failed": f"no result: {why}"})
        remaining = [s for s in remaining if s["id"] not in done]
        on_update(done, info)
        if why and not current and remaining:  # died outside any measurement: don't loop
            for s in remaining:
                done[s["id"]] = {"failed": f"not run: {why}"}
            break
    return done, info


def _forwarded(args):
    out = ["--seed", str(args.seed), "--prefetch", str(args.prefetch), "--tv-transforms", args.tv_transforms]
    if args.no_gpu_copy:
        out.append("--no-gpu-copy")
    return out


def versus_dali(res, suffix):
    """ladle's mixed pipeline (default settings) against DALI's at its default and at
    the hw_decoder_load that gave it the most images/s and the most per busy core
    (issue 13: >= 1.3x DALI's best, never fewer images per busy core)."""
    def runs(prefix):
        return {k: r for k, r in res.items() if (k == prefix or k.startswith(prefix + "@"))
                and "images_per_s" in r}
    ladle = runs("ladle-mixed" + suffix)
    dali = runs("dali-mixed" + suffix)
    if f"ladle-mixed{suffix}" not in ladle or not dali:
        return None
    lm = ladle[f"ladle-mixed{suffix}"]
    best = max(dali, key=lambda k: dali[k]["images_per_s"]["median"])
    frugal = max(dali, key=lambda k: dali[k].get("images_per_s_per_busy_core") or 0)
    a = lm["images_per_s"]["median"]
    g = {"what": "ladle mixed (defaults) vs DALI mixed: default and best hw_decoder_load of this run "
                 "(issue 13 goals: >= 1.3x DALI's best images/s; images per busy core >= DALI's best)",
         "ladle_images_per_s": a, "ladle_per_busy_core": lm.get("images_per_s_per_busy_core"),
         "ladle_cores_busy": lm.get("cores_busy"), "dali_best": best,
         "dali_best_images_per_s": dali[best]["images_per_s"]["median"],
         "ratio_vs_dali_best": round(a / dali[best]["images_per_s"]["median"], 2),
         "dali_most_frugal": frugal,
         "dali_most_frugal_per_busy_core": dali[frugal].get("images_per_s_per_busy_core")}
    if f"dali-mixed{suffix}" in dali:
        g["ratio_vs_dali_default"] = round(a / dali[f"dali-mixed{suffix}"]["images_per_s"]["median"], 2)
    if lm.get("images_per_s_per_busy_core") and g["dali_most_frugal_per_busy_core"]:
        g["per_busy_core_ratio"] = round(lm["images_per_s_per_busy_core"] / g["dali_most_frugal_per_busy_core"], 2)
    g["goal_met"] = g["ratio_vs_dali_best"] >= 1.3 and g.get("per_busy_core_ratio", 0) >= 1.0
    return g


def comparisons(report):
    """The ratios the issues ask for."""
    res = report["results"]

    def ok(name):
        r = res.get(name)
        return r if r and "images_per_s" in r else None

    out = {}
    lc, tv = ok("ladle-cpu"), ok("tv-dataloader")
    if lc and tv:
        a, b = lc["images_per_s"]["median"], tv["images_per_s"]["median"]
        out["cpu"] = {
            "what": "ladle CPU pipeline vs torchvision ImageFolder + DataLoader, same workers (issue 2; goal >= 1.5x "
                    "per core)",
            "workers": lc["threads"],
            "ladle_images_per_s": a, "torchvision_images_per_s": b,
            "ladle_per_core": round(a / lc["threads"], 1), "torchvision_per_core": round(b / tv["threads"], 1),
            "ratio": round(a / b, 2),
            "ladle_per_busy_core": lc.get("images_per_s_per_busy_core"),
            "torchvision_per_busy_core": tv.get("images_per_s_per_busy_core"),
            "ratio_per_busy_core": round(lc["images_per_s_per_busy_core"] / tv["images_per_s_per_busy_core"], 2)
            if lc.get("images_per_s_per_busy_core") and tv.get("images_per_s_per_busy_core") else None,
            "goal": 1.5,
        }
        out["cpu"]["goal_met"] = out["cpu"]["ratio"] >= 1.5
    for pipeline, suffix in (("train", ""), ("val", "-val")):
        g = versus_dali(res, suffix)
        if g:
            out[f"dali_{pipeline}"] = g
    lm = ok("ladle-mixed")
    if lm:
        a = lm["images_per_s"]["median"]
        g = {"what": "ladle mixed pipeline vs the peers (issue 5; goal >= 5x both and >= 15,000 images/s)",
             "ladle_images_per_s": a, "goal_images_per_s": 15000}
        for name in ("tv-dataloader", "tv-gpu", "ladle-cpu"):
            if ok(name):
                g[f"ratio_vs_{name}"] = round(a / res[name]["images_per_s"]["median"], 2)
        g["goal_met"] = a >= 15000 and all(g.get(f"ratio_vs_{n}", 5) >= 5 for n in ("tv-dataloader", "tv-gpu"))
        gm = lm.get("gpu_memory_mb")
        if gm:
            g["gpu_memory_added_mb_at_batch"] = {str(lm["batch_size"]): gm["added"]}
        out["gpu"] = g
    return out


def parent_main(args):
    if not os.path.isdir(args.data):
        raise SystemExit(f"--data {args.data}: no such folder (make one with make_bench_set.py; see bench/README.md)")
    val_root = args.val or args.data
    started = common.now_iso()
    commit, dirty, commit_source = common.commit_info()

    print(f"reading every file once (page cache warm-up): {args.data}", flush=True)
    train_desc, _ = common.describe_data(args.data)
    val_desc = train_desc
    if os.path.abspath(val_root) != os.path.abspath(args.data):
        val_desc, _ = common.describe_data(val_root)
    if not train_desc["images"]:
        raise SystemExit(f"no images under {args.data}")
    print(f"  train: {train_desc['images']} images, {train_desc.get('mean_bytes', 0) / 1000:.0f} KB and "
          f"{train_desc.get('mean_pixels', 0) / 1000:.0f} kpx each on average, read in "
          f"{train_desc.get('read_all_seconds')} s ({train_desc.get('filesystem')})", flush=True)

    report = {
        "schema": common.SCHEMA,
        "kind": "pipeline",
        "label": args.label,
        "date": started,
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "commit": commit, "commit_dirty": dirty, "commit_source": commit_source,
        "command": " ".join([os.path.relpath(sys.argv[0], common.REPO)] + sys.argv[1:]),
        "machine": None, "software": None,
        "data": {"train": train_desc, "val": val_desc,
                 "page_cache": "warm: every file read once before timing, and again by each loader's warm-up pass"},
        "settings": {"batch_size": args.batch_size, "threads": args.threads, "passes": args.passes,
                     "pass_images": args.pass_images or "one epoch (whole batches)", "seed": args.seed,
                     "prefetch_queue_depth": args.prefetch, "gpu_copy": not args.no_gpu_copy,
                     "scaling": args.scaling},
        "results": {}, "scaling": {}, "cold": {},
    }
    path = args.json
    deadline = Deadline(args.time_budget)
    failures = []

    def save():
        nonlocal path
        if path is None:
            if report["machine"] is None:
                return
            host = args.host or common.host_tag(report["machine"])
            path = os.path.join(args.out_dir, common.result_name(started, host, commit, args.label))
        report["comparisons"] = comparisons(report)
        common.write_json(path, report)

    def merge(done, info, specs_by_id):
        if info:
            report["machine"] = report["machine"] or info.get("machine")
            report["software"] = report["software"] or info.get("software")
            if report["software"] is not None:
                report["software"].setdefault("imports", info.get("imports"))
        for sid, res in done.items():
            spec = specs_by_id[sid]
            if spec["section"] == "scaling":
                axis, value = sid.split("/")[2].split("=")
                dev = res.get("decode", sid.split("/")[1])
                entry = report["scaling"].setdefault(dev, {"threads": {}, "batch_size": {}})
                entry["threads" if axis == "threads" else "batch_size"][value] = res
            else:
                report[spec["section"]][sid.split("/")[-1]] = res
        save()

    def on_term(signum, frame):
        raise Stop(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    try:
        for group, specs in plan(args, train_desc, val_desc):
            print(f"[{group}] {len(specs)} measurement(s)", flush=True)
            by_id = {s["id"]: s for s in specs}
            done, _ = run_group(args, specs, deadline, lambda d, i: merge(d, i, by_id))
            failures += [sid for sid, r in done.items() if "failed" in r]
            if group == "cold":  # warm the cache again for anything run after this
                common.describe_data(args.data)
    except (Stop, KeyboardInterrupt) as e:
        failures.append(f"interrupted ({e})")
        report["interrupted"] = str(e) or "KeyboardInterrupt"
    finally:
        if report["machine"] is None:
            report["machine"] = common.machine_info(None)
        report["finished"] = common.now_iso()
        report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
        save()

    import report as report_mod
    report_mod.print_report(report)
    print(f"\nwrote {path}")
    if failures:
        print(f"failed: {', '.join(failures)}")
        return 1
    return 0


def parse_args(argv=None):
    cores = common.usable_cores()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--data", default="/tmp/imagenet-like/train", help="training image folder (one subfolder per class)")
    p.add_argument("--val", default=None, help="validation image folder (default: the --data folder)")
    p.add_argument("--threads", type=int, default=cores, help=f"ladle num_threads = DataLoader num_workers (default {cores})")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--passes", type=int, default=5, help="timed passes per loader (after one warm-up pass)")
    p.add_argument("--pass-images", type=int, default=0, help="images per pass (default: one epoch, whole batches)")
    p.add_argument("--loaders", default="all", help="comma-separated: " + ", ".join(TRAIN_LOADERS + VAL_LOADERS))
    p.add_argument("--scaling", action="store_true", help="also ladle's images/s against num_threads and batch size")
    p.add_argument("--scaling-threads", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2, 4, 8, 16])
    p.add_argument("--scaling-batches", type=lambda s: [int(x) for x in s.split(",")], default=[64, 128, 256, 512])
    p.add_argument("--scaling-device", choices=["auto", "cpu", "mixed", "both"], default="auto",
                   help="auto: mixed where ladle's GPU pipeline runs, else cpu")
    p.add_argument("--scaling-passes", type=int, default=3)
    p.add_argument("--scaling-pass-seconds", type=float, default=1.5, help="scaling passes are sized to last about this")
    p.add_argument("--cold", action="store_true",
                   help="also one pass per loader from a dropped page cache (needs root and a disk-backed folder)")
    p.add_argument("--no-gpu-copy", action="store_true", help="CPU loaders hand over host batches even with a GPU")
    p.add_argument("--prefetch", type=int, default=2, help="prefetch_queue_depth of ladle and DALI")
    p.add_argument("--hw-loads", type=lambda s: [float(x) for x in s.split(",") if x], default=[],
                   help="also run each mixed loader at these hw_decoder_load values, e.g. 0.9,0.99")
    p.add_argument("--hybrid-thresholds", type=lambda s: [int(x) for x in s.split(",") if x], default=[],
                   help="also run each ladle mixed loader (and its --hw-loads variants) at these "
                        "hybrid_huffman_threshold values, e.g. 0 (loader name suffix @hyb=N)")
    p.add_argument("--tv-transforms", choices=["auto", "v1", "v2"], default="auto")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--time-budget", type=float, default=0, help="seconds; later measurements are skipped past it")
    p.add_argument("--grace", type=float, default=45, help="seconds a child may overrun the budget before it is killed")
    p.add_argument("--json", default=None, help="result file (default: bench/results/<date>-<host>-<commit>.json)")
    p.add_argument("--out-dir", default=common.RESULTS_DIR)
    p.add_argument("--host", default=None, help="host name in the result file name")
    p.add_argument("--label", default=None, help="a tag for this run, also appended to the file name (e.g. cpu-dev)")
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
