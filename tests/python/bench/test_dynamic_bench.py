"""bench/dynamic_bench.py runs on the CPU in seconds and reports every loader
(eager, deferred, captured, pipeline mode; DALI's where it runs) and the
per-call overhead; the figures themselves are never asserted."""

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench"))
import dynamic_bench  # noqa: E402

pytest.importorskip("torch")


def test_dynamic_bench_reports_every_mode(tmp_path, capsys):
    out = tmp_path / "dynamic.json"
    rc = dynamic_bench.main(["--device", "cpu", "--batch-size", "4", "--threads", "1", "--images", "8", "--passes",
                             "1", "--calls", "10", "--repeats", "1", "--skip", "dali-dynamic", "--skip",
                             "dali-captured", "--json", str(out)])
    assert rc == 0
    doc = json.loads(out.read_text())
    speeds = doc["images_per_s"]
    for name in ("ladle-pipeline", "ladle-dynamic", "ladle-deferred", "ladle-captured"):
        assert speeds[name]["median"] > 0, speeds[name]
        if name != "ladle-pipeline":
            assert "of_pipeline_mode" in speeds[name]
    calls = doc["per_call_us"]
    assert all(calls[f"ladle-{mode} {op}"]["median"] > 0 for mode in ("eager", "deferred")
               for op in ("cast", "flip", "random.coin_flip"))
    text = capsys.readouterr().out
    assert "ladle-captured" in text and "per-call overhead" in text
