"""Differential tests on the GPU: the same graph in DALI 2.4 and in ladle, both
with device_id=0, GPU operators fed identical pixels (decoded by PIL, then
.gpu()), and the mixed decoders compared. Runs on the GPU machine with DALI
installed there (../shared/tools/dali/, tools/gpu-run); skips elsewhere.
Tolerances are those of the CPU differential tests (test_dali_ops.py), which
the GPU kernels equal bit for bit (tests/c/ops/*/test_*_gpu.c)."""

import numpy as np
import pytest

from conftest import cuda_usable, dali_or_skip, run_both, sample_jpegs
from test_dali_ops import compare, decoded_photos

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def gpu_and_dali():
    if not cuda_usable():
        pytest.skip("needs a CUDA device")
    dali_or_skip()


PHOTOS = decoded_photos(4)


# (name, graph on GPU images, max level difference, max fraction of values that differ, why)
CASES = [
    ("flip", lambda fn, t, x: fn.flip(x, horizontal=1, vertical=1), 0, 0, "exact: a permutation"),
    ("resize_shorter", lambda fn, t, x: fn.resize(x, resize_shorter=96), 1, 0.01,
     "DALI's arithmetic; float rounding of the filter sums may differ by one level"),
    ("cmn", lambda fn, t, x: fn.crop_mirror_normalize(x, crop=(64, 64), mirror=1, dtype=t.FLOAT, output_layout="CHW",
                                                     mean=[120.0, 110.0, 100.0], std=[60.0, 61.0, 62.0]),
     1e-5, 1, "float32: the same formula, rounding of the division"),
    ("brightness_contrast", lambda fn, t, x: fn.brightness_contrast(x, brightness=1.2, contrast=0.7), 1, 0.01,
     "uint8 rounding of a float product"),
    ("hsv", lambda fn, t, x: fn.hsv(x, hue=20.0, saturation=1.3, value=0.9), 1, 0.05,
     "a 3x3 colour matrix in float, rounded to uint8"),
    ("gaussian_blur", lambda fn, t, x: fn.gaussian_blur(x, sigma=1.5), 1, 0.02, "separable float filter, rounding"),
    ("rotate", lambda fn, t, x: fn.rotate(x, angle=17.0, fill_value=0), 1, 0.01,
     "bilinear taps at float source coordinates: ties round either way"),
]


@pytest.mark.parametrize("name,graph,max_level,max_fraction,why", CASES, ids=[c[0] for c in CASES])
def test_gpu_operator_equals_dali(name, graph, max_level, max_fraction, why):
    ladle_out, dali_out = run_both(lambda fn, t, x: graph(fn, t, x.gpu()), {"x": [PHOTOS]}, batch_size=len(PHOTOS),
                                   device_id=0)
    compare(ladle_out, dali_out, max_level, max_fraction, f"{name} on the GPU ({why})")


def test_gpu_nearest_neighbour_resize_follows_dali_cpu():
    # A documented difference: DALI 2.4's GPU nearest-neighbour resize picks other
    # source pixels than its CPU one on some images (measured on the H200,
    # 2026-12-01: 6.6% and 6.9% of the pixels of two of these four photos, exact on
    # the other two); ladle's GPU kernel equals its CPU kernel, which equals DALI's CPU.
    def graph(fn, t, x):
        return fn.resize(x, resize_x=64, resize_y=48, interp_type=t.INTERP_NN)

    ladle_gpu, dali_gpu = run_both(lambda fn, t, x: graph(fn, t, x.gpu()), {"x": [PHOTOS]}, batch_size=len(PHOTOS),
                                   device_id=0)
    _, dali_cpu = run_both(graph, {"x": [PHOTOS]}, batch_size=len(PHOTOS))
    compare(ladle_gpu, dali_cpu, 0, 0, "nearest-neighbour resize: ladle on the GPU vs DALI on the CPU")
    for a, b in zip(ladle_gpu, dali_gpu):
        assert a.shape == b.shape and np.mean(np.any(a != b, axis=2)) <= 0.1


def test_mixed_decoder_close_to_dali():
    # Both decode on the GPU, with the hardware engines where they take the
    # image; ladle also sends a share to its CPU workers (hw_decoder_load 0.8).
    # Different IDCTs and chroma upsampling: a few levels, on average under one.
    data = [np.frombuffer(b, np.uint8) for _, b in sample_jpegs()[:8]]
    ladle_out, dali_out = run_both(lambda fn, t, x: fn.decoders.image(x, device="mixed", output_type=t.RGB),
                                   {"x": [data]}, batch_size=len(data), device_id=0)
    for a, b in zip(ladle_out, dali_out):
        assert a.shape == b.shape and a.dtype == b.dtype
        d = np.abs(a.astype(np.int16) - b.astype(np.int16))
        assert d.mean() < 1.5 and np.percentile(d, 99) <= 12, (d.mean(), np.percentile(d, 99), d.max())
