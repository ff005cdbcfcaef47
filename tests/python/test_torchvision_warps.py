"""ladle.torchvision's rotations and affine warps against torchvision's
tensor implementation (0.14) on the same parameters.

Measured (recorded in ladle.torchvision's list of differences):
- NEAREST: bit-exact on random images (fill, center and expand included).
- BILINEAR without fill (fill=None, torchvision's zero padding): within 1
  level, on under 0.1% of the values (torchvision's float32 grid and its
  half-to-even rounding against ladle's direct positions and half away from
  zero); most cases bit-exact.
- NEAREST where every source position is a tie (e.g. 90 degrees on an image
  whose height and width differ in parity): torchvision rounds the position
  half to even, ladle takes the floor (DALI's rule): many pixels differ.
- BILINEAR with a fill value: torchvision multiplies the zero-padded sample
  by the in-image weight again before adding the fill (img * mask + (1 -
  mask) * fill), ladle blends the taps with the fill (DALI's rule): pixels
  at the image's edge differ (up to ~60 levels here), the others are equal.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchvision")
import torchvision.transforms.functional as tvF  # noqa: E402
from torchvision.transforms import InterpolationMode as IM  # noqa: E402

import ladle  # noqa: E402
import ladle.torchvision as T  # noqa: E402
from ladle.torchvision.v2 import functional as F  # noqa: E402
from conftest import requires_ops  # noqa: E402

pytestmark = requires_ops("warp_affine")


@pytest.fixture(scope="module")
def images():
    rng = np.random.default_rng(0)
    return [torch.from_numpy(rng.integers(0, 256, (3, int(rng.integers(10, 50)), int(rng.integers(10, 50))),
                                          dtype=np.uint8)) for _ in range(5)]


def interior(a, b, margin=2):
    """Pixels that both outputs take from well inside the source (edges excluded)."""
    return a[..., margin:-margin, margin:-margin], b[..., margin:-margin, margin:-margin]


def close(a, b, linear):
    assert a.shape == b.shape and a.dtype == b.dtype
    if not linear:
        return torch.equal(a, b)
    d = (a.int() - b.int()).abs()
    return d.max() <= 1 and (d > 0).float().mean() < 1e-3


@pytest.mark.parametrize("kw", [dict(angle=30.0), dict(angle=-73.0, expand=True), dict(angle=45.0, fill=None),
                                dict(angle=17.0, center=[5, 8], fill=[40.0]),
                                dict(angle=45.0, interpolation=IM.BILINEAR),
                                dict(angle=-120.0, interpolation=IM.BILINEAR, expand=True),
                                dict(angle=133.0, interpolation=IM.BILINEAR, expand=True, center=[4, 30])])
def test_rotate(images, kw):
    for im in images:
        assert close(F.rotate(im, **kw), tvF.rotate(im, **kw), "interpolation" in kw)


@pytest.mark.parametrize("kw", [dict(angle=30.0, translate=[3, -2], scale=1.2, shear=[10.0, 0.0]),
                                dict(angle=0.0, translate=[4, 1], scale=1.0, shear=0.0, fill=3),
                                dict(angle=12.0, translate=[1, 2], scale=1.5, shear=20.0, center=[3, 3],
                                     interpolation=IM.BILINEAR),
                                dict(angle=-50.0, translate=[-5, 0], scale=0.7, shear=[-8.0, 12.0])])
def test_affine(images, kw):
    for im in images:
        assert close(F.affine(im, **kw), tvF.affine(im, **kw), "interpolation" in kw)


def test_bilinear_with_fill_differs_only_at_edges(images):
    for im in images:
        kw = dict(angle=10.0, translate=[0, 0], scale=0.8, shear=[5.0, -7.0], interpolation=IM.BILINEAR, fill=9)
        a, b = F.affine(im, **kw), tvF.affine(im, **kw)
        d = (a.int() - b.int()).abs()
        assert d.max() <= 80
        # where all four taps lie inside the image (a white image stays white) both agree
        inside = tvF.affine(torch.full_like(im, 255), **dict(kw, fill=None)) == 255
        assert (d[inside] <= 1).all() and (d[~inside] > 1).any()


def test_nearest_ties_differ_but_stay_neighbours():
    im = torch.from_numpy(np.random.default_rng(1).integers(0, 256, (1, 12, 17), dtype=np.uint8))
    a, b = F.rotate(im, 90.0), tvF.rotate(im, 90.0)
    assert a.shape == b.shape and not torch.equal(a, b)
    # each output pixel is the input pixel one side or the other of the tie
    src = set(im.flatten().tolist())
    assert set(a.flatten().tolist()) <= src | {0}


def test_batch_list_and_pil_inputs(images):
    same = [im[:, :20, :24] for im in images if im.shape[1] >= 20 and im.shape[2] >= 24]
    batch = torch.stack(same)
    out = F.rotate(batch, 25.0)
    assert out.shape == batch.shape
    for o, im in zip(out, same):
        assert torch.equal(o, tvF.rotate(im, 25.0))
    outs = F.affine(list(images), angle=5.0, translate=[1, 1], scale=1.1, shear=0.0)
    assert all(torch.equal(o, tvF.affine(im, angle=5.0, translate=[1, 1], scale=1.1, shear=0.0))
               for o, im in zip(outs, images))


def _params_of(compose, step, index, h, w):
    t = compose._geometric[step]
    return t.params(h, w, np.random.default_rng([compose.seed, step, index]))


def test_random_rotation_equals_torchvision_on_its_parameters(images):
    t = T.Compose([T.RandomRotation(30, expand=True, fill=0)], seed=7, batch_size=2)
    outs = t(list(images))
    for i, (im, o) in enumerate(zip(images, outs)):
        p = _params_of(t, 0, i, im.shape[1], im.shape[2])
        assert -30 <= p["angle"] <= 30
        assert torch.equal(o, tvF.rotate(im, p["angle"], expand=True, fill=[0.0]))
    again = t(list(images))  # later calls draw for later indices
    assert any(not torch.equal(a, b) for a, b in zip(outs, again) if a.shape == b.shape) or \
        any(a.shape != b.shape for a, b in zip(outs, again))
    t2 = T.Compose([T.RandomRotation(30, expand=True, fill=0)], seed=7, batch_size=2)
    assert all(torch.equal(a, b) for a, b in zip(outs, t2(list(images))))  # the seed repeats them


def test_random_affine_equals_torchvision_on_its_parameters(images):
    kw = dict(degrees=(-20, 40), translate=(0.1, 0.2), scale=(0.8, 1.2), shear=(-5, 5, -10, 10))
    t = T.Compose([T.RandomAffine(**kw, interpolation=T.InterpolationMode.NEAREST, fill=0)], seed=3)
    outs = t(list(images))
    for i, (im, o) in enumerate(zip(images, outs)):
        p = _params_of(t, 0, i, im.shape[1], im.shape[2])
        assert -20 <= p["angle"] <= 40 and 0.8 <= p["scale"] <= 1.2
        assert abs(p["translate"][0]) <= round(0.1 * im.shape[2]) and abs(p["translate"][1]) <= round(0.2 * im.shape[1])
        assert -5 <= p["shear"][0] <= 5 and -10 <= p["shear"][1] <= 10
        want = tvF.affine(im, p["angle"], list(p["translate"]), p["scale"], list(p["shear"]), fill=[0.0])
        assert torch.equal(o, want)


def test_random_affine_after_resize_sees_the_resized_shape(images):
    t = T.Compose([T.Resize((30, 20)), T.RandomAffine(10, translate=(0.3, 0.3))], seed=5)
    outs = t(list(images))
    assert all(tuple(o.shape) == (3, 30, 20) for o in outs)


def test_bad_arguments():
    with pytest.raises(ladle.UnsupportedError, match="RandomRotation.*interpolation"):
        T.RandomRotation(10, interpolation=T.InterpolationMode.BICUBIC)
    with pytest.raises(ladle.UnsupportedError, match="RandomAffine.*fill"):
        T.RandomAffine(10, fill=[1, 2, 3])
    with pytest.raises(ladle.InvalidArgumentError, match="RandomRotation.*degrees"):
        T.RandomRotation(-5)
    with pytest.raises(ladle.InvalidArgumentError, match="RandomAffine.*translate"):
        T.RandomAffine(0, translate=(1.5, 0))
    with pytest.raises(ladle.InvalidArgumentError, match="RandomAffine.*shear"):
        T.RandomAffine(0, shear=(1, 2, 3))
    with pytest.raises(ladle.InvalidArgumentError, match="affine.*scale"):
        F.affine(torch.zeros(3, 5, 5, dtype=torch.uint8), 0.0, [0, 0], 0.0, 0.0)


@pytest.mark.gpu
def test_gpu_equals_cpu(images):
    for kw in (dict(angle=33.0, expand=True), dict(angle=-12.0, interpolation=IM.BILINEAR, fill=5)):
        for im in images:
            assert torch.equal(F.rotate(im, **kw, device="gpu").cpu(), F.rotate(im, **kw))
    t = T.Compose([T.RandomAffine(20, scale=(0.9, 1.1))], seed=2, device="gpu")
    c = T.Compose([T.RandomAffine(20, scale=(0.9, 1.1))], seed=2)
    assert all(torch.equal(a.cpu(), b) for a, b in zip(t(list(images)), c(list(images))))
