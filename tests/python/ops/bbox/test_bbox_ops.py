"""The bbox operators (bb_flip, bbox_paste, coord_flip, coord_transform,
box_encoder, bbox_rotate) against hand-computed cases, NumPy formulas written
here and DALI 2.4 itself (run_both, DALI's CPU operators), on batches whose
samples have different numbers of boxes, empty ones included.

Tolerances against DALI:
- bb_flip, coord_flip, bbox_paste: exact (the same float operations:
  xywh flips go through ltrb and back; x -> 2 c - x; x * (1 / ratio) +
  paste_x * ((ratio - 1) / ratio)).
- coord_transform: exact (((M0 x0 + M1 x1) + M2 x2) + T, rounded in that
  order; integer outputs rounded half away from zero and saturated).
- box_encoder: exact (the same float IoU, centre and offset operations; the
  NumPy encoder below agrees within 1e-6, its log being NumPy's).
- bbox_rotate: exact (corners rotated in float as DALI; the canvas rule is
  fn.rotate's), the same boxes kept.
The GPU variants are compared with the CPU ones in test_bbox_gpu.py.
"""

import numpy as np
import pytest

import ladle
from ladle import fn, types
from conftest import run_both, run_graph, requires_ops

pytestmark = requires_ops("bb_flip", "bbox_paste", "coord_flip", "coord_transform", "box_encoder", "bbox_rotate")

F32 = np.float32


def ltrb_boxes(rng, n, lo=0.0, hi=1.0):
    a = rng.uniform(lo, hi, (n, 2)).astype(F32)
    b = rng.uniform(lo, hi, (n, 2)).astype(F32)
    return np.concatenate([np.minimum(a, b), np.maximum(a, b)], 1).astype(F32)


def xywh_boxes(rng, n):
    b = ltrb_boxes(rng, n)
    b[:, 2:] -= b[:, :2]
    return b


def box_batch(seed, counts=(3, 0, 7, 1), fmt="ltrb"):
    rng = np.random.default_rng(seed)
    return [(ltrb_boxes if fmt == "ltrb" else xywh_boxes)(rng, n) for n in counts]


def run1(graph, batch, iterations=1, **feeds):
    """graph(b, **nodes) in ladle on one batch of boxes `batch` (and per-sample feeds)."""
    pipe = ladle.Pipeline(batch_size=len(batch), num_threads=2, seed=5)
    with pipe:
        b = fn.external_source(name="b", dtype=types.to_dtype(batch[0].dtype), ndim=batch[0].ndim)
        nodes = {k: fn.external_source(name=k, dtype=types.to_dtype(np.asarray(v[0]).dtype),
                                       ndim=np.asarray(v[0]).ndim) for k, v in feeds.items()}
        out = graph(b, **nodes)
        outs = out if isinstance(out, tuple) else (out,)
        pipe.set_outputs(*outs)
    try:
        pipe.feed_input("b", batch)
        for k, v in feeds.items():
            pipe.feed_input(k, [np.asarray(x) for x in v])
        res = [[np.array(tl.at(i)) for i in range(len(tl))] for tl in pipe.run()]
    finally:
        pipe.close()
    return res if len(res) > 1 else res[0]


def same(a, b, atol=0.0, rtol=0.0):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.shape == y.shape and x.dtype == y.dtype, (x.shape, y.shape, x.dtype, y.dtype)
        if atol == 0 and rtol == 0:
            np.testing.assert_array_equal(x, y)
        else:
            np.testing.assert_allclose(x, y, atol=atol, rtol=rtol)


def error_of(graph, batch, **feeds):
    with pytest.raises(ladle.Error) as e:
        run1(graph, batch, **feeds)
    return str(e.value)


# --- bb_flip ---------------------------------------------------------------------------------------------------


def test_bb_flip_hand_cases():
    b = [np.array([[0.1, 0.2, 0.4, 0.5]], F32), np.zeros((0, 4), F32)]
    out = run1(lambda x: fn.bb_flip(x, ltrb=True, horizontal=1, vertical=1), b)
    np.testing.assert_array_equal(out[0], np.array([[1 - F32(0.4), 1 - F32(0.5), 1 - F32(0.1), 1 - F32(0.2)]], F32))
    assert out[1].shape == (0, 4)
    x = np.array([[0.1, 0.2, 0.3, 0.25]], F32)
    out = run1(lambda v: fn.bb_flip(v, horizontal=1, vertical=0), [x])[0]
    one = F32(1)
    assert out[0, 0] == one - (x[0, 0] + x[0, 2])  # x' = 1 - r
    assert out[0, 2] == (one - x[0, 0]) - (one - (x[0, 0] + x[0, 2]))  # w' = r' - l'
    assert out[0, 1] == x[0, 1] and out[0, 3] == (x[0, 1] + x[0, 3]) - x[0, 1]


@pytest.mark.parametrize("ltrb", [False, True])
def test_bb_flip_twice_is_identity(ltrb):
    batch = box_batch(1, (20, 0, 5, 33), "ltrb" if ltrb else "xywh")
    out = run1(lambda b: fn.bb_flip(fn.bb_flip(b, ltrb=ltrb, horizontal=1, vertical=1), ltrb=ltrb, horizontal=1,
                                    vertical=1), batch)
    for o, b in zip(out, batch):
        if ltrb:  # 1 - (1 - x) is x within an ulp of 1
            np.testing.assert_allclose(o, b, atol=1.2e-7)
        else:
            np.testing.assert_allclose(o, b, atol=3e-7)


@pytest.mark.parametrize("ltrb", [False, True])
def test_bb_flip_matches_dali(ltrb):
    batch = box_batch(2, (4, 0, 9, 2), "ltrb" if ltrb else "xywh")
    hs = [np.array(v, np.int32) for v in (1, 0, 1, 0)]
    vs = [np.array(v, np.int32) for v in (0, 1, 1, 0)]
    for kw in ({}, {"horizontal": 0, "vertical": 1}, {"horizontal": 1, "vertical": 1}):
        ours, dali = run_both(lambda fn, types, b: fn.bb_flip(b, ltrb=ltrb, **kw), {"b": [batch]}, 4)
        same(ours, dali)
    ours, dali = run_both(lambda fn, types, b, h, v: fn.bb_flip(b, ltrb=ltrb, horizontal=h, vertical=v),
                          {"b": [batch], "h": [hs], "v": [vs]}, 4)
    same(ours, dali)


def test_bb_flip_bad_input():
    msg = error_of(lambda b: fn.bb_flip(b, ltrb=True), [np.array([[0.5, 0.1, 0.2, 0.3]], F32)])
    assert "bb_flip" in msg and "ltrb" in msg and "right >= left" in msg
    msg = error_of(lambda b: fn.bb_flip(b), [np.zeros((2, 5), F32)])
    assert "bb_flip" in msg and "[N, 4]" in msg
    msg = error_of(lambda b: fn.bb_flip(b), [np.zeros((4,), F32)])
    assert "bb_flip" in msg and "2 dimensions" in msg


# --- bbox_paste ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ltrb", [False, True])
def test_bbox_paste_formula_and_dali(ltrb):
    batch = box_batch(3, (5, 0, 2, 11), "ltrb" if ltrb else "xywh")
    ratio, px, py = F32(2.5), F32(0.25), F32(0.75)
    out = run1(lambda b: fn.bbox_paste(b, ratio=2.5, paste_x=0.25, paste_y=0.75, ltrb=ltrb), batch)
    scale, grow = F32(1) / ratio, (ratio - F32(1)) / ratio
    for o, b in zip(out, batch):
        want = b * scale
        want[:, 0] += px * grow
        want[:, 1] += py * grow
        if ltrb:
            want[:, 2] += px * grow
            want[:, 3] += py * grow
        np.testing.assert_array_equal(o, want)
    rs = [np.array(v, F32) for v in (1.0, 1.5, 3.0, 4.0)]
    ours, dali = run_both(lambda fn, types, b, r: fn.bbox_paste(b, ratio=r, paste_x=0.1, ltrb=ltrb),
                          {"b": [batch], "r": [rs]}, 4)
    same(ours, dali)


def test_bbox_paste_bad_arguments():
    b = [np.array([[0.1, 0.1, 0.2, 0.2]], F32)]
    msg = error_of(lambda x: fn.bbox_paste(x, ratio=0.5), b)
    assert "bbox_paste" in msg and "ratio" in msg
    msg = error_of(lambda x: fn.bbox_paste(x, ratio=2, paste_x=1.5), b)
    assert "bbox_paste" in msg and "paste_x" in msg
    msg = error_of(lambda x: fn.bbox_paste(x, ratio=2, ltrb=True), [np.array([[0.3, 0.1, 0.2, 0.2]], F32)])
    assert "bbox_paste" in msg and "right >= left" in msg


# --- coord_flip ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dims,layout", [(1, ""), (2, ""), (3, ""), (2, "yx"), (3, "zyx"), (3, "yzx")])
def test_coord_flip_formula_and_dali(dims, layout):
    rng = np.random.default_rng(dims)
    batch = [(rng.random((n, dims)) * 3 - 1).astype(F32) for n in (6, 0, 3)]
    kw = dict(layout=layout, flip_x=1, flip_y=1, flip_z=0, center_x=0.3, center_y=-0.7, center_z=2.0)
    out = run1(lambda b: fn.coord_flip(b, **kw), batch)
    axes = layout or "xyz"[:dims]
    for o, b in zip(out, batch):
        want = b.copy()
        for k, a in enumerate(axes):
            if kw["flip_" + a]:
                want[:, k] = F32(2) * F32(kw["center_" + a]) - b[:, k]
        np.testing.assert_array_equal(o, want)
    ours, dali = run_both(lambda fn, types, b: fn.coord_flip(b, **kw), {"b": [batch]}, 3)
    same(ours, dali)
    fx = [np.array(v, np.int32) for v in (0, 1, 1)]
    cx = [np.array(v, F32) for v in (0.1, 0.5, 0.9)]
    ours, dali = run_both(lambda fn, types, b, f, c: fn.coord_flip(b, layout=layout, flip_x=f, center_x=c),
                          {"b": [batch], "f": [fx], "c": [cx]}, 3)
    same(ours, dali)


def test_coord_flip_twice_is_identity():
    rng = np.random.default_rng(9)
    batch = [rng.random((n, 3)).astype(F32) for n in (40, 0, 7)]
    kw = dict(flip_x=1, flip_y=1, flip_z=1, center_x=0.5, center_y=0.25, center_z=0.75)
    out = run1(lambda b: fn.coord_flip(fn.coord_flip(b, **kw), **kw), batch)
    for o, b in zip(out, batch):
        np.testing.assert_allclose(o, b, atol=2.5e-7)


def test_coord_flip_bad_input():
    msg = error_of(lambda b: fn.coord_flip(b), [np.zeros((2, 4), F32)])
    assert "coord_flip" in msg and "1 to 3" in msg
    msg = error_of(lambda b: fn.coord_flip(b, layout="xz"), [np.zeros((2, 2), F32)])
    assert "coord_flip" in msg and "layout" in msg


# --- coord_transform -------------------------------------------------------------------------------------------


def ct_reference(x, M, T):
    """out = M x + T as DALI rounds it: ((M0 x0 + M1 x1) + ...) + T in float32."""
    x = x.astype(F32)
    out = np.zeros(x.shape[:-1] + (M.shape[0],), F32)
    for r in range(M.shape[0]):
        v = M[r, 0] * x[..., 0]
        for k in range(1, M.shape[1]):
            v = v + M[r, k] * x[..., k]
        out[..., r] = v + T[r]
    return out


def test_coord_transform_is_the_matrix_product():
    rng = np.random.default_rng(4)
    for trial in range(6):
        n, m = int(rng.integers(1, 7)), int(rng.integers(1, 7))
        M = rng.normal(size=(m, n)).astype(F32)
        T = rng.normal(size=m).astype(F32)
        batch = [(rng.normal(size=(k, n)) * 10).astype(F32) for k in (int(rng.integers(0, 50)), 0, 13)]
        out = run1(lambda b: fn.coord_transform(b, M=M.ravel().tolist(), T=T.tolist()), batch)
        for o, b in zip(out, batch):
            assert o.shape == (b.shape[0], m)
            np.testing.assert_array_equal(o, ct_reference(b, M, T))
            np.testing.assert_allclose(o, b.astype(np.float64) @ M.T.astype(np.float64) + T, rtol=1e-5, atol=1e-4)


def test_coord_transform_forms():
    x = [np.array([[1, 2, 3], [4, 5, 6]], F32), np.zeros((0, 3), F32)]
    out = run1(lambda b: fn.coord_transform(b, M=2.0), x)
    np.testing.assert_array_equal(out[0], 2 * x[0])
    assert out[1].shape == (0, 3)
    out = run1(lambda b: fn.coord_transform(b, T=1.0), x)[0]
    np.testing.assert_array_equal(out, x[0] + 1)
    out = run1(lambda b: fn.coord_transform(b, MT=[1, 0, 0, 10, 0, 0, 1, 20]), x)[0]
    np.testing.assert_array_equal(out, np.array([[11, 23], [14, 26]], F32))
    out = run1(lambda b: fn.coord_transform(b), x)[0]  # the identity
    np.testing.assert_array_equal(out, x[0])
    pts = [np.arange(24, dtype=F32).reshape(2, 4, 3)]  # points along the last dimension of any rank
    out = run1(lambda b: fn.coord_transform(b, M=[1, 1, 1]), pts)[0]
    np.testing.assert_array_equal(out, pts[0].sum(-1, keepdims=True))


def test_coord_transform_integer_output_rounds_and_saturates():
    x = [np.zeros((1, 6), np.int16)]
    out = run1(lambda b: fn.coord_transform(b, M=1.0, T=[-70000.5, 0.5, 2.5, -0.5, -1.5, 1e10], dtype=types.INT16),
               x)[0]
    np.testing.assert_array_equal(out, np.array([[-32768, 1, 3, -1, -2, 32767]], np.int16))


@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.int16, np.uint16, np.int32])
def test_coord_transform_matches_dali(dtype):
    rng = np.random.default_rng(7)
    if dtype == np.float32:
        batch = [(rng.normal(size=(k, 3)) * 5).astype(F32) for k in (5, 1, 12)]
    else:
        batch = [rng.integers(0, 200, size=(k, 3)).astype(dtype) for k in (5, 1, 12)]
    M = rng.normal(size=(2, 3)).astype(F32).ravel().tolist()
    MT = rng.normal(size=8).astype(F32).tolist()
    for kw in (dict(M=M, T=[0.5, -3.0]), dict(MT=MT), dict(M=M)):
        ours, dali = run_both(lambda fn, types, b: fn.coord_transform(b, dtype=types.FLOAT, **kw), {"b": [batch]}, 3)
        same(ours, dali)
    if dtype != np.float32:
        ours, dali = run_both(lambda fn, types, b: fn.coord_transform(
            b, M=[0.5, -1.5, 2.0], T=[3.25], dtype=getattr(types, {np.uint8: "UINT8", np.int16: "INT16",
                                                                    np.uint16: "UINT16", np.int32: "INT32"}[dtype])),
            {"b": [batch]}, 3)
        same(ours, dali)
    Ms = [rng.normal(size=(2, 3)).astype(F32) for _ in range(3)]
    ours, dali = run_both(lambda fn, types, b, m: fn.coord_transform(b, M=m), {"b": [batch], "m": [Ms]}, 3)
    same(ours, dali)


def test_coord_transform_bad_arguments():
    x = [np.ones((2, 3), F32)]
    msg = error_of(lambda b: fn.coord_transform(b, M=[1.0, 2.0, 3.0, 4.0, 5.0]), x)
    assert "coord_transform" in msg and "'M'" in msg
    msg = error_of(lambda b: fn.coord_transform(b, M=[1.0, 2.0, 3.0], T=[1.0, 2.0]), x)
    assert "coord_transform" in msg and "'T'" in msg
    msg = error_of(lambda b: fn.coord_transform(b, M=2.0, MT=2.0), x)
    assert "coord_transform" in msg and "MT" in msg
    msg = error_of(lambda b: fn.coord_transform(b, M=2.0), [np.ones((4,), F32)])
    assert "coord_transform" in msg and "at least 2 dimensions" in msg
    msg = error_of(lambda b: fn.coord_transform(b, M=2.0, dtype=types.INT16), x)
    assert "coord_transform" in msg and "dtype" in msg


# --- box_encoder -----------------------------------------------------------------------------------------------


def np_iou(a, b):
    lt = np.maximum(a[:2], b[:2])
    rb = np.minimum(a[2:], b[2:])
    if not np.all(rb > lt):
        return F32(0)
    inter = F32((rb[0] - lt[0]) * (rb[1] - lt[1]))
    aa = F32((a[2] - a[0]) * (a[3] - a[1]))
    ab = F32((b[2] - b[0]) * (b[3] - b[1]))
    return F32(inter / F32(F32(aa + ab) - inter))


def np_ssd_encode(boxes, labels, anchors, criteria=0.5, offset=False, scale=1.0, means=(0, 0, 0, 0),
                  stds=(1, 1, 1, 1)):
    """SSD's encoder (the MLPerf reference DALI follows), in float32."""
    A = len(anchors)
    ious = np.array([[np_iou(b, a) for a in anchors] for b in boxes], F32).reshape(len(boxes), A)
    for i in range(len(boxes)):  # each box claims its best anchor (the last of equals)
        ious[i, A - 1 - np.argmax(ious[i, ::-1])] = 2
    out = np.zeros((A, 4), F32)
    out_labels = np.zeros(A, np.int32)
    cwh = lambda b: (np.array([(b[0] + b[2]) * F32(0.5), (b[1] + b[3]) * F32(0.5)], F32), np.array(
        [b[2] - b[0], b[3] - b[1]], F32))
    for j in range(A):
        match = -1
        if len(boxes):
            col = ious[:, j]
            best = len(boxes) - 1 - np.argmax(col[::-1])
            match = best if col[best] > criteria else -1
        if match < 0:
            if not offset:
                c, e = cwh(anchors[j])
                out[j] = np.concatenate([c, e])
            continue
        c, e = cwh(boxes[match])
        out_labels[j] = labels[match]
        if not offset:
            out[j] = np.concatenate([c, e])
        else:
            ac, ae = cwh(anchors[j])
            s = F32(scale)
            c, e, ac, ae = c * s, e * s, ac * s, ae * s
            out[j, :2] = ((c - ac) / ae - np.array(means[:2], F32)) / np.array(stds[:2], F32)
            out[j, 2:] = (np.log(e / ae) - np.array(means[2:], F32)) / np.array(stds[2:], F32)
    return out, out_labels


def encoder_data(seed, counts=(6, 0, 1, 15), nanchors=60):
    rng = np.random.default_rng(seed)
    anchors = ltrb_boxes(rng, nanchors)
    boxes = [ltrb_boxes(rng, n) for n in counts]
    labels = [rng.integers(1, 90, n).astype(np.int32) for n in counts]
    return anchors, boxes, labels


@pytest.mark.parametrize("offset", [False, True])
def test_box_encoder_equals_numpy_ssd_encoder(offset):
    anchors, boxes, labels = encoder_data(11)
    kw = dict(criteria=0.3, offset=offset, scale=2.0, means=[0.1, -0.1, 0.2, 0.0], stds=[0.1, 0.1, 0.2, 0.2])
    pipe_out = run1(lambda b, l: fn.box_encoder(b, l, anchors=anchors.ravel().tolist(), **kw), boxes, l=labels)
    for k, (b, l) in enumerate(zip(boxes, labels)):
        want_boxes, want_labels = np_ssd_encode(b, l, anchors, **kw)
        np.testing.assert_array_equal(pipe_out[1][k], want_labels)
        np.testing.assert_allclose(pipe_out[0][k], want_boxes, atol=1e-6, rtol=2e-6)
    assert np.all(pipe_out[1][1] == 0)  # no boxes: every anchor unmatched


def test_box_encoder_hand_case():
    anchors = np.array([[0, 0, 0.5, 0.5], [0.5, 0.5, 1, 1], [0, 0.5, 0.5, 1]], F32)
    boxes = [np.array([[0.05, 0.05, 0.5, 0.5]], F32)]  # IoU 0.81 with anchor 0, 0 with the others
    out_boxes, out_labels = run1(lambda b, l: fn.box_encoder(b, l, anchors=anchors.ravel().tolist()), boxes,
                                 l=[np.array([7], np.int32)])
    np.testing.assert_array_equal(out_labels[0], [7, 0, 0])
    np.testing.assert_allclose(out_boxes[0], [[0.275, 0.275, 0.45, 0.45], [0.75, 0.75, 0.5, 0.5],
                                              [0.25, 0.75, 0.5, 0.5]], atol=1e-7)


@pytest.mark.parametrize("offset", [False, True])
def test_box_encoder_matches_dali(offset):
    anchors, boxes, labels = encoder_data(12, nanchors=200)
    kw = dict(criteria=0.2, offset=offset, scale=1.5, means=[0.0, 0.1, 0.0, 0.2], stds=[0.1, 0.1, 0.2, 0.2])
    ours, dali = run_both(lambda fn, types, b, l: tuple(fn.box_encoder(b, l, anchors=anchors.ravel().tolist(), **kw)),
                          {"b": [boxes], "l": [labels]}, 4)
    same(ours[1], dali[1])
    same(ours[0], dali[0])


def test_box_encoder_bad_arguments():
    b, l = [np.array([[0.1, 0.1, 0.2, 0.2]], F32)], [np.array([1], np.int32)]
    msg = error_of(lambda x, l: fn.box_encoder(x, l, anchors=[0.0, 0.0, 1.0]), b, l=l)
    assert "box_encoder" in msg and "anchors" in msg
    msg = error_of(lambda x, l: fn.box_encoder(x, l, anchors=[0.5, 0.0, 0.2, 1.0]), b, l=l)
    assert "box_encoder" in msg and "anchors" in msg and "right >= left" in msg
    msg = error_of(lambda x, l: fn.box_encoder(x, l, anchors=[0.0, 0.0, 1.0, 1.0], stds=[1, 0, 1, 1]), b, l=l)
    assert "box_encoder" in msg and "stds" in msg
    msg = error_of(lambda x, l: fn.box_encoder(x, l, anchors=[0.0, 0.0, 1.0, 1.0], criteria=1.5), b, l=l)
    assert "box_encoder" in msg and "criteria" in msg
    msg = error_of(lambda x, l: fn.box_encoder(x, l, anchors=[0.0, 0.0, 1.0, 1.0]), b,
                   l=[np.array([1, 2], np.int32)])
    assert "box_encoder" in msg and "labels" in msg
    msg = error_of(lambda x, l: fn.box_encoder(x, l, anchors=[0.0, 0.0, 1.0, 1.0]),
                   [np.array([[0.3, 0.1, 0.2, 0.2]], F32)], l=l)
    assert "box_encoder" in msg and "right >= left" in msg


# --- bbox_rotate -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["expand", "fixed", "halfway"])
@pytest.mark.parametrize("keep_size,remove", [(False, 0.1), (True, 0.1), (True, 0.95)])
def test_bbox_rotate_matches_dali(mode, keep_size, remove):
    rng = np.random.default_rng(21)
    boxes = [ltrb_boxes(rng, n, 0.1, 0.9) for n in (5, 0, 9, 2)]
    labels = [np.arange(len(b), dtype=np.int32) for b in boxes]
    angles = [np.array(a, F32) for a in (30.0, -75.0, 110.0, 0.0)]
    ours, dali = run_both(lambda fn, types, b, l, a: tuple(fn.bbox_rotate(b, l, angle=a, input_shape=[240, 320, 3],
                                                                           shape_layout="HWC", mode=mode,
                                                                           keep_size=keep_size,
                                                                           remove_threshold=remove)),
                          {"b": [boxes], "l": [labels], "a": [angles]}, 4)
    same(ours[1], dali[1])
    same(ours[0], dali[0])
    if remove > 0.9:  # some boxes leave the kept canvas
        assert sum(len(x) for x in ours[1]) < sum(len(x) for x in labels)


def test_bbox_rotate_layouts_and_size_match_dali():
    rng = np.random.default_rng(22)
    boxes = [xywh_boxes(rng, n) * 200 for n in (4, 0, 6)]
    for kw in (dict(bbox_layout="xyWH", bbox_normalized=False, angle=45.0, input_shape=[200, 200]),
               dict(bbox_layout="xyWH", bbox_normalized=False, angle=-20.0, input_shape=[180, 250], size=[300, 260],
                    remove_threshold=0.5)):
        ours, dali = run_both(lambda fn, types, b: fn.bbox_rotate(b, **kw), {"b": [boxes]}, 3)
        same(ours, dali)


def test_bbox_rotate_hand_case():
    # 90 degrees on a 100x50 (HW) image: the canvas becomes 50x100; box (ltrb, normalized) of the top-left quarter
    b = [np.array([[0.0, 0.0, 0.5, 0.5]], F32)]
    out = run1(lambda x: fn.bbox_rotate(x, angle=90.0, input_shape=[100, 50]), b)[0]
    # corners (-25,-50),(0,-50),(-25,0),(0,0) -> x' = y, y' = -x, then + (50, 25): x in [0, 50], y in [25, 50]
    np.testing.assert_allclose(out, [[0.0, 0.5, 0.5, 1.0]], atol=1e-6)


def test_bbox_rotate_bad_arguments():
    b = [np.array([[0.1, 0.1, 0.2, 0.2]], F32)]
    msg = error_of(lambda x: fn.bbox_rotate(x, angle=10.0, input_shape=[100]), b)
    assert "bbox_rotate" in msg and "input_shape" in msg
    msg = error_of(lambda x: fn.bbox_rotate(x, angle=10.0, input_shape=[100, 100], keep_size=True, size=[5, 5]), b)
    assert "bbox_rotate" in msg and "keep_size" in msg
    msg = error_of(lambda x: fn.bbox_rotate(x, angle=10.0, input_shape=[100, 100], shape_layout="WC"), b)
    assert "bbox_rotate" in msg and "shape_layout" in msg
    msg = error_of(lambda x: fn.bbox_rotate(x, angle=10.0, input_shape=[100, 100]),
                   [np.array([[0.3, 0.1, 0.2, 0.2]], F32)])
    assert "bbox_rotate" in msg and "right >= left" in msg
