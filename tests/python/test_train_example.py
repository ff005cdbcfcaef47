"""examples/imagenet/train.py on the CPU: it learns the generated shapes set
with ladle, resumes mid-epoch exactly, evaluates a checkpoint, runs under
torch.distributed with 2 processes (gloo), and its torchvision path works."""

import os
import re

import pytest
from conftest import run_ranks, run_script

pytest.importorskip("torch")
pytest.importorskip("torchvision")

from ladle.datasets import make_shapes  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "..", "..", "examples", "imagenet", "train.py")
CLASSES = 10
# tinycnn at 32x32, 500 training images: 15 iterations of 32 per epoch.
COMMON = ["-a", "tinycnn", "--image-size", "32", "-b", "32", "--lr", "0.8", "--warmup-epochs", "1", "-j", "2",
          "--deterministic"]


@pytest.fixture(scope="module")
def shapes(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("shapes"))
    make_shapes(root, classes=CLASSES, train_per_class=50, val_per_class=20, size=40, seed=0)
    return root


def run_train(args, env=None, timeout=300):
    return run_script(TRAIN, args, env=env, timeout=timeout)


def final(out, name):
    m = re.search(rf"^##{name} ([\d.]+)$", out, re.M)
    assert m, out
    return float(m.group(1))


def losses(out):
    """{(epoch, iteration): loss} of every printed training iteration."""
    return {(int(e), int(i)): float(v) for e, i, v in
            re.findall(r"^Epoch: \[(\d+)\]\[(\d+)/\d+\].*?Loss ([\d.]+) ", out, re.M)}


@pytest.mark.slow
def test_learns_resumes_and_evaluates(shapes, tmp_path):
    epochs = ["--epochs", "4", "-p", "1"]
    full_ckpt, part_ckpt = str(tmp_path / "full.pth"), str(tmp_path / "part.pth")
    full = run_train([shapes] + COMMON + epochs + ["--save", full_ckpt])
    assert "data: ladle" in full
    top1 = final(full, "Top-1")
    assert top1 > 3 * 100.0 / CLASSES, full  # chance is 10%
    assert final(full, "Top-5") >= top1
    assert final(full, "Perf") > 0

    # Stop in the middle of epoch 1, then resume: the same batches, so the same losses.
    first = run_train([shapes] + COMMON + epochs + ["--save", part_ckpt, "--exit-after", "20"])
    assert "stopped at epoch 1, iteration 5" in first
    resumed = run_train([shapes] + COMMON + epochs + ["--save", part_ckpt, "--resume", part_ckpt])
    assert "resumed from" in resumed and "epoch 1, iteration 5" in resumed
    after = losses(resumed)
    reference = losses(full)
    assert min(after) == (1, 6) and len(after) == 4 * 15 - 20
    assert after == {k: reference[k] for k in after}
    assert final(resumed, "Top-1") == top1

    # Evaluating the final checkpoint gives the last validation's figures.
    evaluated = run_train([shapes] + COMMON + ["-e", "--resume", full_ckpt])
    assert final(evaluated, "Top-1") == top1


@pytest.mark.slow
def test_pytorch_backend(shapes):
    out = run_train([shapes] + COMMON + ["--epochs", "1", "-p", "5", "--save", "", "--data-backend", "pytorch",
                                         "-j", "0"])
    assert "data: pytorch" in out
    assert final(out, "Top-1") > 100.0 / CLASSES


def test_synthetic(shapes):
    out = run_train([shapes, "--synthetic", "--iters-per-epoch", "3", "--epochs", "1", "-p", "1", "--save", ""]
                    + COMMON)
    assert "data: synthetic" in out and final(out, "Perf") > 0


@pytest.mark.slow
def test_two_processes_with_gloo(shapes, tmp_path):
    args = [shapes] + COMMON + ["-b", "16", "-j", "1", "--epochs", "1", "-p", "5", "--save", ""]
    codes, outs = run_ranks([TRAIN] + args, 2, tmp_path, timeout=300)
    assert codes == [0, 0], outs
    out = outs[0]
    assert "2 process(es) x batch 16" in out
    assert "Epoch: [0][15/15]" in out  # 500 images / 2 ranks / 16, full batches only
    assert "Val: 200 images" in out  # every validation image once over both ranks
    assert final(out, "Top-1") >= 0 and outs[1].strip() == ""  # only rank 0 prints


@pytest.mark.slow
def test_two_processes_train_through_corrupt_files(shapes, tmp_path):
    import shutil

    root = tmp_path / "corrupt"
    shutil.copytree(shapes, root)
    classes = sorted(os.listdir(root / "train"))
    bad = [root / "train" / classes[0] / "zz_empty.jpg", root / "train" / classes[3] / "zz_garbage.jpg"]
    bad[0].write_bytes(b"")
    bad[1].write_bytes(b"definitely not an image" * 20)
    args = [str(root)] + COMMON + ["-b", "16", "-j", "1", "--epochs", "1", "-p", "5", "--save", "", "--skip-bad",
                                   "5"]
    codes, outs = run_ranks([TRAIN] + args, 2, tmp_path, timeout=300)
    assert codes == [0, 0], outs
    # 502 files: each rank has 251, so 15 full batches of 16 on both, the bad files' slots refilled.
    assert "Epoch: [0][15/15]" in outs[0]
    logged = "".join(outs)
    assert all(f"skipped a bad sample: {b}" in logged for b in bad), logged


def test_default_workers_leave_cores_to_training(monkeypatch):
    import importlib.util

    spec = importlib.util.spec_from_file_location("train_example", TRAIN)
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)), raising=False)
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    assert train.default_workers() == 12
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    assert train.default_workers() == 4
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "8")
    assert train.default_workers() == 2
    assert train.parse_args(["--synthetic"]).workers == 2
    assert train.parse_args(["--synthetic", "-j", "5"]).workers == 5


@pytest.mark.slow
def test_dali_backend(shapes):
    """The same pipeline code with NVIDIA DALI's modules (the import change ladle promises, run backwards)."""
    from conftest import dali_or_skip
    import torch

    dali_or_skip()
    if int(torch.__version__.split(".")[0]) < 2:
        pytest.skip(f"DALI 2.4's PyTorch iterator needs torch >= 2, not {torch.__version__}")
    out = run_train([shapes] + COMMON + ["--epochs", "2", "-p", "5", "--save", "", "--data-backend", "dali-cpu"])
    assert "data: dali-cpu" in out
    assert final(out, "Top-1") > 100.0 / CLASSES, out
    with pytest.raises(AssertionError, match="--skip-bad is ladle's"):  # refused, not ignored
        run_train([shapes] + COMMON + ["--data-backend", "dali-cpu", "--skip-bad", "3"])
