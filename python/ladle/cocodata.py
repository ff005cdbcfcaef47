"""A generated COCO-format detection set whose boxes and masks are known exactly.

``make_coco(root, images=64)`` composes flat-coloured objects (rectangles,
ellipses and polygons, one category per shape) onto photographs and writes::

    root/images/000000000001.jpg ...       JPEGs (quality 90, 4:2:0)
    root/annotations/instances.json        COCO "instances" JSON

read by ``fn.readers.coco(file_root=root/images, annotations_file=root/annotations/instances.json)``
and by torchvision's ``CocoDetection``. The JSON has COCO's fields: images
(id, file_name, width, height), annotations (id, image_id, category_id,
bbox [x, y, w, h], area, iscrowd, segmentation) and categories whose ids have
gaps, as COCO's do (readers remap them to 1..K unless told not to).

Exactness. Every object is a polygon (an ellipse is a 48-gon) with vertices
rounded to 1/100 pixel. Its mask is the set of pixels whose centre
(column + 0.5, row + 0.5) lies inside the polygon (even-odd rule), and the
object is painted with exactly that mask, without anti-aliasing. Objects do
not touch (a margin of 2 pixels), so the masks are the visible pixels. bbox is
the tight box of the mask's pixel squares (integers), area its pixel count.
Rectangles have integer corners, so their polygon, mask and box coincide.
Segmentation: a polygon ``[[x0, y0, x1, y1, ...]]`` for most objects; COCO's
compressed RLE string (``{"size": [h, w], "counts": "..."}``) for a fraction
``rle_fraction``; uncompressed RLE (``"counts": [..]``) with ``iscrowd: 1`` for
a fraction ``crowd_fraction``, as COCO writes crowds. ``object_mask(ann, h, w)``
decodes any of them back to the mask.

Backgrounds (``backgrounds=``): a folder of photographs (searched
recursively for .jpg/.jpeg/.png; by default the benchmark photographs, see
``find_photos``), ``"demo"`` (the package's 12 demo photographs), ``"generated"``
(smooth noisy gradients, no files needed) or ``"flat"`` (uniform grey: every
non-grey pixel belongs to an object, for alignment tests). Each image is a crop of one
photograph resized to the image's size; image sizes vary (longer side in
``side``, aspect ratio up to 4:3 either way).

Everything is a function of ``seed`` and the image's index, so the same
arguments write the same bytes whatever ``workers`` is (with the same Pillow
and libjpeg, and the same photographs).
"""

import json
import math
import os

import numpy as np

# COCO-like category ids: not contiguous.
CATEGORIES = (
    (1, "rectangle"),
    (3, "ellipse"),
    (4, "triangle"),
    (8, "diamond"),
    (13, "hexagon"),
    (21, "star"),
)
PHOTO_EXTENSIONS = (".jpg", ".jpeg", ".png")
_MARGIN = 2  # pixels kept free around each object
_ELLIPSE_VERTICES = 48


def find_photos(backgrounds=None):
    """The background source make_coco uses for ``backgrounds=None``: $LADLE_PHOTOS,
    else the benchmark photographs (.bench/bench-photos/root of the checkout, which
    tools/fetch-bench-data fills, or ../shared/data/bench-photos/root beside it),
    else "demo" (the package's photographs)."""
    if backgrounds is not None:
        return backgrounds
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(os.path.dirname(here))
    candidates = [os.environ.get("LADLE_PHOTOS", ""),
                  os.path.join(repo, ".bench", "bench-photos", "root"),
                  os.path.join(os.path.dirname(repo), "shared", "data", "bench-photos", "root")]
    for c in candidates:
        if c and os.path.isdir(c) and _photo_files(c):
            return c
    return "demo"


def _photo_files(root):
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            if name.lower().endswith(PHOTO_EXTENSIONS):
                out.append(os.path.relpath(os.path.join(dirpath, name), root))
    return out


def _resolve_backgrounds(backgrounds):
    """(kind, root, [relative photo paths])."""
    backgrounds = find_photos(backgrounds)
    if backgrounds in ("generated", "flat"):
        return backgrounds, None, []
    if backgrounds == "demo":  # ladle.sample_photos_root(), without importing the extension
        backgrounds = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "photos")
    if not os.path.isdir(backgrounds):
        raise ValueError(f"backgrounds: {backgrounds!r} is not a folder, 'demo', 'generated' or 'flat'")
    files = _photo_files(backgrounds)
    if not files:
        raise ValueError(f"backgrounds: no .jpg/.jpeg/.png files under {backgrounds}")
    return "photos", os.path.abspath(backgrounds), files


# --- geometry ----------------------------------------------------------------------

def _regular(cx, cy, r, n, angle, inner=None):
    steps = 2 * n if inner else n
    pts = []
    for k in range(steps):
        rr = r * (inner if inner and k % 2 else 1.0)
        a = angle + 2 * math.pi * k / steps - math.pi / 2
        pts.append((cx + rr * math.cos(a), cy + rr * math.sin(a)))
    return pts


def _shape_polygon(name, rng, cx, cy, r):
    """The polygon of one object, vertices rounded to 1/100 pixel (integers for rectangles)."""
    angle = float(rng.uniform(0, 2 * math.pi))
    if name == "rectangle":
        aspect = math.exp(float(rng.uniform(-0.6, 0.6)))
        hw, hh = max(2, int(round(r * math.sqrt(aspect)))), max(2, int(round(r / math.sqrt(aspect))))
        x0, y0 = int(round(cx)) - hw, int(round(cy)) - hh
        return [(x0, y0), (x0 + 2 * hw, y0), (x0 + 2 * hw, y0 + 2 * hh), (x0, y0 + 2 * hh)]
    if name == "ellipse":
        ratio = math.exp(float(rng.uniform(-0.5, 0.5)))
        a, b = r * math.sqrt(ratio), r / math.sqrt(ratio)
        c, s = math.cos(angle), math.sin(angle)
        pts = []
        for k in range(_ELLIPSE_VERTICES):
            t = 2 * math.pi * k / _ELLIPSE_VERTICES
            x, y = a * math.cos(t), b * math.sin(t)
            pts.append((cx + x * c - y * s, cy + x * s + y * c))
    elif name == "triangle":
        pts = _regular(cx, cy, r, 3, angle)
    elif name == "diamond":
        c, s = math.cos(angle), math.sin(angle)
        pts = [(cx + x * c - y * s, cy + x * s + y * c) for x, y in ((0, -r), (0.6 * r, 0), (0, r), (-0.6 * r, 0))]
    elif name == "hexagon":
        pts = _regular(cx, cy, r, 6, angle)
    elif name == "star":
        pts = _regular(cx, cy, r, 5, angle, inner=0.45)
    else:  # pragma: no cover - CATEGORIES lists every case
        raise ValueError(name)
    return [(round(x, 2), round(y, 2)) for x, y in pts]


def rasterize_polygon(points, height, width):
    """The mask (bool [height, width]) of the pixels whose centres lie inside
    the polygon ``[(x, y), ...]`` by the even-odd rule."""
    mask = np.zeros((height, width), dtype=bool)
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    c0, c1 = max(0, int(math.floor(min(xs)))), min(width, int(math.ceil(max(xs))) + 1)
    r0, r1 = max(0, int(math.floor(min(ys)))), min(height, int(math.ceil(max(ys))) + 1)
    if c0 >= c1 or r0 >= r1:
        return mask
    px = np.arange(c0, c1, dtype=np.float64)[None, :] + 0.5
    py = np.arange(r0, r1, dtype=np.float64)[:, None] + 0.5
    inside = np.zeros((r1 - r0, c1 - c0), dtype=bool)
    n = len(points)
    for i in range(n):
        x1, y1 = points[i]
        x2, y2 = points[(i + 1) % n]
        if y1 == y2:
            continue
        crosses = (y1 > py) != (y2 > py)  # [rows, 1]
        xcross = (x2 - x1) * (py - y1) / (y2 - y1) + x1  # [rows, 1]
        inside ^= crosses & (px < xcross)
    mask[r0:r1, c0:c1] = inside
    return mask


def mask_box(mask):
    """[x, y, w, h] of the tight box of the mask's pixel squares (ints), or None if empty."""
    rows = np.flatnonzero(mask.any(axis=1))
    cols = np.flatnonzero(mask.any(axis=0))
    if rows.size == 0:
        return None
    return [int(cols[0]), int(rows[0]), int(cols[-1] - cols[0] + 1), int(rows[-1] - rows[0] + 1)]


# --- COCO's run-length encoding ----------------------------------------------------

def rle_counts(mask):
    """COCO's uncompressed RLE counts of a mask: runs over the column-major
    pixel order, the first run counting zeros (it may be 0)."""
    flat = np.asarray(mask, dtype=np.uint8).T.ravel()
    if flat.size == 0:
        return []
    change = np.flatnonzero(flat[1:] != flat[:-1]) + 1
    bounds = np.concatenate([[0], change, [flat.size]])
    runs = np.diff(bounds).tolist()
    if flat[0]:
        runs = [0] + runs
    return [int(r) for r in runs]


def rle_to_string(counts):
    """COCO's compressed RLE string (pycocotools' rleToString: LEB128-like
    5-bit groups, offset by 48, each count from the third on stored as the
    difference to the count two before)."""
    out = []
    for i, x in enumerate(counts):
        if i > 2:
            x -= counts[i - 2]
        more = True
        while more:
            c = x & 0x1F
            x >>= 5
            more = (x != -1) if (c & 0x10) else (x != 0)
            if more:
                c |= 0x20
            out.append(chr(c + 48))
    return "".join(out)


def rle_from_string(s):
    """The counts of a compressed RLE string (pycocotools' rleFrString)."""
    counts, p = [], 0
    while p < len(s):
        x, k, more = 0, 0, True
        while more:
            c = ord(s[p]) - 48
            x |= (c & 0x1F) << (5 * k)
            more = bool(c & 0x20)
            p += 1
            k += 1
            if not more and (c & 0x10):
                x |= -1 << (5 * k)
        if len(counts) > 2:
            x += counts[-2]
        counts.append(x)
    return counts


def rle_decode(counts, height, width):
    """The bool [height, width] mask of uncompressed RLE counts."""
    flat = np.zeros(height * width, dtype=bool)
    pos, value = 0, False
    for run in counts:
        if value:
            flat[pos:pos + run] = True
        pos += run
        value = not value
    return flat.reshape(width, height).T


def object_mask(ann, height, width):
    """The mask of an annotation of the generated set, from its segmentation
    (polygons rasterized by centre sampling, as the generator painted them)."""
    seg = ann["segmentation"]
    if isinstance(seg, dict):
        counts = seg["counts"]
        if isinstance(counts, str):
            counts = rle_from_string(counts)
        return rle_decode(counts, *seg["size"])
    mask = np.zeros((height, width), dtype=bool)
    for poly in seg:
        mask ^= rasterize_polygon(list(zip(poly[0::2], poly[1::2])), height, width)
    return mask


# --- one image ---------------------------------------------------------------------

def _image_size(rng, side):
    longer = int(rng.integers(side[0], side[1] + 1))
    aspect = math.exp(float(rng.uniform(-math.log(4 / 3), math.log(4 / 3))))
    shorter = max(16, int(round(longer / max(aspect, 1 / aspect))))
    return (longer, shorter) if aspect >= 1 else (shorter, longer)


def _background(kind, rng, width, height, photo_path):
    from PIL import Image

    if kind == "flat":
        return np.full((height, width, 3), 128, dtype=np.uint8)
    if kind == "generated":
        c0, c1 = rng.integers(30, 226, size=(2, 3))
        t = np.linspace(0.0, 1.0, width)[None, :, None]
        img = np.broadcast_to(c0 * (1 - t) + c1 * t, (height, width, 3))
        noise = rng.normal(0.0, 14.0, size=(height // 8 + 1, width // 8 + 1, 3))
        noise = np.kron(noise, np.ones((8, 8, 1)))[:height, :width]
        return np.clip(img + noise, 0, 255).astype(np.uint8)
    with Image.open(photo_path) as im:
        im = im.convert("RGB")
        pw, ph = im.size
        # A crop of the photo with the image's aspect ratio, 60-100% of the largest one.
        scale = min(pw / width, ph / height) * float(rng.uniform(0.6, 1.0))
        cw, ch = width * scale, height * scale
        x0 = float(rng.uniform(0, pw - cw))
        y0 = float(rng.uniform(0, ph - ch))
        im = im.resize((width, height), Image.BILINEAR, box=(x0, y0, x0 + cw, y0 + ch))
        return np.asarray(im, dtype=np.uint8).copy()


def _colour(rng):
    import colorsys

    h, s, v = float(rng.random()), float(rng.uniform(0.7, 1.0)), float(rng.uniform(0.6, 1.0))
    return np.array([int(round(c * 255)) for c in colorsys.hsv_to_rgb(h, s, v)], dtype=np.uint8)


def _dilate(mask, k):
    out = mask.copy()
    for _ in range(k):
        grown = out.copy()
        grown[1:] |= out[:-1]
        grown[:-1] |= out[1:]
        grown[:, 1:] |= out[:, :-1]
        grown[:, :-1] |= out[:, 1:]
        out = grown
    return out


def _make_image(job):
    """Renders image `index` and writes its JPEG; returns (image dict, [annotation dicts without id])."""
    from PIL import Image

    (index, image_id, path, kind, photo_root, photos, seed, side, objects, size_range, rle_fraction,
     crowd_fraction, empty_fraction, quality) = job
    rng = np.random.default_rng([int(seed), 7, int(index)])
    width, height = _image_size(rng, side)
    photo = photos[int(rng.integers(len(photos)))] if photos else None
    pixels = _background(kind, rng, width, height, os.path.join(photo_root, photo) if photo else None)
    count = 0 if rng.random() < empty_fraction else int(rng.integers(objects[0], objects[1] + 1))
    taken = np.zeros((height, width), dtype=bool)
    anns = []
    short = min(width, height)
    for _ in range(count):
        for _attempt in range(30):
            cat_id, cat_name = CATEGORIES[int(rng.integers(len(CATEGORIES)))]
            r = max(4.0, 0.5 * short * float(rng.uniform(*size_range)))
            cx = float(rng.uniform(0, width))
            cy = float(rng.uniform(0, height))
            poly = _shape_polygon(cat_name, rng, cx, cy, r)
            if not all(0 <= x <= width and 0 <= y <= height for x, y in poly):
                continue  # objects lie inside the image
            mask = rasterize_polygon(poly, height, width)
            if mask.sum() >= 16 and not (mask & taken).any():
                break
        else:
            continue
        taken |= _dilate(mask, _MARGIN)
        pixels[mask] = _colour(rng)
        u = float(rng.random())
        if u < crowd_fraction:
            seg, crowd = {"size": [height, width], "counts": rle_counts(mask)}, 1
        elif u < crowd_fraction + rle_fraction:
            seg, crowd = {"size": [height, width], "counts": rle_to_string(rle_counts(mask))}, 0
        else:
            seg, crowd = [[float(v) for xy in poly for v in xy]], 0
        x, y, w, h = mask_box(mask)
        anns.append({"image_id": image_id, "category_id": cat_id, "bbox": [float(x), float(y), float(w), float(h)],
                     "area": float(mask.sum()), "iscrowd": crowd, "segmentation": seg})
    Image.fromarray(pixels, "RGB").save(path, "JPEG", quality=quality)
    image = {"id": image_id, "file_name": os.path.basename(path), "width": width, "height": height, "license": 0}
    if photo:
        image["background"] = photo
    return image, anns


def make_coco(root, images=64, seed=0, backgrounds=None, side=(320, 640), objects=(1, 6), size_range=(0.12, 0.6),
              rle_fraction=0.15, crowd_fraction=0.05, empty_fraction=0.03, quality=90, workers=1):
    """Writes the set under `root` (see the module docs) and returns
    {"root", "file_root", "annotations_file", "images", "annotations", "backgrounds"}.

    side: (min, max) of the longer side in pixels; objects: (min, max) per image
    (fewer where they do not fit); size_range: object diameter as a fraction of
    the image's shorter side; the fractions choose segmentation formats and
    images without objects. Existing files are overwritten."""
    if images < 1:
        raise ValueError("images must be >= 1")
    if not (8 <= side[0] <= side[1]):
        raise ValueError(f"side must be (min, max) with 8 <= min <= max, got {side}")
    if not (0 <= objects[0] <= objects[1]):
        raise ValueError(f"objects must be (min, max) with 0 <= min <= max, got {objects}")
    kind, photo_root, photos = _resolve_backgrounds(backgrounds)
    image_dir = os.path.join(root, "images")
    ann_dir = os.path.join(root, "annotations")
    os.makedirs(image_dir, exist_ok=True)
    os.makedirs(ann_dir, exist_ok=True)
    jobs = []
    for index in range(images):
        image_id = 2 * index + 1  # ids need not be 0..N-1 (COCO's are not)
        path = os.path.join(image_dir, f"{image_id:012d}.jpg")
        jobs.append((index, image_id, path, kind, photo_root, photos, int(seed), tuple(side), tuple(objects),
                     tuple(size_range), float(rle_fraction), float(crowd_fraction), float(empty_fraction),
                     int(quality)))
    if workers > 1 and len(jobs) > 16:
        import multiprocessing

        # fork: the module may have been loaded from its file (tools/make_coco_data.py), which
        # spawned workers could not import; the work is numpy and Pillow only.
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        with multiprocessing.get_context(method).Pool(workers) as pool:
            results = list(pool.imap(_make_image, jobs, chunksize=8))
    else:
        results = [_make_image(job) for job in jobs]

    image_list, ann_list = [], []
    for image, anns in results:
        image_list.append(image)
        for ann in anns:
            ann_list.append({"id": len(ann_list) + 1, **ann})
    doc = {
        "info": {"description": "ladle's generated COCO-format detection set (ladle.cocodata)",
                 "version": "1", "year": 2026, "date_created": "generated",
                 "generator": {"seed": int(seed), "images": images, "backgrounds": kind, "side": list(side),
                               "objects": list(objects), "size_range": list(size_range),
                               "rle_fraction": rle_fraction, "crowd_fraction": crowd_fraction,
                               "empty_fraction": empty_fraction, "quality": quality,
                               "mask_rule": "pixel centres inside the polygon (even-odd); bbox = the mask's pixels"}},
        "licenses": [{"id": 0, "name": "see the photographs' copyright files" if photos else "generated",
                      "url": ""}],
        "images": image_list,
        "annotations": ann_list,
        "categories": [{"id": cid, "name": name, "supercategory": "shape"} for cid, name in CATEGORIES],
    }
    ann_file = os.path.join(ann_dir, "instances.json")
    with open(ann_file, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    return {"root": os.path.abspath(root), "file_root": os.path.abspath(image_dir),
            "annotations_file": os.path.abspath(ann_file), "images": len(image_list),
            "annotations": len(ann_list), "backgrounds": photo_root or kind}


def load(annotations_file):
    """The JSON of a set, with per image: its annotations in file order
    (``doc["by_image"][image_id]``)."""
    with open(annotations_file) as f:
        doc = json.load(f)
    by_image = {im["id"]: [] for im in doc["images"]}
    for ann in doc["annotations"]:
        by_image[ann["image_id"]].append(ann)
    doc["by_image"] = by_image
    return doc
