"""bench/scale_bench.py at a tiny size: every figure is there for ladle and DALI,
warm and cold, and the reader saw every file. Timings are never asserted."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

BENCH = os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench")
sys.path.insert(0, BENCH)
import scale_bench  # noqa: E402

FIELDS = ["import_s", "graph_s", "build_s", "build_cpu_s", "build_read_mb", "first_batch_s",
          "start_to_first_batch_s", "images_per_s", "steady_read_mb", "first_batch_read_mb",
          "rss_after_import_mb", "rss_after_build_mb", "rss_end_mb", "rss_peak_mb", "epoch_size", "version"]


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    root = tmp_path_factory.mktemp("scale-base")
    rng = np.random.default_rng(0)
    for c in range(2):
        os.makedirs(root / f"class{c}")
        for i in range(5):
            pixels = rng.integers(0, 256, (120 + 8 * i, 160, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(root / f"class{c}" / f"{i}.JPEG", quality=90)
    return str(root)


def test_tree_is_hard_links_in_class_folders_and_is_reused(base, tmp_path):
    args = scale_bench.parse_args(["--base", base, "--trees", str(tmp_path), "--classes", "7"])
    files = scale_bench.base_files(base)
    desc = scale_bench.make_tree(args, files, 100)
    assert desc["reused"] is False and desc["files"] == 100
    root = scale_bench.tree_path(args, 100)
    folders = sorted(os.listdir(root))
    assert len(folders) == 7
    counts = [len(os.listdir(os.path.join(root, f))) for f in folders]
    assert sum(counts) == 100 and max(counts) - min(counts) <= 1
    inodes = scale_bench.distinct_inodes(root)
    assert len(inodes) == len(files)  # every base file is linked, no copies
    assert scale_bench.make_tree(args, files, 100)["reused"] is True


def test_eviction_empties_the_page_cache_of_a_disk_file(tmp_path):
    import common
    if common.filesystem_of(str(tmp_path)) in ("tmpfs", "ramfs", "overlay"):
        pytest.skip("the temporary folder is not on a disk file system")
    path = tmp_path / "f.bin"
    path.write_bytes(os.urandom(1 << 20))
    scale_bench.warm([str(path)])
    before = scale_bench.residency([str(path)])
    assert before["pages"] == (1 << 20) // scale_bench.PAGE and before["resident_pages"] > 0
    scale_bench.evict([str(path)])
    assert scale_bench.residency([str(path)])["resident_pages"] == 0


@pytest.mark.slow
def test_tiny_run_has_every_field_for_both_libraries(base, tmp_path):
    pytest.importorskip("nvidia.dali")
    out = tmp_path / "scale.json"
    cmd = [sys.executable, os.path.join(BENCH, "scale_bench.py"), "--base", base, "--trees", str(tmp_path / "trees"),
           "--sizes", "2000", "--batch-size", "4", "--threads", "1", "--batches", "1", "--json", str(out)]
    env = dict(os.environ, PYTHONPATH=os.path.join(BENCH, "..", "python"))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(out.read_text())
    for key in ("machine", "date", "commit", "software", "settings", "data", "summary"):
        assert report[key] is not None, key
    rows = {(r["lib"], r["cache"]): r for r in report["results"]}
    assert {lib for lib, _ in rows} == {"ladle", "dali"}
    for (lib, cache), r in rows.items():
        if "skipped" in r and cache == "cold":  # a tmpfs temporary folder cannot be made cold
            continue
        assert "failed" not in r, r
        missing = [f for f in FIELDS if f not in r]
        assert not missing, (lib, cache, missing)
        assert r["files"] == 2000 and r["epoch_size"] == 2000 and r["first_batch_images"] == 4
        if cache == "cold":
            ev = r["eviction"]
            assert ev["distinct_inodes"] == 10
            assert {"before", "after_evict", "after_run", "evict_seconds"} <= set(ev)
            assert ev["after_evict"]["pages"] == ev["before"]["pages"] > 0
    assert rows[("ladle", "warm")]["rss_after_build_mb"] > 0
