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


def requires_ops(*names):
    """Skips a test until the C library registers every operator in `names`."""
    missing = [n for n in names if n not in op_schemas()]
    return pytest.mark.skipif(bool(missing), reason=f"operator(s) not registered yet: {', '.join(missing)}")


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


def run_ranks(argv, world, log_dir, timeout):
    """Starts `world` processes of `argv` with torchrun's environment (torch
    1.13's torchrun itself fails on Python 3.11) and the in-tree package on
    PYTHONPATH; returns their exit codes and outputs, or fails the test on a
    hang, showing the outputs. Output goes to files, not pipes: a rank blocked
    on a full pipe that nobody reads would stall the others in a collective."""
    import socket
    import subprocess

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    python_dir = os.path.dirname(os.path.dirname(os.path.abspath(ladle.__file__)))
    procs, logs = [], []
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world),
                   LOCAL_WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=port, OMP_NUM_THREADS="1")
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
