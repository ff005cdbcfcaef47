"""ladle.torchvision.Pad and v2.functional.pad against torchvision's pad
(constant mode) on random uint8 images: bit-exact (elements are copied or
set to the integer fill), for every padding form, per-channel fills,
negative padding (cropping), PIL and batch inputs; GPU against CPU."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchvision")
try:  # torchvision >= 0.15
    import torchvision.transforms.v2 as tv
    import torchvision.transforms.v2.functional as tvF
except ImportError:  # torchvision 0.14: v1 has the same semantics for pad
    import torchvision.transforms as tv
    import torchvision.transforms.functional as tvF
from PIL import Image

import ladle
import ladle.torchvision as T
import ladle.torchvision.v2.functional as F
from conftest import requires_ops

pytestmark = requires_ops("slice")

SHAPES = [(17, 23), (30, 12), (9, 9)]
PADDINGS = [3, [2, 5], (1, 0, 4, 2), [0, 0, 0, 7], (2, -1, -3, 4)]


def images():
    rng = np.random.default_rng(0)
    return [torch.from_numpy(rng.integers(0, 256, (3, h, w), dtype=np.uint8)) for h, w in SHAPES]


def tv_pad(img, padding, fill):
    """torchvision's pad; a per-channel fill through its PIL path (torchvision
    0.14's tensor pad takes one number only)."""
    padding = list(padding) if isinstance(padding, (list, tuple)) else padding
    if not isinstance(fill, tuple):
        return tvF.pad(img, padding, fill=fill)
    pil = tvF.pad(Image.fromarray(img.permute(1, 2, 0).numpy()), padding, fill=fill)
    return torch.from_numpy(np.asarray(pil).copy()).permute(2, 0, 1)


@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("fill", [0, 200, (10, 20, 30)])
def test_pad_equals_torchvision(padding, fill):
    imgs = images()
    compose = T.Compose([T.Pad(padding, fill=fill)], batch_size=2)
    got = compose(imgs)
    for g, img in zip(got, imgs):
        assert torch.equal(g, tv_pad(img, padding, fill))
    for img in imgs:
        assert torch.equal(F.pad(img, padding, fill=fill), tv_pad(img, padding, fill))
    compose.close()


def test_pad_pil_and_batch_inputs():
    imgs = images()
    pil = Image.fromarray(imgs[0].permute(1, 2, 0).numpy())
    got = T.Compose([T.Pad([4, 1], fill=9)])(pil)
    assert isinstance(got, Image.Image)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(tv.Pad([4, 1], fill=9)(pil)))
    batch = torch.stack([imgs[2]] * 3)
    assert torch.equal(F.pad(batch, 2, fill=1), torch.stack([tvF.pad(imgs[2], 2, fill=1)] * 3))


def test_pad_bad_arguments():
    with pytest.raises(ladle.UnsupportedError, match="padding_mode"):
        T.Pad(2, padding_mode="reflect")
    with pytest.raises(ladle.InvalidArgumentError, match="padding"):
        T.Pad([1, 2, 3])
    with pytest.raises(ladle.UnsupportedError, match="padding_mode"):
        F.pad(images()[0], 1, padding_mode="edge")


@pytest.mark.gpu
def test_pad_gpu_equals_cpu():
    imgs = images()
    cpu = T.Compose([T.Pad((1, 2, 3, 4), fill=(5, 6, 7))])(imgs)
    gpu = T.Compose([T.Pad((1, 2, 3, 4), fill=(5, 6, 7))], device="gpu")(imgs)
    for c, g in zip(cpu, gpu):
        assert torch.equal(c, g.cpu())
    assert torch.equal(F.pad(imgs[0], 3, device="gpu").cpu(), F.pad(imgs[0], 3))
