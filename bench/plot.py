#!/usr/bin/env python3
"""Draws a PNG chart from a benchmark result file: images/s per loader (bars at
the median, whiskers from the slowest to the fastest pass); training images/s
per data source against the synthetic-data upper bound, when the file has
training figures; ladle's images/s against threads and batch size, when it
has scaling figures.

    python3 bench/plot.py bench/results/<file>.json [-o chart.png]

Needs matplotlib (Debian: python3-matplotlib).
"""

import argparse
import json
import os
import sys

LADLE = "#d9822b"
PEER = "#7f8c9a"
DALI = "#76b900"  # NVIDIA green
SYNTH = "#4a6fa5"


def _title(r):
    m = r.get("machine") or {}
    gpu = (m.get("gpu") or {}).get("name")
    d = (r.get("data") or {}).get("train") or {}
    head = f"ladle {r.get('commit')}{' (dirty)' if r.get('commit_dirty') else ''}, {str(r.get('date'))[:10]}"
    if r.get("label"):
        head += f" [{r['label']}]"
    where = f"{m.get('cpu_model')}, {m.get('usable_cores')} cores" + (f", {gpu}" if gpu else ", no GPU")
    data = (f"{d['images']:,} JPEGs, {d.get('mean_bytes', 0) / 1000:.0f} KB / {d.get('mean_pixels', 0) / 1000:.0f} kpx "
            f"mean, page cache warm" if d else "")
    return f"{head}\n{where}\n{data}".strip()


def _ok(x):
    return isinstance(x, dict) and isinstance(x.get("images_per_s"), dict)


def loader_panel(ax, r):
    res = [(k, v) for k, v in (r.get("results") or {}).items() if _ok(v)]
    if not res:
        ax.text(0.5, 0.5, "no pipeline figures", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return
    labels, med, lo, hi, colors = [], [], [], [], []
    for name, x in res:
        ips = x["images_per_s"]
        extra = f"  ({x['pipeline']}, {x['threads']} thr)" if x["loader"] != "torchvision" or x["decode"] != "gpu" \
            else f"  ({x['pipeline']})"
        labels.append(name + extra)
        med.append(ips["median"])
        lo.append(ips["median"] - ips["min"])
        hi.append(ips["max"] - ips["median"])
        colors.append({"ladle": LADLE, "dali": DALI}.get(x["loader"], PEER))
    # A whisker far beyond every median (a pass timed while a loader's queue was
    # still full) would squash the bars: clip it at the axis and mark it.
    limit = max(med) * 1.3
    clipped = [m + h > limit for m, h in zip(med, hi)]
    hi = [min(h, limit - m) for m, h in zip(med, hi)]
    labels = [label + (" (max clipped)" if c else "") for label, c in zip(labels, clipped)]
    y = list(range(len(res)))[::-1]
    ax.barh(y, med, xerr=[lo, hi], color=colors, capsize=3, edgecolor="black", linewidth=0.4)
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_xlabel("images/s (median of timed passes; whiskers: min-max)")
    top = max(m + h for m, h in zip(med, hi))
    for yy, m, h in zip(y, med, hi):
        ax.text(m + h + top * 0.015, yy, f"{m:,.0f}", va="center", fontsize=8)
    ax.set_xlim(0, top * 1.18)
    batch = res[0][1]["batch_size"]
    ax.set_title(f"input pipeline throughput, batch {batch}", fontsize=10)
    comp = (r.get("comparisons") or {}).get("cpu")
    if comp:
        ax.text(0.99, 0.02, f"CPU, {comp['workers']} workers: ladle / torchvision = {comp['ratio']}x",
                transform=ax.transAxes, ha="right", va="bottom", fontsize=8)


def training_figures(t):
    """{arch: {backend: (median, min, max)}} from the training loop, else from train.py."""
    out = {}
    for arch, b in (t.get("runs") or {}).items():
        for backend, x in b.items():
            if _ok(x):
                ips = x["images_per_s"]
                out.setdefault(arch, {})[backend] = (ips["median"], ips["min"], ips["max"])
    if out:
        return out, "bench/train_bench.py loop"
    for arch, b in (t.get("script") or {}).items():
        if isinstance(b, dict):
            for backend, x in b.items():
                if isinstance(x, dict) and x.get("perf"):
                    out.setdefault(arch, {})[backend] = (x["perf"], x["perf"], x["perf"])
    return out, "examples/imagenet/train.py ##Perf"


def training_panel(ax, t):
    figs, source = training_figures(t)
    order = ["synthetic", "ladle", "pytorch"]
    colors = {"synthetic": SYNTH, "ladle": LADLE, "dali": DALI, "pytorch": PEER}
    archs = list(figs)
    width = 0.8 / len(order)
    for i, backend in enumerate(order):
        xs, med, lo, hi = [], [], [], []
        for j, arch in enumerate(archs):
            if backend in figs[arch]:
                m, a, b = figs[arch][backend]
                xs.append(j + (i - 1) * width)
                med.append(m)
                lo.append(m - a)
                hi.append(b - m)
        if xs:
            ax.bar(xs, med, width, yerr=[lo, hi], color=colors[backend], label=backend, capsize=3,
                   edgecolor="black", linewidth=0.4)
            for x, m, h, arch in zip(xs, med, hi, [a for a in archs if backend in figs[a]]):
                synth = figs[arch].get("synthetic")
                note = f"{m:,.0f}" + (f"\n{m / synth[0]:.0%}" if synth and backend != "synthetic" else "")
                ax.text(x, m + h, note, ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(archs)))
    ax.set_xticklabels(archs)
    ax.set_ylabel("training images/s")
    ax.margins(y=0.2)
    ax.legend(fontsize=8, loc="upper left")
    mode = "CPU SMOKE TEST, float32" if t.get("cpu_smoke_test") else "AMP"
    ax.set_title(f"training, {mode} + channels-last, batch {t.get('batch_size')} ({source}); % = of synthetic",
                 fontsize=10)


def scaling_panel(ax, r, axis):
    for dev, axes in (r.get("scaling") or {}).items():
        pts = sorted((int(k), v["images_per_s"]["median"], v["images_per_s"]["min"], v["images_per_s"]["max"])
                     for k, v in (axes.get(axis) or {}).items() if _ok(v))
        if not pts:
            continue
        xs = [p[0] for p in pts]
        ax.errorbar(xs, [p[1] for p in pts], yerr=[[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]],
                    marker="o", capsize=3, label=f"ladle {dev}")
        for x, m in zip(xs, [p[1] for p in pts]):
            ax.annotate(f"{m:,.0f}", (x, m), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=7)
    ax.set_xscale("log", base=2)
    ticks = sorted({int(k) for axes in (r.get("scaling") or {}).values() for k in (axes.get(axis) or {})})
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(t) for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("num_threads" if axis == "threads" else "batch size")
    ax.set_ylabel("images/s")
    ax.set_ylim(bottom=0)
    ax.margins(y=0.2)
    ax.legend(fontsize=8)
    ax.set_title(f"ladle scaling with {'threads' if axis == 'threads' else 'batch size'}", fontsize=10)


def ops_chart(plt, r, out):
    """bench/op_bench.py's result: Gpix/s per operator, ladle beside DALI (log scale)."""
    rows = [x for x in r.get("ops") or [] if (x.get("ladle") or {}).get("gpix_per_s")]
    if not rows:
        print("plot.py: no operator figures in the file", file=sys.stderr)
        return 1
    fig, ax = plt.subplots(figsize=(10, 0.28 * len(rows) + 1.8))
    y = list(range(len(rows)))[::-1]
    lad = [x["ladle"]["gpix_per_s"] for x in rows]
    dal = [(x.get("dali") or {}).get("gpix_per_s") or 0 for x in rows]
    ax.barh([v + 0.2 for v in y], lad, height=0.4, color=LADLE, label="ladle", edgecolor="black", linewidth=0.3)
    if any(dal):
        ax.barh([v - 0.2 for v in y], dal, height=0.4, color=DALI, label=f"DALI {r['software'].get('dali')}",
                edgecolor="black", linewidth=0.3)
    ax.set_yticks(y)
    ax.set_yticklabels([x["id"] + (f"  ({x['ratio']:.2f}x)" if x.get("ratio") else "") for x in rows], fontsize=7)
    ax.set_xscale("log")
    s = r.get("settings") or {}
    ax.set_xlabel(f"Gpix/s of input pixels (median of {s.get('passes')} passes; ladle/DALI in brackets)")
    ax.set_title(_title(r).split("\n")[0] + f"\nper-operator throughput, {str(s.get('device')).upper()}, batch "
                 f"{s.get('batch')}, {(r.get('data') or {}).get('mean_pixels', 0) / 1000:.0f} kpx images", fontsize=9)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"chart: {out}")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("json")
    p.add_argument("-o", "--out", help="PNG path (default: the JSON's path with .png)")
    a = p.parse_args(argv)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot.py: matplotlib is not installed (Debian: apt-get install python3-matplotlib); no chart made",
              file=sys.stderr)
        return 2
    with open(a.json) as f:
        r = json.load(f)
    if r.get("kind") == "op-bench":
        return ops_chart(plt, r, a.out or os.path.splitext(a.json)[0] + ".png")
    t = r.get("training") or {}
    has_train = bool(training_figures(t)[0])
    has_scaling = any(_ok(v) for axes in (r.get("scaling") or {}).values() for pts in axes.values()
                      for v in pts.values())
    n_loaders = sum(1 for v in (r.get("results") or {}).values() if _ok(v))
    heights = [max(2.5, 0.45 * n_loaders + 1.2)] + ([3.6] if has_train else []) + ([3.2] if has_scaling else [])
    fig = plt.figure(figsize=(10, sum(heights) + 1.3))
    grid = fig.add_gridspec(len(heights), 2, height_ratios=heights, hspace=0.6, wspace=0.25)
    loader_panel(fig.add_subplot(grid[0, :]), r)
    row = 1
    if has_train:
        training_panel(fig.add_subplot(grid[row, :]), t)
        row += 1
    if has_scaling:
        scaling_panel(fig.add_subplot(grid[row, 0]), r, "threads")
        scaling_panel(fig.add_subplot(grid[row, 1]), r, "batch_size")
    fig.suptitle(_title(r), fontsize=9)
    out = a.out or os.path.splitext(a.json)[0] + ".png"
    fig.savefig(out, dpi=110, bbox_inches="tight")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
