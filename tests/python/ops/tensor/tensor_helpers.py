"""Runs a graph over fed batches in ladle (CPU or GPU) or in DALI (CPU),
returning per output the samples and the layout: the tensor tests' harness."""

import numpy as np

import ladle
from conftest import _to_types, dali_or_skip, cuda_usable

_DEVICE = 0 if cuda_usable() else None  # GPU cases need a device; CPU ones run either way


def run_lib(lib, graph, feeds, batch_size, device="cpu", layouts=None):
    """lib: "ladle" or "dali". feeds: name -> list of arrays (one batch).
    graph(fn, types, **nodes). Returns [(samples, layout)] per output."""
    layouts = layouts or {}
    if lib == "dali":
        dali = dali_or_skip()
        import nvidia.dali.fn as lib_fn
        import nvidia.dali.types as lib_types

        pipe = dali.Pipeline(batch_size=batch_size, num_threads=1, device_id=None)
    else:
        lib_fn, lib_types = ladle.fn, ladle.types
        pipe = ladle.Pipeline(batch_size=batch_size, num_threads=2, seed=0, device_id=_DEVICE)
    with pipe:
        nodes = {}
        for name, batch in feeds.items():
            first = np.asarray(batch[0])
            node = lib_fn.external_source(name=name, dtype=_to_types(lib_types, first.dtype), ndim=first.ndim,
                                          layout=layouts.get(name, ""))
            nodes[name] = node.gpu() if device == "gpu" and not name.startswith("host_") else node
        outs = graph(lib_fn, lib_types, **nodes)
        outs = outs if isinstance(outs, (tuple, list)) else (outs,)
        pipe.set_outputs(*outs)
    pipe.build()
    for name, batch in feeds.items():
        pipe.feed_input(name, [np.ascontiguousarray(x) for x in batch])
    result = []
    for tl in pipe.run():
        if hasattr(tl, "as_cpu") and (lib == "dali" or tl.device == "gpu"):
            tl = tl.as_cpu()
        result.append(([np.array(tl.at(i)) for i in range(len(tl))], tl.layout() or ""))
    if lib == "ladle":
        pipe.close()
    else:
        del pipe
    return result


def ragged(rng, dtype, shapes):
    """Random samples of the given shapes and dtype."""
    out = []
    for s in shapes:
        if np.dtype(dtype).kind == "f":
            out.append(rng.standard_normal(s).astype(dtype) * 10)
        else:
            info = np.iinfo(dtype)
            out.append(rng.integers(max(info.min, -1000), min(info.max, 1000), size=s, endpoint=True).astype(dtype))
    return out


def assert_same(got, want):
    """Outputs of run_lib equal: samples (values, shapes, dtypes) and layouts."""
    assert len(got) == len(want)
    for (g_samples, g_layout), (w_samples, w_layout) in zip(got, want):
        assert g_layout == w_layout
        assert len(g_samples) == len(w_samples)
        for g, w in zip(g_samples, w_samples):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)


def check_error(graph, feeds, layouts, *words):
    """Building or running the graph fails with a message naming all `words`."""
    import pytest

    with pytest.raises(ladle.Error) as info:
        run_lib("ladle", graph, feeds, len(next(iter(feeds.values()))), layouts=layouts)
    for w in words:
        assert w in str(info.value), (w, str(info.value))
