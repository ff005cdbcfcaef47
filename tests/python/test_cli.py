"""The command-line tools a new user runs first: python -m ladle.demo (on the
built-in photographs; bad arguments are usage errors) and python -m
ladle.bench (progress bar, images/s) on the sample sets."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import ladle
from ladle import bench, demo


def test_the_demo_reads_the_photographs_with_their_licences():
    root = ladle.sample_photos_root()
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    files = [f for c in classes for f in os.listdir(os.path.join(root, c))]
    assert classes == ["close_up", "landscape"] and len(files) == 12
    with open(os.path.join(root, "COPYRIGHT"), encoding="utf-8") as f:
        copyright_text = f.read()
    for name in files:
        assert name in copyright_text, f"{name} has no licence in COPYRIGHT"
    size = sum(os.path.getsize(os.path.join(root, c, f)) for c in classes for f in os.listdir(os.path.join(root, c)))
    assert size < 400_000


def test_the_demo_grid_is_of_photographs(tmp_path):
    # Photographs, not the synthetic shapes: neighbouring pixels are mostly close.
    pipe = demo.training_pipeline(ladle.sample_photos_root(), batch_size=4, num_threads=1, seed=0)
    try:
        images, _ = pipe.run()
        grid = demo.make_grid(images.as_array())
    finally:
        pipe.close()
    assert grid.shape == (228 + 4, 4 * 228 + 4, 3)
    step = np.abs(np.diff(grid[4:228, 4:228].astype(np.int32), axis=1)).mean()
    assert step < 20 and grid[4:228, 4:228].std() > 20


@pytest.mark.parametrize("args, says", [
    (["--batch-size", "0"], "argument --batch-size: 0 is not >= 1"),
    (["--batch-size", "-4"], "argument --batch-size: -4 is not >= 1"),
    (["--batch-size", "x"], "argument --batch-size: 'x' is not an integer"),
    (["--iters", "0"], "argument --iters: 0 is not >= 1"),
    (["--threads", "0"], "argument --threads: 0 is not >= 1"),
    (["--data", "/no/such/folder"], "argument --data: '/no/such/folder' is not a directory"),
])
@pytest.mark.parametrize("tool", [demo, bench])
def test_bad_arguments_are_usage_errors(tool, args, says, capsys):
    with pytest.raises(SystemExit) as exit_:
        tool.main(args)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert says in err and "usage:" in err and "Traceback" not in err


def test_a_folder_without_images_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "empty_class").mkdir()
    for tool in (demo, bench):
        with pytest.raises(SystemExit) as exit_:
            tool.main(["--data", str(tmp_path)])
        assert exit_.value.code == 2
        assert "readers.file" in capsys.readouterr().err


def test_the_demo_as_a_user_runs_it(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(ladle.__file__))]
                                                       + sys.path))
    out = subprocess.run([sys.executable, "-m", "ladle.demo", "--iters", "1", "--batch-size", "8"], cwd=tmp_path,
                         env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "12 images in" in out.stdout and "images/s" in out.stdout
    assert (tmp_path / "ladle-demo.png").read_bytes().startswith(b"\x89PNG")
    bad = subprocess.run([sys.executable, "-m", "ladle.demo", "--batch-size", "0"], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "--batch-size" in bad.stderr


@pytest.mark.parametrize("plain", [True, False])
def test_bench_shows_progress_and_images_per_second(plain, capsys):
    if not plain:
        pytest.importorskip("tqdm")
    args = ["--data", ladle.sample_data_root(), "--iters", "3", "--warmup", "1", "--batch-size", "4",
            "--threads", "1"] + (["--plain"] if plain else [])
    assert bench.main(args) == 0
    captured = capsys.readouterr()
    assert "32 images in" in captured.out  # the synthetic sample set: 4 classes of 8
    assert re.search(r"^12 images in [0-9.]+ s: [0-9]+ images/s", captured.out, re.M), captured.out
    assert "3/3" in captured.err  # the bar reached its end
    assert "images/s" in captured.err


def test_plain_bar_counts_to_the_total():
    import io

    out = io.StringIO()
    bar = bench._PlainBar(4, "x", file=out, width=8)
    for _ in range(4):
        bar.update(1)
    bar.close()
    assert "[##......] 1/4" in out.getvalue() and "[########] 4/4" in out.getvalue()
    assert out.getvalue().endswith("\n")
