"""The loaders the benchmarks compare, behind one small interface:

    loader = make_loader(kind, ...)   # builds and starts it
    x, y = loader.next()              # one batch: images [N, 3, 224, 224] float16 and labels
    loader.sync()                     # waits for GPU work queued so far
    loader.close()

Every loader delivers the same thing from the same files: the ImageNet training
pipeline (decode, random resized crop to 224, random mirror, normalize, float16
NCHW) or the validation pipeline (resize the shorter side to 256, center crop
224, normalize, float16 NCHW). `to_gpu` puts the batch in GPU memory as a
training loop would receive it.

A mixed loader's name may end in options, each "@key=value", in any order:
"@hw=X" (e.g. "dali-mixed@hw=0.9"): the mixed decoder's hw_decoder_load, the share
of images sent to the JPEG hardware engines; "@hyb=N" (e.g. "ladle-mixed@hw=0.9@hyb=0"):
its hybrid_huffman_threshold, the pixel count above which the images not sent to the
engines are decoded by nvJPEG's GPU-Huffman backend (0: all of them); "@bal=adaptive"
(ladle only): decoder_balance, the hardware share moved after every batch.
"""

from concurrent.futures import ThreadPoolExecutor

from common import MEAN, MEAN_255, STD, STD_255, list_image_tree

LOADERS = {
    # name: (library, pipeline, device) -- device is where decoding happens
    "ladle-mixed": ("ladle", "train", "mixed"),
    "ladle-cpu": ("ladle", "train", "cpu"),
    "tv-dataloader": ("torchvision", "train", "cpu"),
    "tv-gpu": ("torchvision", "train", "gpu"),
    "dali-mixed": ("dali", "train", "mixed"),
    "dali-cpu": ("dali", "train", "cpu"),
    "ladle-mixed-val": ("ladle", "val", "mixed"),
    "ladle-cpu-val": ("ladle", "val", "cpu"),
    "tv-dataloader-val": ("torchvision", "val", "cpu"),
    "dali-mixed-val": ("dali", "val", "mixed"),
    "dali-cpu-val": ("dali", "val", "cpu"),
}


# "@key=value" name options: (decoder argument, type)
NAME_OPTIONS = {"hw": ("hw_decoder_load", float), "hyb": ("hybrid_huffman_threshold", int),
                "bal": ("decoder_balance", str)}


def parse_options(name):
    """ "ladle-mixed@hw=0.9@hyb=0" -> ("ladle-mixed", {"hw_decoder_load": 0.9,
    "hybrid_huffman_threshold": 0}): the decoder arguments the name sets."""
    base, *opts = name.split("@")
    if base not in LOADERS:
        raise KeyError(name)
    args = {}
    for opt in opts:
        key, eq, value = opt.partition("=")
        if key not in NAME_OPTIONS or not eq or LOADERS[base][2] != "mixed":
            raise KeyError(name)  # only mixed decoders have these arguments
        arg, kind = NAME_OPTIONS[key]
        if arg in args:
            raise KeyError(name)
        args[arg] = kind(value)
    return base, args


def parse_name(name):
    """ "dali-mixed@hw=0.9" -> ("dali-mixed", 0.9); no hw option -> (name, None)."""
    base, args = parse_options(name)
    return base, args.get("hw_decoder_load")


class Unavailable(Exception):
    """The loader cannot run here; the message says why."""


# --- ladle ------------------------------------------------------------------------

def ladle_gpu_ops(ladle):
    """None when ladle can run its mixed/GPU pipeline here, else the reason it cannot."""
    info = ladle.build_info()
    if int(info.get("cuda_devices", 0) or 0) <= 0:
        return "ladle sees no CUDA device (build_info cuda_devices = 0)"
    schemas = ladle.pipeline.op_schemas()
    need = [("decoders.image_random_crop", "mixed"), ("decoders.image", "mixed"), ("resize", "gpu"),
            ("crop_mirror_normalize", "gpu")]
    missing = [f"{op}({dev})" for op, dev in need if dev not in schemas.get(op, {}).get("devices", [])]
    if missing:
        return "ladle has no " + ", ".join(missing) + " yet"
    return None


def ladle_has_transfer(ladle):
    return "transfer.to_gpu" in ladle.pipeline.op_schemas()


class Loader:
    """What every loader shares: sync() waits for the GPU work queued so far."""
    torch = None
    to_gpu = False

    def sync(self):
        if self.to_gpu:
            self.torch.cuda.synchronize()


def imagenet_graph(fn, types, jpegs, pipeline, device, hw):
    """The training or validation graph, written once for ladle and for DALI
    (same operator names and arguments: that is ladle's promise)."""
    if pipeline == "train":
        images = fn.decoders.image_random_crop(jpegs, device=device, output_type=types.RGB, **hw)
        images = fn.resize(images, resize_x=224, resize_y=224)
        return fn.crop_mirror_normalize(images, dtype=types.FLOAT16, output_layout="CHW",
                                        mean=MEAN_255, std=STD_255, mirror=fn.random.coin_flip(probability=0.5))
    images = fn.decoders.image(jpegs, device=device, output_type=types.RGB, **hw)
    images = fn.resize(images, resize_shorter=256)
    return fn.crop_mirror_normalize(images, crop=(224, 224), dtype=types.FLOAT16, output_layout="CHW",
                                    mean=MEAN_255, std=STD_255)


class LadleLoader(Loader):
    def __init__(self, ladle, torch, root, pipeline, device, batch_size, threads, seed=0, to_gpu=False,
                 prefetch=2, hw_decoder_load=None, decoder_args=None, shard=(0, 1), device_id=0):
        from ladle import fn, types

        if device == "mixed":
            reason = ladle_gpu_ops(ladle)
            if reason:
                raise Unavailable(reason)
        if to_gpu and (torch is None or not torch.cuda.is_available()):
            raise Unavailable("to_gpu needs torch with CUDA")
        self.torch = torch
        self.to_gpu = to_gpu
        self.notes = []
        in_graph_copy = to_gpu and device == "cpu" and ladle_has_transfer(ladle)
        torch_copy = to_gpu and device == "cpu" and not in_graph_copy
        self.torch_copy = torch_copy
        gpu = device == "mixed"
        hw = dict(decoder_args or {})
        if hw_decoder_load is not None:
            hw["hw_decoder_load"] = hw_decoder_load
        if "hybrid_huffman_threshold" in hw:
            self.notes.append(f"hybrid_huffman_threshold {hw['hybrid_huffman_threshold']}")
        if "decoder_balance" in hw:
            self.notes.append(f"decoder_balance {hw['decoder_balance']}")

        pipe = ladle.Pipeline(batch_size=batch_size, num_threads=threads,
                              device_id=device_id if (gpu or to_gpu) else -1, seed=seed, prefetch_queue_depth=prefetch)
        with pipe:
            jpegs, labels = fn.readers.file(file_root=root, random_shuffle=(pipeline == "train"), name="Reader",
                                            shard_id=shard[0], num_shards=shard[1])
            images = imagenet_graph(fn, types, jpegs, pipeline, device, hw)
            if in_graph_copy:
                images = images.gpu()
                self.notes.append("CPU pipeline; images moved to the GPU in the graph (.gpu())")
            pipe.set_outputs(images, labels)
        if torch_copy:
            self.notes.append("CPU pipeline; images copied to the GPU by torch .cuda(non_blocking=True) "
                              "(ladle has no transfer.to_gpu operator yet)")
        self.pipe = pipe
        self.queue_depth = prefetch  # batches prepared ahead
        pipe.build()

    def next(self):
        images, labels = self.pipe.run()
        if self.torch is not None:
            x = self.torch.from_dlpack(images)
            y = self.torch.from_dlpack(labels)
            y = y.view(-1).long()  # [N, 1] int32 -> the [N] int64 targets CrossEntropyLoss takes
            if self.to_gpu:
                if self.torch_copy or not x.is_cuda:
                    x = x.cuda(non_blocking=True)
                y = y.cuda(non_blocking=True)
        else:
            import numpy as np
            x = np.from_dlpack(images)
            y = np.from_dlpack(labels)
        return x, y

    def decoder_routes(self):
        """The decoder's images per route so far (executor_statistics counters), or None."""
        for op in self.pipe.executor_statistics()["operators"]:
            if op["op"].startswith("decoders.") and op.get("counters"):
                return dict(op["counters"])
        return None

    def close(self):
        self.pipe.close()


# --- NVIDIA DALI: the same graph, through its PyTorch iterator -----------------------

def import_dali():
    """(nvidia.dali, its PyTorch plugin) or raises Unavailable with the reason."""
    try:
        import nvidia.dali as dali
        from nvidia.dali.plugin import pytorch as dali_torch
    except Exception as e:  # noqa: BLE001 - any import failure means "not here"
        raise Unavailable(f"nvidia.dali does not import ({type(e).__name__}: {e}); on the GPU machine install it "
                          "with ../shared/tools/dali/ (tools/gpu-run --dali)")
    return dali, dali_torch


class DaliLoader(Loader):
    """DALI 2.x running imagenet_graph, batches taken as DALI users take them:
    DALIGenericIterator (it copies each output into a torch tensor it owns).
    The iterator has no epoch size (size=-1), so it streams like ladle's reader."""

    def __init__(self, torch, root, pipeline, device, batch_size, threads, seed=0, to_gpu=False, prefetch=2,
                 hw_decoder_load=None, decoder_args=None, shard=(0, 1), device_id=0):
        if "decoder_balance" in (decoder_args or {}):
            raise Unavailable("decoder_balance is ladle's argument; DALI has none")
        dali, dali_torch = import_dali()
        from nvidia.dali import fn, types
        if torch is None:
            raise Unavailable("DALI's iterator needs torch")
        cuda = torch.cuda.is_available()
        if device == "mixed" and not cuda:
            raise Unavailable("no CUDA device")
        hw = dict(decoder_args or {})
        if hw_decoder_load is not None:
            hw["hw_decoder_load"] = hw_decoder_load
        self.torch = torch
        self.to_gpu = to_gpu or device == "mixed"
        self.notes = [f"NVIDIA DALI {dali.__version__}, DALIGenericIterator"
                      + (f", hw_decoder_load {hw['hw_decoder_load']}" if "hw_decoder_load" in hw else
                         ", DALI's default hw_decoder_load" if device == "mixed" else "")
                      + (f", hybrid_huffman_threshold {hw['hybrid_huffman_threshold']}"
                         if "hybrid_huffman_threshold" in hw else "")]
        pipe = dali.Pipeline(batch_size=batch_size, num_threads=threads, device_id=device_id if cuda else None,
                             seed=seed, prefetch_queue_depth=prefetch)
        with pipe:
            jpegs, labels = fn.readers.file(file_root=root, random_shuffle=(pipeline == "train"), name="Reader",
                                            shard_id=shard[0], num_shards=shard[1])
            images = imagenet_graph(fn, types, jpegs, pipeline, device, hw)
            if device == "cpu" and self.to_gpu:
                images, labels = images.gpu(), labels.gpu()
                self.notes.append("CPU pipeline; outputs moved to the GPU in the graph (.gpu())")
            pipe.set_outputs(images, labels)
        pipe.build()
        self.queue_depth = prefetch
        self.pipe = pipe
        self.it = None
        if int(torch.__version__.split(".")[0]) >= 2:
            self.it = dali_torch.DALIGenericIterator([pipe], ["x", "y"], size=-1)
        elif self.to_gpu:  # DALI 2.4's plugin uses torch.device as a context manager (torch >= 2)
            raise Unavailable(f"DALI's PyTorch iterator needs torch >= 2, not {torch.__version__}")
        else:
            self.notes.append(f"DALIGenericIterator needs torch >= 2, not {torch.__version__}: host outputs "
                              "taken through NumPy instead")

    def next(self):
        if self.it is None:
            import numpy as np
            images, labels = self.pipe.run()
            x = self.torch.from_numpy(np.asarray(images.as_tensor()))
            return x, self.torch.from_numpy(np.asarray(labels.as_tensor())).view(-1).long()
        out = next(self.it)[0]
        x, y = out["x"], out["y"].view(-1).long()
        if self.to_gpu and not y.is_cuda:  # the mixed graph's labels stay on the host, as ladle's do
            y = y.cuda(non_blocking=True)
        return x, y

    def close(self):
        self.it = None
        self.pipe = None


# --- torchvision: ImageFolder + DataLoader ---------------------------------------------

class EndlessSampler:
    """Indices without end: a fresh permutation per epoch (train) or 0..n-1 again
    and again (val), so that timed passes never wait on an epoch boundary."""

    def __init__(self, n, shuffle, seed):
        self.n, self.shuffle, self.seed = n, shuffle, seed

    def __iter__(self):
        import torch
        g = torch.Generator()
        g.manual_seed(self.seed)
        while True:
            if self.shuffle:
                yield from torch.randperm(self.n, generator=g).tolist()
            else:
                yield from range(self.n)

    def __len__(self):
        return 2**62


class ToHalf:
    """The last transform: float32 -> float16 (a class, so workers can pickle it)."""

    def __call__(self, t):
        import torch
        return t.to(torch.float16)


def torchvision_has_v2(torchvision):
    try:
        from torchvision.transforms import v2
        return hasattr(v2, "ToImage") and hasattr(v2, "ToDtype")
    except ImportError:
        return False


def torchvision_transform(torch, torchvision, pipeline, version):
    """The CPU transform for one PIL image: v2 where torchvision has it, else v1."""
    if version == "v2":
        from torchvision.transforms import v2
        if pipeline == "train":
            head = [v2.RandomResizedCrop(224, antialias=True), v2.RandomHorizontalFlip()]
        else:
            head = [v2.Resize(256, antialias=True), v2.CenterCrop(224)]
        return v2.Compose(head + [v2.ToImage(), v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD),
                                  v2.ToDtype(torch.float16)])
    from torchvision import transforms as T
    if pipeline == "train":
        head = [T.RandomResizedCrop(224), T.RandomHorizontalFlip()]
    else:
        head = [T.Resize(256), T.CenterCrop(224)]
    return T.Compose(head + [T.ToTensor(), T.Normalize(MEAN, STD), ToHalf()])


class TorchvisionLoader(Loader):
    def __init__(self, torch, torchvision, root, pipeline, batch_size, workers, seed=0, to_gpu=False,
                 version="auto"):
        if torch is None or torchvision is None:
            raise Unavailable("needs torch and torchvision")
        if version == "auto":
            version = "v2" if torchvision_has_v2(torchvision) else "v1"
        self.torch = torch
        self.to_gpu = to_gpu
        self.notes = [f"transforms {version}; PIL decode in {workers} worker processes"
                      + ("; pin_memory, .cuda(non_blocking=True)" if to_gpu else "")]
        from torch.utils.data import DataLoader
        from torchvision.datasets import ImageFolder

        dataset = ImageFolder(root, transform=torchvision_transform(torch, torchvision, pipeline, version))
        sampler = EndlessSampler(len(dataset), shuffle=(pipeline == "train"), seed=seed)
        kwargs = {"prefetch_factor": 2} if workers > 0 else {}
        self.queue_depth = 2 * workers  # batches prepared ahead
        self.loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler, num_workers=workers,
                                 pin_memory=to_gpu, drop_last=True, **kwargs)
        self.it = iter(self.loader)

    def next(self):
        x, y = next(self.it)
        if self.to_gpu:
            x = x.cuda(non_blocking=True)
            y = y.cuda(non_blocking=True)
        return x, y

    def close(self):
        it, self.it = self.it, None
        shutdown = getattr(it, "_shutdown_workers", None)
        if shutdown is not None:
            shutdown()
        del it


# --- torchvision GPU path: batched nvJPEG decode, per-image v2 transforms on the GPU ----------

class TorchvisionGpuLoader:
    def __init__(self, torch, torchvision, root, batch_size, seed=0):
        if torch is None or torchvision is None:
            raise Unavailable("needs torch and torchvision")
        if not torch.cuda.is_available():
            raise Unavailable("no CUDA device")
        from torchvision.io import ImageReadMode, decode_jpeg, read_file

        self.torch = torch
        self.decode_jpeg, self.read_file, self.mode = decode_jpeg, read_file, ImageReadMode.RGB
        if torchvision_has_v2(torchvision):
            from torchvision.transforms import v2
            self.crop, self.flip = v2.RandomResizedCrop(224, antialias=True), v2.RandomHorizontalFlip()
            version = "v2"
        else:
            from torchvision import transforms as T
            self.crop, self.flip = T.RandomResizedCrop(224, antialias=True), T.RandomHorizontalFlip()
            version = "v1"
        self.files, _ = list_image_tree(root)
        if not self.files:
            raise Unavailable(f"no images under {root}")
        self.batch_size = batch_size
        self.mean = torch.tensor(MEAN, device="cuda").view(1, 3, 1, 1)
        self.std = torch.tensor(STD, device="cuda").view(1, 3, 1, 1)
        self.order = iter(EndlessSampler(len(self.files), shuffle=True, seed=seed))
        self.batched = True
        self.notes = [f"torchvision.io.decode_jpeg(list, device='cuda'), per-image {version} "
                      "RandomResizedCrop + RandomHorizontalFlip on the GPU, batched normalize; "
                      "files read one batch ahead by one thread"]
        self.queue_depth = 1  # file bytes of one batch read ahead
        self.reader = ThreadPoolExecutor(max_workers=1)
        self.pending = self.reader.submit(self._read)

    def _read(self):
        picks = [self.files[next(self.order)] for _ in range(self.batch_size)]
        return [self.read_file(path) for path, _ in picks], [label for _, label in picks]

    def _decode(self, datas):
        if self.batched:
            try:
                return self.decode_jpeg(datas, device="cuda", mode=self.mode)
            except (TypeError, RuntimeError) as e:  # torchvision before batched decoding
                self.batched = False
                self.notes.append(f"batched decode_jpeg failed ({e}); decoding one image per call")
        return [self.decode_jpeg(d, device="cuda", mode=self.mode) for d in datas]

    def next(self):
        torch = self.torch
        datas, labels = self.pending.result()
        self.pending = self.reader.submit(self._read)
        images = self._decode(datas)
        x = torch.stack([self.flip(self.crop(im)) for im in images])
        x = x.float().div_(255).sub_(self.mean).div_(self.std).half()
        y = torch.tensor(labels).cuda(non_blocking=True)
        return x, y

    def sync(self):
        self.torch.cuda.synchronize()

    def close(self):
        try:
            self.pending.result()
        except Exception:  # noqa: BLE001 - closing anyway
            pass
        self.reader.shutdown()


# --- one entry point -------------------------------------------------------------------------

def make_loader(name, *, ladle, torch, torchvision, root, batch_size, threads, seed=0, to_gpu=False,
                prefetch=2, tv_version="auto", shard=(0, 1), device_id=0):
    """Builds loader `name` (a key of LOADERS, maybe with "@hw=X", "@hyb=N"). Raises
    Unavailable with the reason when it cannot run here. shard: (shard_id,
    num_shards) of the reader, device_id: the GPU (ladle and DALI only)."""
    base, args = parse_options(name)
    library, pipeline, device = LOADERS[base]
    if library == "ladle":
        if ladle is None:
            raise Unavailable("ladle does not import")
        return LadleLoader(ladle, torch, root, pipeline, device, batch_size, threads, seed=seed,
                           to_gpu=to_gpu or device == "mixed", prefetch=prefetch, decoder_args=args, shard=shard,
                           device_id=device_id)
    if library == "dali":
        return DaliLoader(torch, root, pipeline, device, batch_size, threads, seed=seed, to_gpu=to_gpu,
                          prefetch=prefetch, decoder_args=args, shard=shard, device_id=device_id)
    if device == "gpu":
        return TorchvisionGpuLoader(torch, torchvision, root, batch_size, seed=seed)
    return TorchvisionLoader(torch, torchvision, root, pipeline, batch_size, threads, seed=seed, to_gpu=to_gpu,
                             version=tv_version)


def describe(name, batch_size, threads):
    base, args = parse_options(name)
    library, pipeline, device = LOADERS[base]
    out = {"loader": library, "pipeline": pipeline, "decode": device, "batch_size": batch_size,
           "threads": threads if not (library == "torchvision" and device == "gpu") else 1}
    out.update(args)  # hw_decoder_load, hybrid_huffman_threshold, decoder_balance
    return out

