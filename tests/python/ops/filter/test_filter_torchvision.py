"""ladle.torchvision's GaussianBlur / RandomErasing and the functional
gaussian_blur / erase against torchvision (0.14: torchvision.transforms)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
tv = pytest.importorskip("torchvision.transforms")
tvf = pytest.importorskip("torchvision.transforms.functional")

import ladle.torchvision as T  # noqa: E402
import ladle.torchvision.v2.functional as F  # noqa: E402
from conftest import requires_ops  # noqa: E402

pytestmark = requires_ops("gaussian_blur", "erase", "random.uniform")


def tensors(seed, n=4):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, 256, (3, int(torch.randint(12, 60, (1,), generator=g)),
                                   int(torch.randint(12, 60, (1,), generator=g))), dtype=torch.uint8, generator=g)
            for _ in range(n)]


@pytest.mark.parametrize("ks,sigma", [(5, None), ((3, 7), (0.6, 1.7)), (9, 2.0), ((11, 5), 0.3)])
def test_functional_gaussian_blur_vs_torchvision(ks, sigma):
    for x in tensors(1):
        diff = (F.gaussian_blur(x, ks, sigma).int() - tvf.gaussian_blur(x, ks, sigma).int()).abs()
        assert diff.max() <= 1  # float sums in another order, then rounding: measured 0 on these inputs


def test_gaussian_blur_class_fixed_sigma_vs_torchvision():
    xs = tensors(2)
    out = T.Compose([T.GaussianBlur((5, 3), sigma=(1.2, 1.2))], batch_size=4)(xs)
    for a, x in zip(out, xs):
        assert (a.int() - tv.GaussianBlur((5, 3), sigma=1.2)(x).int()).abs().max() <= 1


def test_gaussian_blur_class_draws_sigma_per_image_in_range():
    x = tensors(3, 1)[0]
    out = T.Compose([T.GaussianBlur(9, sigma=(0.1, 3.0))], batch_size=8, seed=5)([x] * 8)
    # each output equals torchvision's blur at some sigma of the range; different images, different sigmas
    grid = np.linspace(0.1, 3.0, 300)
    refs = [tvf.gaussian_blur(x, 9, float(s)).int() for s in grid]
    picked = []
    for a in out:
        errs = [(a.int() - r).abs().float().mean().item() for r in refs]
        assert min(errs) < 0.6
        picked.append(grid[int(np.argmin(errs))])
    assert len(set(np.round(picked, 1))) > 2
    again = T.Compose([T.GaussianBlur(9, sigma=(0.1, 3.0))], batch_size=8, seed=5)([x] * 8)
    assert all(torch.equal(a, b) for a, b in zip(out, again))  # the seed fixes the draws


def test_functional_erase_exact():
    for x in tensors(4):
        got = F.erase(x, 2, 3, 7, 9, 200)
        want = tvf.erase(x, 2, 3, 7, 9, torch.tensor(200, dtype=torch.uint8))
        assert torch.equal(got, want)
        per_channel = F.erase(x, 1, 1, 5, 4, [1, 2, 3])
        assert torch.equal(per_channel, tvf.erase(x, 1, 1, 5, 4, torch.tensor([1, 2, 3], dtype=torch.uint8)
                                                  .view(3, 1, 1)))


def test_random_erasing_boxes_follow_torchvision_rule():
    x = torch.full((3, 50, 60), 100, dtype=torch.uint8)
    out = T.Compose([T.RandomErasing(p=1.0, scale=(0.05, 0.2), ratio=(0.5, 2.0), value=0)], batch_size=16,
                    seed=3)([x] * 16)
    fractions = []
    for a in out:
        mask = (a == 0).all(0)
        ys, xs = np.nonzero(mask.numpy())
        assert len(ys) > 0  # p=1: always erased (these sizes always fit)
        h, w = ys.max() - ys.min() + 1, xs.max() - xs.min() + 1
        assert mask.sum() == h * w  # one solid box
        fractions.append(h * w / (50 * 60))
        assert 0.5 / 1.3 <= h / w <= 2.0 * 1.3  # the ratio range, up to rounding of small sides
    assert 0.04 <= min(fractions) and max(fractions) <= 0.22
    assert len(set(np.round(fractions, 3))) > 4  # drawn per image


def test_random_erasing_probability_and_value():
    x = torch.full((3, 30, 30), 100, dtype=torch.uint8)
    out = T.Compose([T.RandomErasing(p=0.5, value=(1, 2, 3))], batch_size=64, seed=9)([x] * 64)
    erased = [bool((a != 100).any()) for a in out]
    assert 16 <= sum(erased) <= 48  # Binomial(64, 0.5): 4 sigma
    for a, e in zip(out, erased):
        if e:
            ys, xs = np.nonzero((a[0] != 100).numpy())
            assert a[:, ys[0], xs[0]].tolist() == [1, 2, 3]


def test_transform_bad_arguments():
    import ladle

    with pytest.raises(ladle.InvalidArgumentError, match="GaussianBlur: kernel_size"):
        T.GaussianBlur(4)
    with pytest.raises(ladle.InvalidArgumentError, match="GaussianBlur: sigma"):
        T.GaussianBlur(3, sigma=(2.0, 1.0))
    with pytest.raises(ladle.InvalidArgumentError, match="RandomErasing: p"):
        T.RandomErasing(p=2)
    with pytest.raises(ladle.UnsupportedError, match="RandomErasing: value='random'"):
        T.RandomErasing(value="random")
