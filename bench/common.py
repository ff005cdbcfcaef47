"""Helpers shared by the benchmark programs: importing ladle and torch when
present, machine facts, CPU time and memory of this process and its children,
medians with their spread, and result files."""

import datetime
import json
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_DIR = os.path.join(REPO, "bench", "results")
SCHEMA = "ladle-bench/1"

# ImageNet's normalization in 8-bit units (ladle, DALI) and in [0, 1] units (torchvision).
MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]
MEAN_255 = [m * 255 for m in MEAN]
STD_255 = [s * 255 for s in STD]
IMAGENET_TRAIN_IMAGES = 1281167


def import_ladle():
    """(ladle module, None) or (None, the reason it cannot be imported).
    An installed ladle wins; otherwise the in-tree package under python/."""
    try:
        import ladle
        return ladle, None
    except ImportError:
        pass
    sys.path.insert(0, os.path.join(REPO, "python"))
    try:
        import ladle
        return ladle, None
    except ImportError as e:
        return None, f"ladle does not import: {e}"


def import_torch():
    """(torch, torchvision, reason): either module may be None, with the reason."""
    try:
        import torch
    except ImportError as e:
        return None, None, f"torch does not import: {e}"
    try:
        import torchvision
    except ImportError as e:
        return torch, None, f"torchvision does not import: {e}"
    return torch, torchvision, None


def cuda_ready(torch):
    return torch is not None and torch.cuda.is_available()


# --- machine ---------------------------------------------------------------

def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def usable_cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _mem_total_gb():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def _nvidia_smi(query):
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip().splitlines()[0].strip() if out.returncode == 0 and out.stdout.strip() else None
    except (OSError, subprocess.SubprocessError):
        return None


def machine_info(torch=None):
    info = {
        "hostname": socket.gethostname(),
        "cpu_model": _cpu_model(),
        "logical_cores": os.cpu_count(),
        "usable_cores": usable_cores(),
        "memory_gb": _mem_total_gb(),
        "kernel": platform.release(),
        "gpu": None,
    }
    if cuda_ready(torch):
        props = torch.cuda.get_device_properties(0)
        info["gpu"] = {
            "name": props.name,
            "count": torch.cuda.device_count(),
            "memory_gb": round(props.total_memory / 2**30, 1),
            "capability": f"{props.major}.{props.minor}",
            "multiprocessors": props.multi_processor_count,
            "driver": _nvidia_smi("driver_version"),
            "cuda_runtime_of_torch": torch.version.cuda,
        }
    return info


def software_info(ladle=None, torch=None, torchvision=None):
    info = {"python": platform.python_version()}
    try:
        import numpy
        info["numpy"] = numpy.__version__
    except ImportError:
        pass
    try:
        import PIL
        info["pillow"] = PIL.__version__
    except ImportError:
        pass
    if torch is not None:
        info["torch"] = torch.__version__
    if torchvision is not None:
        info["torchvision"] = torchvision.__version__
    if ladle is not None:
        info["ladle"] = ladle.__version__
        try:
            info["ladle_build"] = ladle.build_info()
        except Exception as e:  # noqa: BLE001 - recorded, not fatal
            info["ladle_build"] = f"build_info() failed: {e}"
    try:
        out = subprocess.run(["nvcc", "--version"], capture_output=True, text=True, timeout=20)
        m = re.search(r"release ([\d.]+)", out.stdout)
        if m:
            info["nvcc"] = m.group(1)
    except (OSError, subprocess.SubprocessError):
        pass
    return info


def host_tag(machine):
    """A short name for the machine in result file names: "h200" or the host name."""
    gpu = machine.get("gpu")
    if gpu:
        name = gpu["name"].lower().replace("nvidia", "").strip()
        return re.sub(r"[^a-z0-9]+", "-", name).strip("-") or "gpu"
    return re.sub(r"[^A-Za-z0-9]+", "-", machine["hostname"]).strip("-")[:24] or "host"


def commit_info():
    """(commit, dirty, source): $LADLE_COMMIT when set (the GPU machine's copy of
    .git can lag behind the tree sent to it), else git when this is a checkout,
    else .bench/COMMIT (written by tools/fetch-bench-data), else "unknown"."""
    env = os.environ.get("LADLE_COMMIT", "").strip()
    if env:
        return env.split("+")[0], env.endswith("+dirty"), "LADLE_COMMIT"
    try:
        out = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=20)
        if out.returncode == 0 and out.stdout.strip():
            status = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                                    capture_output=True, text=True, timeout=20)
            return out.stdout.strip(), bool(status.stdout.strip()), "git"
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        with open(os.path.join(REPO, ".bench", "COMMIT")) as f:
            text = f.read().strip()
        if text:
            return text.split("+")[0], text.endswith("+dirty"), ".bench/COMMIT (as of tools/fetch-bench-data)"
    except OSError:
        pass
    return "unknown", None, "none"


# --- CPU time and memory of this process tree --------------------------------

_CLK = os.sysconf("SC_CLK_TCK")


def process_tree(root=None):
    """This process and all its descendants (DataLoader workers), as pids."""
    root = root or os.getpid()
    pids, i = [root], 0
    while i < len(pids):
        pid = pids[i]
        i += 1
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    pids.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    if len(pids) == 1 and not os.path.exists(f"/proc/{root}/task/{root}/children"):
        pids = _tree_by_scan(root)
    return pids


def _tree_by_scan(root):
    """The same, for kernels without /proc/*/task/*/children: parents from /proc/*/stat."""
    parent = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    parent[int(name)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    pids, i = [root], 0
    while i < len(pids):
        pids.extend(p for p, pp in parent.items() if pp == pids[i])
        i += 1
    return pids


def cpu_times(pids):
    """{pid: user + system CPU seconds so far}."""
    out = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            out[pid] = (int(fields[11]) + int(fields[12])) / _CLK  # utime, stime
        except (OSError, IndexError, ValueError):
            pass
    return out


def cpu_seconds_between(before, after):
    """CPU seconds spent between two cpu_times() snapshots (new processes count from 0)."""
    return sum(t - before.get(pid, 0.0) for pid, t in after.items())


def host_memory_mb(pids):
    """(RSS summed over the processes, PSS summed, or None where unreadable), in MiB.
    RSS counts pages shared by forked workers once per worker; PSS shares them out."""
    rss = 0
    pss = 0
    pss_ok = True
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        rss += int(line.split()[1])
                        break
        except OSError:
            continue
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        pss += int(line.split()[1])
                        break
        except OSError:
            pss_ok = False
    return round(rss / 1024, 1), (round(pss / 1024, 1) if pss_ok else None)


def gpu_used_mb(torch):
    """Device memory in use on GPU 0 by everyone (cudaMemGetInfo), in MiB, or None."""
    if not cuda_ready(torch):
        return None
    free, total = torch.cuda.mem_get_info(0)
    return round((total - free) / 2**20, 1)


def drop_caches():
    """None when the page cache was dropped, else why it could not be."""
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return None
    except OSError as e:
        return f"cannot drop the page cache: {e}"


# --- figures -----------------------------------------------------------------

def child_env(dali):
    """The environment of a benchmark child process. DALI's get its CUDA libraries
    ($LADLE_BENCH_DALI_LIBS, set by tools/gpu-run) on LD_LIBRARY_PATH; ladle's keep
    the system's nvJPEG."""
    env = dict(os.environ)
    libs = env.get("LADLE_BENCH_DALI_LIBS")
    if dali and libs:
        env["LD_LIBRARY_PATH"] = libs + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


class GpuUtilization:
    """Samples `nvidia-smi dmon -s u` (once a second) while a measurement runs:
    mean and max of each column (sm, mem, enc, dec, jpg, ofa: percent busy) over
    the samples seen between start() and stop(). None where nvidia-smi is absent."""

    def __init__(self, gpu=0):
        self.gpu, self.proc, self.rows, self.columns = gpu, None, [], None
        self.thread = None

    def start(self):
        import threading
        try:
            self.proc = subprocess.Popen(["nvidia-smi", "dmon", "-s", "u", "-d", "1", "-i", str(self.gpu)],
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            self.proc = None
            return self
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        return self

    def _read(self):
        for line in self.proc.stdout:
            fields = line.split()
            if line.startswith("#") and self.columns is None and "gpu" in fields:
                self.columns = fields[1:]
            elif fields and not line.startswith("#") and self.columns:
                self.rows.append(fields)

    def stop(self):
        if self.proc is None:
            return None
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.thread.join(timeout=5)
        if not self.rows or not self.columns:
            return None
        out = {"samples": len(self.rows)}
        for i, name in enumerate(self.columns[1:], start=1):
            values = [float(r[i]) for r in self.rows if i < len(r) and r[i].replace(".", "", 1).isdigit()]
            if values:
                out[name] = {"mean": round(sum(values) / len(values), 1), "max": max(values)}
        return out


def spread(values, digits=1):
    """Median, min, max and the values themselves."""
    if not values:
        return None
    return {
        "median": round(statistics.median(values), digits),
        "min": round(min(values), digits),
        "max": round(max(values), digits),
        "n": len(values),
        "values": [round(v, digits) for v in values],
    }


class Deadline:
    """A time budget in seconds (0 or None: no limit)."""

    def __init__(self, seconds):
        self.end = time.monotonic() + seconds if seconds else None

    def left(self):
        return float("inf") if self.end is None else self.end - time.monotonic()

    def passed(self):
        return self.left() <= 0


# --- result files --------------------------------------------------------------

def now_iso():
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


def result_name(date_iso, host, commit, tag=None):
    day = date_iso[:10]
    return f"{day}-{host}-{commit}" + (f"-{tag}" if tag else "") + ".json"


def write_json(path, obj):
    """Writes atomically, so a run killed mid-write leaves the previous version."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def read_json(path):
    with open(path) as f:
        return json.load(f)


# --- data sets ------------------------------------------------------------------

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png")


def list_image_tree(root):
    """[(path, label)] for a folder with one subfolder per class, labels in sorted
    class order (as ImageFolder and fn.readers.file assign them)."""
    classes = sorted(d.name for d in os.scandir(root) if d.is_dir())
    files = []
    for label, cls in enumerate(classes):
        folder = os.path.join(root, cls)
        for name in sorted(os.listdir(folder)):
            if name.lower().endswith(IMAGE_EXTENSIONS):
                files.append((os.path.join(folder, name), label))
    return files, classes


def filesystem_of(path):
    """The file system type the path lives on (from /proc/mounts), e.g. "ext4", "tmpfs"."""
    path = os.path.realpath(path)
    best, fstype = "", "unknown"
    try:
        with open("/proc/mounts") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3:
                    mnt = parts[1]
                    if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best):
                        best, fstype = mnt, parts[2]
    except OSError:
        pass
    return fstype


def describe_data(root, read_all=True):
    """Count, mean file size and pixels of an image tree; reads every file once
    (after which the page cache is warm) when read_all."""
    files, classes = list_image_tree(root)
    desc = {"root": os.path.abspath(root), "images": len(files), "classes": len(classes),
            "filesystem": filesystem_of(root)}
    if not files:
        return desc, files
    total = 0
    start = time.perf_counter()
    for path, _ in files:
        if read_all:
            with open(path, "rb") as f:
                total += len(f.read())
        else:
            total += os.path.getsize(path)
    elapsed = time.perf_counter() - start
    desc["mean_bytes"] = round(total / len(files))
    desc["total_mb"] = round(total / 1e6, 1)
    if read_all:
        desc["read_all_seconds"] = round(elapsed, 2)
        desc["read_all_mb_per_s"] = round(total / 1e6 / max(elapsed, 1e-9))
    stats_path = os.path.join(root, "stats.json")
    stats = None
    if os.path.exists(stats_path):
        try:
            stats = read_json(stats_path)
        except (OSError, ValueError):
            stats = None
    if stats and stats.get("images") == len(files):
        desc["mean_width"] = round(stats["mean_width"], 1)
        desc["mean_height"] = round(stats["mean_height"], 1)
        desc["mean_pixels"] = round(stats["mean_pixels"])
        desc["generator"] = {k: stats[k] for k in ("preset", "seed", "q_range", "grain_range", "pillow")
                             if k in stats}
        desc["generator"]["tool"] = "make_bench_set.py"
    else:
        try:
            from PIL import Image
            step = max(1, len(files) // 2000)  # headers only; a sample is enough for a mean
            sizes = []
            for path, _ in files[::step]:
                with Image.open(path) as im:
                    sizes.append(im.size)
            desc["mean_width"] = round(sum(w for w, _ in sizes) / len(sizes), 1)
            desc["mean_height"] = round(sum(h for _, h in sizes) / len(sizes), 1)
            desc["mean_pixels"] = round(sum(w * h for w, h in sizes) / len(sizes))
            desc["pixels_from"] = f"headers of {len(sizes)} files"
        except ImportError:
            pass
    return desc, files


# --- ladle's executor statistics over a timed stretch ---

def executor_statistics(loader):
    """ladle's executor_statistics() of a loader's pipeline (its `pipe`), or None (DALI, torchvision)."""
    pipe = getattr(loader, "pipe", None)
    return pipe.executor_statistics() if hasattr(pipe, "executor_statistics") else None


LEVELS = {"hw_share_per_mille"}  # counters that are a level (the value now), not a count to difference


def stats_between(before, after, wall):
    """Where ladle's executor spent the timed passes: its preparing and waiting
    seconds, each stage thread's busy seconds (a pipeline with GPU operators runs
    in two stages: preparing is their sum, so its share may pass 1) and each
    operator's seconds (host time: a GPU operator's is the time to queue its
    work), as shares of the passes' wall time."""
    if not before or not after or not wall:
        return None
    ops = []
    for a, b in zip(before["operators"], after["operators"]):
        secs = b["seconds"] - a["seconds"]
        setup = b.get("setup_seconds", 0) - a.get("setup_seconds", 0)
        ops.append({"op": b["op"], "device": b["device"], "stage": b.get("stage"), "seconds": round(secs, 4),
                    "share": round(secs / wall, 3), "setup_share": round(setup / wall, 3),
                    **({"inline_passes": b["inline_passes"] - a["inline_passes"],
                        "cpu_passes": b["cpu_passes"] - a["cpu_passes"]} if "cpu_passes" in b else {}),
                    **({"counters": {k: v if k in LEVELS else v - a["counters"].get(k, 0)
                                     for k, v in b["counters"].items()}}
                       if b.get("counters") else {})})
    return {"iterations": after["iterations"] - before["iterations"],
            "prepare_share": round((after["prepare_seconds"] - before["prepare_seconds"]) / wall, 3),
            "wait_share": round((after["wait_seconds"] - before["wait_seconds"]) / wall, 3),
            **{f"{k}_stage_share": round((after[f"{k}_stage_seconds"] - before[f"{k}_stage_seconds"]) / wall, 3)
               for k in ("host", "device")},
            "gpu_wait_share": round((after["gpu_wait_seconds"] - before["gpu_wait_seconds"]) / wall, 3),
            "operators": ops}
