"""The type stubs (python/ladle/fn.pyi, dynamic/__init__.pyi, _ladle.pyi)
are what `python -m ladle._stubs` makes from the operator schemas of this
build, py.typed marks the package, and mypy (when installed) passes on
examples/ and on README.md's python blocks, and fails on a misspelt
argument (so the stubs are really in use)."""

import os
import subprocess
import sys

import pytest

import ladle
from ladle import _stubs
from test_readme import python_blocks

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def test_committed_stubs_match_the_schemas():
    for path, make in _stubs.stub_paths().items():
        with open(path, encoding="utf-8") as f:
            assert f.read() == make(), f"{path} is stale: run python -m ladle._stubs"


def test_stubs_cover_every_operator():
    text = _stubs.fn_stub()
    for name in ladle.pipeline.op_schemas():
        if any(part.startswith("_") for part in name.split(".")):
            continue  # internal operators (_conditional.*: if/else in pipelines) are not fn's API
        assert f"def {name.rsplit('.', 1)[-1]}(" in text, name
    assert os.path.isfile(os.path.join(os.path.dirname(ladle.__file__), "py.typed"))


def mypy(paths, tmp_path):
    # The cache (build/mypy-cache) keeps later runs from analysing torch again.
    cmd = [sys.executable, "-m", "mypy", "--config-file", os.path.join(ROOT, "pyproject.toml"),
           "--cache-dir", os.path.join(ROOT, "build", "mypy-cache")] + [str(p) for p in paths]
    env = dict(os.environ, MYPYPATH=os.path.join(ROOT, "python"))
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)


@pytest.mark.slow
def test_mypy_passes_on_the_examples_and_the_readme(tmp_path):
    pytest.importorskip("mypy")
    blocks = tmp_path / "readme_blocks"
    blocks.mkdir()
    for i, code in enumerate(python_blocks()):
        (blocks / f"block_{i}.py").write_text(code)
    # One mypy run per example folder: each has its own train.py (one module name),
    # beside the scripts' shared examples/*.py.
    examples = os.path.join(ROOT, "examples")
    shared = sorted(os.path.join(examples, f) for f in os.listdir(examples) if f.endswith(".py"))
    folders = sorted(os.path.join(examples, d) for d in os.listdir(examples)
                     if os.path.isdir(os.path.join(examples, d)))
    assert folders, "examples/ lost its example folders?"
    for k, folder in enumerate(folders):
        result = mypy([folder] + shared + ([blocks] if k == 0 else []), tmp_path)
        assert result.returncode == 0, result.stdout + result.stderr

    bad = tmp_path / "misspelt.py"
    bad.write_text("from ladle import fn\n\n"
                   "def graph(images: 'fn.DataNode') -> None:\n"
                   "    fn.resize(images, resize_xx=224)\n"
                   "    fn.readers.file(file_root=3.5)\n")
    result = mypy([bad], tmp_path)
    assert result.returncode == 1
    assert 'Unexpected keyword argument "resize_xx"' in result.stdout, result.stdout
    assert '"file_root"' in result.stdout, result.stdout
