"""Diagnostic: why training with ladle runs below the synthetic bound. ResNet-18, AMP,
channels-last, batch 256: the synthetic bound, then ladle loader variants (threads, hw_decoder_load,
worker niceness) in one process, with executor_statistics per variant; --pin puts the training
process on cores 0-3 and the workers on 4-15; --priority compares the loader stream's priority
(low, normal, low, normal). Needs a GPU.

    PYTHONPATH=python python3 bench/train_probe.py /tmp/imagenet-like/train [--pin | --priority] [--archs=resnet18,resnet50]
"""
import os
import sys
import time

import torch
import torch.nn.functional as F
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import ladle  # noqa: E402
from ladle import fn, types  # noqa: E402

DATA = sys.argv[1]
MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def make_pipe(threads, hw, prefetch=2, batch=256):
    pipe = ladle.Pipeline(batch_size=batch, num_threads=threads, device_id=0, seed=0, prefetch_queue_depth=prefetch)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=DATA, random_shuffle=True, name="Reader")
        images = fn.decoders.image_random_crop(jpegs, device="mixed", output_type=types.RGB, hw_decoder_load=hw)
        images = fn.resize(images, resize_x=224, resize_y=224)
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT16, output_layout="CHW", mean=MEAN, std=STD,
                                          mirror=fn.random.coin_flip(probability=0.5))
        pipe.set_outputs(images, labels)
    pipe.build()
    return pipe


def next_batch(pipe):
    images, labels = pipe.run()
    x = torch.from_dlpack(images)
    y = torch.from_dlpack(labels).view(-1).long().cuda(non_blocking=True)
    return x, y


def model_for(arch):
    torch.backends.cudnn.benchmark = True
    model = getattr(torchvision.models, arch)(num_classes=1000).cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    scaler = torch.amp.GradScaler("cuda")
    return model, opt, scaler


def train(model, opt, scaler, get, iters, warm):
    t_next = 0.0

    def step():
        nonlocal t_next
        t = time.perf_counter()
        x, y = get()
        t_next += time.perf_counter() - t
        x = x.contiguous(memory_format=torch.channels_last)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    for _ in range(warm):
        step()
    torch.cuda.synchronize()
    t_next = 0.0
    before = common.cpu_times(common.process_tree())
    t0 = time.perf_counter()
    for _ in range(iters):
        step()
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    busy = common.cpu_seconds_between(before, common.cpu_times(common.process_tree())) / wall
    return iters * 256 / wall, t_next / iters * 1e3, busy


def stats_line(pipe, s0):
    s1 = pipe.executor_statistics()
    n = s1["iterations"] - s0["iterations"]
    ops = " ".join(f"{o['op'].split('.')[-1]}={(o['seconds'] - p['seconds']) / n * 1e3:.1f}"
                   for o, p in zip(s1["operators"], s0["operators"]))
    return (f"prepare/it {(s1['prepare_seconds'] - s0['prepare_seconds']) / n * 1e3:.1f} ms, "
            f"wait {(s1['wait_seconds'] - s0['wait_seconds']) * 1e3:.0f} ms total; {ops}")


PIN = "--pin" in sys.argv
if PIN:  # training threads on cores 0-3 (threads created later inherit it), loader workers on 4-15
    os.sched_setaffinity(0, {0, 1, 2, 3})
    os.environ["LADLE_AFFINITY"] = "4-15"
# (label, threads, hw_decoder_load, worker nice, loader stream priority)
VARIANTS = [
    ("t12 hw.8 nice10", 12, 0.8, 10, "low"),
    ("t12 hw1 nice10", 12, 1.0, 10, "low"),
    ("t12 hw.9 nice10", 12, 0.9, 10, "low"),
    ("t10 hw.9 nice10", 10, 0.9, 10, "low"),
    ("t12 hw.8 nice19", 12, 0.8, 19, "low"),
    ("t8 hw.8 nice10", 8, 0.8, 10, "low"),
]
if PIN:
    VARIANTS = [VARIANTS[0], VARIANTS[2]]
if "--priority" in sys.argv:  # the loader stream's priority, A/B/A/B
    VARIANTS = [(f"t12 hw.8 nice10 {prio}", 12, 0.8, 10, prio) for prio in ("low", "normal", "low", "normal")]
ARCHS = next((a.split("=", 1)[1].split(",") for a in sys.argv if a.startswith("--archs=")), ["resnet18"])
for arch in ARCHS:
    iters = 200 if arch == "resnet18" else 80
    model, opt, scaler = model_for(arch)
    g = torch.Generator(device="cuda").manual_seed(0)
    xs = torch.randn(256, 3, 224, 224, device="cuda", generator=g).half()
    ys = torch.randint(0, 1000, (256,), device="cuda", generator=g)
    r, tn, busy = train(model, opt, scaler, lambda: (xs, ys), iters, 30)
    print(f"{'PINNED ' if PIN else ''}{arch} synthetic: {r:,.0f} img/s, cores {busy:.1f}", flush=True)
    for label, thr, hw, nice, priority in VARIANTS:
        os.environ["LADLE_WORKER_NICE"] = str(nice)
        os.environ["LADLE_STREAM_PRIORITY"] = priority
        pipe = make_pipe(thr, hw, 2)
        try:
            for _ in range(5):
                next_batch(pipe)
            s0 = pipe.executor_statistics()
            r, tn, busy = train(model, opt, scaler, lambda: next_batch(pipe), iters, 30)
            print(f"{'PINNED ' if PIN else ''}{arch} ladle {label}: {r:,.0f} img/s, cores {busy:.1f}; "
                  f"{stats_line(pipe, s0)}", flush=True)
        finally:
            pipe.close()
    r, tn, busy = train(model, opt, scaler, lambda: (xs, ys), iters, 10)
    print(f"{'PINNED ' if PIN else ''}{arch} synthetic again: {r:,.0f} img/s", flush=True)
    del model, opt, scaler
