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
