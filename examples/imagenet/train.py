#!/usr/bin/env python3
"""Trains an image classifier on an ImageNet-style folder with ladle: the
reference pattern (DALI's PyTorch ResNet-50 example, moved to ladle).

    python train.py DIR -a resnet50 -b 256 --amp --channels-last        # one GPU
    torchrun --nproc_per_node 8 train.py DIR -a resnet50 -b 256 --amp   # eight
    python train.py DIR -a tinycnn --image-size 32 -b 32 --epochs 5     # a CPU

DIR holds train/ and val/, one subfolder of images per class. See README.md.
"""

import argparse
import itertools
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# The process group, worker count and mixed precision, shared with examples/detection/train.py.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from train_common import Dist, autocast, default_workers, exit_with, images_per_s, make_scaler  # noqa: E402

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="ImageNet-style training with ladle (or torchvision) data loading")
    p.add_argument("data", metavar="DIR", nargs="?", help="folder with train/ and val/ (optional with --synthetic)")
    p.add_argument("-a", "--arch", default="resnet50",
                   help="a torchvision model name (resnet50, resnet18, ...) or tinycnn (default resnet50)")
    p.add_argument("-j", "--workers", type=int, default=None,
                   help="data-loading threads/processes per process (default: this process's share of the "
                        "cores, less 4 left to training, at least 2)")
    p.add_argument("--epochs", type=int, default=90)
    p.add_argument("--start-epoch", type=int, default=0, help="epoch number to start at (overridden by --resume)")
    p.add_argument("-b", "--batch-size", type=int, default=256, help="batch size per process (default 256)")
    p.add_argument("--lr", "--learning-rate", type=float, default=0.1,
                   help="learning rate for a global batch of 256; scaled linearly (default 0.1)")
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--wd", "--weight-decay", type=float, default=1e-4, dest="weight_decay")
    p.add_argument("--warmup-epochs", type=float, default=5, help="linear warm-up of the learning rate (default 5)")
    p.add_argument("--lr-steps", default="30,60,80", help="epochs at which the rate drops x0.1 (default 30,60,80)")
    p.add_argument("-p", "--print-freq", type=int, default=10, help="print (and synchronize) every N iterations")
    p.add_argument("--resume", default="", metavar="PATH", help="checkpoint to resume from")
    p.add_argument("--save", default="checkpoint.pth.tar", metavar="PATH",
                   help="where rank 0 writes checkpoints (default checkpoint.pth.tar; '' to never write)")
    p.add_argument("--save-every", type=int, default=0, metavar="N",
                   help="also write a checkpoint every N iterations (mid-epoch)")
    p.add_argument("--exit-after", type=int, default=0, metavar="N",
                   help="save a checkpoint and exit after N training iterations of this run (time-sliced jobs)")
    p.add_argument("-e", "--evaluate", action="store_true", help="only evaluate on val/")
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--amp", action="store_true", help="mixed precision (float16 on GPU, bfloat16 on CPU)")
    p.add_argument("--deterministic", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data-backend", default="ladle", choices=["ladle", "ladle-cpu", "dali", "dali-cpu", "pytorch"],
                   help="ladle: decode and augment on the GPU; ladle-cpu: on the CPU; dali, dali-cpu: the same "
                        "pipeline in NVIDIA DALI (if installed); pytorch: torchvision ImageFolder + DataLoader "
                        "(default ladle)")
    p.add_argument("--iters-per-epoch", type=int, default=0, metavar="N",
                   help="stop each epoch after N iterations (benchmarks; the data stream goes on where it stopped)")
    p.add_argument("--synthetic", action="store_true", help="random tensors already on the device: no data loading")
    p.add_argument("--num-classes", type=int, default=0, help="default: the number of class folders (1000 if none)")
    p.add_argument("--image-size", type=int, default=224, help="training crop size (default 224)")
    p.add_argument("--val-resize", type=int, default=0,
                   help="shorter side before the centre crop (default size*256/224)")
    p.add_argument("--cpu", action="store_true", help="train on the CPU even when a GPU is there")
    p.add_argument("--skip-bad", type=float, default=None, metavar="N",
                   help="ladle: skip corrupt or unreadable images, at most N of them (N < 1: that fraction of the "
                        "epoch); each is logged. Default: a bad image stops training with its file name")
    args = p.parse_args(argv)
    if not args.synthetic and not args.data:
        p.error("DIR is required unless --synthetic")
    if args.workers is None:
        args.workers = default_workers()
    args.val_resize = args.val_resize or int(round(args.image_size * 256 / 224))
    args.lr_steps = [int(x) for x in args.lr_steps.split(",") if x.strip()]
    return args


# --- models --------------------------------------------------------------------

class TinyCNN(nn.Module):
    """Three strided conv blocks and a linear layer: trains in seconds on a CPU."""

    def __init__(self, num_classes):
        super().__init__()
        layers, width = [], 3
        for out in (32, 64, 128):
            layers += [nn.Conv2d(width, out, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(out),
                       nn.ReLU(inplace=True)]
            width = out
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(width, num_classes)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


def make_model(arch, num_classes):
    if arch == "tinycnn":
        return TinyCNN(num_classes)
    import torchvision

    builder = getattr(torchvision.models, arch, None)
    if not callable(builder) or arch.startswith("_"):
        raise SystemExit(f"unknown --arch {arch!r}: use tinycnn or a torchvision model name such as resnet50")
    return builder(num_classes=num_classes)


# --- data: ladle -------------------------------------------------------------------

def ladle_gpu_ready():
    """Whether ladle can decode on this GPU (mixed/gpu operators and a device)."""
    import ladle
    from ladle.pipeline import op_schemas

    info = ladle.build_info()
    schema = op_schemas().get("decoders.image_random_crop", {})
    return bool(info.get("cuda_devices", 0)) and "mixed" in schema.get("devices", [])


class LadleLoader:
    """A ladle ClassificationIterator with the few calls the loop needs."""

    def __init__(self, pipe, policy, dev):
        from ladle.torch import ClassificationIterator

        self.it = ClassificationIterator(pipe, reader_name="Reader", auto_reset=True, last_batch_policy=policy)
        self.dev = dev
        self.done = 0  # batches taken in the iterator's current epoch

    def __len__(self):
        return len(self.it)

    def start_epoch(self, epoch):
        if self.done >= len(self.it):  # the last epoch ran to its end: begin the next
            self.it.reset()
            self.done = 0

    def next(self):
        try:
            data = next(self.it)
        except StopIteration:  # an epoch ended that the loop did not count (auto_reset began the next)
            self.done = 0
            data = next(self.it)
        self.done += 1
        x = data[0]["data"].to(self.dev.device, non_blocking=True)
        y = data[0]["label"].to(self.dev.device, non_blocking=True).squeeze(-1).long()
        return x, y

    def __iter__(self):  # one whole epoch (validation)
        self.start_epoch(None)
        for _ in range(len(self.it) - self.done):
            yield self.next()

    def state_dict(self):
        return {"iterator": self.it.state_dict(), "done": self.done}

    def load_state_dict(self, state):
        self.it.load_state_dict(state["iterator"])
        self.done = state["done"]


class DaliLoader(LadleLoader):
    """NVIDIA DALI's DALIClassificationIterator over the same pipeline (the
    comparison the benchmarks make). Its position is not saved: a resumed
    run restarts DALI's data stream at the beginning of an epoch."""

    def __init__(self, pipe, policy, dev):
        from nvidia.dali.plugin.pytorch import DALIClassificationIterator

        self.it = DALIClassificationIterator(pipe, reader_name="Reader", auto_reset=True, last_batch_policy=policy)
        self.dev = dev
        self.done = 0

    def state_dict(self):
        return None


def ladle_loaders(args, dev, on_gpu, library="ladle"):
    """The training and validation loaders of ladle, or of NVIDIA DALI
    (library "dali"): the same pipeline code after an import change."""
    if library == "dali":
        from nvidia.dali import fn, pipeline_def, types
        from nvidia.dali.plugin.pytorch import LastBatchPolicy
        loader_class = DaliLoader
    else:
        from ladle import fn, pipeline_def, types
        from ladle.torch import LastBatchPolicy
        loader_class = LadleLoader

    decoder = "mixed" if on_gpu else "cpu"
    dtype = types.FLOAT16 if (on_gpu and args.amp) else types.FLOAT
    # Every rank gives the same seed: the shuffle is one permutation per epoch
    # that the shards split (so they stay disjoint); augmentations differ per sample.
    common = dict(num_threads=args.workers, device_id=dev.local_rank if on_gpu else None, seed=args.seed,
                  prefetch_queue_depth=2)
    if args.skip_bad is not None:  # ladle only (main refuses it for DALI)
        common.update(on_error="skip", max_skipped_samples=args.skip_bad if args.skip_bad < 1 else int(args.skip_bad))

    @pipeline_def
    def train_pipe(root):
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, pad_last_batch=True, name="Reader",
                                        shard_id=dev.rank, num_shards=dev.world)
        images = fn.decoders.image_random_crop(jpegs, device=decoder, output_type=types.RGB,
                                               random_area=[0.08, 1.0], random_aspect_ratio=[0.75, 4.0 / 3.0],
                                               num_attempts=100)
        images = fn.resize(images, resize_x=args.image_size, resize_y=args.image_size)
        images = fn.crop_mirror_normalize(images, dtype=dtype, output_layout="CHW", mean=MEAN, std=STD,
                                          mirror=fn.random.coin_flip(probability=0.5))
        return images, labels

    @pipeline_def
    def val_pipe(root):
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=False, pad_last_batch=True, name="Reader",
                                        shard_id=dev.rank, num_shards=dev.world)
        images = fn.decoders.image(jpegs, device=decoder, output_type=types.RGB)
        images = fn.resize(images, resize_shorter=args.val_resize)
        images = fn.crop_mirror_normalize(images, dtype=dtype, output_layout="CHW", mean=MEAN, std=STD,
                                          crop=(args.image_size, args.image_size))
        return images, labels

    train = val = None
    if not args.evaluate:
        pipe = train_pipe(os.path.join(args.data, "train"), batch_size=args.batch_size, **common)
        # DROP: every rank runs the same number of full batches.
        train = loader_class(pipe, LastBatchPolicy.DROP, dev)
    pipe = val_pipe(os.path.join(args.data, "val"), batch_size=args.batch_size, **common)
    # PARTIAL with pad_last_batch: each validation image is counted exactly once.
    val = loader_class(pipe, LastBatchPolicy.PARTIAL, dev)
    return train, val


# --- data: torchvision ---------------------------------------------------------------

class _ResumableSampler(torch.utils.data.Sampler):
    """DistributedSampler's order for an epoch, from sample `skip` on (mid-epoch resume)."""

    def __init__(self, inner):
        self.inner, self.skip = inner, 0

    def __iter__(self):
        return itertools.islice(iter(self.inner), self.skip, None)

    def __len__(self):
        return len(self.inner) - self.skip


class TorchLoader:
    """torchvision's ImageFolder + DataLoader behind LadleLoader's interface.

    Training: DistributedSampler (shuffled per pass, padded to equal shards)
    and drop_last, so every rank runs the same number of full batches. The
    passes over the data are counted here, apart from the training epochs,
    so that --iters-per-epoch and mid-epoch resume work as with ladle.
    Validation: rank r takes images r, r + world, ... (each image once)."""

    def __init__(self, dataset, dev, args, train):
        from torch.utils.data import DataLoader, DistributedSampler

        self.dev, self.batch, self.train = dev, args.batch_size, train
        if train:
            self.inner = DistributedSampler(dataset, num_replicas=dev.world, rank=dev.rank, shuffle=True,
                                            seed=args.seed)
            sampler = self.sampler = _ResumableSampler(self.inner)
        else:
            sampler = list(range(dev.rank, len(dataset), dev.world))
        self.loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, num_workers=args.workers,
                                 pin_memory=dev.device.type == "cuda", drop_last=train,
                                 persistent_workers=args.workers > 0)
        self.passes, self.done, self._iter = 0, 0, None

    def __len__(self):
        return len(self.inner) // self.batch if self.train else len(self.loader)

    def _begin(self, skip):
        self.inner.set_epoch(self.passes)
        self.sampler.skip = skip * self.batch
        self.done, self._iter = skip, iter(self.loader)

    def start_epoch(self, epoch):
        if self._iter is None:
            self._begin(self.done if self.done < len(self) else 0)  # first use, or resumed mid-pass
        elif self.done >= len(self):
            self.passes += 1
            self._begin(0)

    def next(self):
        if self._iter is None:
            self.start_epoch(None)
        try:
            x, y = next(self._iter)
        except StopIteration:  # the pass ended inside a (capped) training epoch
            self.passes += 1
            self._begin(0)
            x, y = next(self._iter)
        self.done += 1
        return x.to(self.dev.device, non_blocking=True), y.to(self.dev.device, non_blocking=True)

    def __iter__(self):  # validation: the whole set
        for x, y in self.loader:
            yield x.to(self.dev.device, non_blocking=True), y.to(self.dev.device, non_blocking=True)

    def state_dict(self):
        return {"passes": self.passes, "done": self.done}

    def load_state_dict(self, state):
        self.passes, self.done, self._iter = state["passes"], state["done"], None


def torch_loaders(args, dev):
    import torchvision.datasets as datasets
    import torchvision.transforms as T

    norm = T.Normalize(mean=[m / 255 for m in MEAN], std=[s / 255 for s in STD])
    train = None
    if not args.evaluate:
        train_set = datasets.ImageFolder(os.path.join(args.data, "train"), T.Compose([
            T.RandomResizedCrop(args.image_size), T.RandomHorizontalFlip(), T.ToTensor(), norm]))
        train = TorchLoader(train_set, dev, args, train=True)
    val_set = datasets.ImageFolder(os.path.join(args.data, "val"), T.Compose([
        T.Resize(args.val_resize), T.CenterCrop(args.image_size), T.ToTensor(), norm]))
    return train, TorchLoader(val_set, dev, args, train=False)


class SyntheticLoader:
    """One random batch, already on the device, handed out again and again."""

    def __init__(self, args, dev, num_classes, length):
        g = torch.Generator().manual_seed(args.seed)
        self.x = torch.randn(args.batch_size, 3, args.image_size, args.image_size, generator=g).to(dev.device)
        self.y = torch.randint(0, num_classes, (args.batch_size,), generator=g).to(dev.device)
        self.length, self.done = length, 0

    def __len__(self):
        return self.length

    def start_epoch(self, epoch):
        if self.done >= self.length:
            self.done = 0

    def next(self):
        self.done += 1
        return self.x, self.y

    def __iter__(self):
        self.done = 0
        for _ in range(self.length):
            yield self.next()

    def state_dict(self):
        return {"done": self.done}

    def load_state_dict(self, state):
        self.done = state["done"]


# --- training ----------------------------------------------------------------------

class Average:
    """A running average weighted by sample counts."""

    def __init__(self):
        self.sum, self.count = 0.0, 0

    def update(self, value, n=1):
        self.sum += value * n
        self.count += n

    @property
    def avg(self):
        return self.sum / max(self.count, 1)


def learning_rate(args, base_lr, epoch, step, steps_per_epoch):
    """Linear warm-up over the first warmup_epochs, then x0.1 at each lr step."""
    lr = base_lr * 0.1 ** sum(epoch >= s for s in args.lr_steps)
    done = epoch + (step + 1) / steps_per_epoch
    if done <= args.warmup_epochs:
        lr *= done / args.warmup_epochs
    return lr


def correct_topk(output, target, ks=(1, 5)):
    """Samples of the batch whose label is among the top k, for each k (tensors)."""
    top = output.topk(min(max(ks), output.shape[1]), dim=1).indices
    hits = top.eq(target.view(-1, 1))
    return [hits[:, :k].any(dim=1).sum() for k in ks]


def save_checkpoint(args, dev, state):
    if dev.main and args.save:
        tmp = args.save + ".tmp"
        torch.save(state, tmp)
        os.replace(tmp, args.save)


def train_epoch(args, dev, loader, model, criterion, optimizer, scaler, epoch, start_step, steps, base_lr, stats,
                checkpoint):
    """One epoch from iteration start_step; appends (images, seconds) of each
    print interval to stats["intervals"]. Returns True to stop the run (--exit-after)."""
    model.train()
    global_batch = args.batch_size * dev.world
    loss_avg, top1_avg, top5_avg = Average(), Average(), Average()
    interval_start, interval_steps = time.perf_counter(), 0
    for step in range(start_step, steps):
        lr = learning_rate(args, base_lr, epoch, step, steps)
        for group in optimizer.param_groups:
            group["lr"] = lr
        x, y = loader.next()
        if args.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        with autocast(args, dev):
            output = model(x)
            loss = criterion(output, y)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        interval_steps += 1

        if (step + 1) % args.print_freq == 0 or step + 1 == steps:
            # The only synchronization: metrics of this batch, averaged over the ranks.
            c1, c5 = correct_topk(output.detach(), y)
            n = torch.tensor(float(y.shape[0]), device=dev.device)
            metrics = dev.all_reduce_sum(torch.stack([loss.detach().float() * n, c1.float(), c5.float(), n]))
            loss_v, c1_v, c5_v, n_v = metrics.tolist()
            elapsed = time.perf_counter() - interval_start
            images = interval_steps * global_batch
            speed = images / elapsed
            stats["intervals"].append((images, elapsed))
            loss_avg.update(loss_v / n_v, n_v)
            top1_avg.update(100.0 * c1_v / n_v, n_v)
            top5_avg.update(100.0 * c5_v / n_v, n_v)
            dev.print(f"Epoch: [{epoch}][{step + 1}/{steps}]  Time {elapsed / interval_steps:.3f}s/it  "
                      f"Speed {speed:.1f} img/s  lr {lr:.5f}  Loss {loss_v / n_v:.4f} ({loss_avg.avg:.4f})  "
                      f"Prec@1 {100.0 * c1_v / n_v:.2f} ({top1_avg.avg:.2f})  "
                      f"Prec@5 {100.0 * c5_v / n_v:.2f} ({top5_avg.avg:.2f})")
            interval_start, interval_steps = time.perf_counter(), 0
        if args.save_every and (step + 1) % args.save_every == 0 and step + 1 < steps:
            save_checkpoint(args, dev, checkpoint(epoch, step + 1))
        stats["iterations"] += 1
        if args.exit_after and stats["iterations"] >= args.exit_after:
            save_checkpoint(args, dev, checkpoint(epoch, step + 1))
            dev.print(f"=> --exit-after {args.exit_after}: stopped at epoch {epoch}, iteration {step + 1}")
            return True
    return False


def validate(args, dev, loader, model):
    model.eval()
    start = time.perf_counter()
    totals = torch.zeros(3, device=dev.device)  # correct@1, correct@5, images
    with torch.no_grad():
        for x, y in loader:
            if y.numel() == 0:  # PARTIAL: a shard one image shorter can end with an empty batch
                continue
            if args.channels_last:
                x = x.contiguous(memory_format=torch.channels_last)
            with autocast(args, dev):
                output = model(x)
            c1, c5 = correct_topk(output.float(), y)
            totals += torch.stack([c1.float(), c5.float(), torch.tensor(float(y.shape[0]), device=dev.device)])
    c1, c5, n = dev.all_reduce_sum(totals).tolist()
    top1, top5 = 100.0 * c1 / max(n, 1), 100.0 * c5 / max(n, 1)
    dev.print(f"Val: {int(n)} images  Prec@1 {top1:.3f}  Prec@5 {top5:.3f}  "
              f"({n / (time.perf_counter() - start):.1f} img/s)")
    return top1, top5


def count_classes(args):
    if args.num_classes:
        return args.num_classes
    root = os.path.join(args.data, "train") if args.data else ""
    if root and os.path.isdir(root):
        return sum(1 for d in os.scandir(root) if d.is_dir())
    return 1000


def main(argv=None):
    args = parse_args(argv)
    if args.deterministic:  # cuBLAS needs it before CUDA starts to be deterministic
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    dev = Dist(args.cpu)
    torch.manual_seed(args.seed)
    if args.deterministic:
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
        torch.use_deterministic_algorithms(True, warn_only=True)
    else:
        torch.backends.cudnn.benchmark = True

    backend = args.data_backend
    if args.synthetic:
        backend = "synthetic"
    elif backend == "ladle" and not (dev.device.type == "cuda" and ladle_gpu_ready()):
        import ladle

        why = "training runs on the CPU" if dev.device.type != "cuda" else \
            f"this ladle has no GPU decoding (build_info: {ladle.build_info()})"
        dev.print(f"=> --data-backend ladle: {why}; using ladle-cpu (decoding on the CPU, then copying to "
                  f"{dev.device})")
        backend = "ladle-cpu"
    num_classes = count_classes(args)
    dev.print(f"=> {args.arch}, {num_classes} classes, {dev.world} process(es) x batch {args.batch_size} on "
              f"{dev.device}, data: {backend}{', amp' if args.amp else ''}"
              f"{', channels_last' if args.channels_last else ''}")

    if backend == "synthetic":
        length = args.iters_per_epoch or 100
        train_loader = SyntheticLoader(args, dev, num_classes, length)
        val_loader = SyntheticLoader(args, dev, num_classes, max(1, length // 10))
    elif backend == "pytorch":
        train_loader, val_loader = torch_loaders(args, dev)
    else:
        library = backend.split("-")[0]
        if library == "dali" and args.skip_bad is not None:
            raise SystemExit("--skip-bad is ladle's (DALI has no skip policy)")
        on_gpu = backend in ("ladle", "dali")
        if library == "dali" and on_gpu and dev.device.type != "cuda":
            raise SystemExit("--data-backend dali decodes on the GPU: there is none here (use dali-cpu)")
        train_loader, val_loader = ladle_loaders(args, dev, on_gpu=on_gpu, library=library)

    model = make_model(args.arch, num_classes).to(dev.device)
    if args.channels_last:
        model = model.to(memory_format=torch.channels_last)
    base_lr = args.lr * args.batch_size * dev.world / 256
    optimizer = torch.optim.SGD(model.parameters(), lr=base_lr, momentum=args.momentum,
                                weight_decay=args.weight_decay)
    scaler = make_scaler(args.amp and dev.device.type == "cuda")
    criterion = nn.CrossEntropyLoss()

    start_epoch, start_step, best = args.start_epoch, 0, 0.0
    if args.resume:
        ckpt = torch.load(args.resume, map_location=dev.device)
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        scaler.load_state_dict(ckpt["scaler"])
        start_epoch, start_step, best = ckpt["epoch"], ckpt["step"], ckpt.get("best_top1", 0.0)
        if train_loader is not None and ckpt.get("loader") is not None and ckpt.get("backend") == backend:
            train_loader.load_state_dict(ckpt["loader"])
        dev.print(f"=> resumed from {args.resume}: epoch {start_epoch}, iteration {start_step}")

    net = model
    if dev.world > 1:
        net = nn.parallel.DistributedDataParallel(model, device_ids=[dev.local_rank] if dev.device.type == "cuda"
                                                  else None)

    if args.evaluate:
        top1, top5 = validate(args, dev, val_loader, model)
        dev.print(f"##Top-1 {top1:.3f}\n##Top-5 {top5:.3f}")
        return 0

    def checkpoint(epoch, step):
        return {"arch": args.arch, "epoch": epoch, "step": step, "model": model.state_dict(),
                "optimizer": optimizer.state_dict(), "scaler": scaler.state_dict(), "best_top1": best,
                "backend": backend, "loader": train_loader.state_dict(), "args": vars(args)}

    stats = {"intervals": [], "iterations": 0}
    top1 = top5 = 0.0
    for epoch in range(start_epoch, args.epochs):
        train_loader.start_epoch(epoch)
        steps = len(train_loader)
        if args.iters_per_epoch:
            steps = min(steps, args.iters_per_epoch)
        first = start_step if epoch == start_epoch else 0
        if first < steps:
            if train_epoch(args, dev, train_loader, net, criterion, optimizer, scaler, epoch, first, steps,
                           base_lr, stats, checkpoint):
                return 0  # the process group ends with the process (exit_with)
        # The plain module: its weights are the DDP replicas', and it runs no
        # collective, so ranks with fewer validation batches cannot hang it.
        top1, top5 = validate(args, dev, val_loader, model)
        best = max(best, top1)
        save_checkpoint(args, dev, checkpoint(epoch + 1, 0))

    perf = images_per_s(stats["intervals"])
    dev.print(f"##Top-1 {top1:.3f}\n##Top-5 {top5:.3f}\n##Perf {perf:.1f}")
    return 0  # the process group ends with the process (exit_with)


if __name__ == "__main__":
    exit_with(main())
