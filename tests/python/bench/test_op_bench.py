"""bench/op_bench.py in its quick CPU form: every row has figures for ladle and
for DALI, and the two libraries' outputs of each operator agree within the
row's stated tolerance (the same work on both sides). Never asserts timings."""

import json
import os
import subprocess
import sys

import pytest

BENCH = os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench")
sys.path.insert(0, BENCH)
import op_bench  # noqa: E402


def test_registry_names():
    assert op_bench.dali_name("noise.salt_and_pepper") == "noise__SaltAndPepper"
    assert op_bench.dali_name("reductions.rms") == "reductions__RMS"
    assert op_bench.dali_name("crop_mirror_normalize") == "CropMirrorNormalize"
    assert op_bench.dali_name("hsv") == "Hsv"


def test_check_catches_a_difference():
    import numpy as np

    case = op_bench.Case("x", "flip", "", None, op_bench.EXACT)
    a = [np.zeros((4, 5, 3), np.uint8)]
    b = [a[0].copy()]
    assert op_bench.check(case, a, b, a)[0]
    b[0][1, 2, 0] = 1
    assert not op_bench.check(case, a, b, a)[0]
    assert not op_bench.check(case, a, [a[0][:3]], a)[0]  # shapes
    assert not op_bench.check(case, a, [a[0].astype(np.float32)], a)[0]  # dtypes
    mean = op_bench.Case("m", "jpeg_compression_distortion", "", None, op_bench.mean_close(1, "test"))
    assert op_bench.check(mean, a, [a[0] + 1], a)[0]  # every pixel one level apart: mean 1
    assert not op_bench.check(mean, a, [a[0] + 2], a)[0]


@pytest.mark.slow
def test_quick_cpu_run_has_both_libraries_and_agreeing_outputs(tmp_path):
    pytest.importorskip("nvidia.dali")
    out = tmp_path / "ops.json"
    cmd = [sys.executable, os.path.join(BENCH, "op_bench.py"), "--device", "cpu", "--batch", "8", "--size", "small",
           "--quick", "--passes", "1", "--pass-seconds", "0", "--warmup", "1", "--warmup-seconds", "0",
           "--min-iters", "1", "--threads", "2", "--json", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    r = json.loads(out.read_text())
    assert r["kind"] == "op-bench" and r["settings"]["device"] == "cpu" and r["commit"]
    ids = [row["id"] for row in r["ops"]]
    for must in ("input only", "resize linear 48", "crop_mirror_normalize 48", "flip", "gaussian_blur", "one_hot",
                 "reductions.mean", "arithmetic x*0.5+1"):
        assert must in ids, (must, ids)
    assert len(ids) >= 40
    for row in r["ops"]:
        for lib in ("ladle", "dali"):
            res = row[lib]
            assert "error" not in res, (row["id"], lib, res["error"])
            assert res["images_per_s"] > 0 and res["ms_per_batch"]["median"] > 0, (row["id"], lib)
            if row["op"] != "one_hot":
                assert res["gpix_per_s"] > 0, (row["id"], lib)
        assert row["ratio"] > 0
        assert row["outputs_agree"] is True, (row["id"], row["agree"], row["check"]["why"])
    assert "jitter" in r["left_out_here"]  # DALI has no CPU jitter: said, not silently dropped
    assert "per-operator throughput" in proc.stdout
