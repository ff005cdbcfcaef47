#!/usr/bin/env python3
"""Prints the tables of a benchmark result file (pipeline and training figures).

    python3 bench/report.py bench/results/<file>.json [--short]
"""

import argparse
import json
import os
import sys


def _n(x, digits=0):
    if x is None:
        return "-"
    return f"{x:,.{digits}f}"


def _table(rows, header):
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths))
    print(line)
    print("-" * len(line))
    for r in rows:
        print("  ".join(str(c).rjust(w) if i and str(c)[:1].isdigit() else str(c).ljust(w)
                        for i, (c, w) in enumerate(zip(r, widths))))


def _status(res):
    if "skipped" in res:
        return "skipped: " + res["skipped"]
    if "failed" in res:
        return "FAILED: " + res["failed"].splitlines()[0][:160]
    return None


def _utilization(u):
    if not u:
        return "-"
    return f"{_n((u.get('jpg') or {}).get('mean'))}/{_n((u.get('sm') or {}).get('mean'))}"


def header(r):
    m = r.get("machine") or {}
    gpu = m.get("gpu")
    sw = r.get("software") or {}
    print(f"{r.get('kind', 'bench')} benchmark, {r.get('date')}, commit {r.get('commit')}"
          + (" (+ uncommitted changes)" if r.get("commit_dirty") else "") + (f", label {r['label']}" if r.get("label") else ""))
    print(f"machine: {m.get('cpu_model')}, {m.get('usable_cores')} cores"
          + (f"; {gpu['name']}, driver {gpu.get('driver')}, CUDA {gpu.get('cuda_runtime_of_torch')}" if gpu else "; no GPU"))
    print("software: " + ", ".join(f"{k} {v}" for k, v in sw.items() if isinstance(v, str)))
    d = (r.get("data") or {}).get("train")
    if d:
        print(f"data: {d['images']} images in {d['classes']} classes, {_n(d.get('mean_bytes', 0) / 1000)} KB and "
              f"{_n(d.get('mean_pixels', 0) / 1000)} kpx each on average ({d.get('filesystem')}); page cache "
              f"{(r.get('data') or {}).get('page_cache', '?').split(':')[0]}")


def print_pipeline(r):
    res = r.get("results") or {}
    if res:
        rows, notes = [], []
        for name, x in res.items():
            st = _status(x)
            if st:
                rows.append([name] + ["-"] * 11 + [st.split(":")[0]])
                notes.append(f"  {name}: {st}")
                continue
            ips, gpu = x["images_per_s"], x.get("gpu_memory_mb")
            rows.append([name, x["pipeline"], x["batch_size"], x["threads"], _n(ips["median"]),
                         f"{_n(ips['min'])}-{_n(ips['max'])}", _n(x.get("images_per_s_per_thread")),
                         _n(x.get("cores_busy"), 1), _n(x.get("images_per_s_per_busy_core")),
                         _n(x["host_memory_mb"]["rss_peak"]), _n(gpu["added"]) if gpu else "-",
                         _utilization(x.get("gpu_utilization"))
                         ] + (["cut short by the time budget"] if x.get("cut_short") else [""]))
        print("\npipeline throughput (median of timed passes after a warm-up pass; jpg/sm: mean % busy of the "
              "JPEG engines and SMs over the timed passes, nvidia-smi dmon)")
        _table(rows, ["loader", "pipeline", "batch", "thr", "images/s", "min-max", "/thread", "busy",
                      "/busy core", "RSS MiB", "GPU MiB+", "jpg/sm %", ""])
        for line in notes:
            print(line)
    comp = r.get("comparisons") or {}
    if "cpu" in comp:
        c = comp["cpu"]
        print(f"\nCPU, {c['workers']} workers each: ladle {_n(c['ladle_per_core'])} vs torchvision "
              f"{_n(c['torchvision_per_core'])} images/s per worker: {c['ratio']}x "
              f"(per busy core {c.get('ratio_per_busy_core')}x); goal 1.5x: {'met' if c['goal_met'] else 'NOT met'}")
    for pipeline in ("train", "val"):
        d = comp.get(f"dali_{pipeline}")
        if d:
            print(f"vs DALI ({pipeline}): ladle mixed {_n(d['ladle_images_per_s'])} images/s = "
                  f"{d.get('ratio_vs_dali_default', '-')}x DALI's default, {d['ratio_vs_dali_best']}x its best "
                  f"({d['dali_best']}); per busy core {_n(d.get('ladle_per_busy_core'))} vs "
                  f"{_n(d.get('dali_most_frugal_per_busy_core'))} ({d['dali_most_frugal']}); goals >= 1.3x and "
                  f">= 1x per core: {'met' if d['goal_met'] else 'NOT met'}")
    if "gpu" in comp:
        g = comp["gpu"]
        ratios = ", ".join(f"{v}x {k[9:]}" for k, v in g.items() if k.startswith("ratio_vs_"))
        print(f"GPU: ladle mixed {_n(g['ladle_images_per_s'])} images/s ({ratios}); goal >= 15,000 and 5x: "
              f"{'met' if g['goal_met'] else 'NOT met'}")
    for dev, axes in (r.get("scaling") or {}).items():
        for axis in ("threads", "batch_size"):
            pts = axes.get(axis) or {}
            if not pts:
                continue
            cells = []
            for k in sorted(pts, key=int):
                x = pts[k]
                cells.append(f"{k}: " + (_n(x["images_per_s"]["median"]) if "images_per_s" in x else (_status(x) or "?")))
            print(f"scaling, ladle {dev}, images/s by {axis}: " + "; ".join(cells))
    for name, x in (r.get("cold") or {}).items():
        print(f"cold page cache, {name}: " + (_status(x) or f"{_n(x['images_per_s'])} images/s "
                                                         f"({x['images']} images, start-up included)"))


def print_training(t):
    if t.get("skipped"):
        print(f"\ntraining: skipped: {t['skipped']}")
    runs = t.get("runs") or {}
    if not runs:
        runs = {}
    rows = []
    for arch, backends in runs.items():
        for backend, x in backends.items():
            st = _status(x)
            if st:
                rows.append([arch, backend, "-", "-", "-", "-", st[:60]])
                continue
            ips = x["images_per_s"]
            rows.append([arch, backend, _n(ips["median"]), f"{_n(ips['min'])}-{_n(ips['max'])}",
                         f"{x['vs_synthetic']:.0%}" if x.get("vs_synthetic") is not None else "-",
                         _n(x.get("imagenet_epoch_minutes"), 1), x.get("data", "")])
    if rows:
        print(f"\ntraining ({'CPU SMOKE TEST, float32' if t.get('cpu_smoke_test') else 'AMP'}, channels-last, batch {t.get('batch_size')}, {t.get('iters')} timed iterations "
              f"after >= {t.get('warmup_iters')} warm-up iterations, more where a loader's queue must drain; "
              f"ladle num_threads {t.get('ladle_threads', t.get('threads'))}, DataLoader workers {t.get('threads')})")
        _table(rows, ["model", "data", "images/s", "min-max", "of synth.", "ImageNet epoch min", "data path"])
    for arch, h in (t.get("headline") or {}).items():
        parts = []
        if h.get("ladle_vs_synthetic") is not None:
            parts.append(f"ladle at {h['ladle_vs_synthetic']:.0%} of synthetic (goal >= 95%)")
        if h.get("dali_vs_synthetic") is not None:
            parts.append(f"DALI at {h['dali_vs_synthetic']:.0%}")
        if h.get("epoch_minutes_saved_vs_pytorch") is not None:
            parts.append(f"{h['epoch_minutes_saved_vs_pytorch']:.1f} min per ImageNet epoch saved against the "
                         f"DataLoader ({h['epoch_time_cut_vs_pytorch']:.0%} less)")
        if parts:
            print(f"{arch}: " + "; ".join(parts))
    for arch, backends in runs.items():  # ladle's executor while it fed the model
        e = (backends.get("ladle") or {}).get("executor")
        if e:
            print(f"{arch} / ladle's executor: the training loop waited in run() {e['wait_share']:.2f} of the time; "
                  f"device stage busy {e['device_stage_share']:.2f}, GPU waited for {e['gpu_wait_share']:.2f}")
    script = t.get("script") or {}
    if "skipped" in script:
        print(f"examples/imagenet/train.py: skipped: {script['skipped']}")
    elif script:
        print("\nexamples/imagenet/train.py, one short epoch each (##Perf: images/s after its first print interval)")
        rows = []
        for arch, backends in script.items():
            for backend, x in backends.items():
                rows.append([arch, backend, _n(x.get("perf")), str(x.get("rc", "-")), x.get("seconds", "-"),
                             (_status(x) or "")[:70]])
        _table(rows, ["model", "data", "##Perf", "rc", "seconds", ""])
        for arch, h in (t.get("headline_script") or {}).items():
            if h.get("ladle_vs_synthetic") is not None:
                print(f"{arch} (train.py): ladle at {h['ladle_vs_synthetic']:.0%} of synthetic")


def print_report(r, short=False):
    if not short:
        header(r)
    if r.get("kind") == "op-bench":  # bench/op_bench.py's per-operator table
        import op_bench
        op_bench.print_result(r)
        return
    print_pipeline(r)
    if r.get("training"):
        print_training(r["training"])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("json")
    p.add_argument("--short", action="store_true", help="tables only")
    a = p.parse_args(argv)
    with open(a.json) as f:
        print_report(json.load(f), short=a.short)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main())
