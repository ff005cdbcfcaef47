"""What the example training scripts (imagenet/train.py, detection/train.py)
share: the process group from torchrun's environment, the data-loading
worker count, mixed precision, and leaving a multi-process run."""

import os
import sys

import torch
import torch.distributed as dist


def default_workers():
    """This process's share of the cores (torchrun starts LOCAL_WORLD_SIZE per
    machine) less 4 for the training loop's own threads, at least 2: the
    loader's workers must not take the cores of the thread that launches the
    GPU work (README.md, "Measured": 12 workers of 16 cores trained ResNet-18 fastest)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    per_process = cores // max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    return max(2, per_process - 4)


class Dist:
    """Rank and world of this process (torchrun's environment), and the device."""

    def __init__(self, use_cpu):
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        cuda = torch.cuda.is_available() and not use_cpu
        self.device = torch.device("cuda", self.local_rank) if cuda else torch.device("cpu")
        if cuda:
            torch.cuda.set_device(self.device)
        if self.world > 1:
            dist.init_process_group("nccl" if cuda else "gloo", init_method="env://")
        self.main = self.rank == 0

    def all_reduce_sum(self, tensor):
        if self.world > 1:
            dist.all_reduce(tensor)
        return tensor

    def print(self, *args):
        if self.main:
            print(*args, flush=True)


def make_scaler(enabled):
    if hasattr(torch.amp, "GradScaler"):  # torch >= 2.3
        return torch.amp.GradScaler("cuda", enabled=enabled)
    return torch.cuda.amp.GradScaler(enabled=enabled)


def autocast(args, dev):
    """--amp: float16 on a GPU (with make_scaler's GradScaler), bfloat16 on the CPU."""
    if dev.device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.float16, enabled=args.amp)
    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.amp)


def exit_with(code):
    """Leaves the script with `code`. A script of several ranks leaves its
    process group to this exit rather than calling destroy_process_group(),
    which can hang at random (pytorch/pytorch#75097; seen once in CI, two gloo
    ranks after their last all_reduce)."""
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        # torch 1.13 on Python 3.11 can hang in interpreter shutdown after a gloo
        # process group (seen in CI: the main thread joins a torch thread that
        # waits for the GIL). Everything is written by now: leave without it.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def images_per_s(intervals):
    """Training images/s over the print intervals [(images, seconds)], leaving
    out the first: it warms up (allocations, cudnn autotuning)."""
    timed = intervals[1:] or intervals
    return sum(i for i, _ in timed) / max(sum(t for _, t in timed), 1e-9)
