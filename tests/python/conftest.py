"""Shared fixtures of the Python tests: the sample data, op availability, and
skipping of tests marked `gpu` where no CUDA device can be used."""

import os
import sys

import numpy as np
import pytest

try:
    import ladle
except ImportError:  # run from a checkout: use the in-tree package (built with -DLADLE_PYTHON=ON)
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
    import ladle

from ladle import fn
from ladle.pipeline import op_schemas

TOOLS = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
if TOOLS not in sys.path:
    sys.path.append(TOOLS)  # tools/torchrun_env.py (run_ranks)


def cuda_usable():
    info = ladle.build_info()
    return bool(info.get("cuda_compiled")) and int(info.get("cuda_devices", 0)) > 0


def sample_jpegs():
    """The package's 32 sample JPEGs as (class index, bytes), sorted."""
    root = ladle.sample_data_root()
    out = []
    for label, cls in enumerate(sorted(os.listdir(root))):
        for f in sorted(os.listdir(os.path.join(root, cls))):
            with open(os.path.join(root, cls, f), "rb") as fh:
                out.append((label, fh.read()))
    return out


def photo_chw(h, w, seed):
    """A uint8 [3, H, W] NumPy image like a photo: gradients plus noise (the
    torchvision tests' images)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255 / w, y * 255 / h, (x + y) * 127 / (h + w)], 0)
    return np.clip(base + rng.normal(0, 30, (3, h, w)), 0, 255).astype(np.uint8)


def requires_ops(*names):
    """Skips a test until the C library registers every operator in `names`."""
    missing = [n for n in names if n not in op_schemas()]
    return pytest.mark.skipif(bool(missing), reason=f"operator(s) not registered yet: {', '.join(missing)}")


def dali_or_skip():
    """NVIDIA DALI (the reference of the differential tests), or a skip saying how to get it."""
    try:
        import nvidia.dali  # noqa: F401
    except ImportError:
        pytest.skip("NVIDIA DALI is not installed (pip install nvidia-dali-cuda130): differential test skipped")
    import nvidia.dali.fn
    import nvidia.dali.types

    return nvidia.dali


def run_both(graph, feeds, batch_size, iterations=1, seed=None, device_id=None, **pipe_args):
    """Runs the same graph in ladle and in DALI (on the CPU, device_id=None;
    device_id=0 lets both use the GPU: tests/python/dali/test_dali_gpu.py)
    and returns (ladle_outputs, dali_outputs): per output, the list of samples
    (NumPy copies) of all iterations.

    graph(fn, types, **inputs) builds the outputs from external sources named
    by `feeds` (name -> list of per-iteration batches, each a list of arrays
    or an [N, ...] array; every source gets the layout of its first array's
    rank: HWC for 3-D). Skips when DALI is absent."""
    dali = dali_or_skip()
    import nvidia.dali.fn as dfn
    import nvidia.dali.types as dtypes

    results = []
    for lib_fn, lib_types, make in ((fn, ladle.types, lambda: ladle.Pipeline(batch_size=batch_size, num_threads=2,
                                                                             device_id=device_id, seed=seed or 0,
                                                                             **pipe_args)),
                                    (dfn, dtypes, lambda: dali.Pipeline(batch_size=batch_size, num_threads=2,
                                                                       device_id=device_id, seed=seed or 0,
                                                                       **pipe_args))):
        pipe = make()
        with pipe:
            nodes = {}
            for name, batches in feeds.items():
                first = np.asarray(batches[0][0])  # a sample
                layout = "HWC" if first.ndim == 3 else ""
                nodes[name] = lib_fn.external_source(name=name, dtype=_to_types(lib_types, first.dtype),
                                                     ndim=first.ndim, layout=layout or None)
            outs = graph(lib_fn, lib_types, **nodes)
            outs = outs if isinstance(outs, tuple) else (outs,)
            pipe.set_outputs(*outs)
        pipe.build()
        got = [[] for _ in outs]
        for it in range(iterations):
            for name, batches in feeds.items():
                b = batches[it]  # an [N, ...] array goes in whole (N samples of rank 0 for [N])
                pipe.feed_input(name, np.ascontiguousarray(b) if isinstance(b, np.ndarray)
                                else [np.asarray(x, order="C") for x in b])  # (keeps 0-d samples 0-d)
            for k, tl in enumerate(pipe.run()):
                if hasattr(tl, "as_cpu"):  # GPU outputs (ladle's CPU ones return themselves)
                    tl = tl.as_cpu()
                got[k] += [np.array(tl.at(i)) for i in range(len(tl))]
        if lib_fn is fn:
            pipe.close()
        else:
            del pipe
        results.append(got if len(got) > 1 else got[0])
    return tuple(results)


def _to_types(lib_types, dtype):
    names = {"uint8": "UINT8", "int8": "INT8", "int16": "INT16", "uint16": "UINT16", "int32": "INT32",
             "uint32": "UINT32", "int64": "INT64", "uint64": "UINT64", "float16": "FLOAT16", "float32": "FLOAT",
             "float64": "FLOAT64", "bool": "BOOL"}
    return getattr(lib_types, names[np.dtype(dtype).name])


def pytest_collection_modifyitems(config, items):
    if cuda_usable():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (ladle.build_info() reports none)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def sample_root():
    return ladle.sample_data_root()


@pytest.fixture
def pipe_factory():
    """Makes Pipelines and closes them at the end of the test."""
    made = []

    def make(**kwargs):
        kwargs.setdefault("batch_size", 4)
        kwargs.setdefault("num_threads", 2)
        p = ladle.Pipeline(**kwargs)
        made.append(p)
        return p

    yield make
    for p in made:
        p.close()


def run_graph(graph, batch_size, paths=None, iterations=1, **pipe_args):
    """Builds a pipeline: readers.file(files=paths) -> graph(encoded) (or
    graph() without paths) and returns, per output, the list of samples
    (NumPy copies) of all iterations."""
    pipe_args.setdefault("num_threads", 2)
    pipe = ladle.Pipeline(batch_size=batch_size, **pipe_args)
    try:
        with pipe:
            if paths is not None:
                encoded, _ = fn.readers.file(files=[str(p) for p in paths])
                outs = graph(encoded)
            else:
                outs = graph()
            outs = outs if isinstance(outs, tuple) else (outs,)
            pipe.set_outputs(*outs)
        result = [[] for _ in outs]
        for _ in range(iterations):
            for k, tl in enumerate(pipe.run()):
                result[k] += [np.array(tl.at(i)) for i in range(len(tl))]
    finally:
        pipe.close()
    return result if len(result) > 1 else result[0]


def run_script(script, args, env=None, timeout=300, omp_threads="1"):
    """Runs a Python script (an example's train.py) with the in-tree package on
    PYTHONPATH; returns its output (stdout and stderr), failing the test with it
    when the script exits non-zero."""
    import subprocess

    python_dir = os.path.dirname(os.path.dirname(os.path.abspath(ladle.__file__)))
    env = dict(os.environ if env is None else env, OMP_NUM_THREADS=omp_threads)
    env["PYTHONPATH"] = python_dir + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, script] + list(args), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=timeout)
    out = proc.stdout.decode(errors="replace")
    assert proc.returncode == 0, out
    return out


def run_ranks(argv, world, log_dir, timeout):
    """Starts `world` processes of `argv` with torchrun's environment (torch
    1.13's torchrun itself fails on Python 3.11) and the in-tree package on
    PYTHONPATH; returns their exit codes and outputs, or fails the test on a
    hang, showing the outputs. Output goes to files, not pipes: a rank blocked
    on a full pipe that nobody reads would stall the others in a collective."""
    import subprocess

    from torchrun_env import free_port, rank_env

    port = free_port()
    python_dir = os.path.dirname(os.path.dirname(os.path.abspath(ladle.__file__)))
    procs, logs = [], []
    for rank in range(world):
        env = rank_env(os.environ, rank, world, port)
        env["PYTHONPATH"] = python_dir + os.pathsep + env.get("PYTHONPATH", "")
        logs.append(open(os.path.join(str(log_dir), f"rank{rank}.log"), "w+b"))
        procs.append(subprocess.Popen([sys.executable] + list(argv), env=env, stdout=logs[-1],
                                      stderr=subprocess.STDOUT))
    hung = False
    for p in procs:
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            hung = True
            for q in procs:
                q.kill()
            break
    outs = []
    for log in logs:
        log.seek(0)
        outs.append(log.read().decode(errors="replace"))
        log.close()
    if hung:
        pytest.fail("a rank hung; output:\n" + "\n----\n".join(o[-3000:] for o in outs))
    return [p.returncode for p in procs], outs
