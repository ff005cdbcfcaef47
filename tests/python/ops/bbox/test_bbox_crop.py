"""random_bbox_crop: the rules every window and every emitted box obey,
checked on random boxes with a NumPy reference written here (the
window's IoU/overlap with the boxes reaches the threshold; kept boxes are
those whose centre lies in the window, or with bbox_prune_threshold the
fraction of their area inside; they are mapped into the window and lie in
[0, 1]; labels and indices follow), on ladle's output and on DALI's.

Against DALI (run_both): ladle draws from its own counter-based stream, so
random windows differ; the deterministic cases are compared exactly:
scaling [1, 1] (the window is the whole image), crop_shape equal to
input_shape, no-crop only (total_num_attempts with an unreachable
threshold is not used: DALI then keeps its best window), empty samples.
"""

import numpy as np
import pytest

import ladle
from ladle import fn, types
from conftest import run_both, requires_ops

pytestmark = requires_ops("random_bbox_crop")

F32 = np.float32


def boxes_in_unit(rng, n, ndim=2, min_size=0.02):
    lo = rng.uniform(0, 1 - min_size, (n, ndim))
    hi = np.minimum(1, lo + rng.uniform(min_size, max(0.6, min_size), (n, ndim)))
    return np.concatenate([lo, hi], 1).astype(F32)


def run_crop(boxes, labels=None, batch=None, iterations=1, seed=5, **kw):
    """ladle's random_bbox_crop on a batch of boxes: per output, the samples of every iteration."""
    batch = batch or len(boxes)
    pipe = ladle.Pipeline(batch_size=batch, num_threads=2, seed=seed)
    with pipe:
        b = fn.external_source(name="b", dtype=types.FLOAT, ndim=2)
        ins = [b]
        if labels is not None:
            ins.append(fn.external_source(name="l", dtype=types.INT32, ndim=labels[0].ndim))
        out = fn.random_bbox_crop(*ins, **kw)
        pipe.set_outputs(*out)
    got = None
    try:
        for _ in range(iterations):
            pipe.feed_input("b", boxes)
            if labels is not None:
                pipe.feed_input("l", labels)
            res = [[np.array(tl.at(i)) for i in range(len(tl))] for tl in pipe.run()]
            got = res if got is None else [g + r for g, r in zip(got, res)]
    finally:
        pipe.close()
    return got


def np_volume(b, nd):
    return np.prod(b[nd:] - b[:nd])


def np_intersection(a, b, nd):
    lo, hi = np.maximum(a[:nd], b[:nd]), np.minimum(a[nd:], b[nd:])
    return 0.0 if np.any(hi <= lo) else float(np.prod(hi - lo))


def np_metric(crop, box, nd, kind):
    inter = np_intersection(crop, box, nd)
    if kind == "overlap":
        return inter / np_volume(box, nd)
    return inter / (np_volume(crop, nd) + np_volume(box, nd) - inter) if inter > 0 else 0.0


def np_expected_boxes(crop, boxes, nd, prune=None):
    """The kept input indices and their boxes mapped into the window (DALI's rules)."""
    idx, out = [], []
    for i, b in enumerate(boxes):
        if prune is None:
            c = (b[:nd] + b[nd:]) * F32(0.5)
            keep = np.all(c >= crop[:nd]) and np.all(c < crop[nd:])
        else:
            inter = np_intersection(crop, b, nd)
            keep = inter != 0 and inter / np_volume(b, nd) >= prune - 1e-6
        if keep:
            ext = crop[nd:] - crop[:nd]
            lo = np.clip((np.maximum(crop[:nd], b[:nd]) - crop[:nd]) / ext, 0, 1)
            hi = np.clip((np.minimum(crop[nd:], b[nd:]) - crop[:nd]) / ext, 0, 1)
            idx.append(i)
            out.append(np.concatenate([lo, hi]))
    return idx, np.array(out, F32).reshape(len(out), 2 * nd)


def check_sample(anchor, shape, in_boxes, out_boxes, indices, nd, kind, threshold, all_boxes, no_crop_allowed,
                 prune=None, in_shape=None, needs_box=True):
    rel_anchor = anchor / np.asarray(in_shape, F32) if in_shape is not None else anchor
    rel_shape = shape / np.asarray(in_shape, F32) if in_shape is not None else shape
    crop = np.concatenate([rel_anchor, rel_anchor + rel_shape]).astype(F32)
    assert np.all(rel_anchor >= 0) and np.all(rel_anchor + rel_shape <= 1 + 1e-6), (anchor, shape)
    whole = np.all(rel_anchor == 0) and np.all(rel_shape == 1)
    if len(in_boxes) and not (whole and no_crop_allowed):
        metrics = [np_metric(crop, b, nd, kind) for b in in_boxes]
        m = min(metrics) if all_boxes else max(metrics)
        assert m >= threshold - 1e-6, (m, threshold, crop)
    assert out_boxes.shape[1] == 2 * nd
    assert np.all(out_boxes >= 0) and np.all(out_boxes <= 1)  # never outside [0, 1]
    idx, want = np_expected_boxes(crop, in_boxes, nd, prune)
    if indices is not None:
        assert list(indices) == idx
    np.testing.assert_allclose(out_boxes, want, atol=2e-6)
    if len(in_boxes) and not whole and needs_box:
        assert len(out_boxes) >= 1  # a window keeps a box


CASES = [
    dict(thresholds=[0.15], threshold_type="iou", all_boxes_above_threshold=False, scaling=[0.3, 1.0],
         aspect_ratio=[0.5, 2.0], allow_no_crop=False, num_attempts=10, min_size=0.3),
    dict(thresholds=[0.5], threshold_type="overlap", all_boxes_above_threshold=True, scaling=[0.5, 1.0],
         aspect_ratio=[0.5, 2.0], allow_no_crop=True, num_attempts=5),
    dict(thresholds=[0.1], threshold_type="iou", all_boxes_above_threshold=True, scaling=[0.3, 1.0],
         aspect_ratio=[1.0, 1.0], allow_no_crop=True, bbox_prune_threshold=0.3),
    dict(thresholds=[1.0], threshold_type="overlap", all_boxes_above_threshold=False, scaling=[0.6, 1.0],
         aspect_ratio=[0.25, 4.0], allow_no_crop=False, num_attempts=50),
    dict(thresholds=[0.2], threshold_type="overlap", all_boxes_above_threshold=False, scaling=[0.2, 0.8],
         allow_no_crop=False, bbox_prune_threshold=0.0, num_attempts=50),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_windows_and_boxes_obey_the_rules(case):
    kw = dict(CASES[case], bbox_layout="xyXY", output_bbox_indices=True)
    min_size = kw.pop("min_size", 0.02)  # thresholds no window can reach would search forever (DALI's too)
    rng = np.random.default_rng(case)
    boxes = [boxes_in_unit(rng, n, min_size=min_size) for n in (1, 4, 0, 9, 2, 15, 3, 6)]
    labels = [np.arange(100, 100 + len(b), dtype=np.int32) for b in boxes]
    anchor, shape, out_boxes, out_labels, indices = run_crop(boxes, labels, iterations=4, **kw)
    ar_lo, ar_hi = kw.get("aspect_ratio", [1.0, 1.0])
    s_lo, s_hi = kw["scaling"]
    for k in range(len(anchor)):
        b = boxes[k % len(boxes)]
        check_sample(anchor[k], shape[k], b, out_boxes[k], indices[k], 2, kw["threshold_type"], kw["thresholds"][0],
                     kw["all_boxes_above_threshold"], kw["allow_no_crop"], kw.get("bbox_prune_threshold"))
        np.testing.assert_array_equal(out_labels[k], 100 + indices[k])
        if not (np.all(anchor[k] == 0) and np.all(shape[k] == 1)):
            assert ar_lo * (1 - 1e-5) <= shape[k][0] / shape[k][1] <= ar_hi * (1 + 1e-5)
            assert s_lo - 1e-6 <= shape[k].max() <= s_hi + 1e-6
    assert len({tuple(a) for a in anchor}) > 1  # the windows are random


def test_dali_windows_obey_the_same_rules():
    """The NumPy reference above describes DALI's operator too."""
    rng = np.random.default_rng(40)
    for kw in CASES:
        kw = dict(kw, bbox_layout="xyXY", output_bbox_indices=True)
        boxes = [boxes_in_unit(rng, n, min_size=kw.pop("min_size", 0.02)) for n in (3, 7, 1, 5, 2, 4, 6, 1)]
        _, dali = run_both(lambda fn, types, b: tuple(fn.random_bbox_crop(b, **kw)), {"b": [boxes]}, 8)
        for k in range(len(dali[0])):
            check_sample(dali[0][k], dali[1][k], boxes[k], dali[2][k], dali[3][k], 2, kw["threshold_type"],
                         kw["thresholds"][0], kw["all_boxes_above_threshold"], kw["allow_no_crop"],
                         kw.get("bbox_prune_threshold"))


def test_fixed_crop_shape():
    rng = np.random.default_rng(3)
    boxes = [boxes_in_unit(rng, n) for n in (5, 2, 8, 1)]
    anchor, shape, out_boxes = run_crop(boxes, iterations=3, crop_shape=[100, 50], input_shape=[400, 300],
                                        thresholds=[0.0], bbox_layout="xyXY")
    for k in range(len(anchor)):
        assert list(shape[k]) == [100, 50]
        assert np.all(anchor[k] == np.round(anchor[k])) and 0 <= anchor[k][0] <= 300 and 0 <= anchor[k][1] <= 250
        check_sample(anchor[k], shape[k], boxes[k % 4], out_boxes[k], None, 2, "iou", 0.0, True, False,
                     in_shape=[400, 300])
    # shape_layout orders input_shape and crop_shape
    a2, s2, _ = run_crop(boxes, crop_shape=[50, 100], input_shape=[300, 400], shape_layout="HW", thresholds=[0.0],
                         bbox_layout="xyXY")
    assert all(list(s) == [100, 50] for s in s2)


def test_3d_boxes():
    rng = np.random.default_rng(8)
    boxes = [boxes_in_unit(rng, n, ndim=3) for n in (4, 0, 6)]
    kw = dict(thresholds=[0.2], threshold_type="overlap", all_boxes_above_threshold=False, scaling=[0.4, 1.0],
              aspect_ratio=[0.5, 2.0, 0.5, 2.0, 0.5, 2.0], allow_no_crop=False, num_attempts=20,
              bbox_layout="xyzXYZ", output_bbox_indices=True)
    anchor, shape, out_boxes, indices = run_crop(boxes, iterations=3, **kw)
    for k in range(len(anchor)):
        assert anchor[k].shape == (3,)
        check_sample(anchor[k], shape[k], boxes[k % 3], out_boxes[k], indices[k], 3, "overlap", 0.2, False, False)


def test_layouts_round_trip():
    rng = np.random.default_rng(9)
    ltrb = [boxes_in_unit(rng, n) for n in (6, 3)]
    xywh = [np.concatenate([b[:, :2], b[:, 2:] - b[:, :2]], 1) for b in ltrb]
    whxy = [b[:, [2, 3, 0, 1]].copy() for b in xywh]
    kw = dict(thresholds=[0.0], scaling=[0.5, 0.9], aspect_ratio=[0.5, 2.0], allow_no_crop=False, seed=77)
    a = run_crop(ltrb, bbox_layout="xyXY", **kw)
    b = run_crop(xywh, bbox_layout="xyWH", **kw)
    c = run_crop(whxy, bbox_layout="WHxy", **kw)
    d = run_crop(xywh, ltrb=False, **kw)
    for k in range(2):
        np.testing.assert_array_equal(a[0][k], b[0][k])
        got = np.concatenate([b[2][k][:, :2], b[2][k][:, :2] + b[2][k][:, 2:]], 1)
        np.testing.assert_allclose(got, a[2][k], atol=1e-6)
        np.testing.assert_array_equal(c[2][k], b[2][k][:, [2, 3, 0, 1]])
        np.testing.assert_array_equal(d[2][k], b[2][k])


def test_reproducible_and_seeded():
    rng = np.random.default_rng(10)
    boxes = [boxes_in_unit(rng, n) for n in (6, 3, 4, 2)]
    kw = dict(thresholds=[0.0, 0.1], scaling=[0.3, 1.0], aspect_ratio=[0.5, 2.0], bbox_layout="xyXY",
              all_boxes_above_threshold=False, allow_no_crop=False)
    a, b = run_crop(boxes, seed=1, **kw), run_crop(boxes, seed=1, **kw)
    c = run_crop(boxes, seed=2, **kw)
    for x, y in zip(a, b):
        for u, v in zip(x, y):
            np.testing.assert_array_equal(u, v)
    assert any(not np.array_equal(u, v) for u, v in zip(a[0], c[0]))


@pytest.mark.parametrize("prune", [None, 0.5])
def test_whole_image_window_matches_dali(prune):
    rng = np.random.default_rng(11)
    boxes = [boxes_in_unit(rng, n) for n in (5, 0, 3, 12)]
    boxes[2][0] = [0.5, 0.5, 1.0, 1.0]  # centre 0.75: kept; a centre on the far edge would not be
    labels = [rng.integers(0, 50, (len(b), 1)).astype(np.int32) for b in boxes]
    kw = dict(scaling=[1.0, 1.0], thresholds=[0.0], allow_no_crop=False, bbox_layout="xyXY", output_bbox_indices=True)
    if prune is not None:
        kw["bbox_prune_threshold"] = prune
    ours, dali = run_both(lambda fn, types, b, l: tuple(fn.random_bbox_crop(b, l, **kw)),
                          {"b": [boxes], "l": [labels]}, 4)
    for o, d in zip(ours, dali):
        for x, y in zip(o, d):
            assert x.shape == y.shape and x.dtype == y.dtype, (x.shape, y.shape)
            np.testing.assert_array_equal(x, y)


def test_full_size_crop_shape_and_no_crop_match_dali():
    rng = np.random.default_rng(12)
    boxes = [boxes_in_unit(rng, n) for n in (4, 1, 0, 7)]
    for kw in (dict(crop_shape=[64, 48], input_shape=[64, 48], thresholds=[0.0], bbox_layout="xyWH"),
               dict(thresholds=[0.0], allow_no_crop=True, scaling=[1.0, 1.0], bbox_layout="xyXY")):
        if kw["bbox_layout"] == "xyWH":
            feed = [np.concatenate([b[:, :2], b[:, 2:] - b[:, :2]], 1) for b in boxes]
        else:
            feed = boxes
        ours, dali = run_both(lambda fn, types, b: tuple(fn.random_bbox_crop(b, **kw)), {"b": [feed]}, 4)
        for o, d in zip(ours, dali):
            for x, y in zip(o, d):
                assert x.shape == y.shape
                np.testing.assert_allclose(x, y, atol=1e-7)


def test_empty_samples():
    empty = [np.zeros((0, 4), F32)] * 3
    anchor, shape, out, labels = run_crop(empty, [np.zeros((0,), np.int32)] * 3, thresholds=[1.0],
                                          allow_no_crop=False, scaling=[0.3, 0.5], bbox_layout="xyXY")
    for a, s, o, l in zip(anchor, shape, out, labels):
        assert o.shape == (0, 4) and l.shape == (0,)
        assert np.all(s >= 0.3 - 1e-6) and np.all(s <= 0.5 + 1e-6) and np.all(a + s <= 1 + 1e-6)
    _, dali = run_both(lambda fn, types, b: tuple(fn.random_bbox_crop(
        b, thresholds=[1.0], allow_no_crop=False, input_shape=[600, 400], crop_shape=[200, 200], bbox_layout="xyXY")),
        {"b": [empty]}, 3)
    ours = run_crop(empty, thresholds=[1.0], input_shape=[600, 400], crop_shape=[200, 200], bbox_layout="xyXY")
    for o, d in zip(ours[1:], dali[1:]):  # shapes and (empty) boxes; anchors are random
        for x, y in zip(o, d):
            np.testing.assert_array_equal(x, y)


def error_of(boxes, labels=None, **kw):
    with pytest.raises(ladle.Error) as e:
        run_crop(boxes, labels, **kw)
    return str(e.value)


def test_bad_input():
    good = [np.array([[0.1, 0.1, 0.5, 0.5]], F32)]
    msg = error_of([np.array([[0.5, 0.1, 0.2, 0.5]], F32)], bbox_layout="xyXY")
    assert "random_bbox_crop" in msg and "end before its start" in msg
    msg = error_of([np.array([[-0.5, 0.1, 0.2, 0.5]], F32)], bbox_layout="xyXY")
    assert "random_bbox_crop" in msg and "[0, 1]" in msg
    msg = error_of([np.zeros((2, 5), F32)])
    assert "random_bbox_crop" in msg and "[N, 4] or [N, 6]" in msg
    msg = error_of(good, [np.array([1, 2], np.int32)])
    assert "random_bbox_crop" in msg and "labels" in msg
    msg = error_of(good, bbox_layout="xyXX")
    assert "random_bbox_crop" in msg and "bbox_layout" in msg
    msg = error_of(good, thresholds=[1.5])
    assert "random_bbox_crop" in msg and "thresholds" in msg
    msg = error_of(good, threshold_type="area")
    assert "random_bbox_crop" in msg and "threshold_type" in msg
    msg = error_of(good, num_attempts=0)
    assert "random_bbox_crop" in msg and "num_attempts" in msg
    msg = error_of(good, crop_shape=[10, 10])
    assert "random_bbox_crop" in msg and "input_shape" in msg
    msg = error_of(good, crop_shape=[10, 10], input_shape=[20, 20], allow_no_crop=True)
    assert "random_bbox_crop" in msg and "allow_no_crop" in msg
    msg = error_of(good, crop_shape=[10, 10], input_shape=[20, 20], scaling=[0.5, 1.0])
    assert "random_bbox_crop" in msg and "scaling" in msg
    msg = error_of(good, aspect_ratio=[2.0, 1.0])
    assert "random_bbox_crop" in msg and "aspect_ratio" in msg
    msg = error_of(good, ltrb=True, bbox_layout="xyXY")
    assert "random_bbox_crop" in msg and "ltrb" in msg


def test_aspect_ratio_in_pixels_with_input_shape():
    rng = np.random.default_rng(13)
    boxes = [boxes_in_unit(rng, n, min_size=0.3) for n in (3, 5, 2, 4)]
    kw = dict(thresholds=[0.0], scaling=[0.2, 0.5], aspect_ratio=[1.0, 1.0], allow_no_crop=False,
              input_shape=[400, 100], bbox_layout="xyXY")
    anchor, shape, _ = run_crop(boxes, iterations=3, **kw)
    for a, s in zip(anchor, shape):  # relative output; square in pixels: w * 400 == h * 100
        np.testing.assert_allclose(s[0] * 400, s[1] * 100, rtol=1e-5)
        assert np.all(a >= 0) and np.all(a + s <= 1 + 1e-6)
    kw["aspect_ratio"] = [0.5, 2.0]
    anchor, shape, _ = run_crop(boxes, iterations=3, **kw)
    for s in shape:
        assert 0.5 * (1 - 1e-5) <= s[0] * 400 / (s[1] * 100) <= 2.0 * (1 + 1e-5)


def test_total_num_attempts_ends_the_search():
    rng = np.random.default_rng(14)
    boxes = [boxes_in_unit(rng, n) for n in (4, 6, 1)]
    kw = dict(thresholds=[1.0], allow_no_crop=False, scaling=[0.3, 0.6], aspect_ratio=[0.5, 2.0], num_attempts=3,
              total_num_attempts=10, bbox_layout="xyXY", output_bbox_indices=True)
    anchor, shape, out, idx = run_crop(boxes, **kw)  # IoU 1 cannot be reached: the best window so far
    for k in range(3):
        check_sample(anchor[k], shape[k], boxes[k], out[k], idx[k], 2, "iou", 0.0, True, False, needs_box=False)


def test_per_sample_shapes():
    rng = np.random.default_rng(15)
    boxes = [boxes_in_unit(rng, n) for n in (3, 2)]
    in_shapes = [np.array([640, 480], np.int32), np.array([100, 200], np.int32)]
    crop_shapes = [np.array([320, 240], np.int32), np.array([100, 50], np.int32)]
    pipe = ladle.Pipeline(batch_size=2, num_threads=1, seed=3)
    with pipe:
        b = fn.external_source(name="b", dtype=types.FLOAT, ndim=2)
        ins = fn.external_source(name="i", dtype=types.INT32, ndim=1)
        crs = fn.external_source(name="c", dtype=types.INT32, ndim=1)
        pipe.set_outputs(*fn.random_bbox_crop(b, input_shape=ins, crop_shape=crs, bbox_layout="xyXY"))
    try:
        pipe.feed_input("b", boxes)
        pipe.feed_input("i", in_shapes)
        pipe.feed_input("c", crop_shapes)
        anchor, shape, out = [[np.array(t.at(k)) for k in range(2)] for t in pipe.run()]
    finally:
        pipe.close()
    for k in range(2):
        np.testing.assert_array_equal(shape[k], crop_shapes[k])
        assert np.all(anchor[k] >= 0) and np.all(anchor[k] <= in_shapes[k] - crop_shapes[k])
        check_sample(anchor[k], shape[k], boxes[k], out[k], None, 2, "iou", 0.0, True, False, in_shape=in_shapes[k])
