"""Bounded memory: the pools' high-water marks in executor_statistics(),
release_memory(), and a random-crop soak whose RSS stays flat after warm-up."""

import os
import time

import numpy as np
import pytest
from PIL import Image

import ladle
from ladle import fn
from conftest import requires_ops

pytestmark = requires_ops("readers.file", "decoders.image_random_crop", "resize")

POOLS = ("host_pageable", "host_pinned", "device")
FIELDS = ("used_bytes", "peak_used_bytes", "reserved_bytes", "peak_reserved_bytes")


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.fixture(scope="module")
def photo_root(tmp_path_factory):
    """48 noisy JPEGs of sizes from 200x200 to 640x480 (random crops of them vary widely)."""
    root = tmp_path_factory.mktemp("soak")
    (root / "a").mkdir()
    rng = np.random.default_rng(0)
    for i in range(48):
        h, w = int(rng.integers(200, 480)), int(rng.integers(200, 640))
        Image.fromarray((rng.random((h, w, 3)) * 255).astype(np.uint8)).save(root / "a" / f"{i}.jpg", quality=85)
    return str(root)


def crop_pipeline(root, batch_size=8, seed=1):
    pipe = ladle.Pipeline(batch_size=batch_size, num_threads=2, seed=seed)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="R")
        images = fn.resize(fn.decoders.image_random_crop(jpegs), resize_x=224, resize_y=224)
        pipe.set_outputs(images, labels)
    pipe.build()
    return pipe


def test_statistics_report_pool_high_water_marks(photo_root):
    pipe = crop_pipeline(photo_root)
    memory = pipe.executor_statistics()["memory"]
    assert sorted(memory) == sorted(POOLS) and all(sorted(memory[p]) == sorted(FIELDS) for p in POOLS)
    held = [pipe.run() for _ in range(4)]
    m = pipe.executor_statistics()["memory"]["host_pageable"]
    # What the caller holds is in use: 4 batches of 8 224x224x3 images at least.
    assert m["used_bytes"] >= 4 * 8 * 224 * 224 * 3
    assert m["peak_used_bytes"] >= m["used_bytes"] and m["peak_reserved_bytes"] >= m["reserved_bytes"]
    assert m["reserved_bytes"] >= m["used_bytes"]
    # The pool holds at most twice its peak in use, however the crop sizes vary.
    assert m["peak_reserved_bytes"] <= 2 * m["peak_used_bytes"]
    for p in ("host_pinned", "device"):  # no GPU operators
        assert all(v == 0 for v in pipe.executor_statistics()["memory"][p].values())
    del held
    pipe.close()


def wait_until_idle(pipe, at_least, timeout=60.0):
    """Returns once the executor has prepared at least `at_least` iterations and its count has held still
    for 0.2 s: its queue is full (with two stages, the host stage may have gone one further)."""
    last, still_since, deadline = None, time.monotonic(), time.monotonic() + timeout
    while time.monotonic() < deadline:
        n = pipe.executor_statistics()["iterations"]
        if n != last:
            last, still_since = n, time.monotonic()
        elif n >= at_least and time.monotonic() - still_since >= 0.2:
            return
        time.sleep(0.02)
    raise AssertionError(f"the executor was still preparing iterations after {timeout} s")


def test_release_memory_gives_idle_memory_back(photo_root):
    pipe = crop_pipeline(photo_root)
    for _ in range(12):
        pipe.run()
    # The executor goes on preparing the prefetched iterations (depth 2): compare once it has
    # (it then waits for the consumer and allocates nothing).
    wait_until_idle(pipe, 12 + 2)
    before = pipe.executor_statistics()["memory"]["host_pageable"]
    assert before["reserved_bytes"] > before["used_bytes"]  # idle blocks kept for reuse
    released = pipe.release_memory()
    after = pipe.executor_statistics()["memory"]["host_pageable"]
    assert released > 0 and after["reserved_bytes"] < before["reserved_bytes"]
    # Only idle memory goes: the prefetched iterations keep theirs.
    assert after["reserved_bytes"] >= after["used_bytes"]
    assert after["peak_reserved_bytes"] == before["peak_reserved_bytes"]  # high-water marks stay
    # The pipeline goes on, and gives what it gave without the release.
    out = [np.array(pipe.run()[0].as_array()) for _ in range(3)]
    ref = crop_pipeline(photo_root)
    for _ in range(12):
        ref.run()
    assert all(np.array_equal(a, np.array(ref.run()[0].as_array())) for a in out)
    pipe.close()
    ref.close()
    with pytest.raises(ladle.Error):
        pipe.release_memory()


@pytest.mark.slow
def test_random_crop_soak_rss_is_flat(photo_root):
    """100 epochs of random crops: RSS after warm-up (10 epochs) stays within 16 MiB."""
    pipe = crop_pipeline(photo_root)
    batches = 48 // pipe.batch_size
    figures, t0 = [], time.time()
    for e in range(100):
        for _ in range(batches):
            pipe.run()
        figures.append(rss())
    m = pipe.executor_statistics()["memory"]["host_pageable"]
    warm, peak, last = figures[9], max(figures[10:]), figures[-1]
    print(f"soak: 100 epochs in {time.time() - t0:.1f} s; RSS at epoch 1 {figures[0] >> 20} MiB, after warm-up "
          f"{warm >> 20} MiB, peak after {peak >> 20} MiB, last {last >> 20} MiB; host pool peak used "
          f"{m['peak_used_bytes'] >> 20} MiB, peak reserved {m['peak_reserved_bytes'] >> 20} MiB")
    assert peak - warm <= 16 << 20, [f >> 20 for f in figures]
    pipe.close()


@pytest.mark.gpu
def test_mixed_random_crop_soak_device_memory_is_flat(photo_root):
    """The mixed decoder and a GPU resize, 60 epochs: the device and pinned
    pools' reserved bytes after warm-up (10 epochs) stay within 16 MiB, and
    release_memory() gives their idle memory back."""
    from conftest import cuda_usable
    if not cuda_usable():
        pytest.skip("no usable CUDA device")
    pipe = ladle.Pipeline(batch_size=8, num_threads=2, seed=1, device_id=0)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=photo_root, random_shuffle=True, name="R")
        images = fn.resize(fn.decoders.image_random_crop(jpegs, device="mixed"), resize_x=224, resize_y=224)
        pipe.set_outputs(images, labels)
    pipe.build()
    figures = []
    for e in range(60):
        for _ in range(6):
            pipe.run()
        m = pipe.executor_statistics()["memory"]
        figures.append((m["device"]["reserved_bytes"], m["host_pinned"]["reserved_bytes"], rss()))
    print("soak (mixed): device, pinned, RSS MiB after warm-up",
          [f >> 20 for f in figures[9]], "peak after", [max(f[k] for f in figures[10:]) >> 20 for k in range(3)])
    for k in range(3):
        assert max(f[k] for f in figures[10:]) - figures[9][k] <= 16 << 20, (k, [f[k] >> 20 for f in figures])
    # The executor refills its queue after each run(); what it allocates then would race with release.
    wait_until_idle(pipe, 60 * 6 + 2)  # prefetch_queue_depth 2
    m = pipe.executor_statistics()["memory"]
    # (blocks waiting for queued GPU work are reserved but not in use, so the
    # device pool has no 2x bound of its peak in use as the host pool has)
    assert m["device"]["peak_used_bytes"] > 0 and m["host_pinned"]["peak_used_bytes"] > 0
    assert pipe.release_memory() > 0
    after = pipe.executor_statistics()["memory"]
    assert after["device"]["reserved_bytes"] < m["device"]["reserved_bytes"]
    pipe.close()
