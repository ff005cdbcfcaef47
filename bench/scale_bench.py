#!/usr/bin/env python3
"""The cost of readers.file as the data set grows: pipeline build time, time to
the first batch, steady images/s and host memory of ladle and NVIDIA DALI for
trees of N files in ImageNet's layout (1000 class folders), N = 20k, 200k and
1.28M by default, with a warm and a cold page cache.

The trees are hard links of one base set of real JPEGs (made with
make_bench_set.py when --base does not exist yet), file j of the tree being a
link to base file j mod K: listing, sorting and labelling see N distinct paths,
the decoder sees ImageNet-like images, and a tree costs only its directory
entries on disk. A tree is made once and reused (its description sits beside
it, <trees>/n<N>.json).

Every measurement runs in a fresh child process (nothing imported, nothing
cached in the process): the pipeline is readers.file(file_root, random_shuffle)
-> decoders.image_random_crop -> resize 224 -> crop_mirror_normalize (float16
CHW, random mirror), the training graph of bench/loaders.py, on the CPU
(ladle device_id=-1, DALI device_id=None). Measured in the child:
  build_s         from creating the Pipeline to build() returning (the graph,
                  the reader's listing and sorting included)
  first_batch_s   from build() returning to the first run() returning
  images_per_s    the --batches batches after the first
  rss_*_mb        VmRSS after the imports and after build(), VmHWM (peak) at the end
  read_mb         bytes the process read from the block device (getrusage
                  ru_inblock) during build and during the batches: ~0 when the
                  page cache held the files, the files' size when it did not
Memory per file is the slope of RSS after build between the smallest and the
largest N.

Cold cache: before a cold measurement every file's pages are evicted without
root by posix_fadvise(POSIX_FADV_DONTNEED) (after fdatasync) on each distinct
inode of the tree (hard links share one inode and so one set of cached pages:
evicting it once evicts it for every link). That it worked is checked with
mincore(2) on every distinct inode (resident pages before and after eviction,
and after the run) and by the bytes the child read from the disk. Only data
pages go: directory entries and inodes stay cached (dropping those needs root;
--drop-caches also writes 3 to /proc/sys/vm/drop_caches where allowed).

    python3 bench/scale_bench.py --sizes 20000,200000,1280000 --threads 2
    python3 bench/scale_bench.py --base /tmp/imagenet-like/train --sizes 20000,200000   # on the GPU machine

Results: a table and JSON under bench/results/<date>-<host>-<commit>-scale.json (or --json PATH).
"""

import argparse
import ctypes
import ctypes.util
import json
import mmap
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

LIBS = ("ladle", "dali")
DEFAULT_SIZES = [20000, 200000, 1280000]
PAGE = mmap.PAGESIZE


# =========================== the trees =================================================

def base_files(base):
    files, _ = common.list_image_tree(base)
    return [p for p, _ in files]


def make_base(args):
    """Runs make_bench_set.py for --base when it holds no images yet."""
    if os.path.isdir(args.base) and base_files(args.base):
        return None
    tool = args.make_tool or next((t for t in (os.path.join(common.REPO, "..", "shared", "tools", "make_bench_set.py"),
                                               os.path.join(common.REPO, ".bench", "make_bench_set.py"))
                                   if os.path.exists(t)), None)
    photos = args.photos or next((p for p in (os.path.join(common.REPO, "..", "shared", "data", "bench-photos", "root"),
                                              os.path.join(common.REPO, ".bench", "bench-photos", "root"))
                                  if os.path.isdir(p)), None)
    if not tool or not photos:
        raise SystemExit(f"--base {args.base} has no images and make_bench_set.py or its photos are not found "
                         "(give --make-tool and --photos, or see bench/README.md)")
    classes, per_class = args.base_shape
    cmd = [sys.executable, tool, "--root", photos, "-n", str(classes), "-m", str(per_class),
           "-j", str(common.usable_cores()), args.base]
    print("making the base set:", " ".join(cmd), flush=True)
    start = time.perf_counter()
    subprocess.run(cmd, check=True)
    return round(time.perf_counter() - start, 1)


def tree_path(args, n):
    return os.path.join(args.trees, f"n{n}")


def make_tree(args, base, n):
    """<trees>/n<N>: `classes` folders n%08d of N/classes files each (the first
    N mod classes folders one more), file j a hard link to base[j mod K].
    Reused when its description matches. Returns that description."""
    root = tree_path(args, n)
    desc_path = root + ".json"
    want = {"files": n, "classes": args.classes, "base": os.path.abspath(args.base), "base_files": len(base)}
    if os.path.isdir(root) and os.path.exists(desc_path):
        try:
            desc = common.read_json(desc_path)
            if {k: desc.get(k) for k in want} == want:
                return dict(desc, reused=True)
        except (OSError, ValueError):
            pass
    if os.path.exists(root):
        shutil.rmtree(root)
    if os.path.exists(desc_path):
        os.remove(desc_path)
    print(f"making {root}: {n:,} hard links of {len(base):,} files in {args.classes} folders", flush=True)
    start = time.perf_counter()
    tmp = root + ".partial"
    if os.path.exists(tmp):
        shutil.rmtree(tmp)
    os.makedirs(tmp)
    per, extra = divmod(n, args.classes)
    j = 0
    for c in range(args.classes):
        cname = f"n{c:08d}"
        folder = os.path.join(tmp, cname)
        os.mkdir(folder)
        for i in range(per + (c < extra)):
            os.link(base[j % len(base)], os.path.join(folder, f"{cname}_{i}.JPEG"))
            j += 1
    os.rename(tmp, root)
    desc = dict(want, root=root, seconds=round(time.perf_counter() - start, 1), made=common.now_iso())
    common.write_json(desc_path, desc)
    return dict(desc, reused=False)


def distinct_inodes(root):
    """{inode: one path} over the files of a class-per-folder tree (one file system)."""
    out = {}
    for cls in os.scandir(root):
        if cls.is_dir():
            for e in os.scandir(cls.path):
                if e.is_file():
                    out.setdefault(e.inode(), e.path)
    return out


# =========================== the page cache ============================================

_libc = None


def _libc_mincore():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        _libc.mmap.restype = ctypes.c_void_p
        _libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                               ctypes.c_long]
        _libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        _libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    return _libc


def resident_pages(path):
    """(pages of the file in the page cache, pages of the file), by mincore(2)."""
    libc = _libc_mincore()
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return 0, 0
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), f"mmap {path}")
        try:
            pages = (size + PAGE - 1) // PAGE
            vec = ctypes.create_string_buffer(pages)
            if libc.mincore(addr, size, vec) != 0:
                raise OSError(ctypes.get_errno(), f"mincore {path}")
            return sum(b & 1 for b in vec.raw), pages
        finally:
            libc.munmap(addr, size)
    finally:
        os.close(fd)


def residency(paths):
    res = tot = 0
    for p in paths:
        r, t = resident_pages(p)
        res += r
        tot += t
    return {"resident_pages": res, "pages": tot, "resident_fraction": round(res / tot, 4) if tot else None}


def evict(paths):
    """posix_fadvise(DONTNEED) on each file (fdatasync first: dirty pages are not dropped)."""
    start = time.perf_counter()
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    return round(time.perf_counter() - start, 2)


def warm(paths):
    start = time.perf_counter()
    for p in paths:
        with open(p, "rb") as f:
            while f.read(1 << 20):
                pass
    return round(time.perf_counter() - start, 2)


# =========================== the child: one measurement ================================

def _status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return None


def _mb(kb):
    return None if kb is None else round(kb / 1024, 1)


def _inblock_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_inblock * 512 / 1e6


def _cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def child_main(spec):
    """Builds the pipeline of spec["lib"] over spec["root"] and times it."""
    sys.path.insert(0, os.path.join(common.REPO, "python"))
    from loaders import imagenet_graph
    out = {"lib": spec["lib"], "files": spec["files"], "cache": spec["cache"]}
    t = time.perf_counter()
    if spec["lib"] == "ladle":
        lib, reason = common.import_ladle()
        if lib is None:
            return dict(out, skipped=reason)
        from ladle import fn, types
        out["version"] = lib.__version__
        make = lambda: lib.Pipeline(batch_size=spec["batch_size"], num_threads=spec["threads"], device_id=-1,  # noqa: E731
                                    seed=spec["seed"], prefetch_queue_depth=spec["prefetch"])
    else:
        try:
            import nvidia.dali as lib
            from nvidia.dali import fn, types
        except ImportError as e:
            return dict(out, skipped=f"nvidia.dali does not import ({e}); on the GPU machine install it with "
                                     "../shared/tools/dali/")
        out["version"] = lib.__version__
        make = lambda: lib.Pipeline(batch_size=spec["batch_size"], num_threads=spec["threads"], device_id=None,  # noqa: E731
                                    seed=spec["seed"], prefetch_queue_depth=spec["prefetch"])
    out["import_s"] = round(time.perf_counter() - t, 3)
    out["rss_after_import_mb"] = _mb(_status_kb("VmRSS"))

    read0, cpu0 = _inblock_mb(), _cpu_s()
    t0 = time.perf_counter()
    pipe = make()
    with pipe:
        jpegs, labels = fn.readers.file(file_root=spec["root"], random_shuffle=True, name="Reader")
        pipe.set_outputs(imagenet_graph(fn, types, jpegs, "train", "cpu", {}), labels)
    t_graph = time.perf_counter()
    pipe.build()
    t1 = time.perf_counter()
    read1, cpu1 = _inblock_mb(), _cpu_s()
    out["graph_s"] = round(t_graph - t0, 4)
    out["build_s"] = round(t1 - t0, 4)
    out["build_cpu_s"] = round(cpu1 - cpu0, 3)
    out["build_read_mb"] = round(read1 - read0, 1)
    out["rss_after_build_mb"] = _mb(_status_kb("VmRSS"))
    out["epoch_size"] = int(pipe.epoch_size("Reader"))

    first = pipe.run()
    t2 = time.perf_counter()
    n_first = len(first[1])
    del first
    out["first_batch_s"] = round(t2 - t1, 4)
    out["start_to_first_batch_s"] = round(t2 - t0, 4)
    out["first_batch_images"] = n_first
    read2 = _inblock_mb()
    for _ in range(spec["batches"]):
        pipe.run()
    t3 = time.perf_counter()
    out["steady_batches"] = spec["batches"]
    out["steady_s"] = round(t3 - t2, 3)
    out["images_per_s"] = round(spec["batches"] * spec["batch_size"] / (t3 - t2), 1)
    out["first_batch_read_mb"] = round(read2 - read1, 1)
    out["steady_read_mb"] = round(_inblock_mb() - read2, 1)
    out["rss_end_mb"] = _mb(_status_kb("VmRSS"))
    out["rss_peak_mb"] = _mb(_status_kb("VmHWM"))
    out["cpu_s"] = round(_cpu_s(), 2)
    if spec["lib"] == "ladle":
        pipe.close()
    return out


def run_child(args, spec):
    """One measurement in a fresh process; a crash or time-out is the result."""
    with tempfile.TemporaryDirectory(prefix="ladle-scale-") as tmp:
        spec_path, out_path = os.path.join(tmp, "spec.json"), os.path.join(tmp, "out.json")
        common.write_json(spec_path, spec)
        cmd = [sys.executable, os.path.abspath(__file__), "--child", spec_path, "--child-out", out_path]
        env = common.child_env(spec["lib"] == "dali")
        env.setdefault("PYTHONPATH", os.path.join(common.REPO, "python"))
        try:
            proc = subprocess.run(cmd, env=env, timeout=args.child_timeout, capture_output=True, text=True)
        except subprocess.TimeoutExpired:
            return {"failed": f"killed after {args.child_timeout} s (--child-timeout)"}
        if os.path.exists(out_path):
            return common.read_json(out_path)
        tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-5:]
        return {"failed": f"the child exited with {proc.returncode}: " + " | ".join(tail)}


def child_entry(args):
    with open(args.child) as f:
        spec = json.load(f)
    try:
        res = child_main(spec)
    except Exception as e:  # noqa: BLE001 - the failure is the result
        import traceback
        res = {"failed": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()[-2000:]}
    common.write_json(args.child_out, res)
    return 0


# =========================== the parent ================================================

def per_file_bytes(rows, lib, cache="warm"):
    """Slope of RSS after build between the smallest and the largest N."""
    pts = sorted((r["files"], r["rss_after_build_mb"]) for r in rows
                 if r.get("lib") == lib and r.get("cache") == cache and "rss_after_build_mb" in r)
    if len(pts) < 2 or pts[-1][0] == pts[0][0]:
        return None
    (n0, m0), (n1, m1) = pts[0], pts[-1]
    return round((m1 - m0) * 2**20 / (n1 - n0), 1)


def summarize(report):
    rows = report["results"]
    out = {}
    for lib in LIBS:
        s = {"rss_bytes_per_file": per_file_bytes(rows, lib)}
        warm_rows = sorted((r for r in rows if r.get("lib") == lib and r.get("cache") == "warm" and "build_s" in r),
                           key=lambda r: r["files"])
        if len(warm_rows) >= 2:
            a, b = warm_rows[0], warm_rows[-1]
            s["build_us_per_file"] = {str(r["files"]): round(r["build_s"] / r["files"] * 1e6, 2) for r in warm_rows}
            s["build_cpu_us_per_file"] = {str(r["files"]): round(r["build_cpu_s"] / r["files"] * 1e6, 2)
                                          for r in warm_rows}
            s["build_growth"] = {"files_ratio": round(b["files"] / a["files"], 1),
                                 "build_s_ratio": round(b["build_s"] / max(a["build_s"], 1e-9), 1),
                                 "build_cpu_s_ratio": round(b["build_cpu_s"] / max(a["build_cpu_s"], 1e-9), 1)}
        out[lib] = s
    return out


def _n(x, digits=0):
    return "-" if x is None else f"{x:,.{digits}f}"


def print_report(report):
    m = report.get("machine") or {}
    print(f"\nreaders.file at scale, {report['date']}, commit {report['commit']}"
          + (" (+ uncommitted changes)" if report.get("commit_dirty") else ""))
    print(f"machine: {m.get('cpu_model')}, {m.get('usable_cores')} cores, {m.get('memory_gb')} GB; "
          f"batch {report['settings']['batch_size']}, {report['settings']['threads']} threads; "
          f"base {report['data']['base_files']} JPEGs ({report['data'].get('filesystem')})")
    header = ["lib", "files", "cache", "build s", "build CPU s", "first batch s", "images/s", "RSS build MiB", "RSS peak MiB",
              "read MB", "resident after eviction"]
    rows = []
    for r in report["results"]:
        if "failed" in r or "skipped" in r:
            rows.append([r.get("lib", "?"), _n(r.get("files")), r.get("cache", "?"),
                         (r.get("failed") or r.get("skipped"))[:60], "", "", "", "", "", "", ""])
            continue
        ev = r.get("eviction") or {}
        rows.append([r["lib"], _n(r["files"]), r["cache"], _n(r["build_s"], 3), _n(r.get("build_cpu_s"), 3),
                     _n(r["first_batch_s"], 3),
                     _n(r["images_per_s"]), _n(r["rss_after_build_mb"]), _n(r["rss_peak_mb"]),
                     _n(r.get("first_batch_read_mb", 0) + r.get("steady_read_mb", 0)),
                     _n((ev.get("after_evict") or {}).get("resident_fraction"), 3) if ev else "-"])
    widths = [max(len(str(x[i])) for x in [header] + rows) for i in range(len(header))]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    print("-" * (sum(widths) + 2 * len(widths)))
    for row in rows:
        print("  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(row, widths))))
    for lib, s in (report.get("summary") or {}).items():
        print(f"{lib}: RSS after build grows {_n(s.get('rss_bytes_per_file'))} bytes per file"
              + (f"; build time x{s['build_growth']['build_s_ratio']} (CPU x{s['build_growth']['build_cpu_s_ratio']}) "
                 f"for x{s['build_growth']['files_ratio']} files; build CPU per file "
                 + ", ".join(f"{v} us at {int(k):,}" for k, v in s["build_cpu_us_per_file"].items())
                 if s.get("build_growth") else ""))
    la = report.get("load_average_at_start")
    if la:
        print(f"load average {la[0]} at the start and {(report.get('load_average_at_end') or ['?'])[0]} at the end "
              f"on {m.get('usable_cores')} cores (wall times stretch with it; CPU seconds do not)")


def parent_main(args):
    started = common.now_iso()
    commit, dirty, commit_source = common.commit_info()
    base_seconds = make_base(args)
    base = base_files(args.base)
    if not base:
        raise SystemExit(f"no images under --base {args.base}")
    os.makedirs(args.trees, exist_ok=True)
    torch = common.import_torch()[0]
    report = {
        "schema": common.SCHEMA, "kind": "scale", "label": args.label, "date": started,
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "commit": commit, "commit_dirty": dirty, "commit_source": commit_source,
        "command": " ".join([os.path.relpath(sys.argv[0], common.REPO)] + sys.argv[1:]),
        "machine": common.machine_info(torch),  # the GPU's name goes into the file name
        "software": common.software_info(None, torch),
        "data": {"base": os.path.abspath(args.base), "base_files": len(base), "base_made_seconds": base_seconds,
                 "mean_bytes": round(sum(os.path.getsize(p) for p in base) / len(base)),
                 "filesystem": common.filesystem_of(args.trees), "trees": {}},
        "settings": {"sizes": args.sizes, "classes": args.classes, "batch_size": args.batch_size,
                     "threads": args.threads, "batches": args.batches, "prefetch_queue_depth": args.prefetch,
                     "seed": args.seed, "libs": args.libs, "cold": args.cold,
                     "cold_method": "posix_fadvise(POSIX_FADV_DONTNEED) on each distinct inode"
                                    + (" + /proc/sys/vm/drop_caches" if args.drop_caches else ""),
                     "graph": "readers.file(file_root, random_shuffle=True) -> decoders.image_random_crop (cpu) -> "
                              "resize 224x224 -> crop_mirror_normalize float16 CHW, random mirror"},
        "results": [],
    }
    path = args.json or os.path.join(args.out_dir, common.result_name(
        started, args.host or common.host_tag(report["machine"]), commit, args.label or "scale"))
    deadline = common.Deadline(args.time_budget)

    def save():
        report["summary"] = summarize(report)
        report["finished"] = common.now_iso()
        report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
        common.write_json(path, report)

    try:
        ladle_mod, _ = common.import_ladle()
        if ladle_mod is not None:
            report["software"]["ladle"] = ladle_mod.__version__
    except Exception:  # noqa: BLE001 - recorded by the child instead
        pass
    try:
        import nvidia.dali as dali
        report["software"]["dali"] = dali.__version__
    except Exception as e:  # noqa: BLE001 - DALI's measurements then fail with the reason
        report["software"]["dali"] = f"does not import: {type(e).__name__}: {e}"
    print(f"base: {len(base):,} JPEGs in {args.base}; warming them: {warm(base)} s", flush=True)
    for n in args.sizes:
        if deadline.passed():
            for lib in args.libs:
                report["results"].append({"lib": lib, "files": n, "cache": "warm", "skipped": "time budget spent"})
            continue
        tdesc = make_tree(args, base, n)
        report["data"]["trees"][str(n)] = tdesc
        root = tree_path(args, n)
        inodes = list(distinct_inodes(root).values()) if args.cold else []
        caches = ["warm"] + (["cold"] if args.cold else [])
        fs = common.filesystem_of(root)
        if args.cold and fs in ("tmpfs", "ramfs"):
            caches = ["warm"]
            for lib in args.libs:
                report["results"].append({"lib": lib, "files": n, "cache": "cold", "skipped":
                                          f"the trees are on {fs}: its pages are the files, they cannot be evicted"})
        for cache in caches:
            for lib in args.libs:
                if deadline.passed():
                    report["results"].append({"lib": lib, "files": n, "cache": cache, "skipped": "time budget spent"})
                    continue
                spec = {"lib": lib, "root": root, "files": n, "cache": cache, "batch_size": args.batch_size,
                        "threads": args.threads, "batches": args.batches, "seed": args.seed,
                        "prefetch": args.prefetch}
                ev = None
                if cache == "warm":  # the files' data and the tree's directories (a cold run before may have dropped them)
                    warm(base)
                    distinct_inodes(root)
                else:
                    ev = {"distinct_inodes": len(inodes), "before": residency(inodes)}
                    ev["evict_seconds"] = evict(inodes)
                    ev["after_evict"] = residency(inodes)
                    if args.drop_caches:  # last: the residency check looks the files up again
                        ev["drop_caches"] = common.drop_caches() or "done"
                res = run_child(args, spec)
                res.setdefault("lib", lib)
                res.setdefault("files", n)
                res.setdefault("cache", cache)
                if ev is not None:
                    ev["after_run"] = residency(inodes)
                    res["eviction"] = ev
                report["results"].append(res)
                print(_line(res), flush=True)
                save()
    save()
    print_report(report)
    print(f"\nwrote {path}")
    return 1 if any("failed" in r for r in report["results"]) else 0


def _line(r):
    head = f"  {r['lib']:5} {r['files']:>9,} {r['cache']}: "
    if "failed" in r or "skipped" in r:
        return head + (r.get("failed") or r.get("skipped"))
    ev = r.get("eviction")
    return head + (f"build {r['build_s']:.3f} s, first batch {r['first_batch_s']:.3f} s, "
                   f"{r['images_per_s']:,.0f} images/s, RSS {r['rss_after_build_mb']:,.0f} MiB after build, "
                   f"peak {r['rss_peak_mb']:,.0f} MiB, read {r['first_batch_read_mb'] + r['steady_read_mb']:,.0f} MB"
                   + (f"; resident before {ev['before']['resident_fraction']}, after eviction "
                      f"{ev['after_evict']['resident_fraction']}, after the run {ev['after_run']['resident_fraction']}"
                      if ev else ""))


def parse_args(argv=None):
    cores = common.usable_cores()
    ints = lambda s: [int(float(x)) for x in s.split(",") if x]  # noqa: E731 - "1.28e6" is allowed
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--base", default="/tmp/ladle-scale/base", help="folder of base JPEGs (made when missing)")
    p.add_argument("--base-shape", type=ints, default=[1000, 3], metavar="CLASSES,PER_CLASS",
                   help="make_bench_set.py -n and -m when the base set is made (default 1000,3)")
    p.add_argument("--make-tool", default=None, help="make_bench_set.py (default: ../shared/tools or .bench)")
    p.add_argument("--photos", default=None, help="its --root (default: ../shared/data/bench-photos/root or .bench)")
    p.add_argument("--trees", default="/tmp/ladle-scale", help="where the trees of hard links go")
    p.add_argument("--sizes", type=ints, default=DEFAULT_SIZES, help="numbers of files, e.g. 20000,200000,1280000")
    p.add_argument("--classes", type=int, default=1000)
    p.add_argument("--libs", type=lambda s: [x for x in s.split(",") if x], default=list(LIBS))
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--threads", type=int, default=cores)
    p.add_argument("--batches", type=int, default=8, help="batches timed after the first")
    p.add_argument("--prefetch", type=int, default=2, help="prefetch_queue_depth of both")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-cold", dest="cold", action="store_false", help="warm page cache only")
    p.add_argument("--drop-caches", action="store_true", help="also drop the page cache (needs root)")
    p.add_argument("--child-timeout", type=float, default=600)
    p.add_argument("--time-budget", type=float, default=0, help="seconds; later measurements are skipped past it")
    p.add_argument("--json", default=None)
    p.add_argument("--out-dir", default=common.RESULTS_DIR)
    p.add_argument("--host", default=None)
    p.add_argument("--label", default=None, help="tag in the file name (default: scale)")
    p.add_argument("--report", metavar="JSON", help="print the table of a result file and exit")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--child-out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    unknown = set(args.libs) - set(LIBS)
    if unknown:
        p.error(f"--libs: unknown {', '.join(sorted(unknown))} (choose from {', '.join(LIBS)})")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.child:
        return child_entry(args)
    if args.report:
        print_report(common.read_json(args.report))
        return 0
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
