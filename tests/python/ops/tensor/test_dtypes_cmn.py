"""crop_mirror_normalize writes every dtype: the float32 value of its formula
(three rounded float32 operations, as normalize_kernel.h specifies) stored with
fn.cast's rules, checked against NumPy on random uint8 images, CPU and GPU."""

import numpy as np
import pytest

import ladle
from ladle import fn, types
from test_dtypes_cast import DTYPES, assert_same, reference


def run_cmn(images, dtype, device="cpu", **args):
    pipe = ladle.Pipeline(batch_size=len(images), num_threads=1, device_id=0 if device == "gpu" else None)
    with pipe:
        x = fn.external_source(name="x", dtype=types.UINT8, ndim=3, layout="HWC")
        if device == "gpu":
            x = x.gpu()
        pipe.set_outputs(fn.crop_mirror_normalize(x, dtype=types.to_dtype(dtype), device=device, **args))
    pipe.feed_input("x", images)
    out = pipe.run()[0].as_cpu()
    got = [np.array(out.at(i)) for i in range(len(images))]
    pipe.close()
    return got


def formula(img, mean, std, scale, shift):
    mul = (np.float32(1.0 / np.float64(std)) * np.float32(scale)).astype(np.float32)
    v = (img.astype(np.float32) - np.float32(mean)) * mul
    return (v + np.float32(shift)).astype(np.float32)


ARGS = dict(mean=[100.0, 20.0, 200.0], std=[0.7, 2.0, 0.25], scale=1.5, shift=-3.0, output_layout="HWC")


@pytest.mark.parametrize("dtype", DTYPES)
def test_cmn_every_output_dtype(dtype):
    rng = np.random.default_rng(5)
    images = [rng.integers(0, 256, (7, 9, 3), dtype=np.uint8) for _ in range(2)]
    for img, got in zip(images, run_cmn(images, dtype, **ARGS)):
        v = np.stack([formula(img[..., c], ARGS["mean"][c], ARGS["std"][c], ARGS["scale"], ARGS["shift"])
                      for c in range(3)], axis=-1)
        want = reference(v.reshape(-1), dtype).reshape(v.shape)
        assert_same(got, want, f"crop_mirror_normalize dtype={dtype}")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_cmn_every_output_dtype_gpu_matches_cpu(dtype):
    rng = np.random.default_rng(6)
    images = [rng.integers(0, 256, (17, 33, 3), dtype=np.uint8) for _ in range(3)]
    for a, b in zip(run_cmn(images, dtype, **ARGS), run_cmn(images, dtype, device="gpu", **ARGS)):
        assert a.tobytes() == b.tobytes()
