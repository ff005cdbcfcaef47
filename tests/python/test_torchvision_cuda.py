"""ladle.torchvision on CUDA tensors: Compose and v2.functional keep the
pixels on the GPU (Tensor.cpu/.numpy/.to(cpu) and ladle's own host copies
refused while they run) and give CUDA tensors on the input's device, equal
to the results of the same transforms and seed on the same images in host
memory. The GPU operators reproduce the CPU ones bit for bit
(tests/python/test_gpu_pipeline.py); the one tolerance is float32 Resize
(float filter sums may be contracted into other roundings on the GPU: 1e-5
on [0, 1] images, a 400th of a uint8 level). Runs on the GPU machine."""

import contextlib

import pytest

import ladle
from ladle.tensors import TensorList

torch = pytest.importorskip("torch")
import ladle.torchvision as T  # noqa: E402
from conftest import photo_chw  # noqa: E402
import ladle.torchvision.v2.functional as F  # noqa: E402

pytestmark = pytest.mark.gpu

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]
SHAPES = [(37, 53), (64, 48), (31, 31), (80, 121)]


def image(h, w, seed):
    """A uint8 [3, H, W] tensor like a photo (conftest.photo_chw)."""
    return torch.from_numpy(photo_chw(h, w, seed))


def host_inputs(dtype=torch.uint8):
    """The three input forms in host memory: one image, a batch, a ragged list."""
    images = [image(h, w, i) for i, (h, w) in enumerate(SHAPES)]
    if dtype == torch.float32:
        images = [im.float() / 255 for im in images]
    return {"tensor": images[0], "batch": torch.stack([im[:, :31, :31] for im in images]), "list": images}


def on_gpu(x):
    return [t.cuda() for t in x] if isinstance(x, list) else x.cuda()


@contextlib.contextmanager
def no_host_copies():
    """Fails on any copy of a CUDA tensor or ladle GPU batch to host memory."""
    def refuse(name, method):
        def guarded(self, *args, **kwargs):
            if self.is_cuda:
                raise AssertionError(f"Tensor.{name}() on a CUDA tensor")
            return method(self, *args, **kwargs)
        return guarded

    to, as_cpu = torch.Tensor.to, TensorList.as_cpu

    def guarded_to(self, *args, **kwargs):
        out = to(self, *args, **kwargs)
        if self.is_cuda and not out.is_cuda:
            raise AssertionError("Tensor.to() moved a CUDA tensor to the host")
        return out

    def guarded_as_cpu(self):
        if self.device == "gpu":
            raise AssertionError("TensorList.as_cpu() on a GPU batch")
        return as_cpu(self)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(torch.Tensor, "cpu", refuse("cpu", torch.Tensor.cpu))
        mp.setattr(torch.Tensor, "numpy", refuse("numpy", torch.Tensor.numpy))
        mp.setattr(torch.Tensor, "to", guarded_to)
        mp.setattr(TensorList, "as_cpu", guarded_as_cpu)
        yield


def check_same(cuda_out, cpu_out, device, atol=0.0):
    """Same form, shapes, dtypes and values; every CUDA result on `device`."""
    if isinstance(cpu_out, list):
        assert isinstance(cuda_out, list) and len(cuda_out) == len(cpu_out)
        for g, c in zip(cuda_out, cpu_out):
            check_same(g, c, device, atol)
        return
    assert cuda_out.device == device, (cuda_out.device, device)
    assert not cpu_out.is_cuda
    assert cuda_out.dtype == cpu_out.dtype and cuda_out.shape == cpu_out.shape
    if atol:
        assert (cuda_out.cpu().double() - cpu_out.double()).abs().max().item() <= atol
    else:
        assert torch.equal(cuda_out.cpu(), cpu_out)


# --- Compose ---------------------------------------------------------------------------

UINT8_PIPELINES = {
    "resize_crop_normalize": lambda: [T.Resize(40), T.CenterCrop(32), T.RandomHorizontalFlip(),
                                      T.ToDtype(torch.float16, scale=True), T.Normalize(MEAN, STD)],
    "random_resized_crop": lambda: [T.RandomResizedCrop(24), T.RandomVerticalFlip(), T.ToDtype(torch.float32)],
    "pad_warps": lambda: [T.Pad((1, 2, 3, 4), fill=5), T.RandomRotation(20, expand=True),
                          T.RandomAffine(10, translate=(0.1, 0.1), scale=(0.9, 1.1))],
    "color": lambda: [T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomGrayscale(0.5), T.Grayscale(3)],
    "blur_erase": lambda: [T.GaussianBlur(5, (0.5, 2.0)), T.RandomErasing(p=1.0, value=7)],
    "autoaugment": lambda: [T.AutoAugment()],
    "randaugment": lambda: [T.RandAugment()],
    "trivialaugment": lambda: [T.TrivialAugmentWide(), T.RandomApply([T.RandomHorizontalFlip(1.0)], p=0.5)],
}


@pytest.mark.parametrize("form", ["tensor", "batch", "list"])
@pytest.mark.parametrize("name", sorted(UINT8_PIPELINES))
def test_compose_uint8_cuda_equals_cpu(name, form):
    x = host_inputs()[form]
    expected = T.Compose(UINT8_PIPELINES[name](), batch_size=8, seed=5)(x)
    gx = on_gpu(x)
    with no_host_copies():
        got = T.Compose(UINT8_PIPELINES[name](), batch_size=8, seed=5)(gx)
    check_same(got, expected, torch.device("cuda", 0))


FLOAT_PIPELINES = {
    "copies": (lambda: [T.CenterCrop(30), T.RandomHorizontalFlip(), T.Pad(2, fill=0.5), T.RandomVerticalFlip()],
               0.0),
    "nearest_warp": (lambda: [T.RandomRotation(25), T.RandomAffine(5, scale=(0.9, 1.1))], 0.0),
    "resize": (lambda: [T.Resize(40), T.CenterCrop(32)], 1e-5),
}


@pytest.mark.parametrize("form", ["tensor", "batch", "list"])
@pytest.mark.parametrize("name", sorted(FLOAT_PIPELINES))
def test_compose_float32_cuda_equals_cpu(name, form):
    ops, atol = FLOAT_PIPELINES[name]
    x = host_inputs(torch.float32)[form]
    expected = T.Compose(ops(), seed=3)(x)
    gx = on_gpu(x)
    with no_host_copies():
        got = T.Compose(ops(), seed=3)(gx)
    check_same(got, expected, torch.device("cuda", 0), atol)


def test_compose_batch_larger_than_batch_size():
    x = torch.stack([image(33, 35, i) for i in range(7)])
    ops = lambda: [T.RandomResizedCrop(16), T.RandomHorizontalFlip()]  # noqa: E731
    expected = T.Compose(ops(), batch_size=3, seed=1)(x)
    with no_host_copies():
        got = T.Compose(ops(), batch_size=3, seed=1)(x.cuda())
    check_same(got, expected, torch.device("cuda", 0))


def test_compose_repeated_calls_follow_cpu():
    """Random draws go on with the image count, on the GPU as on the CPU."""
    x = host_inputs()["batch"]
    cpu, gpu = T.Compose([T.RandomRotation(30)], seed=8), T.Compose([T.RandomRotation(30)], seed=8)
    gx = x.cuda()
    for _ in range(3):
        expected = cpu(x)
        with no_host_copies():
            got = gpu(gx)
        check_same(got, expected, torch.device("cuda", 0))


# --- v2.functional -------------------------------------------------------------------------

def normalize(x):
    return [F.normalize(t, MEAN, STD) for t in x] if isinstance(x, list) else F.normalize(x, MEAN, STD)


FUNCTIONS = {
    "resize": lambda x: F.resize(x, 24),
    "center_crop": lambda x: F.center_crop(x, 20),
    "crop": lambda x: F.crop(x, 2, 3, 20, 25),
    "resized_crop": lambda x: F.resized_crop(x, 2, 4, 20, 25, [16, 16]),
    "pad": lambda x: F.pad(x, [1, 2, 3, 4], fill=9),
    "horizontal_flip": F.horizontal_flip,
    "vertical_flip": F.vertical_flip,
    "rotate": lambda x: F.rotate(x, 33.0, expand=True),
    "affine": lambda x: F.affine(x, 12.0, [2, -3], 1.1, [5.0, 2.0]),
    "adjust_brightness": lambda x: F.adjust_brightness(x, 1.3),
    "adjust_contrast": lambda x: F.adjust_contrast(x, 0.7),
    "adjust_saturation": lambda x: F.adjust_saturation(x, 1.5),
    "adjust_hue": lambda x: F.adjust_hue(x, 0.1),
    "rgb_to_grayscale": lambda x: F.rgb_to_grayscale(x, 3),
    "gaussian_blur": lambda x: F.gaussian_blur(x, [5, 3]),
    "erase": lambda x: F.erase(x, 3, 4, 10, 12, 77),
    "to_dtype": lambda x: F.to_dtype(x, torch.float32, scale=True),
    "to_dtype_normalize": lambda x: normalize(F.to_dtype(x, torch.float32, scale=True)),
    "posterize": lambda x: F.posterize(x, 3),
    "solarize": lambda x: F.solarize(x, 100),
    "invert": F.invert,
    "autocontrast": F.autocontrast,
    "equalize": F.equalize,
    "adjust_sharpness": lambda x: F.adjust_sharpness(x, 1.7),
}


@pytest.mark.parametrize("form", ["tensor", "batch", "list"])
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_functional_cuda_equals_cpu(name, form):
    x = host_inputs()[form]
    expected = FUNCTIONS[name](x)
    gx = on_gpu(x)
    with no_host_copies():
        got = FUNCTIONS[name](gx)
    check_same(got, expected, torch.device("cuda", 0))


@pytest.mark.parametrize("form", ["tensor", "batch", "list"])
def test_functional_float32_cuda_equals_cpu(form):
    x = host_inputs(torch.float32)[form]
    for f in (F.horizontal_flip, lambda v: F.center_crop(v, 20), lambda v: F.rotate(v, 90.0)):
        expected = f(x)
        gx = on_gpu(x)
        with no_host_copies():
            got = f(gx)
        check_same(got, expected, torch.device("cuda", 0))


# --- ordering, devices, errors ----------------------------------------------------------------

def test_waits_for_torch_current_stream():
    """The input is written late on a side stream that is torch's current
    one: ladle's reads wait for it on the GPU, and the results are ready on
    that stream."""
    if not hasattr(torch.cuda, "_sleep"):
        pytest.skip("torch.cuda._sleep is missing")
    src = host_inputs()["batch"].cuda()
    flip = T.Compose([T.RandomHorizontalFlip(1.0)])
    flip_list = T.Compose([T.RandomVerticalFlip(1.0)])
    for run in (lambda v: F.horizontal_flip(v), flip, lambda v: flip_list(list(v))):
        run(src)  # builds the graphs now, so that the calls below only queue work
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        x = torch.zeros_like(src)
        torch.cuda._sleep(500_000_000)  # a busy GPU: the copy below lands well after the calls are queued
        x.copy_(src)
        flipped = F.horizontal_flip(x)
        composed = flip(x)
        listed = flip_list(list(x))
    torch.cuda.synchronize()
    assert torch.equal(flipped, src.flip(3)) and torch.equal(composed, src.flip(3))
    assert all(torch.equal(a, b.flip(1)) for a, b in zip(listed, src))


def test_second_gpu_keeps_its_device():
    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 GPUs")
    x = host_inputs()["batch"]
    device = torch.device("cuda", 1)
    expected = T.Compose([T.Resize(20), T.RandomHorizontalFlip()], seed=4)(x)
    with no_host_copies():
        got = T.Compose([T.Resize(20), T.RandomHorizontalFlip()], seed=4)(x.to(device))
        flipped = F.horizontal_flip(x.to(device))
    check_same(got, expected, device)
    check_same(flipped, F.horizontal_flip(x), device)


def test_device_cpu_with_cuda_tensors_is_an_error():
    x = host_inputs()["batch"].cuda()
    with pytest.raises(ladle.InvalidArgumentError, match="device='cpu'.*CUDA"):
        T.Compose([T.Resize(20)], device="cpu")(x)
    with pytest.raises(ladle.InvalidArgumentError, match="device='cpu'.*Resize.*CUDA"):
        T.Compose([T.Resize(20, device="cpu")])(x)
    with pytest.raises(ladle.InvalidArgumentError, match="resize: device='cpu'.*CUDA"):
        F.resize(x, 20, device="cpu")
    with pytest.raises(ladle.InvalidArgumentError, match="mixes CUDA tensors"):
        F.horizontal_flip([x[0], x[1].cpu()])
    with pytest.raises(ladle.InvalidArgumentError, match="mixes CUDA tensors"):
        T.Compose([T.Resize(20)])([x[0].cpu(), x[1]])


def test_cpu_device_gpu_still_gives_cuda_results():
    """Host images with device="gpu": copied to the GPU by ladle, CUDA results (as before)."""
    x = host_inputs()["batch"]
    got = T.Compose([T.Resize(20)], device="gpu")(x)
    assert got.is_cuda and torch.equal(got.cpu(), T.Compose([T.Resize(20)])(x))
    assert F.resize(x, 20, device="gpu").is_cuda
