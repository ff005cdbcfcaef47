"""ladle.torchvision's colour transforms and functions against torchvision's
functional ops (tensor implementations) with the same factors, on random
uint8 images.

Measured differences (these images; the bounds asserted below):
- adjust_brightness, adjust_contrast: at most 1 level (ladle rounds to
  nearest, torchvision truncates); about half the pixels differ by 1.
- adjust_saturation: at most 2 levels (ladle's grey is the YIQ luma of DALI's
  saturation, torchvision blends with its rgb_to_grayscale; plus rounding).
- rgb_to_grayscale / Grayscale: at most 1 level (OpenCV's fixed-point luma
  with 0.299, rounded, against torchvision's 0.2989, truncated).
- adjust_hue: ladle rotates the YIQ chroma plane (DALI's hue), torchvision
  shifts the HSV hue: mean |difference| about 12 levels at 0.05 of a turn and
  30 at 0.2 (max up to 130); asserted: mean <= 15 + 100 * |hue_factor|, and
  hue 0 is exact.
- ColorJitter (brightness, contrast, saturation in torchvision's drawn order):
  at most 4 levels, mean below 2 (each step rounds where torchvision truncates;
  a contrast step after brightness blends towards brightness x the input's
  grey mean, torchvision re-measures the clamped image).
- RandomGrayscale: a grey image's channels within 1 level of each other and
  within 2 of torchvision's rgb_to_grayscale (DALI's YIQ desaturation maps
  grey to (0.9997, 0.9996, 1.0028) x luma).
"""

import numpy as np
import pytest

import ladle

torch = pytest.importorskip("torch")
pytest.importorskip("torchvision")
import torchvision.transforms.functional as tvF  # noqa: E402  (v1 functional: same semantics in 0.14)
from PIL import Image  # noqa: E402

import ladle.torchvision as T  # noqa: E402
import ladle.torchvision.v2.functional as F  # noqa: E402
from conftest import photo_chw, requires_ops  # noqa: E402

pytestmark = requires_ops("brightness_contrast", "hsv", "saturation", "color_space_conversion")

SHAPES = [(37, 53), (64, 48), (31, 31), (50, 70)]


def random_image(h, w, seed):
    """A uint8 [3, H, W] tensor like a photo (conftest.photo_chw)."""
    return torch.from_numpy(photo_chw(h, w, seed))


@pytest.fixture(scope="module")
def images():
    return [random_image(h, w, i) for i, (h, w) in enumerate(SHAPES)]


def diff(a, b):
    assert a.shape == b.shape, (a.shape, b.shape)
    d = (a.to(torch.int32) - b.to(torch.int32)).abs()
    return d.max().item(), d.float().mean().item()


@pytest.mark.parametrize("factor", [0.0, 0.3, 1.0, 1.6])
def test_adjust_brightness_contrast_saturation(images, factor):
    for img in images:
        assert diff(F.adjust_brightness(img, factor), tvF.adjust_brightness(img, factor))[0] <= 1
        assert diff(F.adjust_contrast(img, factor), tvF.adjust_contrast(img, factor))[0] <= 1
        assert diff(F.adjust_saturation(img, factor), tvF.adjust_saturation(img, factor))[0] <= 2
    one = images[0]
    assert torch.equal(F.adjust_brightness(one, 1.0), one) and torch.equal(F.adjust_saturation(one, 1.0), one)


@pytest.mark.parametrize("hue", [-0.3, -0.05, 0.05, 0.2])
def test_adjust_hue_measured(images, hue):
    for img in images:
        ours, theirs = F.adjust_hue(img, hue), tvF.adjust_hue(img, hue)
        assert diff(ours, theirs)[1] <= 15 + 100 * abs(hue)
        # the same direction of rotation: the opposite one is farther
        assert diff(ours, theirs)[1] < diff(F.adjust_hue(img, -hue), theirs)[1]
    assert torch.equal(F.adjust_hue(images[0], 0.0), images[0])


@pytest.mark.parametrize("channels", [1, 3])
def test_grayscale(images, channels):
    for img in images:
        assert diff(F.rgb_to_grayscale(img, channels), tvF.rgb_to_grayscale(img, channels))[0] <= 1
        out = T.Compose([T.Grayscale(channels)])(img)
        assert diff(out, tvF.rgb_to_grayscale(img, channels))[0] <= 1


def test_functional_forms(images):
    batch = torch.stack([images[2], images[2]])
    out = F.adjust_contrast(batch, 0.5)
    assert out.shape == batch.shape and torch.equal(out[0], F.adjust_contrast(images[2], 0.5))
    pil = Image.fromarray(images[0].permute(1, 2, 0).numpy())
    got = F.adjust_brightness(pil, 0.7)
    assert isinstance(got, Image.Image)
    assert np.array_equal(np.asarray(got), F.adjust_brightness(images[0], 0.7).permute(1, 2, 0).numpy())


def apply_torchvision(img, order, factors):
    fns = [tvF.adjust_brightness, tvF.adjust_contrast, tvF.adjust_saturation, tvF.adjust_hue]
    for k in order:
        if factors[k] is not None:
            img = fns[k](img, factors[k])
    return img


def jitter_batch(images):
    return torch.stack([img[:, :31, :31] for img in images])


def test_color_jitter_against_torchvision(images):
    batch = jitter_batch(images * 3)
    cj = T.ColorJitter(brightness=0.4, contrast=0.4, saturation=0.4)
    comp = T.Compose([cj], batch_size=5, seed=11)
    out = comp(batch)
    orders = set()
    for i in range(len(batch)):
        order, factors = cj.draw(cj._rng(comp.seed, 0, i))
        orders.add(tuple(order))
        mx, mean = diff(out[i], apply_torchvision(batch[i], order, factors))
        assert mx <= 4 and mean < 2, (i, order, factors, mx, mean)
    assert len(orders) > 3  # the order is drawn per image


def test_color_jitter_with_hue(images):
    batch = jitter_batch(images)
    cj = T.ColorJitter(brightness=0.2, saturation=0.3, hue=0.05)
    comp = T.Compose([cj], seed=3)
    out = comp(batch)
    for i in range(len(batch)):
        order, factors = cj.draw(cj._rng(comp.seed, 0, i))
        assert diff(out[i], apply_torchvision(batch[i], order, factors))[1] <= 15 + 100 * 0.05


def test_color_jitter_arguments_and_seed(images):
    batch = jitter_batch(images)
    assert torch.equal(T.Compose([T.ColorJitter()])(batch), batch)
    assert torch.equal(T.Compose([T.ColorJitter(brightness=(1, 1), hue=0)])(batch), batch)
    a = T.Compose([T.ColorJitter(0.5, 0.5, 0.5, 0.1)], seed=7)(batch)
    b = T.Compose([T.ColorJitter(0.5, 0.5, 0.5, 0.1)], seed=7)(batch)
    c = T.Compose([T.ColorJitter(0.5, 0.5, 0.5, 0.1)], seed=8)(batch)
    assert torch.equal(a, b) and not torch.equal(a, c)
    comp = T.Compose([T.ColorJitter(brightness=0.5)], seed=7)
    assert not torch.equal(comp(batch), comp(batch))  # a second call draws anew
    for bad in ({"brightness": -1}, {"hue": 0.7}, {"hue": (-0.6, 0.1)}, {"contrast": (0.5, 0.2)},
                {"saturation": (1, 2, 3)}):
        with pytest.raises(ladle.InvalidArgumentError, match="ColorJitter"):
            T.ColorJitter(**bad)


def test_color_jitter_after_geometry(images):
    """After a crop, the contrast centre is the whole input image's grey mean
    (the host sees the image as it enters Compose): close, not equal."""
    img = images[3]
    cj = T.ColorJitter(contrast=(0.5, 0.5))
    out = T.Compose([T.CenterCrop(20), cj])(img)
    want = tvF.adjust_contrast(tvF.center_crop(img, [20, 20]), 0.5)
    crop_mean = float(tvF.rgb_to_grayscale(tvF.center_crop(img, [20, 20])).float().mean())
    full_mean = float(tvF.rgb_to_grayscale(img).float().mean())
    assert diff(out, want)[0] <= 1 + 0.5 * abs(crop_mean - full_mean) + 1


def test_random_grayscale(images):
    batch = jitter_batch(images * 8)
    assert torch.equal(T.Compose([T.RandomGrayscale(p=0.0)])(batch), batch)
    grey = T.Compose([T.RandomGrayscale(p=1.0)])(batch)
    for g, img in zip(grey, batch):
        assert (g.to(torch.int32) - g[0:1].to(torch.int32)).abs().max() <= 1
        assert diff(g, tvF.rgb_to_grayscale(img, 3))[0] <= 2
    half = T.Compose([T.RandomGrayscale(p=0.5)], batch_size=32, seed=4)(batch)
    n_grey = sum(bool((h.to(torch.int32) - h[0:1].to(torch.int32)).abs().max() <= 1) for h in half)
    assert 6 <= n_grey <= 26
    with pytest.raises(ladle.InvalidArgumentError, match="RandomGrayscale"):
        T.RandomGrayscale(p=2)


def test_colour_needs_uint8(images):
    x = images[0].float() / 255
    with pytest.raises(ladle.UnsupportedError, match="uint8"):
        F.adjust_brightness(x, 0.5)
    with pytest.raises(ladle.UnsupportedError, match="uint8"):
        T.Compose([T.ColorJitter(brightness=0.5)])(x)
    with pytest.raises(ladle.InvalidArgumentError, match="hue_factor"):
        F.adjust_hue(images[0], 0.8)
    with pytest.raises(ladle.InvalidArgumentError, match="non-negative"):
        F.adjust_contrast(images[0], -1)
    with pytest.raises(ladle.StateError):
        T.ColorJitter(brightness=0.5)(images[0])


def test_gray_mean_same_from_numpy_and_torch(images):
    """The contrast centre from a host image and from a torch tensor (the
    CUDA inputs' path, run here on the CPU) is one number: an exact mean."""
    from ladle.torchvision._color import gray_mean

    for img in images:
        hwc = img.permute(1, 2, 0)
        a = np.ascontiguousarray(hwc.numpy())
        assert gray_mean(a) == gray_mean(hwc)
        assert gray_mean(a[:, :, :1]) == gray_mean(hwc[:, :, :1]) == a[:, :, 0].astype(np.float64).mean()


@pytest.mark.gpu
def test_gpu_matches_cpu(images):
    batch = jitter_batch(images)
    ts = lambda: [T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomGrayscale(0.5), T.Grayscale(3)]  # noqa: E731
    cpu = T.Compose(ts(), seed=9)(batch)
    gpu = T.Compose(ts(), seed=9, device="gpu")(batch)
    assert torch.equal(cpu, gpu.cpu())
    assert torch.equal(F.adjust_hue(batch, 0.1), F.adjust_hue(batch, 0.1, device="gpu").cpu())
