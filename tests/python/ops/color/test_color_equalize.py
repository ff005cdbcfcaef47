"""equalize against the formula written here (OpenCV's equalizeHist, which
DALI follows), against DALI 2.4 (run_both) and Pillow's ImageOps.equalize
(a different rounding of the same idea); the GPU kernel against the CPU."""

import numpy as np
import pytest

import ladle
from ladle import fn, types
from conftest import requires_ops, run_both

pytestmark = requires_ops("equalize")


def reference(plane):
    hist = np.bincount(plane.ravel(), minlength=256)
    c0 = hist[np.nonzero(hist)[0][0]]
    if c0 == plane.size:
        return plane.copy()
    lut = np.rint((np.cumsum(hist) - c0) * (255.0 / (plane.size - c0)))
    return np.clip(lut, 0, 255).astype(np.uint8)[plane]


def images(seed, n=4):
    rng = np.random.default_rng(seed)
    out = [rng.integers(0, 256, (int(rng.integers(1, 60)), int(rng.integers(1, 60)), 3), dtype=np.uint8)
           for _ in range(n)]
    out.append(rng.integers(40, 90, (30, 20, 3)).astype(np.uint8))   # a narrow range, stretched
    out.append(np.full((7, 9, 3), 13, np.uint8))                       # one value per plane: unchanged
    return out


def run(batch, layout, gpu=False):
    pipe = ladle.Pipeline(batch_size=len(batch), num_threads=2, device_id=0 if gpu else None)
    with pipe:
        x = fn.external_source(name="x", dtype=types.UINT8, ndim=batch[0].ndim, layout=layout)
        pipe.set_outputs(fn.equalize(x.gpu() if gpu else x))
    pipe.feed_input("x", batch)
    (out,) = pipe.run()
    got = [np.array(out.as_cpu().at(i) if gpu else out.at(i)) for i in range(len(batch))]
    pipe.close()
    return got


@pytest.mark.parametrize("layout", ["HWC", "CHW", "HW", "FHWC", "FCHW"])
def test_formula(layout):
    rng = np.random.default_rng(len(layout))
    hwc = images(1)
    if layout == "HW":
        batch = [x[..., 0].copy() for x in hwc]
    elif layout == "CHW":
        batch = [np.ascontiguousarray(x.transpose(2, 0, 1)) for x in hwc]
    elif layout == "FHWC":
        batch = [np.stack([x, rng.permutation(x.ravel()).reshape(x.shape)]) for x in hwc]
    elif layout == "FCHW":
        batch = [np.stack([x.transpose(2, 0, 1)] * 2) for x in hwc]
    else:
        batch = hwc
    got = run(batch, layout)
    for x, y in zip(batch, got):
        want = np.empty_like(x)
        c_axis = layout.find("C")
        planes = np.moveaxis(x, c_axis, -1) if c_axis >= 0 else x[..., None]
        frames = planes if layout.startswith("F") else planes[None]
        ref = np.stack([np.stack([reference(f[..., c]) for c in range(f.shape[-1])], -1) for f in frames])
        ref = ref if layout.startswith("F") else ref[0]
        want = np.moveaxis(ref, -1, c_axis) if c_axis >= 0 else ref[..., 0]
        np.testing.assert_array_equal(y, want)


def test_against_dali():
    batch = images(2)
    ours, dali = run_both(lambda fn, types, x: fn.equalize(x), {"x": [batch]}, len(batch))
    for a, b in zip(ours, dali):
        np.testing.assert_array_equal(a, b)
    ours, dali = run_both(lambda fn, types, x: fn.experimental.equalize(x), {"x": [batch]}, len(batch))
    for a, b in zip(ours, dali):
        np.testing.assert_array_equal(a, b)


def test_against_pillow():
    from PIL import Image, ImageOps

    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:224, 0:224]
    smooth = np.stack([(yy + xx) // 2, (yy * xx) % 251, np.clip(rng.normal(120, 30, (224, 224)), 0, 255)], -1)
    batch = [rng.integers(0, 256, (224, 224, 3), dtype=np.uint8), smooth.astype(np.uint8),
             rng.integers(60, 120, (224, 224, 3)).astype(np.uint8)]
    for x, y in zip(batch, run(batch, "HWC")):
        pil = np.asarray(ImageOps.equalize(Image.fromarray(x))).astype(int)
        # Pillow spreads the cumulative histogram in integer steps ((cdf + step // 2) // step with
        # step = (N - count of the largest value) // 255, the table shifted by one bin), OpenCV (and DALI)
        # by 255 / (N - count of the smallest value) with rounding. On 224x224 images that is at most
        # 3 levels apart (measured 2, 3, 1; means 0.2, 1.4, 0.3); on small images far more (29 measured
        # on 40x20), which is why the augmentation tests compare with DALI's formula, not Pillow's.
        assert np.abs(pil - y).max() <= 3
        assert np.abs(pil - y).mean() <= 1.5


def test_errors():
    for dtype, ndim, layout, match in ((types.FLOAT, 3, "HWC", "equalize.*uint8"),
                                       (types.UINT8, 3, "WHC", "equalize.*layout \"WHC\""),
                                       (types.UINT8, 4, None, "equalize.*4-D")):
        pipe = ladle.Pipeline(batch_size=1, num_threads=1, device_id=None)
        with pytest.raises(ladle.Error, match=match):
            with pipe:
                x = fn.external_source(name="x", dtype=dtype, ndim=ndim, layout=layout)
                pipe.set_outputs(fn.equalize(x))
            pipe.build()
        pipe.close()


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["HWC", "CHW", "HW", "FHWC", "FCHW"])
def test_gpu_matches_cpu(layout):
    rng = np.random.default_rng(5)
    photo = np.clip(rng.normal(120, 40, (463, 403, 3)), 0, 255).astype(np.uint8)  # odd sizes: unaligned samples
    batch = images(4) + [photo, np.full((1, 1, 3), 200, np.uint8), rng.integers(0, 256, (1, 3, 3), dtype=np.uint8),
                         rng.integers(0, 256, (500, 400, 3), dtype=np.uint8)]
    if layout == "CHW":
        batch = [np.ascontiguousarray(x.transpose(2, 0, 1)) for x in batch]
    elif layout == "HW":
        batch = [np.ascontiguousarray(x[..., 1]) for x in batch]
    elif layout == "FHWC":
        batch = [np.stack([x, x[::-1]]) for x in batch]
    elif layout == "FCHW":
        batch = [np.stack([x.transpose(2, 0, 1)] * 3) for x in batch]
    for a, b in zip(run(batch, layout), run(batch, layout, gpu=True)):
        np.testing.assert_array_equal(a, b)  # integer histograms, the same table formula: exact
