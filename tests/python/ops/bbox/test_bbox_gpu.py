"""The GPU variants of bb_flip, coord_flip, coord_transform and box_encoder
against their CPU operators on random batches (empty samples included):
bit-identical (the same float operations in the same order, no contraction),
except box_encoder's offset size terms, where the device logf may be 1 ulp
from the host's: within 1e-6 relative, 1e-6 absolute. Skipped without a GPU;
the kernels' own random comparisons are tests/c/ops/bbox/test_bbox_gpu.c."""

import numpy as np
import pytest

import ladle
from ladle import fn, types
from conftest import requires_ops

pytestmark = [pytest.mark.gpu, requires_ops("bb_flip", "coord_flip", "coord_transform", "box_encoder")]

F32 = np.float32


def run_dev(graph, feeds, device):
    n = len(next(iter(feeds.values())))
    pipe = ladle.Pipeline(batch_size=n, num_threads=2, seed=1, device_id=0)
    with pipe:
        nodes = {k: fn.external_source(name=k, dtype=types.to_dtype(v[0].dtype), ndim=v[0].ndim)
                 for k, v in feeds.items()}
        if device == "gpu":
            nodes = {k: x.gpu() for k, x in nodes.items()}
        out = graph(**nodes)
        outs = out if isinstance(out, tuple) else (out,)
        pipe.set_outputs(*outs)
    try:
        for k, v in feeds.items():
            pipe.feed_input(k, v)
        res = [[np.array((tl.as_cpu() if tl.device == "gpu" else tl).at(i)) for i in range(n)] for tl in pipe.run()]
    finally:
        pipe.close()
    return res


def boxes(rng, counts):
    out = []
    for n in counts:
        a, b = rng.random((n, 2)), rng.random((n, 2))
        out.append(np.concatenate([np.minimum(a, b), np.maximum(a, b)], 1).astype(F32))
    return out


@pytest.mark.parametrize("case", range(5))
def test_gpu_equals_cpu(case):
    rng = np.random.default_rng(case)
    counts = [int(rng.integers(0, 300)) for _ in range(6)] + [0]
    pts = [(rng.normal(size=(n, 3)) * 50).astype(F32) for n in counts]
    ipts = [rng.integers(0, 60000, (n, 2)).astype(np.uint16) for n in counts]
    M = rng.normal(size=(2, 3)).astype(F32).ravel().tolist()
    graphs = [
        (lambda b: fn.bb_flip(b, ltrb=bool(case % 2), horizontal=1, vertical=int(case % 3 != 0)), {"b": boxes(rng, counts)}),
        (lambda p: fn.coord_flip(p, layout="zxy", flip_y=1, center_x=0.1, center_z=3.0), {"p": pts}),
        (lambda p: fn.coord_transform(p, M=M, T=[1.5, -2.0]), {"p": pts}),
        (lambda p: fn.coord_transform(p, M=[0.5, -1.0, 2.0, 0.25], T=[10.5], dtype=types.UINT16), {"p": ipts}),
    ]
    for graph, feeds in graphs:
        cpu, gpu = run_dev(graph, feeds, "cpu"), run_dev(graph, feeds, "gpu")
        for c, g in zip(cpu[0], gpu[0]):
            assert c.shape == g.shape and c.dtype == g.dtype
            np.testing.assert_array_equal(c, g)


@pytest.mark.parametrize("offset", [False, True])
def test_box_encoder_gpu_equals_cpu(offset):
    rng = np.random.default_rng(7)
    anchors = boxes(rng, [8732])[0]
    counts = [int(rng.integers(0, 40)) for _ in range(15)] + [0]
    b = boxes(rng, counts)
    lab = [rng.integers(1, 81, n).astype(np.int32) for n in counts]
    graph = lambda b, l: tuple(fn.box_encoder(b, l, anchors=anchors.ravel().tolist(), criteria=0.5, offset=offset,
                                              scale=300.0, stds=[0.1, 0.1, 0.2, 0.2]))
    cpu, gpu = run_dev(graph, {"b": b, "l": lab}, "cpu"), run_dev(graph, {"b": b, "l": lab}, "gpu")
    for c, g in zip(cpu[1], gpu[1]):
        np.testing.assert_array_equal(c, g)
    for c, g in zip(cpu[0], gpu[0]):
        np.testing.assert_array_equal(c[:, :2], g[:, :2])
        np.testing.assert_allclose(c[:, 2:], g[:, 2:], rtol=1e-6, atol=1e-6)
