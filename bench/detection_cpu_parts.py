#!/usr/bin/env python3
"""CPU time per batch of the SSD graph (examples/detection/train.py) or of
its host-side part, ladle or DALI, on the CPU: what a machine without a GPU
can say about the mixed pipeline's host work.

    python3 bench/detection_cpu_parts.py ladle full DIR [threads] [batch] [iterations]
    python3 bench/detection_cpu_parts.py dali host DIR 2 64 40
    ENCODE=1 python3 bench/detection_cpu_parts.py ladle host DIR      # + box_encoder, 8732 anchors

full: the whole graph with device cpu (decode, random_bbox_crop, slice, bb_flip,
resize, hsv, brightness_contrast, crop_mirror_normalize). host: only the
operators the mixed graph runs on the CPU (readers.coco, random_bbox_crop,
coin_flip, bb_flip, the four uniforms). Prints images/s and ms per batch, wall
and CPU (process time over all threads: the figure that holds on a shared machine).
"""
import importlib.util
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv):
    lib, mode, data = argv[:3]
    threads = int(argv[3]) if len(argv) > 3 else 2
    batch = int(argv[4]) if len(argv) > 4 else 64
    iters = int(argv[5]) if len(argv) > 5 else 40
    spec = importlib.util.spec_from_file_location("detection_train", os.path.join(HERE, "..", "examples", "detection",
                                                                                  "train.py"))
    t = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(t)
    if lib == "ladle":
        import ladle as L
        from ladle import fn, types
        extra = {}
    else:
        import nvidia.dali as L
        from nvidia.dali import fn, types
        extra = {"exec_dynamic": False}
    ann, root = os.path.join(data, "annotations", "instances.json"), os.path.join(data, "images")
    pipe = L.Pipeline(batch_size=batch, num_threads=threads, device_id=None, seed=1, prefetch_queue_depth=2, **extra)
    with pipe:
        if mode == "full":
            pipe.set_outputs(*t.detection_graph(fn, types, root, ann, 300))
        else:
            jpegs, boxes, labels = fn.readers.coco(file_root=root, annotations_file=ann, ratio=True, ltrb=True,
                                                   skip_empty=True, random_shuffle=True, pad_last_batch=True,
                                                   name="Reader")
            begin, crop, boxes, labels = fn.random_bbox_crop(boxes, labels, device="cpu", aspect_ratio=t.CROP_ASPECT,
                                                             thresholds=t.CROP_THRESHOLDS, scaling=t.CROP_SCALING,
                                                             bbox_layout="xyXY", allow_no_crop=True,
                                                             num_attempts=t.CROP_ATTEMPTS)
            flip = fn.random.coin_flip(probability=0.5)
            boxes = fn.bb_flip(boxes, ltrb=True, horizontal=flip)
            outs = [jpegs, begin, crop, boxes, labels, flip] + [fn.random.uniform(range=r) for r in
                                                                (t.HUE_DEGREES, t.SATURATION, t.BRIGHTNESS, t.CONTRAST)]
            if os.environ.get("ENCODE"):  # 8732 random anchors, as many as SSD300's
                lt = np.random.default_rng(0).uniform(0, 0.5, (8732, 2))
                outs += list(t.encode_boxes(fn, boxes, labels, np.concatenate([lt, lt + 0.3], 1), 300))
            pipe.set_outputs(*outs)
    pipe.build()
    for _ in range(5):
        pipe.run()
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(iters):
        pipe.run()
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"{lib} {mode} threads={threads} batch={batch}: {iters * batch / dt:,.0f} img/s, "
          f"{dt / iters * 1e3:.2f} ms/batch wall, {cpu / iters * 1e3:.2f} ms/batch CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
