"""bench/loaders.py: every loader delivers the same tensors from the same files,
so that the benchmark compares like with like (DALI beside ladle included)."""

import os
import sys

import numpy as np
import pytest
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench"))
import loaders  # noqa: E402

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("bench-tree")
    rng = np.random.default_rng(0)
    for c in range(2):
        os.makedirs(root / f"class{c}")
        for i in range(4):
            pixels = rng.integers(0, 256, (150 + 10 * i, 200, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(root / f"class{c}" / f"{i}.jpg", quality=90)
    return str(root)


def test_names_with_hw_decoder_load():
    assert loaders.parse_name("dali-mixed@hw=0.9") == ("dali-mixed", 0.9)
    assert loaders.parse_name("ladle-cpu") == ("ladle-cpu", None)
    with pytest.raises(KeyError):
        loaders.parse_name("ladle-cpu@hw=0.9")  # only mixed decoders have hardware engines
    assert loaders.describe("dali-mixed@hw=0.99", 8, 2)["hw_decoder_load"] == 0.99


@pytest.mark.parametrize("pipeline", ["train", "val"])
def test_ladle_and_dali_loaders_agree_on_what_they_deliver(tree, pipeline):
    import ladle
    pytest.importorskip("nvidia.dali")
    suffix = "" if pipeline == "train" else "-val"
    out = {}
    for name in (f"ladle-cpu{suffix}", f"dali-cpu{suffix}"):
        loader = loaders.make_loader(name, ladle=ladle, torch=torch, torchvision=None, root=tree, batch_size=4,
                                     threads=1)
        try:
            out[name] = loader.next()
        finally:
            loader.close()
    (lx, ly), (dx, dy) = out.values()
    assert lx.shape == dx.shape == (4, 3, 224, 224)
    assert lx.dtype == dx.dtype == torch.float16
    assert ly.dtype == dy.dtype == torch.int64 and ly.shape == dy.shape == (4,)
    if pipeline == "val":  # no randomness: the same pixels, up to fp16 rounding of DALI-compatible resizing
        np.testing.assert_allclose(lx.float().numpy(), dx.float().numpy(), atol=0.05)
        assert torch.equal(ly, dy)
