"""hybrid_huffman_threshold of the image decoders (DALI's argument, default 1,000,000).

On device="mixed", the JPEGs outside the hw_decoder_load share (or that the hardware
decoder does not take) with more pixels than the threshold are decoded by nvJPEG's
GPU-Huffman backend (NVJPEG_BACKEND_GPU_HYBRID) from a worker, at the same time as the
hardware engines and the CPU workers; the rest by the CPU workers. The route each image
took shows in executor_statistics()'s per-operator "counters" ({"cpu", "hw", "gpu_hybrid",
"retried_on_cpu"}), which the tests below read. On the CPU the argument changes nothing.

Tolerance of nvJPEG-decoded pixels against the CPU decoder (libjpeg-turbo): the one
tests/python/test_malformed_corpus.py states for the mixed decoder, a mean absolute
difference under 2 levels and a 99th percentile of at most 16 (nvJPEG's IDCT and chroma
upsampling differ from libjpeg-turbo's). The GPU tests run on the GPU machine."""

import io
import os

import numpy as np
import pytest
from PIL import Image

import ladle
from ladle import fn, types
from conftest import cuda_usable, run_both

# (width, height): pixels 307200, 30000, 388800, 76800, 65536, 172800, 60000, 120000
SIZES = [(640, 480), (200, 150), (720, 540), (320, 240), (256, 256), (480, 360), (300, 200), (400, 300)]
THRESHOLD = 100_000  # slots 0, 2, 5 and 7 have more pixels
HUGE = 4294967295    # the largest threshold: no image has more pixels


def photo(w, h, seed):
    """A smooth picture with a little noise, as a baseline 4:2:0 JPEG (Pillow's default)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    img = np.stack([x * 255 / w, y * 255 / h, 127 + 90 * np.sin(x / 17.0 + seed) * np.cos(y / 23.0)], -1)
    img = np.clip(img + rng.normal(0, 3, img.shape), 0, 255).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="JPEG", quality=90)
    return buf.getvalue()


def encoded(sizes=SIZES):
    return [np.frombuffer(photo(w, h, i), np.uint8) for i, (w, h) in enumerate(sizes)]


def decoder_counters(pipe, timings=False):
    """The decoder's counters; the "*_us" ones (the mixed decoder's wait times) only with timings=True."""
    (op,) = [o for o in pipe.executor_statistics()["operators"] if o["op"].startswith("decoders.")]
    return {k: v for k, v in op["counters"].items() if timings or not k.endswith("_us")}


def decode(data, device, op="image", iterations=1, seed=3, **args):
    """Decodes `data` (one batch, fed `iterations` times); returns (samples, counters)."""
    pipe = ladle.Pipeline(batch_size=len(data), num_threads=3, device_id=0 if device == "mixed" else None, seed=seed)
    with pipe:
        x = fn.external_source(name="x", dtype=types.UINT8, ndim=1)
        pipe.set_outputs(getattr(fn.decoders, op)(x, device=device, **args))
    out = []
    for _ in range(iterations):
        pipe.feed_input("x", data)
        (b,) = pipe.run()
        b = b.as_cpu() if hasattr(b, "as_cpu") else b
        out += [np.array(b.at(i)) for i in range(len(b))]
    counters = decoder_counters(pipe)
    pipe.close()
    return out, counters


WINDOWS = {"image": {}, "image_random_crop": {}, "image_crop": {"crop": [37, 53], "crop_pos_x": 0.3}}


# --- everywhere ------------------------------------------------------------------------------

@pytest.mark.parametrize("op", sorted(WINDOWS))
def test_the_threshold_changes_nothing_on_the_cpu(op):
    data = encoded()
    plain, plain_counts = decode(data, "cpu", op, iterations=2, **WINDOWS[op])
    zero, zero_counts = decode(data, "cpu", op, iterations=2, hybrid_huffman_threshold=0, **WINDOWS[op])
    assert len(plain) == len(zero) == 2 * len(data)
    for a, b in zip(plain, zero):
        np.testing.assert_array_equal(a, b)
    # The CPU backend decodes every image on the workers, and counts them.
    assert plain_counts == zero_counts == {"cpu": 2 * len(data), "hw": 0, "gpu_hybrid": 0, "retried_on_cpu": 0}


def test_other_operators_have_no_counters():
    pipe = ladle.Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        x = fn.external_source(name="x", dtype=types.UINT8, ndim=1)
        pipe.set_outputs(fn.resize(fn.decoders.image(x), resize_x=8, resize_y=8))
    pipe.feed_input("x", encoded()[:2])
    pipe.run()
    ops = {o["op"]: o["counters"] for o in pipe.executor_statistics()["operators"]}
    pipe.close()
    assert ops["resize"] == {} and ops["decoders.image"] == {"cpu": 2, "hw": 0, "gpu_hybrid": 0, "retried_on_cpu": 0}


@pytest.mark.gpu
def test_mixed_decoder_reports_its_waits():
    """The mixed decoder's wait times (microseconds, summed over batches): the time in
    nvJPEG's batched call, the part of it spent waiting for the engines to finish the
    previous batch, and the wait for the CPU share. Timings: only their order is asserted."""
    if not cuda_usable():
        pytest.skip("no usable CUDA device")
    data = encoded() * 4
    pipe = ladle.Pipeline(batch_size=len(data), num_threads=3, device_id=0)
    with pipe:
        x = fn.external_source(name="x", dtype=types.UINT8, ndim=1)
        pipe.set_outputs(fn.decoders.image(x, device="mixed", hw_decoder_load=0.5))
    for _ in range(4):
        pipe.feed_input("x", data)
        pipe.run()
    stats = pipe.executor_statistics()
    pipe.close()
    counts = next(o for o in stats["operators"] if o["op"] == "decoders.image")["counters"]
    assert counts["hw"] > 0 and counts["cpu"] > 0
    assert counts["nvjpeg_us"] > 0 and 0 <= counts["engines_wait_us"] <= counts["nvjpeg_us"]
    assert 0 <= counts["cpu_wait_us"] <= stats["prepare_seconds"] * 1e6 + 1000
    assert 0 <= stats["gpu_wait_seconds"] <= stats["prepare_seconds"] + 1e-3


@pytest.mark.parametrize("value", [-1, 4294967296])
def test_threshold_out_of_range_is_refused(value):
    pipe = ladle.Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pytest.raises(ladle.Error, match="decoders.image.*hybrid_huffman_threshold.*out of range"):
        with pipe:
            x = fn.external_source(name="x", dtype=types.UINT8, ndim=1)
            pipe.set_outputs(fn.decoders.image(x, hybrid_huffman_threshold=value))
        pipe.build()
    pipe.close()


def test_dali_takes_the_same_argument():
    # DALI's CPU decoder accepts hybrid_huffman_threshold too (it applies to "mixed" only);
    # both decode with libjpeg-turbo here: the same bytes.
    data = encoded()[:4]
    ours, dali = run_both(lambda fn, t, x: fn.decoders.image(x, hybrid_huffman_threshold=0, output_type=t.RGB),
                          {"x": [data]}, batch_size=len(data))
    for a, b in zip(ours, dali):
        np.testing.assert_array_equal(a, b)


# --- on the GPU machine ----------------------------------------------------------------------

def close_to_cpu(gpu, cpu, what):
    assert len(gpu) == len(cpu)
    for i, (a, b) in enumerate(zip(gpu, cpu)):
        assert a.shape == b.shape, f"{what}, sample {i}"
        d = np.abs(a.astype(np.int16) - b.astype(np.int16))
        assert d.mean() < 2 and np.percentile(d, 99) <= 16, (what, i, d.mean(), np.percentile(d, 99), d.max())


ROUTES = [
    (0.0, 0, {"hw": 0, "gpu_hybrid": 8, "cpu": 0}),             # hw_decoder_load 0, threshold 0: all GPU-Huffman
    (0.0, HUGE, {"hw": 0, "gpu_hybrid": 0, "cpu": 8}),          # a huge threshold: none
    (0.0, 1_000_000, {"hw": 0, "gpu_hybrid": 0, "cpu": 8}),     # DALI's default: these images are smaller
    (0.0, THRESHOLD, {"hw": 0, "gpu_hybrid": 4, "cpu": 4}),     # slots 0, 2, 5, 7 have more pixels
    (0.5, THRESHOLD, {"hw": 4, "gpu_hybrid": 2, "cpu": 2}),     # hw: slots 1, 3, 5, 7; of the rest 0 and 2
    (0.5, 0, {"hw": 4, "gpu_hybrid": 4, "cpu": 0}),
]


@pytest.mark.gpu
@pytest.mark.parametrize("hw, threshold, expected", ROUTES)
@pytest.mark.parametrize("op", ["image", "image_random_crop"])
def test_routes_follow_the_threshold(op, hw, threshold, expected):
    data = encoded()
    _, counts = decode(data, "mixed", op, iterations=2, hw_decoder_load=hw, hybrid_huffman_threshold=threshold)
    want = {k: 2 * v for k, v in expected.items()} | {"retried_on_cpu": 0}
    if op == "image" or hw == 0:
        # Whole baseline 4:2:0 JPEGs: the hardware decoder takes every one (GPU-NOTES.md: all
        # 20,000 benchmark images), so its share is exactly the hw_decoder_load slots.
        assert counts == want
    else:
        # With crop windows the hardware decoder's region check decides too; an image of its
        # share it declines goes the GPU-Huffman or the CPU way like the others.
        assert counts["hw"] <= want["hw"] and counts["gpu_hybrid"] >= want["gpu_hybrid"]
        assert counts["cpu"] >= want["cpu"] and sum(counts[k] for k in ("hw", "gpu_hybrid", "cpu")) == 16


@pytest.mark.gpu
@pytest.mark.parametrize("op", sorted(WINDOWS))
@pytest.mark.parametrize("output_type", ["RGB", "BGR", "GRAY"])
def test_gpu_huffman_pixels_are_close_to_the_cpu_decoders(op, output_type):
    data = encoded()
    args = dict(WINDOWS[op], output_type=getattr(types, output_type))
    gpu, counts = decode(data, "mixed", op, hw_decoder_load=0.0, hybrid_huffman_threshold=0, **args)
    cpu, _ = decode(data, "cpu", op, **args)
    assert counts["gpu_hybrid"] == len(data)  # so the comparison is of that route
    close_to_cpu(gpu, cpu, f"{op} {output_type}")


@pytest.mark.gpu
def test_gpu_huffman_batches_of_more_than_50():
    # nvJPEG decodes Huffman codes on the GPU for batches of more than 50 baseline JPEGs
    # (below that, on the calling thread): this batch takes the GPU path.
    sizes = [(96 + 8 * (i % 7), 64 + 8 * (i % 5)) for i in range(64)]
    data = encoded(sizes)
    gpu, counts = decode(data, "mixed", "image_random_crop", iterations=2, hw_decoder_load=0.0,
                         hybrid_huffman_threshold=0)
    cpu, _ = decode(data, "cpu", "image_random_crop", iterations=2)
    assert counts["gpu_hybrid"] == 2 * len(data)
    close_to_cpu(gpu, cpu, "64 images")


@pytest.mark.gpu
@pytest.mark.parametrize("op", ["image", "image_random_crop"])
def test_three_routes_at_once_are_reproducible(op):
    data = encoded()
    args = dict(hw_decoder_load=0.5, hybrid_huffman_threshold=THRESHOLD)
    first, c1 = decode(data, "mixed", op, iterations=3, seed=9, **args)
    again, c2 = decode(data, "mixed", op, iterations=3, seed=9, **args)
    cpu, _ = decode(data, "cpu", op, iterations=3, seed=9)
    assert c1 == c2  # the same image takes the same route every run
    if op == "image":  # see test_routes_follow_the_threshold
        assert c1 == {"hw": 12, "gpu_hybrid": 6, "cpu": 6, "retried_on_cpu": 0}
    assert c1["hw"] > 0 and c1["gpu_hybrid"] >= 6 and c1["cpu"] > 0 and c1["retried_on_cpu"] == 0
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    close_to_cpu(first, cpu, f"three routes, {op}")


def write_tree(root, count):
    """count JPEG files in one class folder; returns their paths, sorted."""
    os.makedirs(root / "c", exist_ok=True)
    paths = []
    for i in range(count):
        w, h = SIZES[i % len(SIZES)]
        p = root / "c" / f"img_{i:02d}.jpg"
        p.write_bytes(photo(w, h, i))
        paths.append(str(p))
    return paths


def break_huffman_table(path):
    """Keeps the end-of-image marker (so the file is routed to nvJPEG) but breaks the
    first Huffman table, as tests/python/test_skip_bad_samples.py does."""
    data = bytearray(open(path, "rb").read())
    dht = data.index(b"\xFF\xC4")
    data[dht + 5:dht + 21] = b"\xFF" * 16
    open(path, "wb").write(bytes(data))


def file_pipeline(root, batch, **args):
    pipe = ladle.Pipeline(batch_size=batch, num_threads=3, device_id=0, seed=1, **args.pop("pipe", {}))
    with pipe:
        jpegs, labels = fn.readers.file(file_root=str(root), name="R")
        images = fn.decoders.image(jpegs, device="mixed", **args)
        pipe.set_outputs(fn.resize(images, resize_x=16, resize_y=16), labels)
    return pipe


@pytest.mark.gpu
def test_a_corrupt_jpeg_in_the_gpu_huffman_share_fails_naming_the_file(tmp_path):
    if not cuda_usable():
        pytest.skip("no usable CUDA device")
    paths = write_tree(tmp_path, 8)
    bad = paths[2]
    break_huffman_table(bad)
    routed = dict(hw_decoder_load=0.0, hybrid_huffman_threshold=0)  # every other file: GPU-Huffman

    pipe = file_pipeline(tmp_path, 8, **routed)
    with pytest.raises(ladle.Error) as err:
        pipe.run()
    pipe.close()
    assert os.path.basename(bad) in str(err.value)

    pipe = file_pipeline(tmp_path, 4, pipe={"on_error": "skip"}, **routed)
    for _ in range(4):  # two epochs
        images, labels = pipe.run()
        assert len(images) == 4
    skipped = pipe.skipped_samples()
    assert {s["name"] for s in skipped} == {bad}
    assert all(os.path.basename(bad) in s["error"] for s in skipped)
    counts = decoder_counters(pipe)
    pipe.close()
    # The bad file was refused by nvJPEG's parser (then it went to the CPU decoder) or by the
    # GPU-Huffman decode (then its share was decoded again on the CPU); either way its batch
    # failed and ran again without it, and only completed batches count: 16 good images, each
    # decoded by the GPU-Huffman route.
    assert counts == {"hw": 0, "gpu_hybrid": 16, "cpu": 0, "retried_on_cpu": 0}


@pytest.mark.gpu
def test_gpu_huffman_route_keeps_memory_flat_and_closes_mid_run(sample_root):
    torch = pytest.importorskip("torch")

    def build():
        pipe = ladle.Pipeline(batch_size=8, num_threads=3, device_id=0, seed=4)
        with pipe:
            jpegs, _ = fn.readers.file(file_root=sample_root, random_shuffle=True)
            images = fn.decoders.image_random_crop(jpegs, device="mixed", hw_decoder_load=0.5,
                                                   hybrid_huffman_threshold=0)
            pipe.set_outputs(fn.resize(images, resize_x=64, resize_y=64))
        return pipe

    pipe = build()
    for _ in range(10):
        pipe.run()
    # Free device memory is the whole process's: another library (DALI, loaded by earlier tests) may take
    # some during one window. A leak grows in every window: the smaller growth of two counts.
    grew = []
    for _ in range(2):
        torch.cuda.synchronize()
        free_before = torch.cuda.mem_get_info()[0]
        for _ in range(100):
            (images,) = pipe.run()
            torch.from_dlpack(images).float().mean()
        torch.cuda.synchronize()
        grew.append(free_before - torch.cuda.mem_get_info()[0])
    assert decoder_counters(pipe)["gpu_hybrid"] > 0
    pipe.close()
    assert min(grew) < 64 << 20, f"device memory grew by {[g >> 20 for g in grew]} MiB in two windows of 100"
    for _ in range(5):  # closed while the executor prepares the next iterations
        pipe = build()
        (images,) = pipe.run()
        t = torch.from_dlpack(images)
        pipe.close()
        assert torch.isfinite(t.float()).all()
