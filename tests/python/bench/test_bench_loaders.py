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


def test_names_with_hybrid_huffman_threshold():
    assert loaders.parse_options("ladle-mixed@hw=0.9@hyb=0") == (
        "ladle-mixed", {"hw_decoder_load": 0.9, "hybrid_huffman_threshold": 0})
    assert loaders.parse_options("ladle-mixed-val@hyb=250000@hw=0.8") == (
        "ladle-mixed-val", {"hw_decoder_load": 0.8, "hybrid_huffman_threshold": 250000})
    assert loaders.parse_name("ladle-mixed@hyb=0") == ("ladle-mixed", None)
    for bad in ("ladle-cpu@hyb=0", "ladle-mixed@hyb=0@hyb=1", "ladle-mixed@hyb", "ladle-mixed@huff=0"):
        with pytest.raises(KeyError):
            loaders.parse_options(bad)
    with pytest.raises(ValueError):
        loaders.parse_options("ladle-mixed@hyb=0.5")  # a pixel count
    d = loaders.describe("ladle-mixed@hw=0.8@hyb=0", 8, 2)
    assert d["hw_decoder_load"] == 0.8 and d["hybrid_huffman_threshold"] == 0


def test_names_with_decoder_balance():
    assert loaders.parse_options("ladle-mixed@bal=adaptive@hw=0.9") == (
        "ladle-mixed", {"decoder_balance": "adaptive", "hw_decoder_load": 0.9})
    with pytest.raises(KeyError):
        loaders.parse_options("ladle-cpu@bal=adaptive")  # only mixed decoders balance
    with pytest.raises(loaders.Unavailable, match="ladle's argument"):
        loaders.make_loader("dali-mixed@bal=adaptive", ladle=None, torch=None, torchvision=None, root="/nonexistent",
                            batch_size=8, threads=2)


def test_hybrid_thresholds_expand_the_ladle_mixed_loaders():
    import pipeline_bench
    args = pipeline_bench.parse_args(["--loaders", "ladle-mixed,dali-mixed,ladle-cpu", "--hw-loads", "0.8,0.9",
                                      "--hybrid-thresholds", "0"])
    names = [s["loader"] for _, group in pipeline_bench.plan(args, {"root": "t", "images": 10},
                                                             {"root": "v", "images": 10})
             for s in group]
    assert {n for n in names if n.startswith("ladle-mixed")} == {
        "ladle-mixed", "ladle-mixed@hw=0.8", "ladle-mixed@hw=0.9", "ladle-mixed@hyb=0", "ladle-mixed@hw=0.8@hyb=0",
        "ladle-mixed@hw=0.9@hyb=0"}
    assert not any("@hyb" in n for n in names if not n.startswith("ladle-mixed"))


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
