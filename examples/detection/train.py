#!/usr/bin/env python3
"""Trains a torchvision object detector (SSD300-VGG16 by default, no pretrained
weights) on a COCO-format set through a DALI-style SSD pipeline, with ladle (or
DALI, or torchvision) loading the data.

    python train.py DIR -b 32 --amp                                   # one GPU
    torchrun --nproc_per_node 8 train.py DIR -b 32 --amp              # eight
    python train.py DIR -a tinyssd --image-size 128 -b 8 --cpu        # a CPU, in seconds
    python train.py DIR --data-backend pytorch -j 8                   # torchvision, to compare
    python train.py DIR --encode-boxes                                # box_encoder in the pipeline

DIR holds images/ and annotations/instances.json (tools/make_coco_data.py
writes such a set; --file-root / --annotations name others). After training,
COCO mAP on the validation set (--val, default DIR/val when there:
make_coco_data.py --val N writes one) with pycocotools' COCOeval. See README.md.
"""

import argparse
import contextlib
import io
import json
import math
import os
import random
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn

# The process group, worker count and mixed precision, shared with examples/imagenet/train.py.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from train_common import Dist, autocast, default_workers, exit_with, images_per_s, make_scaler  # noqa: E402

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]
# SSD's augmentation (torchvision's reference recipe and DALI's SSD example):
CROP_THRESHOLDS = [0.0, 0.1, 0.3, 0.5, 0.7, 0.9]  # minimum IoU of a crop with some box
CROP_SCALING = [0.3, 1.0]
CROP_ASPECT = [0.5, 2.0]
CROP_ATTEMPTS = 50
BRIGHTNESS = [0.875, 1.125]
CONTRAST = [0.5, 1.5]
SATURATION = [0.5, 1.5]
HUE_DEGREES = [-18.0, 18.0]  # torchvision's hue=(-0.05, 0.05) of a turn
ARCHS = ("ssd300_vgg16", "ssdlite320_mobilenet_v3_large", "retinanet_resnet50_fpn", "tinyssd")
BACKENDS = ("ladle", "ladle-cpu", "pytorch", "dali", "dali-cpu", "synthetic")
LADLE_OPS = ("readers.coco", "random_bbox_crop", "bb_flip", "slice", "hsv", "brightness_contrast", "resize",
             "crop_mirror_normalize")
# SSD's box encoding (torchvision's SSD and NVIDIA's SSD example): an anchor takes
# a box at IoU 0.5, offsets divided by these (torchvision's BoxCoder weights 10, 10, 5, 5).
MATCH_IOU = 0.5
BOX_STDS = [0.1, 0.1, 0.2, 0.2]
NEG_TO_POS = 3  # hard negative mining: background anchors per matched anchor
SSD_ARCHS = ("ssd300_vgg16", "ssdlite320_mobilenet_v3_large", "tinyssd")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Object detection training with ladle (or DALI/torchvision) data loading")
    p.add_argument("data", metavar="DIR", nargs="?", help="folder with images/ and annotations/instances.json")
    p.add_argument("--file-root", default=None, help="image folder (default DIR/images)")
    p.add_argument("--annotations", default=None, help="COCO instances JSON (default DIR/annotations/instances.json)")
    p.add_argument("-a", "--arch", default="ssd300_vgg16", choices=ARCHS)
    p.add_argument("-j", "--workers", type=int, default=None,
                   help="data-loading threads/processes per process (default: this process's share of the cores, "
                        "less 4, at least 2)")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("-b", "--batch-size", type=int, default=32, help="batch size per process (default 32)")
    p.add_argument("--lr", type=float, default=0.002, help="learning rate for a global batch of 32, scaled linearly")
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--wd", "--weight-decay", type=float, default=5e-4, dest="weight_decay")
    p.add_argument("--warmup-iters", type=int, default=100, help="linear warm-up of the learning rate (iterations)")
    p.add_argument("--clip-grad", type=float, default=10.0, help="gradient norm clipping (0: off)")
    p.add_argument("-p", "--print-freq", type=int, default=10, help="print (and synchronize) every N iterations")
    p.add_argument("--iters-per-epoch", type=int, default=0, metavar="N", help="stop each epoch after N iterations")
    p.add_argument("--image-size", type=int, default=0, help="training image side (default: the model's, 300/320)")
    p.add_argument("--data-backend", default="ladle", choices=BACKENDS,
                   help="ladle: decode and augment on the GPU; ladle-cpu: on the CPU; dali: the same pipeline on "
                        "NVIDIA DALI (dali-cpu: its CPU operators); pytorch: torchvision CocoDetection + transforms v2 + DataLoader (a v1 "
                        "equivalent where torchvision has no v2); synthetic: one batch on the device")
    p.add_argument("--tv-transforms", default="auto", choices=["auto", "v1", "v2"],
                   help="pytorch backend: v2 needs torchvision >= 0.16 and pycocotools (auto: v2 when there)")
    p.add_argument("--no-augment", action="store_true", help="decode and resize only (no crop, flip, colour)")
    p.add_argument("--hw-decoder-load", type=float, default=None, metavar="X",
                   help="the mixed decoder's share of JPEGs for the hardware engines (default: the library's own)")
    p.add_argument("--decoder-balance", default=None, choices=["fixed", "adaptive"],
                   help="ladle only: decoder_balance of the mixed decoder (default: fixed)")
    p.add_argument("--amp", action="store_true", help="mixed precision (float16 on GPU, bfloat16 on CPU)")
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--cpu", action="store_true", help="train on the CPU even when a GPU is there")
    p.add_argument("--deterministic", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save", default="", metavar="PATH", help="rank 0 writes the model here at the end")
    p.add_argument("--encode-boxes", action="store_true",
                   help="the pipeline matches boxes to the model's default boxes (box_encoder; the pytorch backend: "
                        "torchvision's matcher in the workers) and the loss is SSD's multibox loss on those targets "
                        "(SSD architectures)")
    p.add_argument("--val", default=None, metavar="VAL_DIR",
                   help="validation set for COCO mAP after training (default DIR/val when it has "
                        "annotations/instances.json)")
    p.add_argument("--val-file-root", default=None, help="validation images (default VAL_DIR/images)")
    p.add_argument("--val-annotations", default=None,
                   help="validation COCO JSON (default VAL_DIR/annotations/instances.json)")
    p.add_argument("--eval-images", type=int, default=0, metavar="N",
                   help="evaluate on the first N validation images (0: all)")
    p.add_argument("--no-eval", action="store_true", help="no evaluation after training")
    args = p.parse_args(argv)
    if args.decoder_balance and args.data_backend.startswith("dali"):
        p.error("--decoder-balance is ladle's (DALI's decoder has no decoder_balance)")
    if args.encode_boxes and args.arch not in SSD_ARCHS:
        p.error(f"--encode-boxes needs an SSD architecture ({', '.join(SSD_ARCHS)}), not {args.arch}")
    if args.data_backend != "synthetic":
        if not args.data and not (args.file_root and args.annotations):
            p.error("DIR (or --file-root and --annotations) is required unless --data-backend synthetic")
        args.file_root = args.file_root or os.path.join(args.data, "images")
        args.annotations = args.annotations or os.path.join(args.data, "annotations", "instances.json")
    if args.workers is None:
        args.workers = default_workers()
    if not args.image_size:
        args.image_size = 320 if args.arch.startswith("ssdlite") else 300
    if args.val is None and args.data and os.path.exists(os.path.join(args.data, "val", "annotations",
                                                                       "instances.json")):
        args.val = os.path.join(args.data, "val")
    if args.val:
        args.val_file_root = args.val_file_root or os.path.join(args.val, "images")
        args.val_annotations = args.val_annotations or os.path.join(args.val, "annotations", "instances.json")
    return args


def category_ids(annotations):
    """The set's category ids in sorted order: readers.coco labels category ids[k] as k + 1."""
    with open(annotations) as f:
        return sorted(c["id"] for c in json.load(f)["categories"])


# --- models --------------------------------------------------------------------

def _batch_only_transform(model):
    """The model's GeneralizedRCNNTransform without its normalization and
    resizing: the pipeline has done both, so only batching is left."""
    from torchvision.models.detection.transform import GeneralizedRCNNTransform

    class BatchOnly(GeneralizedRCNNTransform):
        def normalize(self, image):
            return image

        def resize(self, image, target=None):
            return image, target

    t = model.transform
    return BatchOnly(t.min_size, t.max_size, [0.0] * 3, [1.0] * 3, size_divisible=t.size_divisible,
                     fixed_size=t.fixed_size)


class TinyBackbone(nn.Module):
    """Four strided conv blocks; feature maps at strides 8, 16 and 32 (CPU tests)."""

    def __init__(self):
        super().__init__()

        def block(cin, cout):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(cout),
                                 nn.ReLU(inplace=True))

        self.stem = nn.Sequential(block(3, 16), block(16, 32), block(32, 64))
        self.down1 = block(64, 96)
        self.down2 = block(96, 128)

    def forward(self, x):
        from collections import OrderedDict

        a = self.stem(x)
        b = self.down1(a)
        return OrderedDict([("0", a), ("1", b), ("2", self.down2(b))])


def make_model(arch, num_classes, size):
    """A detector for num_classes categories (+ background), untrained, whose
    transform only batches (the data arrive resized and normalized)."""
    from torchvision.models import detection

    if arch == "tinyssd":
        from torchvision.models.detection.anchor_utils import DefaultBoxGenerator
        from torchvision.models.detection.ssd import SSD

        anchors = DefaultBoxGenerator([[2], [2, 3], [2, 3]], min_ratio=0.15, max_ratio=0.9)
        model = SSD(TinyBackbone(), anchors, (size, size), num_classes + 1, image_mean=[0.0] * 3,
                    image_std=[1.0] * 3)
    elif arch == "retinanet_resnet50_fpn":
        model = detection.retinanet_resnet50_fpn(weights=None, weights_backbone=None, num_classes=num_classes + 1,
                                                 min_size=size, max_size=size)
    else:
        builder = getattr(detection, arch)
        kwargs = {"size": (size, size)} if arch == "ssd300_vgg16" and size != 300 else {}
        model = builder(weights=None, weights_backbone=None, num_classes=num_classes + 1, **kwargs)
    model.transform = _batch_only_transform(model)
    return model


def default_boxes(model, size):
    """The SSD model's default boxes (torchvision's DefaultBoxGenerator) for
    size x size images: [A, 4] ltrb relative to the image, in the order of the
    head's outputs (feature map, row, column, box)."""
    from torchvision.models.detection.image_list import ImageList

    was_training = model.training
    model.eval()  # no batch-norm statistics from the probe image
    with torch.no_grad():
        x = torch.zeros(1, 3, size, size, device=next(model.parameters()).device)
        features = model.backbone(x)
        features = list(features.values()) if isinstance(features, dict) else [features]
        anchors = model.anchor_generator(ImageList(x, [(size, size)]), features)[0]
    model.train(was_training)
    return (anchors.float().cpu() / size).clamp(0.0, 1.0)


def torchvision_encode(boxes, labels, anchors):
    """torchvision's own SSD target encoding (SSDMatcher at MATCH_IOU, BoxCoder
    with weights 1 / BOX_STDS), as SSD.compute_loss does it: boxes [n, 4] and
    anchors [A, 4] ltrb in one unit, labels [n] -> offsets [A, 4] (zeros where
    unmatched) and labels [A] (0: background). The pytorch backend's encoder
    with --encode-boxes, and the reference that box_encoder is tested against."""
    from torchvision.models.detection import _utils as det_utils
    from torchvision.ops import box_iou

    loc = torch.zeros(len(anchors), 4)
    cls = torch.zeros(len(anchors), dtype=torch.int64)
    if len(boxes) == 0:
        return loc, cls
    matched = det_utils.SSDMatcher(MATCH_IOU)(box_iou(boxes, anchors))
    fg = matched >= 0
    coder = det_utils.BoxCoder(weights=tuple(1.0 / s for s in BOX_STDS))
    loc[fg] = coder.encode_single(boxes[matched[fg]], anchors[fg])
    cls[fg] = labels[matched[fg]].long()
    return loc, cls


def multibox_loss(loc_pred, cls_logits, loc_t, labels_t, neg_to_pos=NEG_TO_POS):
    """SSD's loss on encoded targets (NVIDIA's SSD example, torchvision's
    SSD.compute_loss): smooth L1 on the matched anchors' offsets, and cross
    entropy on the matched anchors plus, per image, the neg_to_pos times as many
    background anchors with the highest loss (hard negative mining); both over
    the number of matched anchors. loc_pred/loc_t [N, A, 4], cls_logits [N, A, C],
    labels_t [N, A] (0: background)."""
    import torch.nn.functional as F

    fg = labels_t > 0
    num_fg = fg.sum(1, keepdim=True)
    n = num_fg.sum().clamp(min=1).float()
    reg = F.smooth_l1_loss(loc_pred[fg].float(), loc_t[fg].float(), reduction="sum")
    ce = F.cross_entropy(cls_logits.float().flatten(0, 1), labels_t.flatten(), reduction="none").view_as(labels_t)
    neg = ce.detach().clone()
    neg[fg] = -float("inf")
    order = neg.argsort(1, descending=True)
    hard = order.argsort(1) < neg_to_pos * num_fg
    return {"bbox_regression": reg / n, "classification": (ce[fg].sum() + ce[hard].sum()) / n}


class EncodedSSD(nn.Module):
    """An SSD model's backbone and head, trained on encoded targets with
    multibox_loss (one module, so that DDP sees the whole forward)."""

    def __init__(self, ssd):
        super().__init__()
        self.ssd = ssd

    def forward(self, images, loc_t, labels_t):
        features = self.ssd.backbone(images)
        features = list(features.values()) if isinstance(features, dict) else [features]
        head = self.ssd.head(features)
        return multibox_loss(head["bbox_regression"], head["cls_logits"], loc_t, labels_t)


# --- data: the pipeline (ladle or DALI) ---------------------------------------------

def detection_graph(fn, types, file_root, annotations, size, decoder="cpu", shard_id=0, num_shards=1,
                    augment=True, shuffle=True, dtype=None, anchors=None, evaluation=False, decoder_args=None):
    """The SSD input pipeline, in DALI's API (ladle and DALI run the same code):
    readers.coco -> random_bbox_crop -> decoders.image + slice -> bb_flip ->
    resize -> hsv -> brightness_contrast -> crop_mirror_normalize. Returns
    (images [3, size, size], boxes [n, 4] relative ltrb, labels [n] 1..K);
    with anchors (relative ltrb [A, 4]) box_encoder's (images, offsets [A, 4],
    labels [A]); with evaluation, (images, image ids) of every image, in the
    file's order, decoded and resized only."""
    jpegs, boxes, labels, *ids = fn.readers.coco(file_root=file_root, annotations_file=annotations, ratio=True,
                                                 ltrb=True, skip_empty=not evaluation, image_ids=evaluation,
                                                 random_shuffle=shuffle and not evaluation, pad_last_batch=True,
                                                 shard_id=shard_id, num_shards=num_shards, name="Reader")
    augment = augment and not evaluation
    images = fn.decoders.image(jpegs, device=decoder, output_type=types.RGB,
                               **(decoder_args if decoder == "mixed" and decoder_args else {}))
    flip = 0
    if augment:
        begin, crop, boxes, labels = fn.random_bbox_crop(boxes, labels, device="cpu", aspect_ratio=CROP_ASPECT,
                                                         thresholds=CROP_THRESHOLDS, scaling=CROP_SCALING,
                                                         bbox_layout="xyXY", allow_no_crop=True,
                                                         num_attempts=CROP_ATTEMPTS)
        images = fn.slice(images, begin, crop, out_of_bounds_policy="trim_to_shape")
        flip = fn.random.coin_flip(probability=0.5)
        boxes = fn.bb_flip(boxes, ltrb=True, horizontal=flip)
    images = fn.resize(images, resize_x=size, resize_y=size, min_filter=types.INTERP_TRIANGULAR)
    if augment:
        images = fn.hsv(images, hue=fn.random.uniform(range=HUE_DEGREES),
                        saturation=fn.random.uniform(range=SATURATION))
        images = fn.brightness_contrast(images, brightness=fn.random.uniform(range=BRIGHTNESS),
                                        contrast=fn.random.uniform(range=CONTRAST), contrast_center=128)
    images = fn.crop_mirror_normalize(images, mean=MEAN, std=STD, mirror=flip, output_layout="CHW",
                                      dtype=dtype if dtype is not None else types.FLOAT)
    if evaluation:
        return images, ids[0]
    if anchors is not None:
        boxes, labels = encode_boxes(fn, boxes, labels, anchors, size)
    return images, boxes, labels


def encode_boxes(fn, boxes, labels, anchors, size):
    """box_encoder as DALI's SSD example runs it: matching at IoU MATCH_IOU,
    offsets over BOX_STDS, against the anchors (relative ltrb [A, 4]); scale=size
    does the arithmetic in pixels, as torchvision's encoder."""
    return fn.box_encoder(boxes, labels, anchors=[float(v) for v in anchors.reshape(-1)], criteria=MATCH_IOU,
                          offset=True, stds=BOX_STDS, scale=float(size))


def ladle_missing_ops(device, encode=False):
    """The operators (device) this ladle lacks for the pipeline, [] when it has them all."""
    import ladle
    from ladle.pipeline import op_schemas

    schemas = op_schemas()
    missing = [op for op in LADLE_OPS + (("box_encoder",) if encode else ()) if op not in schemas]
    if device == "mixed":
        if int(ladle.build_info().get("cuda_devices", 0) or 0) <= 0:
            missing.append("a CUDA device")
        for op, dev in (("decoders.image", "mixed"), ("slice", "gpu"), ("resize", "gpu"), ("hsv", "gpu"),
                        ("brightness_contrast", "gpu"), ("crop_mirror_normalize", "gpu")):
            if op in schemas and dev not in schemas[op].get("devices", []):
                missing.append(f"{op}({dev})")
    return missing


def decoder_arguments(args):
    """The mixed decoder's arguments from --hw-decoder-load and --decoder-balance."""
    out = {}
    if getattr(args, "hw_decoder_load", None) is not None:
        out["hw_decoder_load"] = args.hw_decoder_load
    if getattr(args, "decoder_balance", None):
        out["decoder_balance"] = args.decoder_balance
    return out


def build_pipeline(lib, args, dev, decoder, batch_size=None, augment=None, shuffle=True, anchors=None,
                   evaluation=False):
    """The pipeline on `lib` ("ladle" or "dali"), built (evaluation: on the validation set)."""
    if lib == "ladle":
        import ladle
        from ladle import fn, types

        make = ladle.Pipeline
    else:
        import nvidia.dali as dali
        from nvidia.dali import fn, types

        make = dali.Pipeline
    device_id = dev.local_rank if decoder == "mixed" else None
    extra = {}
    if lib == "dali" and int(torch.__version__.split(".")[0]) < 2:
        # DALI's iterators use `with torch.device(...)` on the dynamic executor's
        # outputs, which torch < 2.0 lacks; the older executor makes them copy.
        extra["exec_dynamic"] = False
    pipe = make(batch_size=batch_size or args.batch_size, num_threads=args.workers, device_id=device_id,
                seed=args.seed + 1, prefetch_queue_depth=2, **extra)
    file_root, annotations = (args.val_file_root, args.val_annotations) if evaluation else \
        (args.file_root, args.annotations)
    with pipe:
        pipe.set_outputs(*detection_graph(fn, types, file_root, annotations, args.image_size,
                                          decoder=decoder, shard_id=dev.rank, num_shards=dev.world,
                                          augment=not args.no_augment if augment is None else augment,
                                          shuffle=shuffle, anchors=anchors, evaluation=evaluation,
                                          decoder_args=decoder_arguments(args)))
    pipe.build()
    return pipe


def _ragged(lib):
    if lib == "ladle":
        from ladle.torch import LastBatchPolicy
        from ladle.torch import RaggedIterator as Ragged
    else:
        from nvidia.dali.plugin.pytorch import DALIRaggedIterator as Ragged
        from nvidia.dali.plugin.pytorch import LastBatchPolicy
    return Ragged, LastBatchPolicy


class PipelineLoader:
    """A ragged iterator (ladle.torch.RaggedIterator or DALI's DALIRaggedIterator)
    over the pipeline: images as one [N, 3, S, S] tensor, boxes and labels as
    lists of per-image tensors, turned into torchvision's targets (absolute
    ltrb boxes, int64 labels); with encoded boxes, (offsets [N, A, 4], labels
    [N, A]) as dense tensors."""

    def __init__(self, lib, pipe, dev, size, encoded=False):
        Ragged, LastBatchPolicy = _ragged(lib)
        tags = [Ragged.DENSE_TAG] + [Ragged.DENSE_TAG if encoded else Ragged.SPARSE_LIST_TAG] * 2
        # DROP: every rank runs the same number of full batches.
        self.it = Ragged(pipe, ["images", "boxes", "labels"], output_types=tags, reader_name="Reader",
                         auto_reset=True, last_batch_policy=LastBatchPolicy.DROP)
        self.pipe, self.dev, self.size, self.encoded = pipe, dev, float(size), encoded

    def __len__(self):
        return len(self.it)

    def next(self):
        try:
            data = next(self.it)[0]
        except StopIteration:  # the epoch ended (auto_reset began the next one)
            data = next(self.it)[0]
        device = self.dev.device
        images = data["images"].to(device, non_blocking=True)
        if self.encoded:
            return images, (data["boxes"].to(device, non_blocking=True),
                            data["labels"].to(device, non_blocking=True).long())
        # All images' boxes and labels in one copy each, split on the device: a copy and a few tensor ops per
        # image would cost more than the pipeline's whole batch (measured: the SSD loader at ~10k images/s).
        boxes = [b.reshape(-1, 4) for b in data["boxes"]]
        counts = [len(b) for b in boxes]
        all_boxes = torch.cat(boxes).to(device, non_blocking=True).float() * self.size
        all_labels = torch.cat([lab.reshape(-1) for lab in data["labels"]]).to(device, non_blocking=True).long()
        targets = [{"boxes": b, "labels": lab}
                   for b, lab in zip(all_boxes.split(counts), all_labels.split(counts))]
        return images, targets


def pipeline_eval_batches(lib, pipe):
    """(images, image ids) per batch of the evaluation pipeline, the shard's images once."""
    Ragged, LastBatchPolicy = _ragged(lib)
    it = Ragged(pipe, ["images", "ids"], output_types=[Ragged.DENSE_TAG] * 2, reader_name="Reader",
                last_batch_policy=LastBatchPolicy.PARTIAL)
    for data in it:
        yield data[0]["images"], [int(v) for v in data[0]["ids"].reshape(-1)]


# --- data: torchvision ----------------------------------------------------------------

def _has_pycocotools():
    try:
        import pycocotools  # noqa: F401
        return True
    except ImportError:
        return False


def tv_v2_status():
    """None when the pytorch backend can use transforms v2 (torchvision >= 0.17,
    or 0.16 with pycocotools for CocoDetection), else why not."""
    import torchvision

    try:
        import torchvision.transforms.v2 as T2
    except ImportError:
        return f"torchvision {torchvision.__version__} has no transforms.v2 (needs >= 0.16)"
    if not (hasattr(T2, "ToImage") and hasattr(T2, "SanitizeBoundingBoxes") and hasattr(T2, "RandomIoUCrop")):
        return f"torchvision {torchvision.__version__}'s transforms.v2 lacks ToImage/RandomIoUCrop/" \
               "SanitizeBoundingBoxes (needs >= 0.16)"
    try:
        from torchvision import tv_tensors  # noqa: F401
    except ImportError:
        if not _has_pycocotools():
            return f"torchvision {torchvision.__version__} has no tv_tensors (>= 0.17) and CocoDetection needs " \
                   "pycocotools (pip install pycocotools)"
    return None


class CocoBoxes(torch.utils.data.Dataset):
    """The images of a COCO instances file with their boxes (absolute ltrb)
    and labels 1..K (category ids in sorted order, as readers.coco), images
    without objects left out (readers.coco's skip_empty). v1 path: PIL
    decoding and SSDTransformV1 (transform(image, boxes, labels)), or with
    tv_boxes the v2 sample (PIL image, {"boxes": tv_tensors.BoundingBoxes, "labels"})
    for the transforms v2 path without pycocotools."""

    def __init__(self, file_root, annotations, transform=None, tv_boxes=False):
        with open(annotations) as f:
            doc = json.load(f)
        remap = {cid: k + 1 for k, cid in enumerate(sorted(c["id"] for c in doc["categories"]))}
        by_image = {}
        for a in doc["annotations"]:
            x, y, w, h = a["bbox"]
            if w > 0 and h > 0:
                by_image.setdefault(a["image_id"], []).append(([x, y, x + w, y + h], remap[a["category_id"]]))
        self.items = [(os.path.join(file_root, im["file_name"]), by_image[im["id"]])
                      for im in sorted(doc["images"], key=lambda im: im["id"]) if im["id"] in by_image]
        self.transform, self.tv_boxes = transform, tv_boxes

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        from PIL import Image

        path, objs = self.items[i]
        with Image.open(path) as im:
            img = im.convert("RGB")
        boxes = torch.tensor([o[0] for o in objs], dtype=torch.float32).reshape(-1, 4)
        labels = torch.tensor([o[1] for o in objs], dtype=torch.int64)
        if self.tv_boxes:
            from torchvision import tv_tensors

            return img, {"boxes": tv_tensors.BoundingBoxes(boxes, format="XYXY", canvas_size=(img.height, img.width)),
                         "labels": labels}
        return self.transform(img, boxes, labels)


def _box_iou(a, b):
    lt = torch.max(a[:, None, :2], b[None, :, :2])
    rb = torch.min(a[:, None, 2:], b[None, :, 2:])
    inter = (rb - lt).clamp(min=0).prod(-1)
    area = lambda x: (x[:, 2:] - x[:, :2]).clamp(min=0).prod(-1)  # noqa: E731
    return inter / (area(a)[:, None] + area(b)[None, :] - inter)


class SSDTransformV1:
    """The pipeline's augmentation with torchvision's v1 functional ops (any
    torchvision): SSD's IoU crop (the random_bbox_crop parameters: thresholds,
    scaling, aspect ratio, 50 attempts, boxes kept when their centre is inside,
    then clipped), horizontal flip, resize to size x size, hue, saturation,
    brightness, contrast, normalize."""

    def __init__(self, size, augment, seed=0):
        self.size, self.augment = size, augment
        self.rng = random.Random(seed)

    def _crop(self, w, h, boxes, labels):
        rng = self.rng
        while True:
            threshold = rng.choice(CROP_THRESHOLDS + [None])  # None: no crop (allow_no_crop)
            if threshold is None:
                return None
            for _ in range(CROP_ATTEMPTS):
                sw, sh = rng.uniform(*CROP_SCALING), rng.uniform(*CROP_SCALING)
                if not CROP_ASPECT[0] <= sw / sh <= CROP_ASPECT[1]:
                    continue
                x0, y0 = rng.uniform(0, 1 - sw), rng.uniform(0, 1 - sh)
                window = torch.tensor([[x0 * w, y0 * h, (x0 + sw) * w, (y0 + sh) * h]])
                centre = (boxes[:, :2] + boxes[:, 2:]) / 2
                inside = ((centre > window[:, :2]) & (centre < window[:, 2:])).all(1)
                if not inside.any() or _box_iou(boxes[inside], window).max() < threshold:
                    continue
                return window[0], inside

    def __call__(self, img, boxes, labels):
        import torchvision.transforms.functional as TF

        w, h = img.size
        x = TF.pil_to_tensor(img)
        if self.augment:
            picked = self._crop(w, h, boxes, labels)
            if picked is not None:
                win, inside = picked
                l, t, r, b = [float(v) for v in win]
                l, t = int(math.floor(l)), int(math.floor(t))
                cw, ch = max(1, int(round(r)) - l), max(1, int(round(b)) - t)
                x = x[:, t:t + ch, l:l + cw]
                boxes = boxes[inside] - torch.tensor([l, t, l, t], dtype=torch.float32)
                boxes = torch.min(boxes.clamp(min=0), torch.tensor([cw, ch, cw, ch], dtype=torch.float32))
                labels = labels[inside]
                w, h = cw, ch
            if self.rng.random() < 0.5:
                x = x.flip(-1)
                boxes = torch.stack([w - boxes[:, 2], boxes[:, 1], w - boxes[:, 0], boxes[:, 3]], 1)
        x = TF.resize(x, [self.size, self.size], antialias=True)
        boxes = boxes * torch.tensor([self.size / w, self.size / h] * 2)
        if self.augment:
            x = TF.adjust_hue(x, self.rng.uniform(*HUE_DEGREES) / 360.0)
            x = TF.adjust_saturation(x, self.rng.uniform(*SATURATION))
            x = TF.adjust_brightness(x, self.rng.uniform(*BRIGHTNESS))
            x = TF.adjust_contrast(x, self.rng.uniform(*CONTRAST))
        x = TF.normalize(x.float(), MEAN, STD)
        return x, {"boxes": boxes, "labels": labels}


def coco_v2_dataset(args):
    """torchvision's CocoDetection wrapped for transforms v2 (CocoBoxes with
    tv_tensors where pycocotools is absent), with the same augmentation
    (RandomIoUCrop, flip, Resize, ColorJitter, Normalize) and labels 1..K."""
    import torchvision
    import torchvision.transforms.v2 as T
    from torchvision.datasets import CocoDetection, wrap_dataset_for_transforms_v2

    size = args.image_size
    ops = []
    if not args.no_augment:
        ops += [T.RandomIoUCrop(min_scale=CROP_SCALING[0], max_scale=CROP_SCALING[1],
                                min_aspect_ratio=CROP_ASPECT[0], max_aspect_ratio=CROP_ASPECT[1],
                                sampler_options=CROP_THRESHOLDS + [1.0], trials=CROP_ATTEMPTS),
                T.RandomHorizontalFlip()]
    ops.append(T.Resize((size, size), antialias=True))
    if not args.no_augment:
        ops.append(T.ColorJitter(brightness=BRIGHTNESS, contrast=CONTRAST, saturation=SATURATION,
                                 hue=(HUE_DEGREES[0] / 360.0, HUE_DEGREES[1] / 360.0)))
    ops += [T.ToImage(), T.ToDtype(torch.float32, scale=True), T.Normalize([m / 255 for m in MEAN],
                                                                        [s / 255 for s in STD])]
    if not args.no_augment:
        ops.append(T.SanitizeBoundingBoxes())
    if _has_pycocotools():
        base = CocoDetection(args.file_root, args.annotations)
        base.ids = [i for i in base.ids if base.coco.getAnnIds(imgIds=i)]  # skip_empty, as readers.coco
        ds = wrap_dataset_for_transforms_v2(base, target_keys=("boxes", "labels"))
        remap = {cid: k + 1 for k, cid in enumerate(category_ids(args.annotations))}  # category id -> 1..K
        what = "CocoDetection"
    else:
        ds = CocoBoxes(args.file_root, args.annotations, tv_boxes=True)
        remap = None  # already 1..K
        what = "the JSON read here (no pycocotools for CocoDetection)"
    transform = T.Compose(ops)

    class Wrapped(torch.utils.data.Dataset):
        def __len__(self):
            return len(ds)

        def __getitem__(self, i):
            img, target = ds[i]
            img, target = transform(img, target)
            labels = target["labels"] if remap is None else \
                torch.tensor([remap[int(v)] for v in target["labels"]], dtype=torch.int64)
            return img.as_subclass(torch.Tensor), {"boxes": target["boxes"].as_subclass(torch.Tensor).float(),
                                                   "labels": labels}

    return Wrapped(), f"torchvision {torchvision.__version__} transforms.v2 on {what}"


class EncodedTargets(torch.utils.data.Dataset):
    """--encode-boxes on the pytorch backend: a dataset's targets encoded in the
    workers by torchvision's own matcher and coder (torchvision_encode), in
    pixels, against the default boxes (relative ltrb) scaled to size."""

    def __init__(self, dataset, anchors, size):
        self.dataset, self.anchors = dataset, anchors * size

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, i):
        img, target = self.dataset[i]
        return img, torchvision_encode(target["boxes"].reshape(-1, 4), target["labels"], self.anchors)


class EvalImages(torch.utils.data.Dataset):
    """The pytorch backend's validation images, every one in the file's order:
    (PIL-decoded, resized to size x size, normalized [3, S, S], image id)."""

    def __init__(self, file_root, annotations, size):
        with open(annotations) as f:
            doc = json.load(f)
        self.items = [(os.path.join(file_root, im["file_name"]), im["id"]) for im in doc["images"]]
        self.size = size

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        import torchvision.transforms.functional as TF
        from PIL import Image

        path, image_id = self.items[i]
        with Image.open(path) as im:
            x = TF.pil_to_tensor(im.convert("RGB"))
        x = TF.resize(x, [self.size, self.size], antialias=True)
        return TF.normalize(x.float(), MEAN, STD), image_id


def _collate(batch):
    if isinstance(batch[0][1], tuple):  # encoded targets: dense
        return torch.stack([b[0] for b in batch]), tuple(torch.stack(t) for t in zip(*(b[1] for b in batch)))
    return torch.stack([b[0] for b in batch]), [b[1] for b in batch]


class TorchLoader:
    """A DataLoader over the dataset, sharded by rank (DistributedSampler,
    drop_last), endless: a new pass begins where one ends."""

    def __init__(self, dataset, dev, args):
        from torch.utils.data import DataLoader, DistributedSampler

        self.dev = dev
        self.sampler = DistributedSampler(dataset, num_replicas=dev.world, rank=dev.rank, shuffle=True,
                                          seed=args.seed)
        self.loader = DataLoader(dataset, batch_size=args.batch_size, sampler=self.sampler,
                                 num_workers=args.workers, pin_memory=dev.device.type == "cuda", drop_last=True,
                                 collate_fn=_collate, persistent_workers=args.workers > 0,
                                 worker_init_fn=_seed_worker)
        self.passes, self._iter = 0, None

    def __len__(self):
        return len(self.loader)

    def next(self):
        if self._iter is None:
            self.sampler.set_epoch(self.passes)
            self._iter = iter(self.loader)
        try:
            images, targets = next(self._iter)
        except StopIteration:
            self.passes += 1
            self._iter = None
            return self.next()
        device = self.dev.device
        if isinstance(targets, tuple):
            return images.to(device, non_blocking=True), tuple(t.to(device, non_blocking=True) for t in targets)
        return images.to(device, non_blocking=True), [{k: v.to(device, non_blocking=True) for k, v in t.items()}
                                                      for t in targets]


def _seed_worker(worker_id):
    info = torch.utils.data.get_worker_info()
    ds = info.dataset
    ds = ds.dataset if isinstance(ds, EncodedTargets) else ds
    transform = getattr(ds, "transform", None)
    if isinstance(transform, SSDTransformV1):  # each worker its own stream of random choices
        transform.rng.seed(info.seed)
    random.seed(info.seed)


def torch_dataset(args):
    """(dataset, description) for the pytorch backend."""
    import torchvision

    why = tv_v2_status()
    if args.tv_transforms == "v2" and why:
        raise SystemExit(f"--tv-transforms v2: {why}; use --tv-transforms v1 (the same augmentation with "
                         "torchvision's v1 functional ops)")
    if args.tv_transforms != "v1" and why is None:
        return coco_v2_dataset(args)
    note = "" if args.tv_transforms == "v1" else f" (no transforms v2: {why})"
    ds = CocoBoxes(args.file_root, args.annotations, SSDTransformV1(args.image_size, not args.no_augment, args.seed))
    return ds, f"torchvision {torchvision.__version__}: PIL + v1 functional transforms{note}"


class SyntheticLoader:
    """One random batch with a few boxes per image, already on the device."""

    def __init__(self, args, dev, num_classes, anchors=None):
        g = torch.Generator().manual_seed(args.seed)
        s = args.image_size
        self.images = torch.randn(args.batch_size, 3, s, s, generator=g).to(dev.device)
        self.targets = []
        for _ in range(args.batch_size):
            lt = torch.rand(3, 2, generator=g) * s * 0.6
            wh = torch.rand(3, 2, generator=g) * s * 0.3 + 8
            self.targets.append({"boxes": torch.cat([lt, lt + wh], 1).to(dev.device),
                                 "labels": torch.randint(1, num_classes + 1, (3,), generator=g).to(dev.device)})
        if anchors is not None:
            encoded = [torchvision_encode(t["boxes"].cpu(), t["labels"].cpu(), anchors * s) for t in self.targets]
            self.targets = tuple(torch.stack(t).to(dev.device) for t in zip(*encoded))

    def __len__(self):
        return 100

    def next(self):
        return self.images, self.targets


def make_loader(args, dev, backend, anchors=None):
    """(loader, description); a loader has next() -> (images, targets) and len().
    With anchors (--encode-boxes), targets are (offsets [N, A, 4], labels [N, A])."""
    if backend == "synthetic":
        return SyntheticLoader(args, dev, 6, anchors), "synthetic (one batch on the device)"
    if backend == "pytorch":
        ds, desc = torch_dataset(args)
        if anchors is not None:
            ds, desc = EncodedTargets(ds, anchors, args.image_size), desc + ", torchvision's SSD box encoding"
        return TorchLoader(ds, dev, args), desc + f" + DataLoader({args.workers} workers)"
    decoder = pipeline_decoder(backend, dev)
    lib = "dali" if backend.startswith("dali") else "ladle"
    pipe = build_pipeline(lib, args, dev, decoder, anchors=anchors)
    return PipelineLoader(lib, pipe, dev, args.image_size, encoded=anchors is not None), \
        f"{lib} pipeline, decoding on {decoder}" + (", box_encoder" if anchors is not None else "")


def pipeline_decoder(backend, dev):
    return "mixed" if backend in ("ladle", "dali") and dev.device.type == "cuda" else "cpu"


def resolve_backend(args, dev):
    """The backend really used, with a line saying why when it differs."""
    backend = args.data_backend
    if backend in ("ladle", "ladle-cpu"):
        want = "mixed" if backend == "ladle" and dev.device.type == "cuda" else "cpu"
        missing = ladle_missing_ops(want, args.encode_boxes)
        if missing and want == "mixed" and not ladle_missing_ops("cpu", args.encode_boxes):
            dev.print(f"=> --data-backend ladle: this ladle lacks {', '.join(missing)}; using ladle-cpu")
            return "ladle-cpu"
        if missing:
            raise SystemExit(f"--data-backend {backend}: this ladle has no {', '.join(missing)} yet; use "
                             "--data-backend dali or pytorch")
        if backend == "ladle" and want == "cpu":
            dev.print("=> --data-backend ladle: training runs on the CPU; using ladle-cpu")
            return "ladle-cpu"
    if backend.startswith("dali"):
        try:
            import nvidia.dali  # noqa: F401
        except ImportError:
            raise SystemExit("--data-backend dali: NVIDIA DALI is not installed (pip install nvidia-dali-cuda130)")
    return backend


# --- evaluation --------------------------------------------------------------------

def eval_batches(args, dev, backend):
    """(images [N, 3, S, S], image ids) batches of the validation set, this rank's share."""
    if backend == "pytorch":
        from torch.utils.data import DataLoader, DistributedSampler, Subset

        ds = EvalImages(args.val_file_root, args.val_annotations, args.image_size)
        if args.eval_images:
            ds = Subset(ds, range(min(args.eval_images, len(ds))))
        sampler = DistributedSampler(ds, num_replicas=dev.world, rank=dev.rank, shuffle=False) \
            if dev.world > 1 else None
        for images, ids in DataLoader(ds, batch_size=args.batch_size, sampler=sampler, num_workers=args.workers):
            yield images, [int(v) for v in ids]
        return
    lib = "dali" if backend.startswith("dali") else "ladle"
    pipe = build_pipeline(lib, args, dev, pipeline_decoder(backend, dev), evaluation=True)
    left = -(-args.eval_images // dev.world) if args.eval_images else None  # each rank its share of the first N
    for images, ids in pipeline_eval_batches(lib, pipe):
        if left is not None:
            if left <= 0:
                break
            images, ids, left = images[:left], ids[:left], left - len(ids)
        yield images, ids


def coco_evaluator():
    """(COCO, COCOeval) from pycocotools, or None when it does not import."""
    try:
        from pycocotools.coco import COCO
        from pycocotools.cocoeval import COCOeval
    except ImportError:
        return None
    return COCO, COCOeval


def evaluate(model, args, dev, backend):
    """COCO box mAP of the model on the validation set: {"AP": AP@[.5:.95],
    "AP50": AP@.5, "images": n}, None (with a line saying why) where it cannot
    run. Detections (torchvision's post-processing: score > 0.01, NMS, 200 per
    image) are scaled back from S x S to each image's size; every rank
    evaluates its shard, rank 0 scores the gathered detections with COCOeval."""
    if args.no_eval:
        return None
    if not args.val_annotations or backend == "synthetic":
        dev.print("=> evaluation skipped: no validation set (--val VAL_DIR, or DIR/val made by "
                  "tools/make_coco_data.py --val N)" if backend != "synthetic" else
                  "=> evaluation skipped: synthetic data")
        return None
    tools = coco_evaluator()
    if tools is None:
        dev.print("=> evaluation skipped: COCO mAP needs pycocotools (pip install pycocotools), which does not "
                  "import here")
        return None
    COCO, COCOeval = tools
    with open(args.val_annotations) as f:
        doc = json.load(f)
    sizes = {im["id"]: (im["width"], im["height"]) for im in doc["images"]}
    cats = sorted(c["id"] for c in doc["categories"])  # label k is category cats[k - 1], as readers.coco's
    start = time.perf_counter()
    model.eval()
    detections, ids_seen = [], set()
    with torch.no_grad():
        for images, ids in eval_batches(args, dev, backend):
            images = images.to(dev.device, non_blocking=True)
            if args.channels_last:
                images = images.contiguous(memory_format=torch.channels_last)
            with autocast(args, dev):
                outputs = model(list(images))
            for out, image_id in zip(outputs, ids):
                if image_id in ids_seen:
                    continue
                ids_seen.add(image_id)
                w, h = sizes[image_id]
                boxes = out["boxes"].float().cpu() * torch.tensor([w, h, w, h]) / args.image_size
                for b, score, label in zip(boxes.tolist(), out["scores"].float().cpu().tolist(),
                                           out["labels"].cpu().tolist()):
                    detections.append({"image_id": image_id, "category_id": cats[label - 1],
                                       "bbox": [b[0], b[1], b[2] - b[0], b[3] - b[1]], "score": score})
    model.train()
    if dev.world > 1:
        gathered = [None] * dev.world
        dist.all_gather_object(gathered, (detections, sorted(ids_seen)))
        detections = [d for part, _ in gathered for d in part]
        ids_seen = {i for _, part in gathered for i in part}
    if not dev.main:
        return None
    quiet = io.StringIO()
    with contextlib.redirect_stdout(quiet):  # pycocotools prints its progress
        gt = COCO(args.val_annotations)
        if not detections:
            return {"AP": 0.0, "AP50": 0.0, "images": len(ids_seen), "detections": 0}
        evaluator = COCOeval(gt, gt.loadRes(detections), "bbox")
        evaluator.params.imgIds = sorted(ids_seen)
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    table = "\n".join(line for line in quiet.getvalue().splitlines() if line.startswith(" Average"))
    dev.print(f"=> COCO box evaluation of {len(ids_seen)} validation images ({len(detections)} detections, "
              f"{time.perf_counter() - start:.1f} s):\n{table}")
    return {"AP": float(evaluator.stats[0]), "AP50": float(evaluator.stats[1]), "images": len(ids_seen),
            "detections": len(detections)}


# --- training ----------------------------------------------------------------------


def main(argv=None):
    args = parse_args(argv)
    if args.deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    dev = Dist(args.cpu)
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    if args.deterministic:
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
        torch.use_deterministic_algorithms(True, warn_only=True)
    else:
        torch.backends.cudnn.benchmark = True

    backend = resolve_backend(args, dev)
    num_classes = 6 if backend == "synthetic" else len(category_ids(args.annotations))
    model = make_model(args.arch, num_classes, args.image_size).to(dev.device)
    anchors = default_boxes(model, args.image_size) if args.encode_boxes else None
    loader, desc = make_loader(args, dev, backend, anchors)
    dev.print(f"=> {args.arch} at {args.image_size}x{args.image_size}, {num_classes} categories, {dev.world} "
              f"process(es) x batch {args.batch_size} on {dev.device}, data: {backend} ({desc})"
              f"{', amp' if args.amp else ''}{', no augmentation' if args.no_augment else ''}"
              f"{f', {len(anchors)} default boxes, multibox loss' if anchors is not None else ''}")

    if args.channels_last:
        model = model.to(memory_format=torch.channels_last)
    base_lr = args.lr * args.batch_size * dev.world / 32
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(params, lr=base_lr, momentum=args.momentum, weight_decay=args.weight_decay)
    scaler = make_scaler(args.amp and dev.device.type == "cuda")
    net = EncodedSSD(model) if args.encode_boxes else model
    if dev.world > 1:
        net = nn.parallel.DistributedDataParallel(net, device_ids=[dev.local_rank]
                                                  if dev.device.type == "cuda" else None)
    net.train()

    global_batch = args.batch_size * dev.world
    intervals, iteration, losses = [], 0, []
    for epoch in range(args.epochs):
        steps = len(loader)
        if args.iters_per_epoch:
            steps = min(steps, args.iters_per_epoch) if steps else args.iters_per_epoch
        interval_start, interval_steps = time.perf_counter(), 0
        for step in range(steps):
            lr = base_lr * min(1.0, (iteration + 1) / max(1, args.warmup_iters))
            for group in optimizer.param_groups:
                group["lr"] = lr
            images, targets = loader.next()
            if args.channels_last:
                images = images.contiguous(memory_format=torch.channels_last)
            with autocast(args, dev):
                loss_dict = net(images, *targets) if args.encode_boxes else net(list(images), targets)
                loss = sum(loss_dict.values())
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            if args.clip_grad:
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(params, args.clip_grad)
            scaler.step(optimizer)
            scaler.update()
            iteration += 1
            interval_steps += 1
            if (step + 1) % args.print_freq == 0 or step + 1 == steps:
                parts = torch.stack([v.detach().float() for v in loss_dict.values()] + [loss.detach().float()])
                parts = dev.all_reduce_sum(parts) / dev.world
                values = parts.tolist()
                elapsed = time.perf_counter() - interval_start
                intervals.append((interval_steps * global_batch, elapsed))
                losses.append(values[-1])
                named = "  ".join(f"{k} {v:.4f}" for k, v in zip(loss_dict, values[:-1]))
                dev.print(f"Epoch: [{epoch}][{step + 1}/{steps}]  Time {elapsed / interval_steps:.3f}s/it  "
                          f"Speed {interval_steps * global_batch / elapsed:.1f} img/s  lr {lr:.5f}  "
                          f"Loss {values[-1]:.4f}  ({named})")
                if not math.isfinite(values[-1]):
                    raise SystemExit(f"the loss is {values[-1]}: lower --lr or raise --warmup-iters")
                interval_start, interval_steps = time.perf_counter(), 0

    if dev.main and args.save:
        torch.save({"arch": args.arch, "model": model.state_dict(), "args": vars(args)}, args.save)
    perf = images_per_s(intervals)
    dev.print(f"##Loss {losses[-1] if losses else float('nan'):.4f}\n##Perf {perf:.1f}")
    scores = evaluate(model, args, dev, backend)
    if scores is not None:
        dev.print(f"##mAP {scores['AP']:.4f}\n##AP50 {scores['AP50']:.4f}")
    return 0  # the process group ends with the process (exit_with)


if __name__ == "__main__":
    exit_with(main())
