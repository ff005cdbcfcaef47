#!/usr/bin/env python3
"""Images per second of the SSD-style detection input pipeline
(examples/detection/train.py: readers.coco -> random_bbox_crop -> decode +
slice -> bb_flip -> resize -> hsv -> brightness_contrast ->
crop_mirror_normalize, boxes and labels as ragged lists), and training
images/s of the reference detector with each data source.

Loaders (each skipped, with the reason, where it cannot run):
  ladle-mixed     ladle, decoding on the GPU (device="mixed"), GPU operators
  ladle-cpu       ladle's CPU pipeline, batches copied to the GPU when there is one
  dali-mixed      NVIDIA DALI 2.4, the same graph, decoding on the GPU
  dali-cpu        DALI's CPU operators, the same graph
  ladle-mixed-pipe, dali-mixed-pipe
                  the mixed pipelines alone: pipe.run() per batch, its outputs left where
                  they are (no iterator, no per-image box tensors, no copies): how much of
                  the loader's time is the pipeline's
  ladle-mixed-iter, dali-mixed-iter
                  the training script's ragged iterator alone (images one tensor, boxes and
                  labels lists of per-image tensors), without the targets the script builds
                  from them and copies to the GPU: how much is the iterator's
  NAME@hw=X, NAME@bal=adaptive
                  a mixed loader with the decoder's hw_decoder_load or (ladle) decoder_balance
  tv-dataloader   torchvision CocoDetection + transforms v2 (RandomIoUCrop, flip, Resize,
                  ColorJitter, Normalize) + DataLoader(num_workers = --threads); with
                  torchvision < 0.16 or without pycocotools, the same augmentation with v1 ops

Every loader is the training script's own (train.make_loader), on the same
files, with the same threads (num_threads = num_workers) and batch size. A
figure is the median of --passes timed passes of --pass-images images after a
warm-up pass; each loader runs in a child process (a crash is recorded, the
others still run). --train also runs train.py for --train-iters iterations
per data source (and synthetic data: the model's own speed) and records its
##Perf (images/s over the run, leaving out the first print interval).

    python3 tools/make_coco_data.py /tmp/coco-bench -n 2000 -j 16
    python3 bench/detection_bench.py --data /tmp/coco-bench --threads 16 --batch-size 64 --train

Without --data, --make N generates a set of N images first (in /tmp/ladle-coco-bench).
Results: a table, and JSON under bench/results/<date>-<host>-<commit>-detection.json (or --json).
"""

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
from common import (Deadline, cpu_seconds_between, cpu_times, executor_statistics, process_tree,  # noqa: E402
                    spread, stats_between)

TRAIN = os.path.join(common.REPO, "examples", "detection", "train.py")
LOADERS = {  # name: train.py's --data-backend
    "ladle-mixed": "ladle",
    "ladle-cpu": "ladle-cpu",
    "dali-mixed": "dali",
    "dali-cpu": "dali-cpu",
    "tv-dataloader": "pytorch",
    "ladle-mixed-pipe": "ladle",
    "dali-mixed-pipe": "dali",
    "ladle-mixed-iter": "ladle",
    "dali-mixed-iter": "dali",
}
NAME_OPTIONS = {"hw": "--hw-decoder-load", "bal": "--decoder-balance"}
def split_name(name):
    """ "ladle-mixed@bal=adaptive" -> ("ladle-mixed", ["--decoder-balance", "adaptive"]): the loader and the
    train.py options its name sets; ValueError for an unknown loader or option."""
    base, *options = name.split("@")
    argv = []
    for opt in options:
        key, _, value = opt.partition("=")
        if key not in NAME_OPTIONS or not value or "-mixed" not in base:  # only mixed decoders have these
            raise ValueError(name)
        argv += [NAME_OPTIONS[key], value]
    if base not in LOADERS:
        raise ValueError(name)
    return base, argv


DEFAULT_LOADERS = ("ladle-mixed", "ladle-cpu", "dali-mixed", "dali-cpu", "tv-dataloader")
TRAIN_SOURCES = ("synthetic", "ladle", "ladle-cpu", "dali", "pytorch")


def load_train():
    spec = importlib.util.spec_from_file_location("detection_train", TRAIN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Unavailable(Exception):
    pass


class PipelineAlone:
    """The *-pipe loaders: the pipeline's batches as they come out of run()."""

    def __init__(self, pipe):
        self.pipe = pipe

    def next(self):
        return self.pipe.run(), None


class IteratorAlone:
    """The *-iter loaders: the training script's ragged iterator, its batches as it gives them."""

    def __init__(self, loader):
        self.it = loader.it

    def next(self):
        try:
            return next(self.it)[0], None
        except StopIteration:  # the epoch ended (auto_reset began the next one)
            return next(self.it)[0], None


# =========================== child: one loader ===========================

def make(train, torch, name, spec):
    """(loader, description, dev) of one loader, or Unavailable."""
    cuda = torch.cuda.is_available()
    name, options = split_name(name)  # "@hw=0.9", "@bal=adaptive": the mixed decoder's arguments
    backend = LOADERS[name]
    argv = [spec["data"], "-b", str(spec["batch_size"]), "-j", str(spec["threads"]), "--image-size",
            str(spec["image_size"]), "--data-backend", backend, "--seed", "0"] + options
    if not cuda:
        argv.append("--cpu")
    if spec.get("encode_boxes"):
        argv.append("--encode-boxes")
    args = train.parse_args(argv)
    dev = train.Dist(not cuda)
    if "-mixed" in name and not cuda:
        raise Unavailable("no CUDA device")
    if name.startswith("ladle"):
        missing = train.ladle_missing_ops("mixed" if name.startswith("ladle-mixed") else "cpu")
        if missing:
            raise Unavailable(f"ladle has no {', '.join(missing)} yet")
    if name.startswith("dali"):
        try:
            import nvidia.dali  # noqa: F401
        except ImportError as e:
            raise Unavailable(f"NVIDIA DALI does not import: {e}")
    anchors = None
    if args.encode_boxes:  # SSD300's default boxes (8732 at 300 x 300)
        anchors = train.default_boxes(train.make_model(args.arch, 6, args.image_size), args.image_size)
    if name.endswith(("-pipe", "-iter")):
        lib = "dali" if name.startswith("dali") else "ladle"
        pipe = train.build_pipeline(lib, args, dev, "mixed", anchors=anchors)
        if name.endswith("-pipe"):
            return PipelineAlone(pipe), f"{lib} pipeline alone, decoding on mixed (run() per batch)", dev
        iterator = IteratorAlone(train.PipelineLoader(lib, pipe, dev, args.image_size, encoded=anchors is not None))
        return iterator, f"{lib} ragged iterator alone, decoding on mixed (no targets)", dev
    loader, desc = train.make_loader(args, dev, backend, anchors)
    return loader, desc, dev


def measure(spec):
    import torch

    train = load_train()
    name, batch = spec["loader"], spec["batch_size"]
    loader, desc, dev = make(train, torch, name, spec)
    cuda = dev.device.type == "cuda"

    def sync():
        if cuda:
            torch.cuda.synchronize()

    start = time.perf_counter()
    images, targets = loader.next()
    sync()
    first = time.perf_counter() - start
    if isinstance(loader, (PipelineAlone, IteratorAlone)):
        output = {"pipeline_outputs": len(images)}
    else:
        output = {"images": [int(d) for d in images.shape], "dtype": str(images.dtype).replace("torch.", ""),
                  "device": str(images.device)}
    if isinstance(targets, tuple):  # encoded: (offsets [N, A, 4], labels [N, A])
        output["matched_anchors_per_image"] = round(float((targets[1] > 0).sum()) / len(targets[1]), 2)
    elif targets is not None:  # the *-pipe and *-iter loaders have none
        output["boxes_per_image"] = round(sum(len(t["boxes"]) for t in targets) / max(1, len(targets)), 2)
    n_batches = max(spec["pass_images"] // batch, 4)
    count, t0 = 1, time.perf_counter()
    while count < max(n_batches, 6) or time.perf_counter() - t0 < 1.0:  # warm-up: drains what was read ahead
        loader.next()
        count += 1
    sync()
    rates, cpu_total, wall_total = [], 0.0, 0.0
    stats0 = executor_statistics(loader)
    for _ in range(spec["passes"]):
        before = cpu_times(process_tree())
        t0 = time.perf_counter()
        for _ in range(n_batches):
            loader.next()
        sync()
        dt = time.perf_counter() - t0
        cpu_total += cpu_seconds_between(before, cpu_times(process_tree()))
        wall_total += dt
        rates.append(n_batches * batch / dt)
    ips = spread(rates)
    busy = cpu_total / wall_total if wall_total else None
    executor = stats_between(stats0, executor_statistics(loader), wall_total)
    return {"loader": name, "backend": LOADERS[split_name(name)[0]], "description": desc, "batch_size": batch,
            "threads": spec["threads"], "image_size": spec["image_size"], "first_batch_s": round(first, 3),
            "images_per_pass": n_batches * batch, "passes": len(rates), "images_per_s": ips,
            "cores_busy": round(busy, 2) if busy is not None else None,
            "images_per_s_per_thread": round(ips["median"] / spec["threads"], 1), "output": output,
            **({"executor": executor} if executor else {})}


def child_main(args):
    with open(args.child) as f:
        spec = json.load(f)
    try:
        res = measure(spec)
    except Unavailable as e:
        res = {"skipped": str(e)}
    except SystemExit as e:  # train.py's clear refusals (e.g. what transforms v2 needs)
        res = {"skipped": str(e)}
    except Exception as e:  # noqa: BLE001 - recorded as this loader's result
        res = {"failed": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()[-2000:]}
    common.write_json(args.child_out, res)
    return 0


# =========================== parent ===========================

def run_child(args, spec, deadline):
    with tempfile.TemporaryDirectory(prefix="ladle-detbench-") as tmp:
        spec_path, out_path = os.path.join(tmp, "spec.json"), os.path.join(tmp, "out.json")
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        cmd = [sys.executable, os.path.abspath(__file__), "--child", spec_path, "--child-out", out_path]
        env = common.child_env(spec["loader"].startswith("dali"))
        try:
            rc = subprocess.run(cmd, env=env, timeout=max(10.0, min(args.loader_timeout, deadline.left()))).returncode
        except subprocess.TimeoutExpired:
            return {"failed": "killed: it ran past its time limit"}
        if os.path.exists(out_path):
            return common.read_json(out_path)
        return {"failed": f"crashed: the child process exited with {rc}"}


def run_training(args, source, deadline):
    """train.py for --train-iters iterations with one data source; its ##Perf."""
    import torch

    cuda = torch.cuda.is_available()
    backend = {"synthetic": "synthetic"}.get(source, source)
    iters = args.train_iters
    cmd = [sys.executable, TRAIN, args.data, "-a", args.arch, "-b", str(args.train_batch_size), "-j",
           str(args.train_threads), "--image-size", str(args.image_size), "--data-backend", backend,
           "--iters-per-epoch", str(iters), "-p", str(max(1, iters // 3)), "--warmup-iters", str(iters)]
    cmd += ["--amp", "--channels-last"] if cuda else ["--cpu"]
    cmd += ["--encode-boxes"] if args.encode_boxes else []
    cmd += ["--no-eval"]  # images/s only
    env = common.child_env(source.startswith("dali"))
    env["PYTHONPATH"] = os.path.join(common.REPO, "python") + (os.pathsep + env["PYTHONPATH"]
                                                              if env.get("PYTHONPATH") else "")
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=max(10.0, min(args.train_timeout, deadline.left())))
    except subprocess.TimeoutExpired:
        return {"failed": "killed: it ran past --train-timeout"}
    out = proc.stdout
    perf = re.search(r"^##Perf ([\d.]+)$", out, re.M)
    first = next((line for line in out.splitlines() if line.startswith("=>")), "")
    if proc.returncode != 0 or not perf:
        last = out.strip().splitlines()[-1] if out.strip() else ""
        key = "skipped" if "has no" in last or "not installed" in last else "failed"
        return {key: last[-400:] or f"exit code {proc.returncode}", "command": " ".join(cmd[1:])}
    return {"images_per_s": float(perf.group(1)), "iterations": iters, "seconds": round(time.perf_counter() - start, 1),
            "log_first_lines": [line for line in out.splitlines() if line.startswith("=>")],
            "backend_line": first, "command": " ".join(os.path.relpath(c, common.REPO) if c == TRAIN else c
                                                       for c in cmd[1:])}


def describe_set(root):
    ann = os.path.join(root, "annotations", "instances.json")
    with open(ann) as f:
        doc = json.load(f)
    images = doc["images"]
    return {"root": os.path.abspath(root), "images": len(images), "objects": len(doc["annotations"]),
            "mean_width": round(sum(i["width"] for i in images) / len(images), 1),
            "mean_height": round(sum(i["height"] for i in images) / len(images), 1),
            "mean_bytes": round(sum(os.path.getsize(os.path.join(root, "images", i["file_name"]))
                                    for i in images) / len(images)),
            "generator": doc.get("info", {}).get("generator")}


def comparisons(results, training):
    def ips(name):
        r = results.get(name) or {}
        return (r.get("images_per_s") or {}).get("median")

    out = {}
    for a, b in (("ladle-mixed", "dali-mixed"), ("ladle-mixed", "tv-dataloader"), ("ladle-cpu", "dali-cpu"),
                 ("ladle-cpu", "tv-dataloader")):
        if ips(a) and ips(b):
            out[f"{a}/{b}"] = round(ips(a) / ips(b), 2)
    syn = (training.get("synthetic") or {}).get("images_per_s")
    for source, r in training.items():
        if syn and source != "synthetic" and r.get("images_per_s"):
            out[f"train {source}/synthetic"] = round(r["images_per_s"] / syn, 3)
    return out


def print_table(report):
    print(f"\n{'loader':<16} {'images/s':>10} {'min':>9} {'max':>9} {'cores busy':>10}  what")
    for name, r in report["results"].items():
        if "images_per_s" in r:
            s = r["images_per_s"]
            print(f"{name:<16} {s['median']:>10,.1f} {s['min']:>9,.1f} {s['max']:>9,.1f} {r['cores_busy']!s:>10}  "
                  f"{r['description']}")
            if r.get("executor"):
                e = r["executor"]
                ops = ", ".join(f"{o['op']}({o['device']}{', ' + o['stage'] if o.get('stage') else ''}) "
                                f"{o['share']:.2f}" + (f" (setup {o['setup_share']:.2f})" if o.get("setup_share") else "")
                                for o in e["operators"] if o["share"] >= 0.01)
                stages = (f" (host stage {e['host_stage_share']:.2f}, device stage {e['device_stage_share']:.2f})"
                          if e.get("device_stage_share") else "")
                print(f"{'':<16} executor: preparing {e['prepare_share']:.2f} of the wall time{stages}, run() waiting "
                      f"{e['wait_share']:.2f}, GPU waited for {e.get('gpu_wait_share', 0):.2f}; host time per "
                      f"operator: {ops}")
        else:
            print(f"{name:<16} {'-':>10} {'':>9} {'':>9} {'':>10}  {r.get('skipped') or r.get('failed')}")
    if report["training"]:
        print(f"\n{'training with':<16} {'images/s':>10}  ({report['settings']['arch']}, batch "
              f"{report['settings']['train_batch_size']})")
        for name, r in report["training"].items():
            value = f"{r['images_per_s']:>10,.1f}" if "images_per_s" in r else f"{'-':>10}  " + \
                str(r.get("skipped") or r.get("failed"))
            print(f"{name:<16} {value}")
    for k, v in report["comparisons"].items():
        print(f"  {k}: {v}")


def parent_main(args):
    if not args.data:
        args.data = "/tmp/ladle-coco-bench"
        if not os.path.exists(os.path.join(args.data, "annotations", "instances.json")) or args.make:
            sys.path.insert(0, os.path.join(common.REPO, "tools"))
            import make_coco_data

            make_coco_data.main([args.data, "-n", str(args.make or 1000), "-j", str(args.threads)])
    if not os.path.exists(os.path.join(args.data, "annotations", "instances.json")):
        raise SystemExit(f"--data {args.data}: no annotations/instances.json (make one with tools/make_coco_data.py)")
    started = common.now_iso()
    commit, dirty, commit_source = common.commit_info()
    ladle, _ = common.import_ladle()
    torch, torchvision, _ = common.import_torch()
    data = describe_set(args.data)
    print(f"{data['root']}: {data['images']} images, {data['objects']} objects, "
          f"{data['mean_width']:.0f}x{data['mean_height']:.0f} and {data['mean_bytes'] / 1000:.0f} KB on average",
          flush=True)
    report = {"schema": common.SCHEMA, "kind": "detection", "label": args.label, "date": started,
              "commit": commit, "commit_dirty": dirty, "commit_source": commit_source,
              "command": " ".join([os.path.relpath(sys.argv[0], common.REPO)] + sys.argv[1:]),
              "machine": common.machine_info(torch), "software": common.software_info(ladle, torch, torchvision),
              "data": data,
              "settings": {"batch_size": args.batch_size, "threads": args.threads, "image_size": args.image_size,
                           "encode_boxes": args.encode_boxes,
                           "passes": args.passes, "pass_images": args.pass_images, "arch": args.arch,
                           "train_batch_size": args.train_batch_size, "train_threads": args.train_threads,
                           "train_iters": args.train_iters},
              "results": {}, "training": {}}
    path = args.json or os.path.join(args.out_dir, common.result_name(
        started, args.host or common.host_tag(report["machine"]), commit, "detection" + (
            f"-{args.label}" if args.label else "")))
    deadline = Deadline(args.time_budget)

    def save():
        report["comparisons"] = comparisons(report["results"], report["training"])
        common.write_json(path, report)

    for name in [x.strip() for x in args.loaders.split(",") if x.strip()]:
        try:
            split_name(name)
        except ValueError:
            raise SystemExit(f"unknown loader {name}; choose from {', '.join(LOADERS)} (a mixed one may end with "
                             "@hw=X and, for ladle, @bal=adaptive)") from None
        if deadline.passed():
            report["results"][name] = {"skipped": "time budget spent"}
            continue
        spec = {"loader": name, "data": args.data, "batch_size": args.batch_size, "threads": args.threads,
                "image_size": args.image_size, "passes": args.passes, "pass_images": args.pass_images,
                "encode_boxes": args.encode_boxes}
        res = run_child(args, spec, deadline)
        report["results"][name] = res
        print(f"  {name}: " + (f"{res['images_per_s']['median']:,.1f} images/s" if "images_per_s" in res
                               else str(res.get("skipped") or res.get("failed"))), flush=True)
        save()
    if args.train:
        for source in [x.strip() for x in args.train_sources.split(",") if x.strip()]:
            if deadline.passed():
                report["training"][source] = {"skipped": "time budget spent"}
                continue
            res = run_training(args, source, deadline)
            report["training"][source] = res
            print(f"  train {source}: " + (f"{res['images_per_s']:,.1f} images/s" if "images_per_s" in res
                                           else str(res.get("skipped") or res.get("failed"))), flush=True)
            save()
    report["finished"] = common.now_iso()
    save()
    print_table(report)
    print(f"\nwrote {path}")
    return 1 if any("failed" in r for r in list(report["results"].values()) + list(report["training"].values())) \
        else 0


def parse_args(argv=None):
    cores = common.usable_cores()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--data", default=None, help="a COCO-format set (DIR/images, DIR/annotations/instances.json)")
    p.add_argument("--make", type=int, default=0, help="without --data: generate N images first (default 1000)")
    p.add_argument("--threads", type=int, default=cores, help=f"num_threads = num_workers (default {cores})")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--image-size", type=int, default=300)
    p.add_argument("--passes", type=int, default=5)
    p.add_argument("--pass-images", type=int, default=1024, help="images per timed pass")
    p.add_argument("--loaders", default=",".join(DEFAULT_LOADERS), help="comma-separated: " + ", ".join(LOADERS))
    p.add_argument("--encode-boxes", action="store_true",
                   help="the pipeline ends with box_encoder on SSD300's 8732 default boxes (train.py --encode-boxes; "
                        "tv-dataloader: torchvision's matcher in the workers)")
    p.add_argument("--loader-timeout", type=float, default=300, help="seconds per loader")
    p.add_argument("--train", action="store_true", help="also training images/s of train.py per data source")
    p.add_argument("--train-sources", default=",".join(TRAIN_SOURCES))
    p.add_argument("--arch", default="ssd300_vgg16")
    p.add_argument("--train-batch-size", type=int, default=32)
    p.add_argument("--train-threads", type=int, default=max(2, cores - 4))
    p.add_argument("--train-iters", type=int, default=60)
    p.add_argument("--train-timeout", type=float, default=240)
    p.add_argument("--time-budget", type=float, default=0, help="seconds; later measurements are skipped past it")
    p.add_argument("--json", default=None)
    p.add_argument("--out-dir", default=common.RESULTS_DIR)
    p.add_argument("--host", default=None)
    p.add_argument("--label", default=None)
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--child-out", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    return child_main(args) if args.child else parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
