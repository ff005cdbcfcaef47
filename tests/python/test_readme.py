"""Every ```python block of README.md runs as written, on the CPU.

Substitutions, and nothing else (each is checked to apply, so that a README
edit cannot silently turn this test into one that runs less):
- the data path "/data/imagenet/train" -> the package's sample photographs
  (ladle.sample_photos_root());
- on a machine without a usable CUDA device: device ids and devices, i.e.
  ``device_id=0`` -> ``device_id=None`` (DALI's "no GPU") and
  ``device="gpu"`` / ``device="mixed"`` -> ``device="cpu"``. With a GPU the
  blocks run unchanged but for the data path.
Each block runs in a fresh namespace, as a user pasting it would.

Also here: with ``device_id=0`` on a machine without a GPU, a GPU pipeline's
error says so in words, without naming an internal C function. (mypy checks
these blocks against the type stubs in test_stubs.py.)
"""

import os
import re

import pytest

import ladle
from ladle import fn
from conftest import cuda_usable

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
README = os.path.join(ROOT, "README.md")
DATA_PATH = "/data/imagenet/train"


def python_blocks():
    with open(README, encoding="utf-8") as f:
        text = f.read()
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


def substituted(code, gpu):
    code = code.replace(DATA_PATH, ladle.sample_photos_root())
    if not gpu:
        code = code.replace("device_id=0", "device_id=None")
        code = re.sub(r"""device=(["'])(gpu|mixed)\1""", 'device="cpu"', code)
    return code


def test_the_readme_has_its_examples():
    blocks = python_blocks()
    assert len(blocks) >= 4, "README.md lost its python examples?"
    assert any(DATA_PATH in b for b in blocks)
    assert any("device_id=0" in b for b in blocks)


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_readme_block_runs(index):
    pytest.importorskip("torch")
    code = python_blocks()[index]
    run = substituted(code, cuda_usable())
    if DATA_PATH in code:
        assert run != code
    namespace = {"__name__": f"readme_block_{index}"}
    try:
        exec(compile(run, f"README.md python block {index}", "exec"), namespace)
    finally:
        pipe = namespace.get("pipe")
        if pipe is not None and hasattr(pipe, "close"):
            pipe.close()


def test_first_block_gives_what_its_comments_say():
    torch = pytest.importorskip("torch")
    namespace = {}
    exec(substituted(python_blocks()[0], cuda_usable()), namespace)
    try:
        assert tuple(namespace["x"].shape) == (256, 3, 224, 224) and namespace["x"].dtype == torch.float16
        assert namespace["y"].shape == (256, 1) and namespace["y"].dtype.name == "int32"
    finally:
        namespace["pipe"].close()


@pytest.mark.skipif(cuda_usable(), reason="checks the message on a machine without a CUDA device")
def test_device_id_0_without_a_gpu_is_said_in_words():
    pipe = ladle.Pipeline(batch_size=2, num_threads=1, device_id=0)
    with pipe:
        jpegs, _ = fn.readers.file(file_root=ladle.sample_photos_root())
        pipe.set_outputs(fn.decoders.image(jpegs, device="mixed"))
    with pytest.raises(ladle.Error) as err:
        pipe.build()
    message = str(err.value)
    assert "device_id 0" in message and "CUDA" in message
    assert "ladle__" not in message  # no internal C function
    pipe.close()
    # A CPU-only pipeline does not need the GPU: device_id=0 is no error there.
    pipe = ladle.Pipeline(batch_size=2, num_threads=1, device_id=0)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=ladle.sample_photos_root())
        pipe.set_outputs(fn.decoders.image(jpegs), labels)
    try:
        assert len(pipe.run()[0]) == 2
    finally:
        pipe.close()
