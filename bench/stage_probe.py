#!/usr/bin/env python3
"""The executor's two stages on the mixed training pipeline (read -> decode
mixed -> random_resized_crop 224 -> flip -> crop_mirror_normalize float16 NCHW,
batch 256): images/s, CPU cores busy (this process), and per iteration the
milliseconds of each stage's thread (host: the reader; device: the rest), of
run() waiting, and of each operator, with LADLE_EXECUTOR_STAGES=1, with the
stages (default), and with the stages and the decoder's setup in the host
stage (LADLE_EXECUTOR_SETUP_AHEAD=1, "ahead"), at hw_decoder_load 0.8 and 0.9.

    PYTHONPATH=python python3 bench/stage_probe.py /tmp/imagenet-like/train 16
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import ladle  # noqa: E402
from ladle import fn, types  # noqa: E402

root, threads, batch = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else os.cpu_count(), 256
MEAN, STD = [0.485 * 255, 0.456 * 255, 0.406 * 255], [0.229 * 255, 0.224 * 255, 0.225 * 255]
MODES = {"1": {"LADLE_EXECUTOR_STAGES": "1"}, "default": {}, "ahead": {"LADLE_EXECUTOR_SETUP_AHEAD": "1"}}
for mode, env in MODES.items():
    for k in ("LADLE_EXECUTOR_STAGES", "LADLE_EXECUTOR_SETUP_AHEAD"):
        os.environ.pop(k, None)
    os.environ.update(env)
    for load in (0.8, 0.9):
        pipe = ladle.Pipeline(batch_size=batch, num_threads=threads, device_id=0, seed=1)
        with pipe:
            jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
            images = fn.decoders.image(jpegs, device="mixed", output_type=types.RGB, hw_decoder_load=load)
            images = fn.random_resized_crop(images, size=[224, 224])
            images = fn.flip(images, horizontal=fn.random.coin_flip(probability=0.5))
            images = fn.crop_mirror_normalize(images, dtype=types.FLOAT16, output_layout=types.NCHW, mean=MEAN,
                                              std=STD, mirror=fn.random.coin_flip(probability=0.5))
            pipe.set_outputs(images, labels)
        pipe.build()
        for _ in range(10):
            pipe.run()
        s0, c0, t0 = pipe.executor_statistics(), os.times(), time.perf_counter()
        n = 60
        for _ in range(n):
            images, _ = pipe.run()
        t1, c1, s1 = time.perf_counter(), os.times(), pipe.executor_statistics()
        cores = (c1.user + c1.system - c0.user - c0.system) / (t1 - t0)
        d = {k: (s1[k] - s0[k]) / n * 1e3 for k in ("prepare_seconds", "host_stage_seconds", "device_stage_seconds",
                                                      "wait_seconds")}
        ops = [(o["op"], (o["seconds"] - p["seconds"]) / n * 1e3) for o, p in zip(s1["operators"], s0["operators"])]
        print(f"stages={mode:8s} hw={load}: {n * batch / (t1 - t0):8.0f} img/s, {cores:4.1f} cores busy; ms/it "
              + ", ".join(f"{k[:-8]} {v:.2f}" for k, v in d.items()) + "; ops ms/it "
              + ", ".join(f"{k} {v:.2f}" for k, v in ops))
        pipe.close()
