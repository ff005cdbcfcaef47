"""The segmentation family: random_mask_pixel, random_object_bbox and
select_masks, each against a NumPy reference written here (the foreground
set, connected blobs found by a breadth-first search, the polygon
selection) and against DALI 2.4 (run_both): exactly where the result is
determined (one object, a mask without foreground, select_masks), by the
properties and frequencies of the draws where it is random (the random
streams differ). Bad arguments name the operator and the argument."""

import collections

import numpy as np
import pytest

import ladle
from ladle import fn

from conftest import dali_or_skip, requires_ops, run_both

pytestmark = requires_ops("segmentation.random_mask_pixel", "segmentation.random_object_bbox",
                          "segmentation.select_masks")


def tup(outs):
    """DALI returns several outputs as a list, ladle as a tuple: run_both wants a tuple."""
    return tuple(outs) if isinstance(outs, list) else outs


def run_ladle(graph, feeds, batch_size, seed=0):
    """graph(**nodes) in a ladle pipeline fed `feeds` (name -> list of arrays); per output, the samples."""
    pipe = ladle.Pipeline(batch_size=batch_size, num_threads=2, seed=seed)
    try:
        with pipe:
            nodes = {k: fn.external_source(name=k, dtype=getattr(ladle.types, {"uint8": "UINT8", "int32": "INT32",
                                                                               "float32": "FLOAT", "int16": "INT16",
                                                                               "int64": "INT64"}[v[0].dtype.name]),
                                           ndim=v[0].ndim) for k, v in feeds.items()}
            outs = graph(**nodes)
            outs = outs if isinstance(outs, tuple) else (outs,)
            pipe.set_outputs(*outs)
        for k, v in feeds.items():
            pipe.feed_input(k, v)
        return [[np.array(t.at(i)) for i in range(len(t))] for t in pipe.run()]
    finally:
        pipe.close()


def blobs(mask, background=0):
    """The 2N-connected blobs of equal labels: [(label, lo, hi, pixels)] in order of first pixel."""
    seen = np.zeros(mask.shape, bool)
    out = []
    for start in zip(*np.nonzero(mask != background)):
        if seen[start]:
            continue
        label, queue, pix = mask[start], [start], []
        seen[start] = True
        while queue:
            p = queue.pop()
            pix.append(p)
            for d in range(mask.ndim):
                for step in (-1, 1):
                    q = list(p)
                    q[d] += step
                    q = tuple(q)
                    if 0 <= q[d] < mask.shape[d] and not seen[q] and mask[q] == label:
                        seen[q] = True
                        queue.append(q)
        pix = np.array(pix)
        out.append((int(label), pix.min(0).tolist(), (pix.max(0) + 1).tolist(), len(pix)))
    return out


# --- random_mask_pixel --------------------------------------------------------------------------

def mask_2d():
    m = np.zeros((7, 9), np.uint8)
    m[1:3, 2:5] = 1
    m[5, 6] = 2
    m[4, 0:2] = 3
    return m


@pytest.mark.parametrize("kw, fg", [
    (dict(foreground=1), lambda m: m > 0),
    (dict(foreground=1, value=1), lambda m: m == 1),
    (dict(foreground=1, threshold=1.5), lambda m: m > 1.5),
    (dict(), lambda m: np.ones(m.shape, bool)),
    (dict(foreground=1, value=9), lambda m: np.ones(m.shape, bool)),  # no such pixel: any pixel, as DALI
])
def test_random_mask_pixel_draws_uniformly_from_the_foreground(kw, fg):
    m = mask_2d()
    want = {tuple(p) for p in np.argwhere(fg(m))}
    n = 60 * len(want)
    got = run_ladle(lambda x: fn.segmentation.random_mask_pixel(x, **kw), {"x": [m] * n}, n)[0]
    assert all(g.dtype == np.int64 and g.shape == (2,) for g in got)
    counts = collections.Counter(tuple(g.tolist()) for g in got)
    assert set(counts) == want  # every foreground pixel, nothing else
    # Uniform: each of k pixels ~ Binomial(n, 1/k); 60 expected, a 6-sigma band.
    sigma = np.sqrt(n / len(want) * (1 - 1 / len(want)))
    assert all(abs(c - n / len(want)) < 6 * sigma for c in counts.values())
    dali_or_skip()
    _, dgot = run_both(lambda fn, types, x: fn.segmentation.random_mask_pixel(x, **kw), {"x": [[m] * 200]}, 200)
    assert {tuple(g.tolist()) for g in dgot} <= want and all(g.dtype == np.int64 for g in dgot)


def test_random_mask_pixel_any_rank_and_type():
    v = np.zeros((3, 4, 5), np.float32)
    v[2, 1, 3] = 0.75
    got = run_ladle(lambda x: fn.segmentation.random_mask_pixel(x, foreground=1, threshold=0.5), {"x": [v] * 4}, 4)[0]
    assert all(g.tolist() == [2, 1, 3] for g in got)
    fg = run_ladle(lambda x, f: fn.segmentation.random_mask_pixel(x, foreground=f),
                   {"x": [v] * 2, "f": [np.array(1, np.int32), np.array(0, np.int32)]}, 2)[0]
    assert fg[0].tolist() == [2, 1, 3]  # per-sample foreground
    _, dali = run_both(lambda fn, types, x: fn.segmentation.random_mask_pixel(x, foreground=1, threshold=0.5),
                       {"x": [[v] * 4]}, 4)
    assert all(g.tolist() == [2, 1, 3] for g in dali)


def test_random_mask_pixel_bad_arguments():
    with pytest.raises(ladle.InvalidArgumentError, match="random_mask_pixel.*'value' and 'threshold'"):
        run_ladle(lambda x: fn.segmentation.random_mask_pixel(x, value=1, threshold=0.5), {"x": [mask_2d()]}, 1)


# --- random_object_bbox -------------------------------------------------------------------------

def label_map(seed, shape=(12, 14), labels=3):
    rng = np.random.default_rng(seed)
    m = np.zeros(shape, np.int32)
    for _ in range(6):
        lo = [int(rng.integers(0, s - 1)) for s in shape]
        hi = [int(l + rng.integers(1, 5)) for l in lo]
        m[tuple(slice(l, h) for l, h in zip(lo, hi))] = int(rng.integers(1, labels + 1))
    return m


@pytest.mark.parametrize("fmt", ["anchor_shape", "start_end", "box"])
def test_random_object_bbox_single_object_is_exact_and_matches_dali(fmt):
    masks = [np.zeros((10, 11), np.int32) for _ in range(6)]
    boxes = []
    for k, m in enumerate(masks):
        lo = (k, 2 * k % 7)
        hi = (k + 3, 2 * k % 7 + 1 + k)
        m[lo[0]:hi[0], lo[1]:hi[1]] = 4
        m[lo[0], lo[1]] = 4
        boxes.append((list(lo), list(hi)))
    graph = lambda fn, types, x: tup(fn.segmentation.random_object_bbox(x, format=fmt, output_class=True))
    got, dali = run_both(graph, {"x": [masks]}, len(masks))
    for k, (lo, hi) in enumerate(boxes):
        if fmt == "box":
            assert got[0][k].tolist() == lo + hi
        else:
            assert got[0][k].tolist() == lo
            assert got[1][k].tolist() == (hi if fmt == "start_end" else [h - l for l, h in zip(lo, hi)])
        assert got[-1][k].shape == () and int(got[-1][k]) == 4
    for g, d in zip(got, dali):
        for a, b in zip(g, d):
            assert a.dtype == b.dtype == np.int32
            np.testing.assert_array_equal(a, b)


def test_random_object_bbox_boxes_are_blobs_and_classes_are_uniform():
    m = label_map(3)
    ref = blobs(m)
    n = 600
    graph = lambda fn, types, x: tup(fn.segmentation.random_object_bbox(x, output_class=True))
    got, dali = run_both(graph, {"x": [[m] * n]}, n)
    classes = sorted({b[0] for b in ref})
    for out in (got, dali):
        seen = collections.Counter()
        for anchor, shape, cls in zip(*out):
            box = (int(cls), anchor.tolist(), (anchor + shape).tolist())
            assert any(box == (b[0], b[1], b[2]) for b in ref), box
            seen[int(cls)] += 1
        # A class first (uniform among those present), then one of its blobs.
        assert set(seen) == set(classes)
        sigma = np.sqrt(n / len(classes))
        assert all(abs(c - n / len(classes)) < 6 * sigma for c in seen.values()), seen


@pytest.mark.parametrize("shape", [(20, 23), (6, 7, 8), (50,)])
def test_random_object_bbox_random_maps_give_reference_blobs(shape):
    """On random label maps (2-D, 3-D, 1-D), every box returned is the box of a blob the breadth-first search
    finds, of the class returned; k_largest=1 with ignore_class gives the largest box."""
    for seed in range(5):
        m = label_map(seed, shape, labels=4)
        ref = blobs(m)
        got = run_ladle(lambda x: fn.segmentation.random_object_bbox(x, format="start_end", output_class=True),
                        {"x": [m] * 50}, 50)
        for lo, hi, cls in zip(*got):
            assert (int(cls), lo.tolist(), hi.tolist()) in [(b[0], b[1], b[2]) for b in ref]
        largest = max(int(np.prod(np.subtract(b[2], b[1]))) for b in ref)
        got = run_ladle(lambda x: fn.segmentation.random_object_bbox(x, format="box", ignore_class=True, k_largest=1),
                        {"x": [m] * 10}, 10)[0]
        for b in got:
            assert int(np.prod(b[len(shape):] - b[:len(shape)])) == largest


def test_random_object_bbox_connectivity_is_along_axes_only():
    d = np.zeros((5, 5), np.uint8)
    d[1, 1] = d[2, 2] = d[3, 1] = d[1, 3] = 1  # diagonal neighbours only: four blobs
    d[3, 3:5] = 1  # a 2-pixel blob
    got = run_ladle(lambda x: fn.segmentation.random_object_bbox(x, format="box"), {"x": [d] * 300}, 300)[0]
    boxes = collections.Counter(tuple(g.tolist()) for g in got)
    assert set(boxes) == {(1, 1, 2, 2), (2, 2, 3, 3), (3, 1, 4, 2), (1, 3, 2, 4), (3, 3, 4, 5)}
    assert len(blobs(d)) == 5
    _, dali = run_both(lambda fn, types, x: fn.segmentation.random_object_bbox(x, format="box"), {"x": [[d] * 300]},
                       300)
    assert {tuple(g.tolist()) for g in dali} == set(boxes)


def test_random_object_bbox_threshold_k_largest_and_fallbacks():
    m = np.zeros((8, 10), np.int32)
    m[1:3, 2:5] = 1  # 2x3 of class 1
    m[5, 6] = 2      # 1x1 of class 2
    m[3, 5] = 1      # 1x1 of class 1
    cases = [
        (dict(threshold=[2, 2]), {((1, 2), (2, 3), 1)}),                  # class 2 dropped, small blob filtered
        (dict(threshold=[5, 5]), {((0, 0), (8, 10), 0)}),                 # nothing qualifies: the whole input
        (dict(foreground_prob=0.0), {((0, 0), (8, 10), 0)}),
        (dict(classes=[2]), {((5, 6), (1, 1), 2)}),
        (dict(class_weights=[0, 1]), {((5, 6), (1, 1), 2)}),              # classes 1, 2 by default
        (dict(k_largest=1, classes=[1]), {((1, 2), (2, 3), 1)}),
        (dict(classes=[0, 2]), None),                                     # background becomes -1: class 0 is a blob
        (dict(background=1), None),
    ]
    for kw, want in cases:
        graph = lambda fn, types, x: tup(fn.segmentation.random_object_bbox(x, output_class=True, **kw))
        got, dali = run_both(graph, {"x": [[m] * 40]}, 40)
        for out in (got, dali):
            seen = {(tuple(a.tolist()), tuple(s.tolist()), int(c)) for a, s, c in zip(*out)}
            if want is not None:
                assert seen == want, (kw, seen)
            else:
                assert ((0, 0), (8, 10), 0) in seen or any(c == 0 for _, _, c in seen), (kw, seen)
                assert {c for _, _, c in seen} <= {0, 2}, (kw, seen)


def test_random_object_bbox_ignore_class_3d_and_empty():
    v = np.zeros((4, 5, 6), np.uint8)
    v[0:2, 1:3, 2:6] = 1
    v[3, 4, 5] = 2
    got = run_ladle(lambda x: fn.segmentation.random_object_bbox(x, ignore_class=True, format="start_end"),
                    {"x": [v] * 200}, 200)
    seen = {(tuple(a.tolist()), tuple(e.tolist())) for a, e in zip(*got)}
    assert seen == {((0, 1, 2), (2, 3, 6)), ((3, 4, 5), (4, 5, 6))}
    empty = np.zeros((3, 3), np.int32)
    got = run_ladle(lambda x: fn.segmentation.random_object_bbox(x, output_class=True, background=7),
                    {"x": [empty + 7]}, 1)
    assert got[0][0].tolist() == [0, 0] and got[1][0].tolist() == [3, 3] and int(got[2][0]) == 7


@pytest.mark.parametrize("kw, x, match", [
    (dict(ignore_class=True, classes=[1]), np.zeros((3, 3), np.int32), "'ignore_class'"),
    (dict(ignore_class=True, output_class=True), np.zeros((3, 3), np.int32), "'ignore_class'"),
    (dict(), np.zeros((3, 3), np.float32), "integers"),
    (dict(threshold=[1, 1, 1]), np.ones((3, 3), np.int32), "'threshold' has 3 values"),
    (dict(classes=[1, 2], class_weights=[1.0]), np.ones((3, 3), np.int32), "'classes'"),
    (dict(classes=[0, 1], background=0), np.ones((3, 3), np.int32), "background"),
    (dict(format="corners"), np.ones((3, 3), np.int32), "format"),
    (dict(k_largest=0), np.ones((3, 3), np.int32), "k_largest"),
])
def test_random_object_bbox_bad_arguments(kw, x, match):
    with pytest.raises(ladle.Error, match=match) as e:
        run_ladle(lambda x: fn.segmentation.random_object_bbox(x, **kw), {"x": [x]}, 1)
    assert "random_object_bbox" in str(e.value)


# --- select_masks -------------------------------------------------------------------------------

def np_select(ids, polys, verts, reindex):
    """Every polygon of each selected mask, in mask_ids order, vertices renumbered."""
    out_p, out_v = [], []
    for i, mid in enumerate(ids):
        for mask, lo, hi in polys:
            if mask == mid:
                out_p.append([i if reindex else mid, len(out_v), len(out_v) + hi - lo])
                out_v += verts[lo:hi].tolist()
    return (np.array(out_p, np.int32).reshape(-1, 3), np.array(out_v, verts.dtype).reshape(-1, verts.shape[1]))


@pytest.mark.parametrize("reindex", [False, True])
def test_select_masks_matches_numpy_and_dali(reindex):
    rng = np.random.default_rng(4)
    feeds = {"ids": [], "polys": [], "verts": []}
    for k in range(8):
        nm = int(rng.integers(1, 6))
        sizes = rng.integers(3, 6, nm)
        bounds = np.concatenate([[0], np.cumsum(sizes)])
        mask_ids = rng.permutation(20)[:nm]
        feeds["polys"].append(np.array([[mask_ids[j], bounds[j], bounds[j + 1]] for j in range(nm)], np.int32))
        feeds["verts"].append(rng.normal(size=(int(bounds[-1]), 2 + k % 2)).astype(np.float32))
        feeds["ids"].append(rng.permutation(mask_ids)[:int(rng.integers(0, nm + 1))].astype(np.int32))
    graph = lambda fn, types, ids, polys, verts: tup(fn.segmentation.select_masks(ids, polys, verts,
                                                                                  reindex_masks=reindex))
    got, dali = run_both(graph, {k: [v] for k, v in feeds.items()}, 8)
    for k in range(8):
        want = np_select(feeds["ids"][k], feeds["polys"][k].tolist(), feeds["verts"][k], reindex)
        for g, d, w in zip((got[0][k], got[1][k]), (dali[0][k], dali[1][k]), want):
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(g.reshape(w.shape), w)
            np.testing.assert_array_equal(d.reshape(w.shape), w)


def test_select_masks_keeps_every_polygon_of_a_mask():
    polys = np.array([[0, 0, 3], [1, 3, 7], [0, 7, 10]], np.int32)
    verts = np.arange(30, dtype=np.int16).reshape(10, 3)
    got = run_ladle(lambda i, p, v: fn.segmentation.select_masks(i, p, v, reindex_masks=True),
                    {"i": [np.array([0], np.int32)], "p": [polys], "v": [verts]}, 1)
    assert got[0][0].tolist() == [[0, 0, 3], [0, 3, 6]]  # DALI 2.4 keeps only the last polygon of mask 0
    np.testing.assert_array_equal(got[1][0], np.concatenate([verts[0:3], verts[7:10]]))


@pytest.mark.parametrize("ids, polys, match", [
    ([5], [[0, 0, 3]], "mask id 5"),
    ([0, 0], [[0, 0, 3]], "twice"),
    ([0], [[0, 0, 12]], "outside"),
    ([0], [[0, 3, 2]], "ends"),
])
def test_select_masks_bad_inputs(ids, polys, match):
    with pytest.raises(ladle.InvalidArgumentError, match=match) as e:
        run_ladle(lambda i, p, v: fn.segmentation.select_masks(i, p, v),
                  {"i": [np.array(ids, np.int32)], "p": [np.array(polys, np.int32)],
                   "v": [np.zeros((10, 2), np.float32)]}, 1)
    assert "select_masks" in str(e.value)
    with pytest.raises(ladle.InvalidArgumentError, match="input 1 \\(polygons\\) must be int32"):
        run_ladle(lambda i, p, v: fn.segmentation.select_masks(i, p, v),
                  {"i": [np.array([0], np.int32)], "p": [np.array([[0, 0, 3]], np.int64)],
                   "v": [np.zeros((10, 2), np.float32)]}, 1)
