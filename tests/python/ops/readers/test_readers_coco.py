"""fn.readers.coco: small COCO data sets written here (JPEGs by Pillow, the
annotations by json), read back and compared with values computed in the
test (boxes, labels, polygons, vertices, ids; masks of rectangles and RLEs)
and with DALI 2.4's readers.coco on the same files for every argument that
changes the outputs; bad files fail naming the file and the annotation."""

import json
import math

import numpy as np
import pytest
from PIL import Image

import ladle
from ladle import fn

from conftest import dali_or_skip, requires_ops, run_both

pytestmark = requires_ops("readers.coco")

CATEGORIES = [7, 3, 12, 5]  # remapped to 1, 2, 3, 4 in this order


def rle_string(counts):
    """pycocotools' compressed RLE string of `counts` (written here from its
    description: 5-bit groups, a continuation bit, deltas from counts[i-2])."""
    out = []
    for i, x in enumerate(counts):
        if i > 2:
            x -= counts[i - 2]
        more = True
        while more:
            c = x & 0x1F
            x >>= 5
            more = not ((c & 0x10 == 0 and x == 0) or (c & 0x10 and x == -1))
            out.append(chr((c | (0x20 if more else 0)) + 48))
    return "".join(out)


def rle_of(mask):
    """Column-major runs of a 0/1 mask, zeros first (COCO's RLE)."""
    flat = mask.T.reshape(-1)
    counts, cur, run = [], 0, 0
    for v in flat:
        if v != cur:
            counts.append(run)
            cur, run = v, 0
        run += 1
    counts.append(run)
    return counts


def make_dataset(root, n_images=11, seed=0, rectangles=False):
    """Writes images and annotations.json under root; returns (path, data)."""
    rng = np.random.default_rng(seed)
    ids = [int(i) for i in rng.choice(np.arange(1, 500), n_images, replace=False)]
    images, anns = [], []
    (root / "sub").mkdir(parents=True, exist_ok=True)
    next_ann = 1000
    for k, iid in enumerate(ids):
        w, h = int(rng.integers(16, 48)), int(rng.integers(12, 40))
        name = f"sub/img_{iid}.jpg" if k % 3 == 0 else f"img_{iid}.jpg"
        Image.fromarray(rng.integers(0, 255, (h, w, 3), dtype=np.uint8)).save(root / name, quality=90)
        images.append({"id": iid, "file_name": name, "width": w, "height": h, "license": 1})
        crowd = False
        for _ in range(int(rng.integers(0, 5)) if k % 4 else 0):  # every 4th image has none
            x, y = float(np.round(rng.uniform(0, w - 2), 2)), float(np.round(rng.uniform(0, h - 2), 2))
            bw = float(np.round(rng.choice([0.05, 0.5, 1.5, rng.uniform(2, w - x)]), 3))
            bh = float(np.round(rng.uniform(0.05, h - y), 3))
            ann = {"id": next_ann, "image_id": iid, "category_id": int(rng.choice(CATEGORIES[:3])), "area": bw * bh,
                   "bbox": [x, y, bw, bh], "iscrowd": 0}
            next_ann += 1
            kind = rng.integers(0, 4)
            if kind == 0 and not crowd:  # a crowd with an RLE mask, plain or compressed
                # One crowd per image, of its own category: DALI keeps only the last RLE of a label, and none
                # of a label that also has polygons (ladle draws them all).
                crowd = True
                ann["iscrowd"], ann["category_id"] = 1, CATEGORIES[3]
                m = np.zeros((h, w), np.uint8)
                x0, y0 = int(rng.integers(0, w - 1)), int(rng.integers(0, h - 1))
                m[y0:y0 + int(rng.integers(1, h)), x0:x0 + int(rng.integers(1, w))] = 1
                counts = rle_of(m)
                ann["segmentation"] = {"size": [h, w],
                                       "counts": rle_string(counts) if rng.integers(0, 2) else counts}
            elif rectangles:  # integer rectangles: pixels [x0, x1) x [y0, y1)
                x0, y0 = int(rng.integers(0, w - 2)), int(rng.integers(0, h - 2))
                x1, y1 = int(rng.integers(x0 + 1, w + 1)), int(rng.integers(y0 + 1, h + 1))
                ann["segmentation"] = [[x0, y0, x1, y0, x1, y1, x0, y1]]
            else:  # one or two polygons, points anywhere in (and a little outside) the image
                ann["segmentation"] = [
                    [float(np.round(v, 2)) for p in range(int(rng.integers(3, 7)))
                     for v in (rng.uniform(-2, w + 2), rng.uniform(-2, h + 2))]
                    for _ in range(int(rng.integers(1, 3)))]
            anns.append(ann)
    order = rng.permutation(len(anns))  # annotations need not be grouped by image
    data = {"info": {}, "images": images, "annotations": [anns[i] for i in order],
            "categories": [{"id": c, "name": f"c{c}", "supercategory": "s"} for c in CATEGORIES]}
    path = root / "annotations.json"
    path.write_text(json.dumps(data))
    return path, data


def expected(root, data, ltrb=False, ratio=False, skip_empty=False, size_threshold=0.1, include_iscrowd=True,
             avoid_class_remapping=False, **_):
    """Per sample, as DALI documents it: (bytes, boxes, labels, polygons,
    vertices, image id); boxes and vertices computed in float32."""
    f32 = np.float32
    label_of = {c: (c if avoid_class_remapping else i + 1) for i, c in enumerate(CATEGORIES)}
    out = []
    for im in sorted(data["images"], key=lambda i: i["id"]):
        w, h = f32(im["width"]), f32(im["height"])
        boxes, labels, polys, verts = [], [], [], []
        for a in data["annotations"]:  # file order within an image
            if a["image_id"] != im["id"] or (a["iscrowd"] and not include_iscrowd):
                continue
            x, y, bw, bh = (f32(v) for v in a["bbox"])
            if bw < f32(size_threshold) or bh < f32(size_threshold):
                continue
            if ltrb:
                bw, bh = x + bw, y + bh
            box = [x, y, bw, bh]
            if ratio:
                box = [box[0] / w, box[1] / h, box[2] / w, box[3] / h]
            seg = a.get("segmentation")
            if isinstance(seg, list):
                for p in seg:
                    xy = np.array(p, f32).reshape(-1, 2)
                    if ratio:
                        xy = np.stack([xy[:, 0] / w, xy[:, 1] / h], 1)
                    polys.append([len(boxes), len(verts), len(verts) + len(xy)])
                    verts += xy.tolist()
            boxes.append(box)
            labels.append(label_of[a["category_id"]])
        if skip_empty and not boxes:
            continue
        out.append(((root / im["file_name"]).read_bytes(), np.array(boxes, f32).reshape(-1, 4),
                    np.array(labels, np.int32), np.array(polys, np.int32).reshape(-1, 3),
                    np.array(verts, f32).reshape(-1, 2), im["id"]))
    return out


def read_all(path, root, batch_size=4, **kw):
    pipe = ladle.Pipeline(batch_size=batch_size, num_threads=2, device_id=None)
    with pipe:
        outs = fn.readers.coco(file_root=str(root), annotations_file=str(path), name="Reader", **kw)
        pipe.set_outputs(*outs)
    pipe.build()
    n = pipe.reader_meta("Reader")["epoch_size"]
    got = [[] for _ in outs]
    for _ in range(math.ceil(n / batch_size)):
        for k, tl in enumerate(pipe.run()):
            got[k] += [np.array(tl[i]) for i in range(len(tl))]
    pipe.close()
    return [g[:n] for g in got]


@pytest.fixture
def dataset(tmp_path):
    return make_dataset(tmp_path)


@pytest.mark.parametrize("kw", [{}, {"ltrb": True}, {"ratio": True}, {"ltrb": True, "ratio": True},
                                {"skip_empty": True}, {"size_threshold": 2.0}, {"include_iscrowd": False},
                                {"avoid_class_remapping": True}])
def test_boxes_labels_polygons_against_formula(tmp_path, dataset, kw):
    path, data = dataset
    exp = expected(tmp_path, data, **kw)
    got = read_all(path, tmp_path, polygon_masks=True, image_ids=True, **kw)
    assert len(got[0]) == len(exp)
    for s, e in enumerate(exp):
        assert got[0][s].tobytes() == e[0]
        assert got[1][s].dtype == np.float32 and got[1][s].shape == e[1].shape
        np.testing.assert_array_equal(got[1][s], e[1])  # the same float32 operations: exact
        assert got[2][s].dtype == np.int32
        np.testing.assert_array_equal(got[2][s], e[2])
        np.testing.assert_array_equal(got[3][s], e[3])
        np.testing.assert_array_equal(got[4][s], e[4])
        assert got[5][s].dtype == np.int32 and got[5][s].tolist() == [e[5]]


def test_default_outputs_and_legacy_masks(tmp_path, dataset):
    path, data = dataset
    exp = expected(tmp_path, data)
    got = read_all(path, tmp_path)
    assert len(got) == 3
    legacy = read_all(path, tmp_path, masks=True, save_img_ids=True)
    assert len(legacy) == 6
    for s, e in enumerate(exp):
        np.testing.assert_array_equal(got[1][s], e[1])
        p = e[3].copy()
        p[:, 1:] *= 2  # masks=True counts coordinates, not vertices (DALI's deprecated format)
        np.testing.assert_array_equal(legacy[3][s], p)
        assert legacy[5][s].tolist() == [e[5]]


def test_pixelwise_masks_against_rectangles_and_rles(tmp_path):
    path, data = make_dataset(tmp_path, rectangles=True, seed=3)
    got = read_all(path, tmp_path, pixelwise_masks=True)
    label_of = {c: i + 1 for i, c in enumerate(CATEGORIES)}
    images = sorted(data["images"], key=lambda i: i["id"])
    assert len(got[3]) == len(images)
    for s, im in enumerate(images):
        want = np.zeros((im["height"], im["width"]), np.int32)
        for a in data["annotations"]:
            if a["image_id"] != im["id"] or a["bbox"][2] < 0.1 or a["bbox"][3] < 0.1:
                continue
            seg, label = a["segmentation"], label_of[a["category_id"]]
            if isinstance(seg, list):
                x0, y0, x1, _, _, y1, _, _ = seg[0]
                cover = np.zeros_like(want, bool)
                cover[y0:y1, x0:x1] = True
            else:
                counts = seg["counts"]
                if isinstance(counts, str):
                    counts = decode_rle_string(counts)
                flat = np.repeat(np.arange(len(counts)) % 2, counts).astype(bool)
                cover = flat.reshape(im["width"], im["height"]).T
            want[cover] = np.maximum(want[cover], label)  # the largest label wins
        assert got[3][s].shape == (im["height"], im["width"], 1) and got[3][s].dtype == np.int32
        np.testing.assert_array_equal(got[3][s][:, :, 0], want)


def decode_rle_string(s):
    counts, p = [], 0
    while p < len(s):
        x, k, more = 0, 0, True
        while more:
            c = ord(s[p]) - 48
            x |= (c & 0x1F) << (5 * k)
            more = c & 0x20
            p += 1
            k += 1
            if not more and c & 0x10:
                x |= -1 << (5 * k)
        if len(counts) > 2:
            x += counts[-2]
        counts.append(x)
    return counts


# ---- DALI on the same files ---------------------------------------------------

DALI_CASES = [
    {},
    {"ltrb": True},
    {"ratio": True},
    {"ltrb": True, "ratio": True, "polygon_masks": True},
    {"skip_empty": True, "image_ids": True},
    {"size_threshold": 2.0, "polygon_masks": True},
    {"size_threshold": 0.5, "include_iscrowd": False},
    {"avoid_class_remapping": True, "image_ids": True},
    {"polygon_masks": True},
    {"polygon_masks": True, "ratio": True, "skip_empty": True},
    {"masks": True},
    {"pixelwise_masks": True},
    {"pixelwise_masks": True, "avoid_class_remapping": True, "image_ids": True},
    {"pixelwise_masks": True, "include_iscrowd": False, "ratio": True},
    {"num_shards": 3, "shard_id": 1, "image_ids": True},
    {"num_shards": 2, "shard_id": 1, "skip_empty": True, "polygon_masks": True},
]


@pytest.mark.parametrize("kw", DALI_CASES, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()) or "defaults")
def test_against_dali(tmp_path, kw):
    dali_or_skip()
    path, _ = make_dataset(tmp_path, n_images=13, seed=7)
    graph = lambda fn, types: tuple(fn.readers.coco(file_root=str(tmp_path), annotations_file=str(path),  # noqa
                                                    random_shuffle=False, **kw))
    n = len(read_all(path, tmp_path, **kw)[0])  # this shard's samples
    ours, dali = run_both(graph, {}, batch_size=3, iterations=math.ceil(n / 3))
    assert len(ours) == len(dali)
    for k, (a, b) in enumerate(zip(ours, dali)):
        for s in range(n):
            assert a[s].dtype == b[s].dtype and a[s].shape == b[s].shape, (k, s)
            # bit-identical: the same float32 arithmetic and rasterization
            np.testing.assert_array_equal(a[s], b[s], err_msg=f"output {k}, sample {s}")


def test_random_polygon_masks_against_dali(tmp_path):
    """Many random polygons (partly outside the image, duplicate points)
    rasterized by both: pycocotools' algorithm, pixel for pixel."""
    dali_or_skip()
    rng = np.random.default_rng(11)
    w, h = 37, 29
    for i in range(1, 7):  # one file per image: DALI mixes up images that share a file name
        Image.fromarray(np.zeros((h, w, 3), np.uint8)).save(tmp_path / f"a{i}.jpg")
    anns = []
    for i in range(60):
        # x < w - 1: the image's last column (the end of the column-major runs) stays empty, where DALI 2.4
        # lets the smaller of two overlapping labels win (elsewhere the larger, as ladle does everywhere).
        pts = [float(np.round(v, 3)) for _ in range(int(rng.integers(3, 9)))
               for v in (rng.uniform(-5, w - 1.5), rng.uniform(-5, h + 5))]
        if i % 7 == 0:
            pts[2:4] = pts[0:2]  # a repeated point
        anns.append({"id": i, "image_id": i % 6 + 1, "category_id": int(rng.integers(1, 4)),
                     "bbox": [1, 1, 5, 5], "segmentation": [pts]})
    data = {"images": [{"id": i, "file_name": f"a{i}.jpg", "width": w, "height": h} for i in range(1, 7)],
            "annotations": anns, "categories": [{"id": 1}, {"id": 2}, {"id": 3}]}
    (tmp_path / "a.json").write_text(json.dumps(data))
    graph = lambda fn, types: tuple(fn.readers.coco(file_root=str(tmp_path),  # noqa
                                                    annotations_file=str(tmp_path / "a.json"), pixelwise_masks=True))
    ours, dali = run_both(graph, {}, batch_size=6)
    for s in range(6):
        np.testing.assert_array_equal(ours[3][s], dali[3][s], err_msg=f"sample {s}")
    assert sum(int((m > 0).sum()) for m in ours[3]) > 1000  # the polygons drew something


# ---- bad files ----------------------------------------------------------------

def tiny(tmp_path, mutate=None, text=None, **kw):
    Image.fromarray(np.zeros((10, 20, 3), np.uint8)).save(tmp_path / "a.jpg")
    data = {"images": [{"id": 1, "file_name": "a.jpg", "width": 20, "height": 10}],
            "annotations": [{"id": 42, "image_id": 1, "category_id": 1, "bbox": [1, 1, 5, 5], "iscrowd": 0,
                             "segmentation": [[1, 1, 6, 1, 6, 6]]}],
            "categories": [{"id": 1}]}
    if mutate:
        mutate(data)
    path = tmp_path / "ann.json"
    path.write_text(text if text is not None else json.dumps(data, indent=1))
    return read_all(path, tmp_path, **kw)


@pytest.mark.parametrize("mutate, words", [
    (lambda d: d.pop("images"), ['no "images" list']),
    (lambda d: d.pop("categories"), ['no "categories" list']),
    (lambda d: d["images"][0].pop("width"), ["image 1", '"width"']),
    (lambda d: d["images"].append(dict(d["images"][0])), ["two images have id 1"]),
    (lambda d: d["annotations"][0].update(image_id=9), ["annotation 42", "image id 9"]),
    (lambda d: d["annotations"][0].update(category_id=9), ["annotation 42", "category_id 9"]),
    (lambda d: d["annotations"][0].pop("bbox"), ["annotation 42", '"bbox"']),
    (lambda d: d["annotations"][0].update(bbox=[1, 1, "5", 5]), ["annotation 42", '"bbox"']),
    (lambda d: d["annotations"][0].update(bbox=[25, 1, 5, 5]), ["annotation 42", "entirely outside"]),
    (lambda d: d["annotations"][0].update(bbox=[-9, 1, 5, 5]), ["annotation 42", "entirely outside"]),
    (lambda d: d["annotations"][0].update(segmentation=[[1, 1, 6, 1, 6]]), ["annotation 42", "odd number"]),
    (lambda d: d["annotations"][0].update(segmentation=[[1, 1, 6, 1]]), ["annotation 42", "at least 3"]),
    (lambda d: d["annotations"][0].update(segmentation={"counts": [3, 4], "size": [5, 5]}),
     ["annotation 42", "size [5, 5]"]),
    (lambda d: d["annotations"][0].update(segmentation={"counts": [150, 60], "size": [10, 20]}),
     ["annotation 42", "cover 210 pixels"]),
    (lambda d: d["annotations"][0].update(segmentation={"counts": "0\x7f", "size": [10, 20]}),
     ["annotation 42", "RLE string"]),
    (lambda d: (d["annotations"][0].pop("id"), d["annotations"][0].update(image_id=9)), ["annotation #0"]),
])
def test_bad_annotations_name_file_and_annotation(tmp_path, mutate, words):
    with pytest.raises(ladle.Error) as e:
        tiny(tmp_path, mutate, pixelwise_masks=True)
    msg = str(e.value)
    assert "readers.coco" in msg and "ann.json" in msg, msg
    for w in words:
        assert w in msg, msg


def test_invalid_json_names_line_and_column(tmp_path):
    with pytest.raises(ladle.CorruptDataError, match=r"ann\.json: invalid JSON at line 3, column 12 \(byte 37\)"):
        tiny(tmp_path, text='{"images": [\n  {"id": 1},\n  {"id": 2,, "x": 1}]}')
    with pytest.raises(ladle.CorruptDataError, match="invalid JSON"):
        tiny(tmp_path, text="")


def test_negative_sizes_and_thresholds(tmp_path):
    # A negative width is below any non-negative size_threshold: left out, as DALI documents.
    got = tiny(tmp_path, lambda d: d["annotations"][0].update(bbox=[1, 1, -5, 5]))
    assert got[1][0].shape == (0, 4)
    with pytest.raises(ladle.Error, match="annotation 42.*negative size"):
        tiny(tmp_path, lambda d: d["annotations"][0].update(bbox=[1, 1, -5, 5]), size_threshold=-10.0)
    # size_threshold is "lower than": a box exactly as wide is kept.
    assert tiny(tmp_path, size_threshold=5.0)[1][0].shape == (1, 4)
    assert tiny(tmp_path, size_threshold=5.001)[1][0].shape == (0, 4)
    with pytest.raises(ladle.Error, match="no image has an annotation left"):
        tiny(tmp_path, size_threshold=6.0, skip_empty=True)


def test_missing_image_file_names_the_path(tmp_path):
    with pytest.raises(ladle.Error, match="nothere.jpg"):
        tiny(tmp_path, lambda d: d["images"][0].update(file_name="nothere.jpg"))


@pytest.mark.parametrize("kw, words", [
    ({"polygon_masks": True, "pixelwise_masks": True}, "mutually exclusive"),
    ({"masks": True, "polygon_masks": True}, "ask for 7 outputs; at most 6"),
    ({"image_ids": True, "save_img_ids": True}, "exclude each other"),
])
def test_exclusive_arguments(tmp_path, kw, words):
    with pytest.raises(ladle.InvalidArgumentError, match=words):
        tiny(tmp_path, **kw)


def test_missing_arguments(tmp_path):
    pipe = ladle.Pipeline(batch_size=1, device_id=None)
    with pipe, pytest.raises(ladle.InvalidArgumentError, match="annotations_file"):
        fn.readers.coco(file_root=str(tmp_path))
    pipe.close()


# ---- metadata, dynamic mode ------------------------------------------------------

def test_index_memory_of_100k_annotations(tmp_path):
    """The index of 100,000 annotations (boxes, labels; with polygons of 8
    points) stays small: reader_meta's index_bytes."""
    rng = np.random.default_rng(0)
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(tmp_path / "a.jpg")
    n_img, n_ann = 5000, 100_000
    images = [{"id": i, "file_name": "a.jpg", "width": 640, "height": 480} for i in range(n_img)]
    img_of = rng.integers(0, n_img, n_ann)
    anns = [{"id": i, "image_id": int(img_of[i]), "category_id": 1 + i % 80, "bbox": [10.5, 20.25, 30.0, 40.0],
             "iscrowd": 0, "area": 1200.0, "segmentation": [[10, 20, 40, 20, 40, 60, 10, 60, 12, 22, 38, 22, 38, 58,
                                                             12, 58]]} for i in range(n_ann)]
    (tmp_path / "big.json").write_text(json.dumps({"images": images, "annotations": anns,
                                                   "categories": [{"id": c} for c in range(1, 81)]}))
    sizes = {}
    for polys in (False, True):
        pipe = ladle.Pipeline(batch_size=2, device_id=None)
        with pipe:
            pipe.set_outputs(*fn.readers.coco(file_root=str(tmp_path), annotations_file=str(tmp_path / "big.json"),
                                              polygon_masks=polys, name="R"))
        meta = pipe.reader_meta("R")
        pipe.close()
        assert meta["epoch_size"] == len(set(img_of.tolist()))
        sizes[polys] = meta["index_bytes"]
    print("index bytes for 100k annotations:", sizes)
    # boxes + labels: 20 bytes an annotation; images: 40 bytes and the path
    path_bytes = n_img * (len(str(tmp_path / "a.jpg")) + 1)
    assert 20 * n_ann + 40 * n_img + path_bytes <= sizes[False] < 20 * n_ann + 40 * n_img + path_bytes + 4096
    # + polygon ranges (12), one polygon record (16) and 8 vertices (64) each
    assert sizes[False] + 92 * n_ann <= sizes[True] < sizes[False] + 100 * n_ann


def test_dynamic_reader(tmp_path, dataset):
    import ladle.dynamic as ndd

    path, data = dataset
    exp = expected(tmp_path, data, ltrb=True)
    reader = ndd.readers.COCO(file_root=str(tmp_path), annotations_file=str(path), ltrb=True, image_ids=True)
    assert ndd.readers.COCO is ndd.readers.Coco
    samples = list(reader.next_epoch())
    assert len(samples) == len(exp)
    for (enc, boxes, labels, ids), e in zip(samples, exp):
        assert np.asarray(enc).tobytes() == e[0]
        np.testing.assert_array_equal(np.asarray(boxes), e[1])
        np.testing.assert_array_equal(np.asarray(labels), e[2])
        assert np.asarray(ids).tolist() == [e[5]]
    reader.close()


def test_masks_union_of_a_labels_rle_and_polygons(tmp_path):
    """ladle draws every segmentation of a label (DALI 2.4 keeps only the
    last RLE of a label, and none when the label also has polygons)."""
    rle = np.zeros((10, 20), np.uint8)
    rle[0:3, 15:20] = 1

    def mutate(d):
        d["annotations"].append({"id": 43, "image_id": 1, "category_id": 1, "bbox": [15, 0, 5, 3], "iscrowd": 1,
                                 "segmentation": {"counts": rle_of(rle), "size": [10, 20]}})
        d["annotations"][0]["segmentation"] = [[1, 1, 6, 1, 6, 6, 1, 6]]

    got = tiny(tmp_path, mutate, pixelwise_masks=True)
    want = rle.astype(np.int32)
    want[1:6, 1:6] = 1
    np.testing.assert_array_equal(got[3][0][:, :, 0], want)


def test_images_sharing_a_file_are_separate_samples(tmp_path):
    def mutate(d):
        d["images"].append({"id": 2, "file_name": "a.jpg", "width": 20, "height": 10})
        d["annotations"].append({"id": 50, "image_id": 2, "category_id": 1, "bbox": [2, 2, 3, 3]})

    got = tiny(tmp_path, mutate, image_ids=True)
    assert [i.tolist() for i in got[3]] == [[1], [2]]
    assert got[1][0].tolist() == [[1, 1, 5, 5]] and got[1][1].tolist() == [[2, 2, 3, 3]]
