"""The generated COCO-format set (ladle.cocodata) and the detection example
(examples/detection/train.py): the set is byte-reproducible and its boxes,
areas and masks agree with each other and with DALI's readers.coco; the SSD
pipeline returns exactly the generator's boxes without augmentation, keeps
boxes on their pixels through crop, flip and resize, and a short training
run lowers the loss. Each pipeline test runs on ladle once it has the
operators (readers.coco, random_bbox_crop, bb_flip) and on DALI 2.4 when
installed."""

import filecmp
import importlib.util
import os
import re
import subprocess
import sys
import types as pytypes

import numpy as np
import pytest
from conftest import dali_or_skip, run_ranks, run_script

import ladle
from ladle import cocodata
from ladle.pipeline import op_schemas

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.join(HERE, "..", "..")
TRAIN = os.path.join(REPO, "examples", "detection", "train.py")
PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(ladle.__file__)))


def load_train():
    spec = importlib.util.spec_from_file_location("detection_train", TRAIN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def ladle_or_skip():
    missing = [op for op in ("readers.coco", "random_bbox_crop", "bb_flip") if op not in op_schemas()]
    if missing:
        pytest.skip(f"ladle has no {', '.join(missing)} yet")


def lib_or_skip(lib):
    if lib == "ladle":
        ladle_or_skip()
    else:
        dali_or_skip()


LIBS = ["ladle", "dali"]


@pytest.fixture(scope="module")
def small_set(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("coco"))
    info = cocodata.make_coco(root, images=24, seed=5, backgrounds="demo", side=(96, 200), objects=(1, 5),
                              rle_fraction=0.3, crowd_fraction=0.1, empty_fraction=0.1)
    return info


@pytest.fixture(scope="module")
def flat_set(tmp_path_factory):
    """One object per image on uniform grey: every non-grey pixel is the object."""
    root = str(tmp_path_factory.mktemp("coco-flat"))
    return cocodata.make_coco(root, images=24, seed=9, backgrounds="flat", side=(120, 200), objects=(1, 1),
                              size_range=(0.3, 0.7), empty_fraction=0.0)


# --- the generator ----------------------------------------------------------------------

def test_generator_is_byte_reproducible(tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    cocodata.make_coco(a, images=20, seed=3, backgrounds="generated", side=(64, 128))
    cocodata.make_coco(b, images=20, seed=3, backgrounds="generated", side=(64, 128), workers=2)
    names = sorted(os.listdir(os.path.join(a, "images")))
    assert len(names) == 20 and names == sorted(os.listdir(os.path.join(b, "images")))
    match, mismatch, errors = filecmp.cmpfiles(a, b, ["annotations/instances.json"] +
                                               [f"images/{n}" for n in names], shallow=False)
    assert not mismatch and not errors
    c = str(tmp_path / "c")
    cocodata.make_coco(c, images=20, seed=4, backgrounds="generated", side=(64, 128))
    assert not filecmp.cmp(os.path.join(a, "annotations", "instances.json"),
                           os.path.join(c, "annotations", "instances.json"), shallow=False)


def test_generator_annotations_are_consistent(small_set):
    doc = cocodata.load(small_set["annotations_file"])
    cat_ids = [c["id"] for c in doc["categories"]]
    assert cat_ids != list(range(1, len(cat_ids) + 1))  # gaps, as COCO's
    kinds = set()
    for im in doc["images"]:
        h, w = im["height"], im["width"]
        total = np.zeros((h, w), dtype=np.int32)
        for ann in doc["by_image"][im["id"]]:
            mask = cocodata.object_mask(ann, h, w)
            total += mask
            assert mask.sum() == ann["area"] > 0
            assert cocodata.mask_box(mask) == [int(v) for v in ann["bbox"]]
            assert ann["category_id"] in cat_ids
            seg = ann["segmentation"]
            kind = "polygon" if isinstance(seg, list) else ("rle" if isinstance(seg["counts"], list) else "string")
            kinds.add(kind)
            assert ann["iscrowd"] == (1 if kind == "rle" else 0)
            if kind == "string":
                assert cocodata.rle_from_string(seg["counts"]) == cocodata.rle_counts(mask)
        assert total.max() <= 1  # objects do not overlap
    assert kinds == {"polygon", "rle", "string"}
    assert any(not doc["by_image"][im["id"]] for im in doc["images"])  # some images are empty


def test_generator_paints_exactly_the_masks(flat_set):
    """On the flat background, the pixels that differ from grey (beyond JPEG noise) are the mask."""
    from PIL import Image

    doc = cocodata.load(flat_set["annotations_file"])
    for im in doc["images"][:8]:
        (ann,) = doc["by_image"][im["id"]]
        mask = cocodata.object_mask(ann, im["height"], im["width"])
        pixels = np.asarray(Image.open(os.path.join(flat_set["file_root"], im["file_name"])), dtype=np.int32)
        differs = np.abs(pixels - 128).max(axis=2) > 60
        # JPEG blurs the edges by a pixel or two; away from the edges the two agree.
        inner = cocodata._dilate(~mask, 2)
        outer = cocodata._dilate(mask, 2)
        assert differs[~inner].all() and not differs[~outer].any()


def test_rle_string_round_trip():
    rng = np.random.default_rng(0)
    for _ in range(20):
        mask = rng.random((int(rng.integers(1, 40)), int(rng.integers(1, 40)))) < rng.random()
        counts = cocodata.rle_counts(mask)
        assert sum(counts) == mask.size
        assert np.array_equal(cocodata.rle_decode(counts, *mask.shape), mask)
        assert cocodata.rle_from_string(cocodata.rle_to_string(counts)) == counts
    # Worked by hand from pycocotools' rleToString: 5-bit groups + 48, bit 0x20 "more",
    # counts from the third on as differences (0 - 1 = -1 -> 31 -> "O"); 100 = 4 + 3 * 32 -> "T3".
    assert cocodata.rle_to_string([100, 2]) == "T32"
    assert cocodata.rle_to_string([0, 1, 5, 0]) == "015O"


def test_tool_writes_the_set(tmp_path):
    out = str(tmp_path / "set")
    proc = subprocess.run([sys.executable, os.path.join(REPO, "tools", "make_coco_data.py"), out, "-n", "5",
                           "--side", "64,96", "--backgrounds", "generated", "-j", "1"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "5 images" in proc.stdout
    assert len(cocodata.load(os.path.join(out, "annotations", "instances.json"))["images"]) == 5


def test_dali_reader_reads_the_generated_set(small_set):
    """DALI's readers.coco gives the generator's boxes and remapped labels
    exactly, and its pixelwise masks the RLE masks exactly (where an image
    has one object of that category: DALI keeps one RLE per category) and
    the rectangles' polygon masks exactly."""
    dali = dali_or_skip()
    from nvidia.dali import fn as dfn

    doc = cocodata.load(small_set["annotations_file"])
    images = [im for im in doc["images"] if doc["by_image"][im["id"]]]
    remap = {cid: k + 1 for k, cid in enumerate(sorted(c["id"] for c in doc["categories"]))}
    pipe = dali.Pipeline(batch_size=len(images), num_threads=1, device_id=None, exec_dynamic=False)
    with pipe:
        _, boxes, labels, masks = dfn.readers.coco(file_root=small_set["file_root"],
                                                   annotations_file=small_set["annotations_file"],
                                                   skip_empty=True, pixelwise_masks=True)
        pipe.set_outputs(boxes, labels, masks)
    pipe.build()
    boxes, labels, masks = pipe.run()
    checked = 0
    for i, im in enumerate(images):
        anns = doc["by_image"][im["id"]]
        expected = np.array([a["bbox"] for a in anns], dtype=np.float32).reshape(-1, 4)
        assert np.array_equal(np.array(boxes[i]), expected)
        assert np.array(labels[i]).reshape(-1).tolist() == [remap[a["category_id"]] for a in anns]
        m = np.array(masks[i])[..., 0]
        for a in anns:
            same_cat = sum(b["category_id"] == a["category_id"] for b in anns)
            rle = isinstance(a["segmentation"], dict)
            if same_cat == 1 and (rle or a["category_id"] == 1):
                mask = cocodata.object_mask(a, im["height"], im["width"])
                assert np.array_equal(m == remap[a["category_id"]], mask), a
                checked += 1
    assert checked >= 5


# --- the pipeline ------------------------------------------------------------------------

def pipeline_args(info, size, batch):
    return pytypes.SimpleNamespace(file_root=info["file_root"], annotations=info["annotations_file"],
                                   image_size=size, workers=2, seed=0, no_augment=False, batch_size=batch)


def run_pipeline(lib, info, size, batch, augment, iterations=1, shuffle=True):
    """[(image HWC uint8-ish float, boxes [n, 4] relative ltrb, labels)] of the example's pipeline."""
    train = load_train()
    dev = pytypes.SimpleNamespace(rank=0, world=1, local_rank=0)
    pipe = train.build_pipeline(lib, pipeline_args(info, size, batch), dev, "cpu", batch_size=batch,
                                augment=augment, shuffle=shuffle)
    out = []
    for _ in range(iterations):
        images, boxes, labels = pipe.run()
        for k in range(batch):
            img = np.array(images[k]).transpose(1, 2, 0) * np.array(train.STD) + np.array(train.MEAN)
            out.append((img, np.array(boxes[k]).reshape(-1, 4), np.array(labels[k]).reshape(-1)))
    return out


@pytest.mark.parametrize("lib", LIBS)
def test_pipeline_boxes_are_the_generators(lib, small_set):
    lib_or_skip(lib)
    doc = cocodata.load(small_set["annotations_file"])
    images = [im for im in doc["images"] if doc["by_image"][im["id"]]]  # skip_empty
    remap = {cid: k + 1 for k, cid in enumerate(sorted(c["id"] for c in doc["categories"]))}
    samples = run_pipeline(lib, small_set, 64, len(images), augment=False, shuffle=False)  # the file's order
    for im, (img, boxes, labels) in zip(images, samples):
        anns = doc["by_image"][im["id"]]
        w, h = np.float32(im["width"]), np.float32(im["height"])
        expected = np.array([[x / w, y / h, (x + bw) / w, (y + bh) / h]
                             for x, y, bw, bh in (np.float32(a["bbox"]) for a in anns)], dtype=np.float32)
        assert img.shape == (64, 64, 3)
        assert np.array_equal(boxes, expected), (im, boxes, expected)
        assert labels.tolist() == [remap[a["category_id"]] for a in anns]


@pytest.mark.parametrize("lib", LIBS)
def test_loader_targets_are_the_pipelines_boxes(lib, small_set):
    # PipelineLoader copies all boxes and labels of a batch at once and splits them per image: the same
    # values, in absolute pixels, as the pipeline gives per image.
    lib_or_skip(lib)
    torch = pytest.importorskip("torch")
    train = load_train()
    dev = pytypes.SimpleNamespace(rank=0, world=1, local_rank=0, device=torch.device("cpu"))
    batch = 6
    samples = run_pipeline(lib, small_set, 64, batch, augment=False, shuffle=False)
    pipe = train.build_pipeline(lib, pipeline_args(small_set, 64, batch), dev, "cpu", batch_size=batch,
                                augment=False, shuffle=False)
    _, targets = train.PipelineLoader(lib, pipe, dev, 64).next()
    assert len(targets) == batch
    for (_, boxes, labels), t in zip(samples, targets):
        assert t["boxes"].dtype == torch.float32 and t["labels"].dtype == torch.int64
        np.testing.assert_array_equal(t["boxes"].numpy(), boxes * np.float32(64))
        assert t["labels"].tolist() == labels.tolist()


def draw_boxes(img, boxes, path):
    from PIL import Image, ImageDraw

    im = Image.fromarray(np.clip(img, 0, 255).astype(np.uint8))
    d = ImageDraw.Draw(im)
    s = img.shape[0]
    for b in boxes:
        d.rectangle([b[0] * s, b[1] * s, b[2] * s - 1, b[3] * s - 1], outline=(255, 0, 0))
    im.save(path)


@pytest.mark.parametrize("lib", LIBS)
def test_pipeline_boxes_stay_on_their_pixels(lib, flat_set, tmp_path):
    """With crop, flip, resize and colour jitter, each box is the extent of
    its object's pixels (to 3.5 pixels: resampling and JPEG blur the edges). The
    drawn boxes are written to the test's tmp_path for a look."""
    lib_or_skip(lib)
    size = 96
    samples = run_pipeline(lib, flat_set, size, 8, augment=True, iterations=3)
    checked, errors = 0, []
    for k, (img, boxes, labels) in enumerate(samples):
        draw_boxes(img, boxes, str(tmp_path / f"{lib}-{k:02d}.png"))
        if len(boxes) != 1:
            assert len(boxes) == 0  # the one object, or none when the crop lost its centre
            continue
        # The grey background stays grey (R = G = B, but for JPEG's noise) through hue,
        # saturation, brightness and contrast, while the objects stay colourful
        # (saturation >= 0.7 halved at most): the nearly grey pixels give the
        # background's level, and the object is what lies far from it.
        grey = img.max(axis=2) - img.min(axis=2) < 8
        if grey.sum() < 20:  # the crop lies inside the object
            differs = np.ones(grey.shape, dtype=bool)
        else:
            differs = np.abs(img - np.median(img[grey], axis=0)).max(axis=2) > 25
            # JPEG's chroma ringing by a sharp tip, magnified by an upscaled crop and
            # saturation, leaves specks of a pixel or two beside the object: keep
            # pixels with most of their 3x3 neighbourhood differing.
            padded = np.pad(differs, 1)
            around = sum(padded[dy:dy + differs.shape[0], dx:dx + differs.shape[1]]
                         for dy in range(3) for dx in range(3))
            differs &= around >= 5
        ys, xs = np.nonzero(differs)
        if xs.size == 0:
            continue
        got = np.array([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], dtype=np.float64)
        want = boxes[0] * size
        errors.append(np.abs(got - want).max())
        checked += 1
    # Upscaled crops (up to 1 / 0.3 here) and JPEG's chroma subsampling blur an
    # edge over about a source pixel: 3.5 output pixels at most (measured: <= 3.0),
    # and mostly within one pixel. A box misplaced by a flip or crop is off by tens.
    assert checked >= 12
    assert max(errors) <= 3.5 and np.median(errors) <= 1.5, sorted(errors)


# --- SSD box encoding (train.py --encode-boxes) -----------------------------------------

def random_rel_boxes(rng, n):
    """n relative ltrb boxes, 4 % to 70 % of the image a side."""
    wh = rng.uniform(0.04, 0.7, (n, 2))
    lt = rng.uniform(0, 1, (n, 2)) * (1 - wh)
    return np.concatenate([lt, lt + wh], 1).astype(np.float32).reshape(n, 4)


@pytest.mark.parametrize("arch,size", [("tinyssd", 96), ("ssd300_vgg16", 300)])
def test_box_encoder_equals_torchvision_ssd_encoding(arch, size):
    """The example's box_encoder (relative boxes, scale=size) against
    torchvision's own SSD target encoding (SSDMatcher + BoxCoder in pixels) on
    the model's default boxes (8732 for SSD300): the same anchors matched to
    the same labels, the offsets to 1e-4 (float32 in relative units against
    pixels: the quotients round differently; a misplaced match is off by > 0.1)."""
    if "box_encoder" not in op_schemas():
        pytest.skip("ladle has no box_encoder yet")
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchvision")
    from ladle import fn, types

    train = load_train()
    anchors = train.default_boxes(train.make_model(arch, 6, size), size)
    if arch == "ssd300_vgg16":
        assert anchors.shape == (8732, 4)
    rng = np.random.default_rng(3)
    counts = [0, 1, 3, 8, 20, 2, 5, 12]
    boxes = [random_rel_boxes(rng, n) for n in counts]
    labels = [rng.integers(1, 7, n).astype(np.int32) for n in counts]
    pipe = ladle.Pipeline(batch_size=len(counts), num_threads=2)
    with pipe:
        b = fn.external_source(name="b", dtype=types.FLOAT, ndim=2)
        lab = fn.external_source(name="l", dtype=types.INT32, ndim=1)
        pipe.set_outputs(*train.encode_boxes(fn, b, lab, anchors.numpy(), size))
    try:
        pipe.feed_input("b", boxes)
        pipe.feed_input("l", labels)
        loc, cls = pipe.run()
        loc, cls = [np.array(loc.at(k)) for k in range(len(counts))], [np.array(cls.at(k)) for k in range(len(counts))]
    finally:
        pipe.close()
    from torchvision.ops import box_iou

    matched = ties = 0
    for k in range(len(counts)):
        b, lab = torch.from_numpy(boxes[k]) * size, torch.from_numpy(labels[k])
        want_loc, want_cls = (t.numpy() for t in train.torchvision_encode(b, lab, anchors * size))
        ok = (cls[k] == want_cls) & np.all(np.abs(loc[k] - want_loc) <= 1e-4 + 1e-4 * np.abs(want_loc), axis=1)
        # A box's best anchor can tie (anchors of one size on a grid, at equal IoU to
        # rounding): torchvision takes the first, DALI (and ladle) the last. Those
        # anchors may differ; no other may.
        tied = np.zeros(len(anchors), dtype=bool)
        if len(b):
            iou = box_iou(b, anchors * size).numpy()
            near = iou >= iou.max(1, keepdims=True) * (1 - 1e-5)
            tied = (near & (near.sum(1, keepdims=True) > 1)).any(0)
        assert (ok | tied).all(), (k, np.nonzero(~(ok | tied))[0])
        ties += int((~ok).sum())
        matched += int((cls[k] > 0).sum())
    assert matched >= sum(counts)  # every box claims an anchor at least
    assert ties <= 0.1 * matched  # measured: 14 of 202 (tinyssd), most anchors agree exactly


def test_multibox_loss_equals_torchvision_ssd_loss():
    """multibox_loss on encoded targets gives torchvision's SSD.compute_loss
    (which matches and encodes itself) on the same head outputs."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchvision")
    from torchvision.ops import box_iou

    train = load_train()
    size = 96
    model = train.make_model("tinyssd", 6, size)
    anchors = train.default_boxes(model, size) * size
    g = torch.Generator().manual_seed(0)
    rng = np.random.default_rng(4)
    targets = [{"boxes": torch.from_numpy(random_rel_boxes(rng, n)) * size,
                "labels": torch.from_numpy(rng.integers(1, 7, n))} for n in (1, 4, 9)]
    head = {"bbox_regression": torch.randn(3, len(anchors), 4, generator=g),
            "cls_logits": torch.randn(3, len(anchors), 7, generator=g)}
    matched = [model.proposal_matcher(box_iou(t["boxes"], anchors)) for t in targets]
    want = model.compute_loss(targets, head, [anchors] * 3, matched)
    encoded = [train.torchvision_encode(t["boxes"], t["labels"], anchors) for t in targets]
    got = train.multibox_loss(head["bbox_regression"], head["cls_logits"], torch.stack([e[0] for e in encoded]),
                              torch.stack([e[1] for e in encoded]))
    for key in ("bbox_regression", "classification"):
        assert abs(float(got[key]) - float(want[key])) <= 1e-5 * abs(float(want[key])), (key, got, want)


# --- training -------------------------------------------------------------------------

def run_train(args, timeout=600):
    return run_script(TRAIN, args, timeout=timeout, omp_threads="2")


@pytest.fixture(scope="module")
def train_set(tmp_path_factory):
    """48 training images and, in val/, 16 validation images (where train.py looks)."""
    root = str(tmp_path_factory.mktemp("coco-train"))
    cocodata.make_coco(root, images=48, seed=1, backgrounds="demo", side=(96, 160), objects=(1, 3),
                       size_range=(0.3, 0.7))
    cocodata.make_coco(os.path.join(root, "val"), images=16, seed=2, backgrounds="demo", side=(96, 160),
                       objects=(1, 3), size_range=(0.3, 0.7), empty_fraction=0.1)
    return root


def has_pycocotools():
    return importlib.util.find_spec("pycocotools") is not None


def check_evaluation(out, images):
    """train.py's COCO mAP lines (pycocotools present), or its clear refusal."""
    if not has_pycocotools():
        assert "evaluation skipped: COCO mAP needs pycocotools (pip install pycocotools)" in out, out
        return None
    assert f"COCO box evaluation of {images} validation images" in out, out
    ap = float(re.search(r"^##mAP ([\d.]+)$", out, re.M).group(1))
    ap50 = float(re.search(r"^##AP50 ([\d.]+)$", out, re.M).group(1))
    assert 0 <= ap <= ap50 <= 1
    return ap, ap50


@pytest.mark.slow
@pytest.mark.parametrize("backend,encode", [("ladle-cpu", False), ("dali", False), ("pytorch", False),
                                            ("ladle-cpu", True), ("pytorch", True)])
def test_training_lowers_the_loss(backend, encode, train_set):
    """A short run lowers the loss (torchvision's SSD loss, or with
    --encode-boxes the example's multibox loss on box_encoder's targets), then
    reports COCO mAP on the validation set (its first 8 images)."""
    if backend == "ladle-cpu":
        ladle_or_skip()
    elif backend == "dali":
        dali_or_skip()
    pytest.importorskip("torchvision")
    out = run_train([train_set, "-a", "tinyssd", "--image-size", "96", "-b", "8", "--cpu", "-j", "2", "-p", "1",
                     "--epochs", "3", "--iters-per-epoch", "4", "--lr", "0.05", "--warmup-iters", "3",
                     "--data-backend", backend, "--deterministic", "--eval-images", "8"] +
                    (["--encode-boxes"] if encode else []))
    assert f"data: {backend}" in out
    if encode:
        assert "default boxes, multibox loss" in out and ("box_encoder" in out or backend == "pytorch"), out
    losses = [float(v) for v in re.findall(r"^Epoch: .*?Loss ([\d.]+) ", out, re.M)]
    assert len(losses) == 12, out
    assert np.mean(losses[-3:]) < 0.8 * np.mean(losses[:3]), losses
    assert float(re.search(r"^##Perf ([\d.]+)$", out, re.M).group(1)) > 0
    check_evaluation(out, 8)


@pytest.mark.slow
def test_evaluation_without_pycocotools_says_so(train_set, tmp_path):
    """Where pycocotools does not import, train.py trains and says why it has no mAP."""
    stub = tmp_path / "stub" / "pycocotools"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("raise ImportError('pycocotools hidden by the test')\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "stub"))
    out = run_script(TRAIN, [train_set, "-a", "tinyssd", "--image-size", "64", "-b", "4", "--cpu", "-j", "1",
                             "--iters-per-epoch", "1", "--data-backend", "pytorch", "--tv-transforms", "v1"],
                     env=env, omp_threads="2")
    assert "evaluation skipped: COCO mAP needs pycocotools (pip install pycocotools)" in out, out
    assert "##mAP" not in out


def test_train_says_what_ladle_lacks(train_set):
    missing = [op for op in ("readers.coco", "random_bbox_crop", "bb_flip") if op not in op_schemas()]
    if not missing:
        pytest.skip("ladle has the detection operators")
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    proc = subprocess.run([sys.executable, TRAIN, train_set, "-a", "tinyssd", "--cpu", "--data-backend",
                           "ladle-cpu"], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "this ladle has no" in proc.stderr and missing[0] in proc.stderr


@pytest.mark.slow
def test_training_under_torch_distributed(train_set, tmp_path):
    """Two ranks (gloo): the reader shards the set (rank r reads shard r), both
    run the same number of iterations, and rank 0 prints the all-reduced loss."""
    backend = "dali" if [op for op in ("readers.coco", "random_bbox_crop", "bb_flip") if op not in op_schemas()] \
        else "ladle-cpu"
    if backend == "dali":
        dali_or_skip()
    codes, outs = run_ranks([TRAIN, train_set, "-a", "tinyssd", "--image-size", "96", "-b", "4", "--cpu", "-j", "1",
                             "-p", "1", "--epochs", "1", "--iters-per-epoch", "3", "--data-backend", backend],
                            2, tmp_path, timeout=400)
    assert codes == [0, 0], outs
    assert "2 process(es) x batch 4" in outs[0] and len(re.findall(r"^Epoch: ", outs[0], re.M)) == 3
    assert not re.findall(r"^Epoch: ", outs[1], re.M)  # only rank 0 prints
