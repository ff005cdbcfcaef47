#!/usr/bin/env python3
"""Per-operator throughput: each operator that ladle and NVIDIA DALI both have
on the device, run alone on the same batch of images already in that device's
memory, in ladle and in DALI, in the same run (issue 9).

    PYTHONPATH=python python3 bench/op_bench.py [--device gpu|cpu] [--batch 256] [--size imagenet|small]
        [--data IMAGE_TREE] [--quick] [--only resize,flip] [--json PATH]

The graph of every row is written once (CASES) and built by both libraries
(same operator names and arguments). Its input is a batch of uint8 HWC images
(real photographs: --data, else ../shared/data/bench-photos or .bench/bench-photos,
else photo-like synthetic pixels) put in device memory once by a helper pipeline
and given to an external_source(no_copy) every iteration, so only the operator
and its library's per-iteration overhead are timed; the "input only" row (the
external source as the output) is that overhead.

Each library runs in its own child process (DALI's gets its CUDA libraries on
LD_LIBRARY_PATH: common.child_env); the parent alternates between them row by
row (ladle first on even rows, DALI first on odd ones), so slow drift of the
machine falls on both. Per row: the pipeline is built, warm-up iterations run
(at least --warmup and 0.2 s), then --passes passes of the same number of
iterations (about --pass-seconds each); the figure is the median pass.
Gpix/s counts input pixels (H x W of every input image; one_hot: samples).
The outputs of the first iteration of each library are compared (the first
--check-samples samples) with the row's stated tolerance: the work is the same
on both sides. Random operators (noise, jitter, random_resized_crop) draw other
numbers in each library, so their check compares shapes and statistics.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

MEAN_255, STD_255 = common.MEAN_255, common.STD_255
PHOTO_DIRS = [os.path.join(common.REPO, "..", "shared", "data", "bench-photos", "root"),
              os.path.join(common.REPO, ".bench", "bench-photos", "root")]
SIZES = {"imagenet": 500, "small": 96}  # the longer side of the images (ImageNet's typical: 500 x 375)
CROPS = {"imagenet": 224, "small": 48}  # crop and resize targets ("224" in the row names)
GEOM = {"crop": 224}  # set from --size in the parent and the children before graphs are built


# ============================ the operators ==================================

def close(level, fraction, why, rel=0.0):
    """Values within `level` (+ rel x |DALI's value|) of each other, at most
    `fraction` of them differing at all."""
    return {"kind": "close", "level": level, "rel": rel, "fraction": fraction, "why": why}


def mean_close(level, why):
    """Each compared sample's mean |ladle - DALI| at most `level`: for operators
    whose two implementations round differently at many pixels."""
    return {"kind": "mean", "level": level, "why": why}


def stats(why, rel=0.1):
    """Random operators: same shapes and dtypes; the mean |output - input| over
    the compared samples (or the outputs' mean where shapes differ from the
    input's) within `rel` of DALI's."""
    return {"kind": "stats", "rel": rel, "why": why}


EXACT = close(0, 0, "exact: pixels are moved or copied")
WARP = close(1, 0.05, "bilinear taps at source positions a few ulps apart (DALI's CPU adds the matrix column "
                      "per pixel): a tie rounds either way")
ROUNDING = close(1, 0.05, "uint8 rounding of float arithmetic: one level on ties")
FLOAT = close(1e-3, 1, "float32: the same formula, sums in another order", rel=1e-5)


def _resize(interp, **kw):
    return lambda fn, t, x, **_: fn.resize(x, interp_type=getattr(t, "INTERP_" + interp), **kw)


def _resize_to_crop(interp):
    return lambda fn, t, x, **_: fn.resize(x, interp_type=getattr(t, "INTERP_" + interp), resize_x=GEOM["crop"],
                                           resize_y=GEOM["crop"])


def _crop():
    return (GEOM["crop"], GEOM["crop"])


def _filter_kernel(n):
    k = np.outer(np.hanning(7)[1:-1], np.hanning(7)[1:-1]).astype(np.float32)
    k /= k.sum()
    k[2, 2] += 0.5  # a sharpening, not separable
    k /= k.sum()
    return [k] * n


def _upscale(shapes, axis):
    return [np.array(2.0 * s[axis], np.float32) for s in shapes]


def _labels(shapes):
    return [np.array(i * 37 % 1000, np.int32) for i in range(len(shapes))]


def _reduce(name, with_mean=False):
    def graph(fn, t, x, **_):
        op = getattr(fn.reductions, name)
        if with_mean:
            return op(x, fn.reductions.mean(x, axes=[0, 1]), axes=[0, 1])
        return op(x, axes=[0, 1])
    return graph


class Case:
    """One row: id, the ladle operator it times (its schema name, for the device
    check), the arguments as text, graph(fn, types, x, **extra), the output
    check, and extra per-sample inputs {name: f(input shapes) -> list of arrays}."""

    def __init__(self, id, op, args, graph, check, extra=None, input="images", also=()):
        self.id, self.op, self.args, self.graph, self.check = id, op, args, graph, check
        self.extra = extra or {}
        self.input = input
        self.also = also  # other operators the graph runs (std_dev needs mean)


CASES = [
    Case("input only", None, "external_source(no_copy) as the output: the per-iteration floor",
         lambda fn, t, x, **_: x, EXACT),
    Case("resize linear 224", "resize", "resize_x=224, resize_y=224 (antialias)",
         _resize_to_crop("LINEAR"),
         close(1, 0.03, "DALI's filter tables; float sums round by one level at most")),
    Case("resize cubic 224", "resize", "resize_x=224, resize_y=224, interp_type=INTERP_CUBIC",
         _resize_to_crop("CUBIC"), close(1, 0.03, "as resize linear")),
    Case("resize nn 224", "resize", "resize_x=224, resize_y=224, interp_type=INTERP_NN",
         _resize_to_crop("NN"),
         close(255, 0.1, "ladle follows DALI's CPU kernel; DALI 2.4's GPU NN picks other pixels on up to 7% "
                         "(tests/python/dali/test_dali_gpu.py); exact on the CPU")),
    Case("resize linear 2x up", "resize", "resize_x=2*W, resize_y=2*H (per-sample arguments)",
         lambda fn, t, x, rx, ry: fn.resize(x, resize_x=rx, resize_y=ry),
         close(1, 0.03, "as resize linear"),
         extra={"rx": lambda s: _upscale(s, 1), "ry": lambda s: _upscale(s, 0)}),
    Case("resize shorter 256", "resize", "resize_shorter=256", _resize("LINEAR", resize_shorter=256),
         close(1, 0.03, "as resize linear")),
    Case("random_resized_crop", "random_resized_crop", "size=(224, 224)",
         lambda fn, t, x, **_: fn.random_resized_crop(x, size=_crop()),
         stats("random windows: other generators", rel=0.25)),
    Case("crop 224", "crop", "crop=(224, 224), center, out_of_bounds_policy='pad'",
         lambda fn, t, x, **_: fn.crop(x, crop=_crop(), out_of_bounds_policy="pad"), EXACT),
    Case("crop_mirror_normalize 224", "crop_mirror_normalize",
         "crop=(224, 224), mirror=1, mean/std ImageNet, FLOAT16, CHW, out_of_bounds_policy='pad'",
         lambda fn, t, x, **_: fn.crop_mirror_normalize(x, crop=_crop(), out_of_bounds_policy="pad", mirror=1, mean=MEAN_255, std=STD_255,
                                                        dtype=t.FLOAT16, output_layout="CHW"),
         close(2e-3, 0.01, "float16: the same formula; one ulp where the float32 division rounds apart")),
    Case("crop_mirror_normalize full", "crop_mirror_normalize", "no crop, mean/std ImageNet, FLOAT16, CHW",
         lambda fn, t, x, **_: fn.crop_mirror_normalize(x, mean=MEAN_255, std=STD_255, dtype=t.FLOAT16,
                                                        output_layout="CHW"),
         close(2e-3, 0.01, "as above")),
    Case("flip", "flip", "horizontal=1", lambda fn, t, x, **_: fn.flip(x, horizontal=1), EXACT),
    Case("flip hv", "flip", "horizontal=1, vertical=1", lambda fn, t, x, **_: fn.flip(x, horizontal=1, vertical=1),
         EXACT),
    Case("rotate", "rotate", "angle=17, fill_value=0 (bilinear, output enlarged)",
         lambda fn, t, x, **_: fn.rotate(x, angle=17.0, fill_value=0), WARP),
    Case("warp_affine", "warp_affine", "matrix=[0.9, 0.1, 10, -0.1, 0.9, 20], fill_value=0 (bilinear)",
         lambda fn, t, x, **_: fn.warp_affine(x, matrix=[0.9, 0.1, 10.0, -0.1, 0.9, 20.0], fill_value=0),
         WARP),
    Case("brightness_contrast", "brightness_contrast", "brightness=1.2, contrast=0.7",
         lambda fn, t, x, **_: fn.brightness_contrast(x, brightness=1.2, contrast=0.7), ROUNDING),
    Case("brightness", "brightness", "brightness=1.3", lambda fn, t, x, **_: fn.brightness(x, brightness=1.3),
         ROUNDING),
    Case("contrast", "contrast", "contrast=0.6", lambda fn, t, x, **_: fn.contrast(x, contrast=0.6), ROUNDING),
    Case("hsv", "hsv", "hue=20, saturation=1.3, value=0.9",
         lambda fn, t, x, **_: fn.hsv(x, hue=20.0, saturation=1.3, value=0.9), ROUNDING),
    Case("hue", "hue", "hue=30", lambda fn, t, x, **_: fn.hue(x, hue=30.0), ROUNDING),
    Case("saturation", "saturation", "saturation=0.5", lambda fn, t, x, **_: fn.saturation(x, saturation=0.5),
         ROUNDING),
    Case("color_twist", "color_twist", "brightness=1.1, contrast=0.9, hue=20, saturation=1.2",
         lambda fn, t, x, **_: fn.color_twist(x, brightness=1.1, contrast=0.9, hue=20.0, saturation=1.2), ROUNDING),
    Case("color_space_conversion ycbcr", "color_space_conversion", "RGB -> YCbCr",
         lambda fn, t, x, **_: fn.color_space_conversion(x, image_type=t.RGB, output_type=t.YCbCr), ROUNDING),
    Case("color_space_conversion gray", "color_space_conversion", "RGB -> GRAY",
         lambda fn, t, x, **_: fn.color_space_conversion(x, image_type=t.RGB, output_type=t.GRAY), ROUNDING),
    Case("gaussian_blur", "gaussian_blur", "sigma=1.5 (window 9)",
         lambda fn, t, x, **_: fn.gaussian_blur(x, sigma=1.5),
         close(1, 0.02, "separable float filter: one level on ties")),
    Case("filter 5x5", "filter", "a 5x5 float32 kernel (per-sample input), border reflect_101",
         lambda fn, t, x, k: fn.filter(x, k), close(1, 0.02, "float32 sums in another order"),
         extra={"k": lambda s: _filter_kernel(len(s))}),
    Case("normalize", "normalize", "axis_names='HW' (per-image, per-channel mean and stddev)",
         lambda fn, t, x, **_: fn.normalize(x, axis_names="HW"),
         close(1e-3, 1, "float statistics summed in another order")),
    Case("erase", "erase", "anchor=(60, 80), shape=(100, 120), axis_names='HW', fill_value=0",
         lambda fn, t, x, **_: fn.erase(x, anchor=[60, 80], shape=[100, 120], axis_names="HW", fill_value=0), EXACT),
    Case("grid_mask", "grid_mask", "tile=100, ratio=0.5, angle=0.3",
         lambda fn, t, x, **_: fn.grid_mask(x, tile=100, ratio=0.5, angle=0.3),
         close(255, 0.01, "pixels on the rotated grid's edges may fall either side")),
    Case("jitter", "jitter", "nDegree=2", lambda fn, t, x, **_: fn.jitter(x, nDegree=2),
         stats("random displacements: other generators", rel=0.2)),
    Case("paste", "paste", "ratio=2, paste_x=0.5, paste_y=0.5, fill_value=(0, 0, 0)",
         lambda fn, t, x, **_: fn.paste(x, ratio=2.0, paste_x=0.5, paste_y=0.5, fill_value=(0, 0, 0)), EXACT),
    Case("pad", "pad", "axis_names='HW' (to the batch's largest H and W), fill_value=0",
         lambda fn, t, x, **_: fn.pad(x, axis_names="HW", fill_value=0), EXACT),
    Case("transpose", "transpose", "perm=(2, 0, 1): HWC -> CHW",
         lambda fn, t, x, **_: fn.transpose(x, perm=[2, 0, 1]), EXACT),
    Case("slice", "slice", "rel_start=(0.1, 0.2), rel_shape=(0.6, 0.5), axis_names='HW'",
         lambda fn, t, x, **_: fn.slice(x, rel_start=[0.1, 0.2], rel_shape=[0.6, 0.5], axis_names="HW"), EXACT),
    Case("cast float", "cast", "dtype=FLOAT", lambda fn, t, x, **_: fn.cast(x, dtype=t.FLOAT), EXACT),
    Case("cast float16", "cast", "dtype=FLOAT16", lambda fn, t, x, **_: fn.cast(x, dtype=t.FLOAT16), EXACT),
    Case("arithmetic x*0.5+1", "math.arithmetic", "x * 0.5 + 1 (float32 out)",
         lambda fn, t, x, **_: x * 0.5 + 1, close(1e-6, 1, "float32: exact but for a fused multiply-add (one ulp)", rel=1e-6)),
    Case("lookup_table", "lookup_table", "keys 0..255 -> 255 - key, dtype=UINT8",
         lambda fn, t, x, **_: fn.lookup_table(x, keys=list(range(256)), values=[255 - k for k in range(256)],
                                               dtype=t.UINT8), EXACT),
    Case("cat", "cat", "(x, x), axis=2: 6 channels", lambda fn, t, x, **_: fn.cat(x, x, axis=2), EXACT),
    Case("stack", "stack", "(x, x), axis=0", lambda fn, t, x, **_: fn.stack(x, x, axis=0), EXACT),
    Case("copy", "copy", "", lambda fn, t, x, **_: fn.copy(x), EXACT),
    Case("noise.gaussian", "noise.gaussian", "stddev=10", lambda fn, t, x, **_: fn.noise.gaussian(x, stddev=10.0),
         stats("random noise: other generators")),
    Case("noise.salt_and_pepper", "noise.salt_and_pepper", "prob=0.05",
         lambda fn, t, x, **_: fn.noise.salt_and_pepper(x, prob=0.05), stats("random noise: other generators")),
    Case("noise.shot", "noise.shot", "factor=20", lambda fn, t, x, **_: fn.noise.shot(x, factor=20.0),
         stats("random noise: other generators")),
    Case("jpeg_compression_distortion", "jpeg_compression_distortion", "quality=50",
         lambda fn, t, x, **_: fn.jpeg_compression_distortion(x, quality=50),
         mean_close(3, "CPU: both through libjpeg(-turbo), chroma filters may differ; GPU: ladle gives its CPU's "
                       "bytes, DALI its own CUDA codec (other rounding and chroma handling)")),
    Case("equalize", "equalize", "", lambda fn, t, x, **_: fn.equalize(x), close(1, 0.01, "DALI's formula")),
    Case("reductions.mean", "reductions.mean", "axes=(0, 1): per channel", _reduce("mean"), FLOAT),
    Case("reductions.sum", "reductions.sum", "axes=(0, 1)", _reduce("sum"), FLOAT),
    Case("reductions.min", "reductions.min", "axes=(0, 1)", _reduce("min"), EXACT),
    Case("reductions.max", "reductions.max", "axes=(0, 1)", _reduce("max"), EXACT),
    Case("reductions.mean_square", "reductions.mean_square", "axes=(0, 1)", _reduce("mean_square"), FLOAT),
    Case("reductions.rms", "reductions.rms", "axes=(0, 1)", _reduce("rms"), FLOAT),
    Case("reductions.std_dev", "reductions.std_dev", "axes=(0, 1), mean from reductions.mean (timed too)",
         _reduce("std_dev", True), FLOAT, also=("reductions.mean",)),
    Case("reductions.variance", "reductions.variance", "axes=(0, 1), mean from reductions.mean (timed too)",
         _reduce("variance", True), FLOAT, also=("reductions.mean",)),
    Case("one_hot", "one_hot", "num_classes=1000, one int32 label per sample (figures: samples, not pixels)",
         lambda fn, t, x, **_: fn.one_hot(x, num_classes=1000), EXACT, input="labels"),
]

# ladle GPU operators that DALI also has on the GPU, left out, and why.
LEFT_OUT = {
    "decoders.*": "mixed decoders read JPEG bytes, not pixels in memory: bench/pipeline_bench.py measures them",
    "transfer.to_gpu": "a host-to-device copy, not a GPU operator (pipeline_bench.py's CPU loaders use it)",
    "readers.numpy": "a reader (file I/O)",
    "external_source, python_function, dl_tensor_python_function": "user data and user code",
    "bb_flip, box_encoder, coord_flip, coord_transform": "boxes and points, a few per sample, not pixels",
    "reshape, squeeze, expand_dims, reinterpret, per_frame, element_extract": "metadata only (no pass over the "
    "data) or sequences (F dimension)",
    "_tensor_subscript": "x[a:b] is the slice kernel in both libraries (row 'slice')",
    "_conditional.merge": "control flow",
    "random.uniform, random.normal, random.coin_flip": "generators without an image input",
}


# ============================ the input batch ================================

def load_images(args):
    """(list of uint8 HWC arrays, where they came from)."""
    from PIL import Image

    longer = SIZES[args.size]
    paths = []
    if args.data:
        files, _ = common.list_image_tree(args.data)
        step = max(1, len(files) // args.batch)  # spread over the classes
        paths = [p for p, _ in files[::step]][:args.batch]
        where = f"{len(paths)} files of {args.data}"
    else:
        for d in PHOTO_DIRS:
            if os.path.isdir(d):
                found = sorted(os.path.join(r, f) for r, _, fs in os.walk(d) for f in fs
                               if f.lower().endswith(common.IMAGE_EXTENSIONS))
                if found:
                    paths = [found[i % len(found)] for i in range(args.batch)]
                    where = f"photographs of {os.path.normpath(d)} ({len(found)} distinct)"
                    break
    images = []
    rng = np.random.default_rng(9)
    for i, p in enumerate(paths):
        with Image.open(p) as im:
            im = im.convert("RGB")
            if not args.data or args.size != "imagenet":
                # ImageNet-like: longer side `longer`, aspect of the photo, a varied crop
                w, h = im.size
                s = longer * rng.uniform(0.8, 1.0) / max(w, h)
                im = im.resize((max(8, round(w * s)), max(8, round(h * s))), Image.BILINEAR)
            images.append(np.asarray(im, dtype=np.uint8).copy())
    if not images:
        where = "synthetic photo-like pixels (no photographs found)"
        for i in range(args.batch):
            h, w = int(longer * rng.uniform(0.6, 0.8)), int(longer * rng.uniform(0.8, 1.0))
            yy, xx = np.mgrid[0:h, 0:w]
            base = np.stack([np.sin(xx / (7 + c) + i) * np.cos(yy / (11 + c)) for c in range(3)], -1)
            pix = 128 + 90 * base + rng.normal(0, 12, (h, w, 3))
            images.append(np.clip(pix, 0, 255).astype(np.uint8))
    return images, where


# ============================ child: one library =============================

class Lib:
    """The library of this child: builds pipelines, moves batches to the host, syncs."""

    def __init__(self, name, device, threads, seed):
        self.name, self.device, self.threads, self.seed = name, device, threads, seed
        self.torch = None
        if name == "ladle":
            ladle, reason = common.import_ladle()
            if ladle is None:
                raise RuntimeError(reason)
            from ladle import fn, types
            self.mod, self.fn, self.types = ladle, fn, types
            self.version = ladle.__version__
        else:
            import nvidia.dali as dali
            from nvidia.dali import fn, types
            self.mod, self.fn, self.types = dali, fn, types
            self.version = dali.__version__
        if device == "gpu":
            import torch  # device-wide synchronize at the end of each pass
            self.torch = torch

    def pipeline(self, batch):
        gpu = self.device == "gpu"
        if self.name == "ladle":
            return self.mod.Pipeline(batch_size=batch, num_threads=self.threads, device_id=0 if gpu else -1,
                                     seed=self.seed, prefetch_queue_depth=2)
        return self.mod.Pipeline(batch_size=batch, num_threads=self.threads, device_id=0 if gpu else None,
                                 seed=self.seed, prefetch_queue_depth=2)

    def close(self, pipe):
        if self.name == "ladle":
            pipe.close()

    def sync(self):
        if self.torch is not None:
            self.torch.cuda.synchronize()

    def host_samples(self, tl, k):
        if hasattr(tl, "as_cpu"):
            tl = tl.as_cpu()
        return [np.array(tl.at(i)) for i in range(min(k, len(tl)))]

    def type_of(self, dtype):
        names = {"uint8": "UINT8", "int32": "INT32", "float32": "FLOAT"}
        return getattr(self.types, names[np.dtype(dtype).name])

    def resident(self, samples, layout, on_device):
        """The batch as the library's own TensorList in device memory (a helper
        pipeline run once: external_source, then .gpu()), and the pipeline,
        which must stay alive while the batch is used."""
        pipe = self.pipeline(len(samples))
        with pipe:
            x = self.fn.external_source(name="x", dtype=self.type_of(samples[0].dtype), ndim=samples[0].ndim,
                                        layout=layout)
            pipe.set_outputs(x.gpu() if on_device else x)
        pipe.build()
        pipe.feed_input("x", samples)
        (tl,) = pipe.run()
        self.sync()
        return tl, pipe


def child_main(args):
    """Runs rows on request: reads "<row index>" lines on stdin, answers one
    "@@ <json>" line per row on stdout; outputs to check go to --child-dir."""
    with open(args.child_spec) as f:
        spec = json.load(f)
    arrays = np.load(spec["images"])
    images = [arrays[f"i{i}"] for i in range(len(arrays.files))]
    shapes = [im.shape for im in images]
    GEOM["crop"] = spec["crop"]
    lib = Lib(args.child, spec["device"], spec["threads"], spec["seed"])
    on_device = spec["device"] == "gpu"
    keep = []  # helper pipelines whose outputs are in use
    inputs = {}

    def resident(key, samples, layout, device=True):
        if key not in inputs:
            tl, pipe = lib.resident(samples, layout, on_device and device)
            keep.append(pipe)
            inputs[key] = tl
        return inputs[key]

    print("@@ " + json.dumps({"ready": True, "version": lib.version}), flush=True)
    for line in sys.stdin:
        line = line.strip()
        if not line or line == "quit":
            break
        case = CASES[int(line)]
        try:
            res = run_case(lib, case, spec, images, shapes, resident, args.child_dir)
        except Exception as e:  # noqa: BLE001 - recorded in the row
            res = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"}
        print("@@ " + json.dumps(res), flush=True)
    for p in keep:
        lib.close(p)
    return 0


def _constant(batch):
    """A source giving `batch` every iteration (no parameter: DALI would pass the iteration's index)."""
    return lambda: batch


def run_case(lib, case, spec, images, shapes, resident, out_dir):
    fn, types = lib.fn, lib.types
    n = len(images)
    if case.input == "labels":
        x_tl = resident("labels", _labels(shapes), None)
    else:
        x_tl = resident("images", images, "HWC")
    extra_tls = {name: resident(f"{case.id}/{name}", make(shapes), None, device=False)  # arguments: host memory
                 for name, make in case.extra.items()}
    t0 = time.perf_counter()
    pipe = lib.pipeline(n)
    try:
        with pipe:
            x = fn.external_source(source=_constant(x_tl), device=lib.device, no_copy=True, batch=True,
                                   dtype=lib.type_of(np.int32 if case.input == "labels" else np.uint8),
                                   ndim=0 if case.input == "labels" else 3,
                                   layout=None if case.input == "labels" else "HWC")
            extra = {name: fn.external_source(source=_constant(tl), no_copy=True, batch=True)
                     for name, tl in extra_tls.items()}
            out = case.graph(fn, types, x, **extra)
            pipe.set_outputs(out)
        pipe.build()
        (first,) = pipe.run()
        lib.sync()
        build_s = time.perf_counter() - t0
        got = lib.host_samples(first, spec["check_samples"])
        np.savez(os.path.join(out_dir, f"{lib.name}-{CASES.index(case)}.npz"), *got)
        del first
        # warm-up: at least `warmup` iterations and 0.2 s; then the time per iteration
        t0, it = time.perf_counter(), 0
        while it < spec["warmup"] or time.perf_counter() - t0 < spec["warmup_seconds"]:
            pipe.run()
            it += 1
        lib.sync()
        per_iter = (time.perf_counter() - t0) / it
        iters = int(min(spec["max_iters"], max(spec["min_iters"], round(spec["pass_seconds"] / per_iter))))
        passes = []
        for _ in range(spec["passes"]):
            t0 = time.perf_counter()
            for _ in range(iters):
                pipe.run()
            lib.sync()
            passes.append(time.perf_counter() - t0)
    finally:
        lib.close(pipe)
        del pipe
    return {"build_s": round(build_s, 3), "iters_per_pass": iters, "pass_s": [round(p, 5) for p in passes],
            "samples_checked": len(got)}


# ============================ parent =========================================

class Child:
    """A child process running one library; answers rows one at a time."""

    def __init__(self, lib, spec_path, out_dir):
        self.lib, self.spec_path, self.out_dir = lib, spec_path, out_dir
        self.proc = None
        self.version = None
        self.error = None
        self.log = os.path.join(out_dir, f"{lib}.log")

    def start(self, timeout):
        cmd = [sys.executable, os.path.abspath(__file__), "--child", self.lib, "--child-spec", self.spec_path,
               "--child-dir", self.out_dir]
        err = open(self.log, "a")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
                                     env=common.child_env(self.lib == "dali"), bufsize=1)
        err.close()
        hello = self._answer(timeout)
        if hello is None or not hello.get("ready"):
            self.error = "did not start: " + self._tail()
            self.stop()
            return False
        self.version = hello.get("version")
        return True

    def _tail(self):
        try:
            with open(self.log) as f:
                lines = [x.strip() for x in f.read().splitlines() if x.strip()]
            return lines[-1][:300] if lines else "(no output)"
        except OSError:
            return "(no log)"

    def _answer(self, timeout):
        import select
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if not ready:
                return None
            line = self.proc.stdout.readline()
            if not line:
                return None  # exited
            if line.startswith("@@ "):
                return json.loads(line[3:])

    def run(self, index, timeout):
        if self.proc is None or self.proc.poll() is not None:
            return {"error": "the child process is not running"}
        try:
            self.proc.stdin.write(f"{index}\n")
            self.proc.stdin.flush()
        except OSError:
            pass
        res = self._answer(timeout)
        if res is None:
            why = f"crashed (exit {self.proc.poll()})" if self.proc.poll() is not None else f"timed out ({timeout:.0f} s)"
            res = {"error": f"{why}: {self._tail()}"}
            self.stop()
        return res

    def stop(self):
        if self.proc is None:
            return
        try:
            if self.proc.poll() is None:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        self.proc = None


def dali_devices():
    """{registry name: set of devices} of DALI's operators, or (None, why)."""
    env = common.child_env(True)
    code = ("import json; from nvidia.dali.ops import _registry as r; import nvidia.dali as d; "
            "print(json.dumps({'version': d.__version__, 'cpu': sorted(r.cpu_ops()), 'gpu': sorted(r.gpu_ops())}))")
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    except (OSError, subprocess.SubprocessError) as e:
        return None, f"nvidia.dali does not import: {e}"
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["?"])[-1]
        return None, f"nvidia.dali does not import ({last[:200]})"
    return json.loads(out.stdout.strip().splitlines()[-1]), None


def dali_name(op):
    """ladle's (DALI's) fn name -> DALI's registry name: noise.salt_and_pepper -> noise__SaltAndPepper."""
    special = {"rms": "RMS", "math.arithmetic": "_ArithmeticGenericOp"}
    if op in special:
        return special[op]
    parts = op.split(".")
    last = special.get(parts[-1]) or "".join(w[:1].upper() + w[1:] for w in parts[-1].split("_"))
    return "__".join(parts[:-1] + [last])


def check(case, lad, dal, inputs):
    """(ok, what was found) for the two libraries' outputs of one row."""
    c = case.check
    if len(lad) != len(dal):
        return False, f"{len(lad)} vs {len(dal)} samples"
    worst, frac, stat, mean = 0.0, 0.0, [0.0, 0.0], 0.0
    for i, (a, b) in enumerate(zip(lad, dal)):
        if a.dtype != b.dtype:
            return False, f"sample {i}: dtype {a.dtype} vs DALI {b.dtype}"
        if a.shape != b.shape:
            return False, f"sample {i}: shape {a.shape} vs DALI {b.shape}"
        if c["kind"] == "close":
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            d = np.abs(a64 - b64)
            over = d - c["rel"] * np.abs(b64)  # what the level must cover
            worst = max(worst, float(over.max()) if d.size else 0.0)
            frac = max(frac, float(np.mean(d > 0)) if d.size else 0.0)
        elif c["kind"] == "mean":
            d = np.abs(a.astype(np.float64) - b.astype(np.float64))
            mean = max(mean, float(d.mean()) if d.size else 0.0)
        else:
            x = inputs[i].astype(np.float64)
            for k, v in enumerate((a, b)):
                v = v.astype(np.float64)
                stat[k] += float(np.abs(v - x).mean()) if v.shape == x.shape else float(v.mean())
    if c["kind"] == "close":
        ok = worst <= c["level"] and frac <= c["fraction"]
        rel = f" beyond {c['rel']:g} relative" if c["rel"] else ""
        return ok, f"max diff {worst:.3g}{rel}, {100 * frac:.2f}% differ"
    if c["kind"] == "mean":
        return mean <= c["level"], f"mean diff {mean:.3g} (worst sample)"
    apart = abs(stat[0] - stat[1]) / max(abs(stat[1]), 1.0)
    return apart <= c["rel"], f"statistic apart by {100 * apart:.1f}%"


def _sized(text):
    """Row names and arguments say 224; --size small crops to less."""
    return text.replace("224", str(GEOM["crop"]))


def input_pixels(images, case):
    return None if case.input == "labels" else sum(int(im.shape[0]) * int(im.shape[1]) for im in images)


def fmt(x, digits=2):
    return "-" if x is None else f"{x:,.{digits}f}"


def summarize(res, pixels, batch):
    if "pass_s" not in res:
        return res
    per = [p / res["iters_per_pass"] for p in res["pass_s"]]
    med = float(np.median(per))
    res["ms_per_batch"] = common.spread([p * 1e3 for p in per], 4)
    res["images_per_s"] = round(batch / med, 1)
    res["gpix_per_s"] = round(pixels / med / 1e9, 4) if pixels else None
    return res


def print_table(rows, dali_note):
    header = ["operator", "ladle Gpix/s", "DALI Gpix/s", "ladle/DALI", "ladle img/s", "DALI img/s", "ladle ms",
              "DALI ms", "outputs", "arguments"]
    table = []
    for r in rows:
        lad, dal = r["ladle"], r.get("dali") or {}
        table.append([r["id"], fmt(lad.get("gpix_per_s"), 3), fmt(dal.get("gpix_per_s"), 3),
                      fmt(r.get("ratio"), 2), fmt(lad.get("images_per_s"), 0), fmt(dal.get("images_per_s"), 0),
                      fmt((lad.get("ms_per_batch") or {}).get("median"), 3),
                      fmt((dal.get("ms_per_batch") or {}).get("median"), 3),
                      r.get("agree", "-"), r["args"]])
        for lib in ("ladle", "dali"):
            e = (r.get(lib) or {}).get("error")
            if e:
                table.append(["", f"{lib} failed: {e[:150]}"] + [""] * 8)
    widths = [max(len(str(t[i])) for t in [header] + table if i < 2 or t[0]) for i in range(len(header))]
    widths[1] = max(len(header[1]), max((len(t[1]) for t in table if t[0]), default=0))
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    for t in table:
        if not t[0]:
            print("    " + t[1])
            continue
        print("  ".join(str(c).rjust(w) if 0 < i < 8 else str(c).ljust(w) for i, (c, w) in enumerate(zip(t, widths))))
    if dali_note:
        print(f"note: {dali_note}")


def print_result(r):
    """The table of a result (also bench/report.py's for these files)."""
    s, sw = r["settings"], r.get("software") or {}
    print(f"per-operator throughput, {s['device'].upper()}, batch {s['batch']} "
          f"({r['data']['pixels_per_batch'] / 1e6:.2f} Mpx of input: {r['data']['source']}), median of "
          f"{s['passes']} passes; ladle {sw.get('ladle')}, DALI {sw.get('dali') or '-'}")
    print_table(r["ops"], f"DALI column skipped: {r['dali']}" if r.get("dali") else None)
    if r.get("left_out_here"):
        print("rows left out here: " + "; ".join(f"{k} ({v})" for k, v in r["left_out_here"].items()))
    timed = [x for x in r["ops"] if x.get("ratio") and x["op"]]
    if timed:
        slower = [x["id"] for x in timed if x["ratio"] < 1]
        print(f"ladle at least as fast as DALI on {len(timed) - len(slower)} of {len(timed)} operators"
              + (f"; slower: {', '.join(slower)}" if slower else ""))
    differ = [x["id"] for x in r["ops"] if x.get("outputs_agree") is False]
    if differ:
        print("outputs differ beyond the stated tolerance: " + ", ".join(differ))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", choices=["auto", "gpu", "cpu"], default="auto")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--size", choices=sorted(SIZES), default="imagenet",
                   help="imagenet: longer side 400-500 px (or --data's files as they are); small: 77-96 px")
    p.add_argument("--data", help="an image tree (class folders, e.g. make_bench_set.py's); --batch files are "
                                  "decoded once, spread over the classes")
    p.add_argument("--passes", type=int, default=5)
    p.add_argument("--pass-seconds", type=float, default=0.2, help="about this long per timed pass")
    p.add_argument("--warmup", type=int, default=5, help="warm-up iterations (at least --warmup-seconds of them)")
    p.add_argument("--warmup-seconds", type=float, default=0.2)
    p.add_argument("--min-iters", type=int, default=2, help="iterations per pass at least")
    p.add_argument("--quick", action="store_true", help="3 passes of ~0.1 s, 3 warm-up iterations")
    p.add_argument("--threads", type=int, default=min(8, common.usable_cores()))
    p.add_argument("--check-samples", type=int, default=None,
                   help="samples of each output compared (default: all on the CPU, 8 on the GPU)")
    p.add_argument("--only", help="comma-separated row ids or operator names")
    p.add_argument("--no-dali", action="store_true")
    p.add_argument("--row-timeout", type=float, default=90)
    p.add_argument("--time-budget", type=float, default=0, help="seconds; rows that no longer fit are skipped and "
                                                                  "the JSON is written (0: no limit)")
    p.add_argument("--json", help="result path (default bench/results/<date>-<host>-<commit>-ops[-cpu].json)")
    p.add_argument("--out-dir", help="folder for the result file (instead of bench/results)")
    p.add_argument("--no-json", action="store_true")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--child-spec", help=argparse.SUPPRESS)
    p.add_argument("--child-dir", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return child_main(args)

    deadline = common.Deadline(args.time_budget)
    ladle, reason = common.import_ladle()
    if ladle is None:
        print(reason, file=sys.stderr)
        return 1
    torch, _, _ = common.import_torch()
    has_cuda = int(ladle.build_info().get("cuda_devices", 0) or 0) > 0 and common.cuda_ready(torch)
    device = args.device if args.device != "auto" else ("gpu" if has_cuda else "cpu")
    if device == "gpu" and not has_cuda:
        print("op_bench: --device gpu needs ladle built with CUDA, a CUDA device and torch with CUDA", file=sys.stderr)
        return 1
    if args.quick:
        args.passes, args.pass_seconds, args.warmup = min(args.passes, 3), min(args.pass_seconds, 0.1), 3
    check_samples = args.check_samples or (args.batch if device == "cpu" else 8)

    GEOM["crop"] = CROPS[args.size]
    schemas = ladle.pipeline.op_schemas()
    ldev = "gpu" if device == "gpu" else "cpu"
    dinfo, dali_note = (None, "--no-dali") if args.no_dali else dali_devices()
    dali_set = set(dinfo[ldev]) if dinfo else set()
    wanted = set(args.only.split(",")) if args.only else None
    rows, skipped = [], {}
    for i, case in enumerate(CASES):
        if wanted and case.id not in wanted and case.op not in wanted:
            continue
        ops = [o for o in (case.op,) + case.also if o]
        missing = [o for o in ops if ldev not in schemas.get(o, {}).get("devices", [])]
        if missing:
            skipped[case.id] = f"ladle has no {ldev.upper()} {', '.join(missing)}"
            continue
        if dinfo and any(dali_name(o) not in dali_set for o in ops):
            skipped[case.id] = f"DALI {dinfo['version']} has no {ldev.upper()} {case.op}"
            continue
        rows.append(i)

    images, where = load_images(args)
    pixels_total = sum(im.shape[0] * im.shape[1] for im in images)
    print(f"op_bench: {device.upper()}, batch {len(images)} uint8 HWC images from {where}, "
          f"{pixels_total / len(images) / 1e3:.0f} kpx mean ({pixels_total / 1e6:.2f} Mpx a batch); "
          f"{args.passes} passes of ~{args.pass_seconds} s per row; {len(rows)} rows", flush=True)
    work = tempfile.mkdtemp(prefix="op-bench-")
    np.savez(os.path.join(work, "images.npz"), **{f"i{i}": im for i, im in enumerate(images)})
    spec = {"images": os.path.join(work, "images.npz"), "device": device, "threads": args.threads, "seed": 1234,
            "check_samples": check_samples, "warmup": args.warmup, "warmup_seconds": args.warmup_seconds,
            "pass_seconds": args.pass_seconds, "passes": args.passes, "min_iters": args.min_iters, "max_iters": 2000,
            "crop": CROPS[args.size]}
    spec_path = os.path.join(work, "spec.json")
    with open(spec_path, "w") as f:
        json.dump(spec, f)

    libs = ["ladle"] + (["dali"] if dinfo else [])
    children = {lib: Child(lib, spec_path, work) for lib in libs}
    versions = {}
    for lib, ch in children.items():
        ok = ch.start(timeout=180)
        versions[lib] = ch.version if ok else None
        if not ok:
            print(f"op_bench: the {lib} child {ch.error}", file=sys.stderr)
    start = time.monotonic()
    results = []
    for k, i in enumerate(rows):
        case = CASES[i]
        if deadline.left() < 5:
            skipped[_sized(case.id)] = "no time left in --time-budget"
            continue
        out = {}
        order = libs if k % 2 == 0 else libs[::-1]
        for lib in order:
            ch = children[lib]
            if ch.proc is None and versions.get(lib):  # restart after a crash
                ch.start(timeout=180)
            out[lib] = ch.run(i, args.row_timeout) if ch.proc is not None else {"error": ch.error or "not running"}
        px = input_pixels(images, case)
        row = {"id": _sized(case.id), "op": case.op, "args": _sized(case.args), "check": case.check,
               "ladle": summarize(out["ladle"], px, len(images))}
        if "dali" in out:
            row["dali"] = summarize(out["dali"], px, len(images))
            la, da = row["ladle"].get("images_per_s"), row["dali"].get("images_per_s")
            row["ratio"] = round(la / da, 3) if la and da else None
            try:
                lad = _load(work, "ladle", i)
                dal = _load(work, "dali", i)
                ok, found = check(case, lad, dal, images if case.input == "images" else _labels(images))
                row["agree"] = ("ok" if ok else "DIFFER") + f" ({found})"
                row["outputs_agree"] = ok
            except (OSError, KeyError, ValueError) as e:
                row["agree"] = f"not compared ({type(e).__name__})"
                row["outputs_agree"] = None
        results.append(row)
        lr, dr = row["ladle"], row.get("dali") or {}
        print(f"  {row['id']:32s} ladle {fmt(lr.get('gpix_per_s'), 3):>8s} Gpix/s"
              + (f"  DALI {fmt(dr.get('gpix_per_s'), 3):>8s}  ratio {fmt(row.get('ratio'))}  {row.get('agree')}"
                 if "dali" in out else "") + ("  ERROR" if lr.get("error") or dr.get("error") else ""), flush=True)
    for ch in children.values():
        ch.stop()
    elapsed = time.monotonic() - start

    machine = common.machine_info(torch)
    commit, dirty, commit_source = common.commit_info()
    date = common.now_iso()
    result = {
        "schema": common.SCHEMA, "kind": "op-bench", "date": date, "commit": commit, "commit_dirty": dirty,
        "commit_source": commit_source, "machine": machine,
        "software": dict(common.software_info(ladle, torch), dali=versions.get("dali")),
        "settings": {"device": device, "batch": len(images), "size": args.size, "passes": args.passes,
                     "pass_seconds": args.pass_seconds, "warmup": args.warmup, "threads": args.threads,
                     "check_samples": check_samples, "quick": args.quick},
        "data": {"source": where, "images": len(images), "mean_pixels": round(pixels_total / len(images)),
                 "pixels_per_batch": pixels_total},
        "dali": None if dinfo else dali_note,
        "ops": results, "left_out_here": skipped, "left_out": LEFT_OUT, "seconds": round(elapsed, 1),
    }
    print()
    print_result(result)
    if not args.no_json:
        tag = "ops" + ("" if device == "gpu" else "-cpu") + ("-quick" if args.quick else "")
        path = args.json or os.path.join(args.out_dir or common.RESULTS_DIR,
                                         common.result_name(date, common.host_tag(machine), commit, tag))
        common.write_json(path, result)
        print(f"result file: {path}")
    import shutil
    shutil.rmtree(work, ignore_errors=True)
    return 0


def _load(work, lib, i):
    with np.load(os.path.join(work, f"{lib}-{i}.npz")) as z:
        return [z[f"arr_{k}"] for k in range(len(z.files))]


if __name__ == "__main__":
    sys.exit(main())
