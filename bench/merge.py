#!/usr/bin/env python3
"""Merges result files of separate runs (say, a pipeline run and a training run
made in two calls to the GPU machine) into one file for plot.py and the README.

    python3 bench/merge.py first.json second.json [...] -o merged.json

The first file gives the header (date, commit, machine, data); figures a later
file has and the first lacks are added (pipeline results, scaling points, cold
runs, training); with --later-wins a later file's figures replace earlier ones.
It warns when the files come from different commits or machines.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402


def _has_figure(x):
    return isinstance(x, dict) and "images_per_s" in x


def _machine(doc):
    m = doc.get("machine") or {}
    return (m.get("gpu") or {}).get("name"), m.get("cpu_model")


def merge_into(base, other, later_wins):
    for section in ("results", "cold"):
        dst = base.setdefault(section, {})
        for k, v in (other.get(section) or {}).items():
            if k not in dst or (later_wins and _has_figure(v)) or (not _has_figure(dst[k]) and _has_figure(v)):
                dst[k] = v
    for dev, axes in (other.get("scaling") or {}).items():
        mine = base.setdefault("scaling", {}).setdefault(dev, {})
        for axis, pts in axes.items():
            dst = mine.setdefault(axis, {})
            for k, v in pts.items():
                if k not in dst or (later_wins and _has_figure(v)) or (not _has_figure(dst[k]) and _has_figure(v)):
                    dst[k] = v
    t = other.get("training")
    if t and (later_wins or not (base.get("training") or {}).get("runs") or not base.get("training")):
        if t.get("runs") or t.get("script") or not base.get("training"):
            base["training"] = t


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="+")
    p.add_argument("-o", "--out", required=True)
    p.add_argument("--later-wins", action="store_true")
    a = p.parse_args(argv)
    docs = [common.read_json(f) for f in a.files]
    base = json.loads(json.dumps(docs[0]))
    for path, doc in zip(a.files[1:], docs[1:]):
        if doc.get("commit") != base.get("commit"):
            print(f"warning: {path} is from commit {doc.get('commit')}, the first file from {base.get('commit')}")
        if _machine(doc) != _machine(base):
            print(f"warning: {path} was measured on another machine: {_machine(doc)} vs {_machine(base)}")
        merge_into(base, doc, a.later_wins)
    base["merged_from"] = [{"file": os.path.basename(f), "date": d.get("date"), "commit": d.get("commit"),
                            "kind": d.get("kind")} for f, d in zip(a.files, docs)]
    if "results" in base:
        import pipeline_bench
        base["comparisons"] = pipeline_bench.comparisons(base)
    common.write_json(a.out, base)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
