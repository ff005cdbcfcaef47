"""bench/common.py's stats_between: ladle's executor statistics over a timed stretch, as shares
of its wall time, counts differenced and levels (hw_share_per_mille) kept; and the numbers it
gives for a real (CPU) pipeline between two points."""

import os
import sys

import pytest

BENCH = os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench")
sys.path.insert(0, BENCH)
import common  # noqa: E402


def stats(iterations, prepare, wait, seconds, setup, counters):
    return {"iterations": iterations, "prepare_seconds": prepare, "wait_seconds": wait, "host_stage_seconds": 0.0,
            "device_stage_seconds": prepare, "gpu_wait_seconds": 0.1 * prepare,
            "operators": [{"op": "decoders.image", "device": "mixed", "stage": "device", "seconds": seconds,
                           "setup_seconds": setup, "counters": counters}]}


def test_shares_counts_and_levels():
    a = stats(10, 1.0, 0.5, 0.8, 0.1, {"hw": 100, "cpu_wait_us": 2000, "hw_share_per_mille": 800})
    b = stats(30, 3.0, 0.5, 2.4, 0.3, {"hw": 300, "cpu_wait_us": 6000, "hw_share_per_mille": 900})
    out = common.stats_between(a, b, 4.0)
    assert out["iterations"] == 20
    assert out["prepare_share"] == 0.5 and out["wait_share"] == 0.0 and out["device_stage_share"] == 0.5
    assert out["gpu_wait_share"] == 0.05
    (op,) = out["operators"]
    assert op["share"] == 0.4 and op["setup_share"] == 0.05 and op["stage"] == "device"
    assert op["counters"] == {"hw": 200, "cpu_wait_us": 4000, "hw_share_per_mille": 900}  # the level now


def test_nothing_to_say_without_ladles_statistics():
    assert common.stats_between(None, None, 1.0) is None
    assert common.executor_statistics(object()) is None  # DALI's and torchvision's loaders


def test_a_real_pipeline():
    ladle = pytest.importorskip("ladle")
    from ladle import fn

    pipe = ladle.Pipeline(batch_size=4, num_threads=2, device_id=None, seed=1, prefetch_queue_depth=2)
    with pipe:
        pipe.set_outputs(fn.random.uniform(range=[0, 1], shape=[64]))

    class Loader:
        pass

    loader = Loader()
    loader.pipe = pipe
    pipe.build()
    pipe.run()
    before = common.executor_statistics(loader)
    for _ in range(5):
        pipe.run()
    out = common.stats_between(before, common.executor_statistics(loader), 1.0)
    pipe.close()
    # 1 run() then 6: the executor had prepared 1-3 iterations at the first sample, 6-8 at the second
    # (at most prefetch_queue_depth ahead of the consumer), so the passes between saw 3-7.
    assert 3 <= out["iterations"] <= 7
    assert [o["op"] for o in out["operators"]] == ["random.uniform"]
    assert 0 <= out["wait_share"] <= 1 and out["operators"][0]["stage"] is None
