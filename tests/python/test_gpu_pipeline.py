"""The GPU backend against the CPU backend, through whole pipelines: the GPU
operators must reproduce the CPU ones bit for bit on the same decoded input;
nvJPEG's decode differs from libjpeg-turbo's by a few levels (IDCT and
upsampling), so whole training pipelines are compared with a tolerance.
Runs on the GPU machine; skipped elsewhere."""

import numpy as np
import pytest

import ladle
from ladle import fn, types

pytestmark = pytest.mark.gpu

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def ops_pipeline(root, device, seed=3):
    """CPU decode, then the operators under test on `device`."""
    pipe = ladle.Pipeline(batch_size=8, num_threads=2, device_id=0, seed=seed)
    with pipe:
        jpegs, _ = fn.readers.file(file_root=root)
        images = fn.decoders.image(jpegs, device="cpu")
        if device == "gpu":
            images = images.gpu()
        rrc = fn.random_resized_crop(images, device=device, size=[96, 112])
        resized = fn.resize(images, device=device, resize_shorter=80, interp_type=types.INTERP_CUBIC)
        flipped = fn.flip(resized, device=device, horizontal=fn.random.coin_flip(), vertical=1)
        cropped = fn.crop(resized, device=device, crop=[64, 64], crop_pos_x=fn.random.uniform(range=[0, 1]))
        normalized = fn.crop_mirror_normalize(rrc, device=device, dtype=types.FLOAT16, output_layout="CHW",
                                              mean=MEAN, std=STD, mirror=fn.random.coin_flip())
        as_u8 = fn.crop_mirror_normalize(resized, device=device, dtype=types.UINT8, output_layout="HWC",
                                         crop=[70, 70], out_of_bounds_policy="pad", fill_values=[7])
        as_float = fn.cast(resized, device=device, dtype=types.FLOAT)
        pipe.set_outputs(rrc, flipped, cropped, normalized, as_u8, as_float)
    return pipe


def test_gpu_operators_equal_cpu_operators(sample_root):
    cpu, gpu = ops_pipeline(sample_root, "cpu"), ops_pipeline(sample_root, "gpu")
    for _ in range(3):
        for c, g in zip(cpu.run(), gpu.run()):
            assert g.device == "gpu" and c.device == "cpu"
            host = g.as_cpu()
            for i in range(len(c)):
                a, b = np.asarray(c.at(i)), np.asarray(host.at(i))
                assert a.shape == b.shape
                assert np.array_equal(a, b), f"sample {i}: max diff {np.abs(a.astype(float) - b.astype(float)).max()}"
    cpu.close()
    gpu.close()


def training_pipeline(root, decoder, device, seed=11, batch_size=16):
    pipe = ladle.Pipeline(batch_size=batch_size, num_threads=4, device_id=0, seed=seed)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
        images = fn.decoders.image_random_crop(jpegs, device=decoder, output_type=types.RGB)
        images = fn.resize(images, device=device, resize_x=224, resize_y=224)
        images = fn.crop_mirror_normalize(images, device=device, dtype=types.FLOAT16, output_layout="CHW",
                                          mean=MEAN, std=STD, mirror=fn.random.coin_flip(probability=0.5))
        pipe.set_outputs(images, labels)
    return pipe


def test_mixed_training_pipeline_matches_cpu(sample_root):
    torch = pytest.importorskip("torch")
    cpu = training_pipeline(sample_root, "cpu", "cpu")
    gpu = training_pipeline(sample_root, "mixed", "gpu")
    worst, total, count = 0.0, 0.0, 0
    for _ in range(4):
        (ci, cl), (gi, gl) = cpu.run(), gpu.run()
        assert np.array_equal(np.from_dlpack(cl), np.from_dlpack(gl))
        a = torch.from_dlpack(ci).float()
        b = torch.from_dlpack(gi).float().cpu()
        assert a.shape == b.shape == (16, 3, 224, 224)
        diff = (a - b).abs()
        worst = max(worst, float(diff.max()))
        total += float(diff.sum())
        count += diff.numel()
    print(f"mixed vs cpu: max |diff| {worst:.4f}, mean {total / count:.5f} (normalized units; 1 level = 0.017)")
    # A few levels of decoder difference, attenuated by the resize.
    assert total / count < 0.02 and worst < 0.6
    cpu.close()
    gpu.close()


def test_gpu_output_stream_ordering_and_lifetime(sample_root):
    torch = pytest.importorskip("torch")
    gpu = training_pipeline(sample_root, "mixed", "gpu", batch_size=8)
    side = torch.cuda.Stream()
    kept = []
    for _ in range(10):
        images, _ = gpu.run()
        with torch.cuda.stream(side):
            t = torch.from_dlpack(images)  # side waits for ladle's work
            kept.append((t, t.float().sum()))
    side.synchronize()
    gpu.close()  # tensors outlive the pipeline
    torch.cuda.synchronize()
    for t, s in kept:
        assert abs(float(t.float().sum()) - float(s)) <= 1e-3 * max(1.0, abs(float(s)))


def test_gpu_memory_is_stable(sample_root):
    torch = pytest.importorskip("torch")
    gpu = training_pipeline(sample_root, "mixed", "gpu", batch_size=8)
    for _ in range(10):
        gpu.run()
    torch.cuda.synchronize()
    free_before = torch.cuda.mem_get_info()[0]
    for _ in range(100):
        images, _ = gpu.run()
        torch.from_dlpack(images).float().mean()
    torch.cuda.synchronize()
    free_after = torch.cuda.mem_get_info()[0]
    gpu.close()
    assert free_before - free_after < 64 << 20, f"device memory grew by {(free_before - free_after) >> 20} MiB"


def test_destroy_with_gpu_work_in_flight(sample_root):
    torch = pytest.importorskip("torch")
    for _ in range(5):
        gpu = training_pipeline(sample_root, "mixed", "gpu", batch_size=8)
        images, _ = gpu.run()
        t = torch.from_dlpack(images)
        gpu.close()  # the executor is preparing the next iterations
        assert torch.isfinite(t.float()).all()


def test_fused_path_equals_unfused(sample_root, monkeypatch):
    """decode -> random_resized_crop/resize -> crop_mirror_normalize runs as one
    kernel on the GPU; LADLE_NO_FUSION=1 (read at build) runs the operators one
    by one. Both must give the same bytes, for float16 CHW and uint8 HWC."""
    torch = pytest.importorskip("torch")

    def build():
        pipe = ladle.Pipeline(batch_size=8, num_threads=2, device_id=0, seed=21)
        with pipe:
            jpegs, _ = fn.readers.file(file_root=sample_root)
            images = fn.decoders.image(jpegs, device="mixed")
            a = fn.crop_mirror_normalize(fn.random_resized_crop(images, device="gpu", size=[128, 160]), device="gpu",
                                         dtype=types.FLOAT16, mean=MEAN, std=STD, mirror=fn.random.coin_flip())
            b = fn.crop_mirror_normalize(fn.resize(images, device="gpu", resize_shorter=140), device="gpu",
                                         dtype=types.UINT8, output_layout="HWC", crop=[120, 120])
            pipe.set_outputs(a, b)
        pipe.build()
        return pipe

    fused = build()
    # The schemas declare the fusion (resize and random_resized_crop accept an epilogue, crop_mirror_normalize
    # is one): both resizes run inside the normalize kernels.
    fused_ops = [op["op"] for op in fused.executor_statistics()["operators"] if op["fused"]]
    assert sorted(fused_ops) == ["random_resized_crop", "resize"], fused_ops
    monkeypatch.setenv("LADLE_NO_FUSION", "1")
    unfused = build()
    assert not any(op["fused"] for op in unfused.executor_statistics()["operators"])
    for _ in range(3):
        for f, u in zip(fused.run(), unfused.run()):
            assert torch.equal(torch.from_dlpack(f).cpu(), torch.from_dlpack(u).cpu())
    fused.close()
    unfused.close()
