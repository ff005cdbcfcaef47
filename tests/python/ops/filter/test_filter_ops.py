"""Filter operators (gaussian_blur, normalize, erase, grid_mask,
jpeg_compression_distortion) against NumPy formulas written here and
against DALI 2.4 on the CPU (run_both)."""

import io

import numpy as np
import pytest

import ladle
from conftest import requires_ops, run_both

pytestmark = requires_ops("gaussian_blur", "normalize", "erase", "grid_mask", "jpeg_compression_distortion")


def images(seed, n=3, dtype=np.uint8, channels=3):
    rng = np.random.default_rng(seed)
    shapes = [(rng.integers(5, 40), rng.integers(5, 40), channels) for _ in range(n)]
    if dtype == np.uint8:
        return [rng.integers(0, 256, s, dtype=np.uint8) for s in shapes]
    return [rng.normal(10, 5, s).astype(dtype) for s in shapes]


def run_ladle(graph, batch, iterations=1, **pipe_args):
    pipe = ladle.Pipeline(batch_size=len(batch), num_threads=2, **pipe_args)
    with pipe:
        x = ladle.fn.external_source(name="x", dtype=ladle.types.UINT8 if batch[0].dtype == np.uint8 else
                                     ladle.types.FLOAT, ndim=batch[0].ndim, layout="HWC" if batch[0].ndim == 3 else None)
        pipe.set_outputs(graph(ladle.fn, x))
    out = []
    for _ in range(iterations):
        pipe.feed_input("x", batch)
        out += [np.array(t) for t in pipe.run()[0]]
    pipe.close()
    return out


# --- gaussian_blur -------------------------------------------------------------

def gauss_kernel(sigma, window):
    r = window // 2
    x = np.arange(-r, r + 1, dtype=np.float64)
    w = np.exp(-x * x / (2 * sigma * sigma))
    return w / w.sum()


def blur_numpy(img, sigmas, windows):
    """Separable convolution over H and W with reflect-101 borders (NumPy's 'reflect')."""
    out = img.astype(np.float64)
    for axis, (s, w) in enumerate(zip(sigmas, windows)):
        k = gauss_kernel(s, w)
        r = w // 2
        pad = [(0, 0)] * out.ndim
        pad[axis] = (r, r)
        # np.pad's 'reflect' mirrors without repeating the edge; repeat it for windows wider than the axis
        p = out
        while p.shape[axis] < out.shape[axis] + 2 * r:
            need = min(p.shape[axis] - 1, out.shape[axis] + 2 * r - p.shape[axis]) if p.shape[axis] > 1 else 0
            if need == 0:
                p = np.pad(p, pad, mode="edge")
                break
            p = np.pad(out, pad, mode="reflect") if p is out else p
        acc = np.zeros_like(out)
        for j in range(w):
            acc += k[j] * np.take(p, np.arange(j, j + out.shape[axis]), axis=axis)
        out = acc
    return out


def test_gaussian_blur_matches_numpy_separable_kernel():
    batch = images(1, dtype=np.float32)
    got = run_ladle(lambda fn, x: fn.gaussian_blur(x, sigma=[1.5, 0.8], window_size=[7, 5]), batch)
    for g, img in zip(got, batch):
        # reflect-101 with windows narrower than the axes (images are >= 5 pixels)
        want = blur_numpy(img, [1.5, 0.8], [7, 5]) if min(img.shape[:2]) > 3 else None
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-4)


def test_gaussian_blur_defaults_from_sigma_and_from_window():
    batch = images(2, dtype=np.float32)
    by_sigma = run_ladle(lambda fn, x: fn.gaussian_blur(x, sigma=1.0), batch)  # window 2*ceil(3)+1 = 7
    by_window = run_ladle(lambda fn, x: fn.gaussian_blur(x, window_size=5), batch)  # sigma (2-1)*0.3+0.8 = 1.1
    for a, b, img in zip(by_sigma, by_window, batch):
        np.testing.assert_allclose(a, blur_numpy(img, [1.0, 1.0], [7, 7]), rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(b, blur_numpy(img, [1.1, 1.1], [5, 5]), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("kwargs", [dict(sigma=1.3), dict(window_size=9), dict(sigma=[2.0, 0.7], window_size=[5, 3]),
                                    dict(sigma=3.0, window_size=15)])
def test_gaussian_blur_against_dali(kwargs):
    batch = images(3)
    got, want = run_both(lambda fn, types, x: fn.gaussian_blur(x, **kwargs), {"x": [batch]}, len(batch))
    for g, w in zip(got, want):
        # uint8: both convolve in float, rounding order differs: at most 1 apart
        assert g.shape == w.shape and g.dtype == w.dtype
        assert np.abs(g.astype(int) - w.astype(int)).max() <= 1


def test_gaussian_blur_float_output_against_dali():
    batch = images(4)
    got, want = run_both(lambda fn, types, x: fn.gaussian_blur(x, sigma=2.0, dtype=types.FLOAT), {"x": [batch]},
                         len(batch))
    for g, w in zip(got, want):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-3)  # float sums in another order


def test_gaussian_blur_bad_arguments():
    batch = images(5)
    with pytest.raises(ladle.Error, match=r"gaussian_blur.*window_size.*odd"):
        run_ladle(lambda fn, x: fn.gaussian_blur(x, window_size=4), batch)
    with pytest.raises(ladle.Error, match=r"gaussian_blur.*sigma.*window_size"):
        run_ladle(lambda fn, x: fn.gaussian_blur(x), batch)
    with pytest.raises(ladle.Error, match=r"gaussian_blur.*'sigma' has 3 values"):
        run_ladle(lambda fn, x: fn.gaussian_blur(x, sigma=[1, 2, 3]), batch)


# --- normalize ------------------------------------------------------------------

def test_normalize_per_sample_all_axes_numpy():
    batch = images(6, dtype=np.float32)
    got = run_ladle(lambda fn, x: fn.normalize(x), batch)
    for g, x in zip(got, batch):
        np.testing.assert_allclose(g, (x - x.mean()) / x.std(), rtol=1e-4, atol=1e-4)


def test_normalize_axes_ddof_scale_shift_epsilon_numpy():
    batch = images(7, dtype=np.float32)
    got = run_ladle(lambda fn, x: fn.normalize(x, axes=[0, 1], ddof=1, scale=64, shift=128, epsilon=0.5), batch)
    by_names = run_ladle(lambda fn, x: fn.normalize(x, axis_names="HW", ddof=1, scale=64, shift=128, epsilon=0.5),
                         batch)
    for g, b, x in zip(got, by_names, batch):
        m = x.mean(axis=(0, 1), keepdims=True)
        v = x.var(axis=(0, 1), ddof=1, keepdims=True)
        np.testing.assert_allclose(g, 64 * (x - m) / np.sqrt(v + 0.5) + 128, rtol=1e-4, atol=1e-3)
        np.testing.assert_array_equal(g, b)


def test_normalize_batch_numpy():
    batch = images(8, dtype=np.float32)
    got = run_ladle(lambda fn, x: fn.normalize(x, batch=True, axis_names="HW"), batch)
    flat = np.concatenate([x.reshape(-1, 3) for x in batch])
    m, s = flat.mean(axis=0), flat.std(axis=0)
    for g, x in zip(got, batch):
        np.testing.assert_allclose(g, (x - m) / s, rtol=1e-4, atol=1e-4)


def test_normalize_given_mean_stddev_uint8_output():
    batch = images(9)
    got = run_ladle(lambda fn, x: fn.normalize(x, mean=100, stddev=50, scale=10, shift=128, dtype=ladle.types.UINT8),
                    batch)
    for g, x in zip(got, batch):
        want = np.clip(np.rint((x.astype(np.float32) - 100) * np.float32(10 / 50) + 128), 0, 255)
        assert g.dtype == np.uint8
        assert np.abs(g.astype(int) - want).max() <= 1


@pytest.mark.parametrize("kwargs", [dict(), dict(axis_names="HW"), dict(axes=[1]), dict(batch=True, axis_names="HW"),
                                    dict(mean=5.0, stddev=2.0, epsilon=3.0), dict(mean=4.0), dict(ddof=1, scale=2.0,
                                                                                                 shift=1.0)])
def test_normalize_against_dali(kwargs):
    batch = images(10, dtype=np.float32)
    got, want = run_both(lambda fn, types, x: fn.normalize(x, **kwargs), {"x": [batch]}, len(batch))
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)  # float statistics summed in another order


def test_normalize_bad_arguments():
    batch = images(11, dtype=np.float32)
    with pytest.raises(ladle.Error, match=r"normalize.*'axes' or 'axis_names'"):
        run_ladle(lambda fn, x: fn.normalize(x, axes=[0], axis_names="H"), batch)
    with pytest.raises(ladle.Error, match=r"normalize.*axis_names.*'Q'"):
        run_ladle(lambda fn, x: fn.normalize(x, axis_names="Q"), batch)
    with pytest.raises(ladle.Error, match=r"normalize.*axes.*out of range"):
        run_ladle(lambda fn, x: fn.normalize(x, axes=[3]), batch)


# --- erase ----------------------------------------------------------------------

def erase_numpy(x, anchor, shape, fill, normalized=False, centered=False):
    out = x.copy()
    h, w = x.shape[:2]
    for k in range(0, len(shape), 2):
        a = np.array(anchor[k:k + 2], np.float64)
        e = np.array(shape[k:k + 2], np.float64)
        if normalized:
            a, e = a * [h, w], e * [h, w]
        if centered:
            a = a - e / 2
        lo = np.clip(np.floor(a), 0, [h, w]).astype(int)
        hi = np.clip(np.floor(a + e), 0, [h, w]).astype(int)
        out[lo[0]:hi[0], lo[1]:hi[1]] = fill
    return out


@pytest.mark.parametrize("kwargs", [
    dict(anchor=[2, 3], shape=[4, 5]),
    dict(anchor=[1.5, 2.7, 10, 0], shape=[3.2, 4.9, 100, 3], fill_value=[10, 20, 30]),
    dict(anchor=[0.25, 0.4], shape=[0.3, 0.35], normalized=True, fill_value=255),
    dict(anchor=[6, 6], shape=[5, 4], centered_anchor=True),
    dict(anchor=[3, 4], shape=[2, 3], axis_names="WH"),
])
def test_erase_numpy_and_dali(kwargs):
    batch = images(12)
    got, want = run_both(lambda fn, types, x: fn.erase(x, **kwargs), {"x": [batch]}, len(batch))
    for g, w, x in zip(got, want, batch):
        np.testing.assert_array_equal(g, w)  # exact: integer box bounds, copied or filled values
        if "axis_names" not in kwargs:
            ref = erase_numpy(x, kwargs["anchor"], kwargs["shape"], kwargs.get("fill_value", 0),
                              kwargs.get("normalized", False), kwargs.get("centered_anchor", False))
            np.testing.assert_array_equal(g, ref)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint16, np.uint32, np.float64])
def test_erase_fill_in_every_dtype(dtype):
    """The fill value is written in the input's type (float64, 16-bit, ... as well as uint8/int32/float)."""
    batch = [(np.arange(9 * 11 * 3) % 50).astype(dtype).reshape(9, 11, 3)]
    name = {np.int8: "INT8", np.int16: "INT16", np.uint16: "UINT16", np.uint32: "UINT32", np.float64: "FLOAT64"}[dtype]
    pipe = ladle.Pipeline(batch_size=1, num_threads=1)
    with pipe:
        x = ladle.fn.external_source(name="x", dtype=getattr(ladle.types, name), ndim=3, layout="HWC")
        pipe.set_outputs(ladle.fn.erase(x, anchor=[2, 3], shape=[4, 5], fill_value=[7, 8, 9]))
    pipe.feed_input("x", batch)
    got = np.array(pipe.run()[0].at(0))
    pipe.close()
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, erase_numpy(batch[0], [2, 3], [4, 5], np.array([7, 8, 9], dtype)))


def test_erase_bad_arguments():
    batch = images(13)
    with pytest.raises(ladle.Error, match=r"erase.*'anchor'.*'shape'"):
        run_ladle(lambda fn, x: fn.erase(x, anchor=[1, 2, 3], shape=[1, 2]), batch)
    with pytest.raises(ladle.Error, match=r"erase.*fill_value.*2 values for 3 channels"):
        run_ladle(lambda fn, x: fn.erase(x, anchor=[1, 2], shape=[1, 2], fill_value=[1, 2]), batch)
    with pytest.raises(ladle.Error, match=r"erase.*axis_names.*'D'"):
        run_ladle(lambda fn, x: fn.erase(x, anchor=[1], shape=[1], axis_names="D"), batch)


# --- grid_mask ------------------------------------------------------------------

def grid_numpy(x, ratio=0.5, angle=0.0, tile=100, sx=0.0, sy=0.0):
    f = np.float32
    ca, sa = f(np.cos(f(angle))) / f(tile), f(np.sin(f(angle))) / f(tile)
    ys, xs = np.mgrid[0:x.shape[0], 0:x.shape[1]].astype(np.float32)
    fx = (-f(sx) / f(tile) + ys * -sa) + xs * ca
    fy = (-f(sy) / f(tile) + ys * ca) + xs * sa
    keep = ((fx - np.floor(fx)) >= f(ratio)) | ((fy - np.floor(fy)) >= f(ratio))
    return x * keep[..., None].astype(x.dtype)


@pytest.mark.parametrize("kwargs", [dict(tile=10), dict(tile=7, ratio=0.3, angle=0.5), dict(tile=12, shift_x=3, shift_y=-4.5,
                                                                                          ratio=0.6, angle=-1.2)])
def test_grid_mask_numpy_and_dali(kwargs):
    batch = images(14)
    got, want = run_both(lambda fn, types, x: fn.grid_mask(x, **kwargs), {"x": [batch]}, len(batch))
    for g, w, x in zip(got, want, batch):
        ref = grid_numpy(x, kwargs.get("ratio", 0.5), kwargs.get("angle", 0.0), kwargs["tile"],
                         kwargs.get("shift_x", 0.0), kwargs.get("shift_y", 0.0))
        # a pixel on a tile edge may go either way where float rounding of cos/sin differs: at most 1%
        for other in (w, ref):
            assert np.mean(np.any(g != other, axis=2)) <= 0.01


def test_grid_mask_bad_input():
    with pytest.raises(ladle.Error, match=r"grid_mask.*HWC"):
        run_ladle(lambda fn, x: fn.grid_mask(x), [np.zeros((4, 4), np.uint8)])


# --- jpeg_compression_distortion ------------------------------------------------

def smooth_images(seed, n=3):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        h, w = rng.integers(16, 64, 2)
        yy, xx = np.mgrid[0:h, 0:w]
        img = np.stack([xx * 255 / w, yy * 255 / h, (xx + yy) * 127 / (w + h)], -1)
        out.append((img + rng.normal(0, 8, img.shape)).clip(0, 255).astype(np.uint8))
    return out


def test_jpeg_compression_distortion_vs_pillow_and_dali():
    from PIL import Image

    batch = smooth_images(15)
    got, want = run_both(lambda fn, types, x: fn.jpeg_compression_distortion(x, quality=30), {"x": [batch]},
                         len(batch))
    for g, w, x in zip(got, want, batch):
        assert g.shape == x.shape and g.dtype == np.uint8
        buf = io.BytesIO()
        Image.fromarray(x).save(buf, format="JPEG", quality=30)  # libjpeg too, 4:2:0
        pil = np.array(Image.open(buf))
        # same encoder settings as Pillow (libjpeg, 4:2:0, standard tables): nearly equal;
        # DALI encodes through OpenCV (other defaults and IDCT): close, not equal
        assert np.abs(g.astype(int) - pil).mean() <= 1.0
        assert np.abs(g.astype(int) - w).mean() <= 3.0
        assert 0 < np.abs(g.astype(int) - x).mean() < 20  # distorted, still the image


def test_jpeg_quality_orders_the_error():
    batch = smooth_images(16)
    errs = []
    for q in (5, 50, 95):
        out = run_ladle(lambda fn, x: fn.jpeg_compression_distortion(x, quality=q), batch)
        errs.append(np.mean([np.abs(o.astype(int) - x).mean() for o, x in zip(out, batch)]))
    assert errs[0] > errs[1] > errs[2]


def test_jpeg_bad_input():
    with pytest.raises(ladle.Error, match=r"jpeg_compression_distortion.*uint8"):
        run_ladle(lambda fn, x: fn.jpeg_compression_distortion(x), images(17, dtype=np.float32))
    with pytest.raises(ladle.Error, match=r"jpeg_compression_distortion.*quality"):
        run_ladle(lambda fn, x: fn.jpeg_compression_distortion(x, quality=0), images(17))
    with pytest.raises(ladle.Error, match=r"jpeg_compression_distortion.*3 channels"):
        run_ladle(lambda fn, x: fn.jpeg_compression_distortion(x), images(17, channels=4))


# --- GPU against CPU (bit-identical: the kernels repeat the CPU's float operations in order) ----------------------

@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_gpu_filters_equal_cpu(dtype):
    batch = images(20, n=5, dtype=dtype)

    def graph(fn, x, dev):
        x = x.gpu() if dev == "gpu" else x
        return (fn.gaussian_blur(x, device=dev, sigma=[1.7, 0.6]),
                fn.gaussian_blur(x, device=dev, window_size=3, dtype=ladle.types.FLOAT),
                fn.erase(x, device=dev, anchor=[1.5, 2, 8, 9], shape=[4, 5.5, 30, 2], fill_value=[7, 8, 9]),
                fn.grid_mask(x, device=dev, tile=9, ratio=0.4, angle=0.7, shift_x=2, shift_y=-1),
                fn.normalize(x, device=dev), fn.normalize(x, device=dev, axis_names="HW", ddof=1, epsilon=0.1),
                fn.normalize(x, device=dev, batch=True, axes=[0, 1], scale=2, shift=3),
                fn.normalize(x, device=dev, mean=3.0, dtype=ladle.types.UINT8, scale=20, shift=128))

    results = []
    for dev in ("cpu", "gpu"):
        pipe = ladle.Pipeline(batch_size=len(batch), num_threads=2, device_id=0 if dev == "gpu" else None)
        with pipe:
            x = ladle.fn.external_source(name="x", dtype=ladle.types.UINT8 if dtype == np.uint8 else ladle.types.FLOAT,
                                         ndim=3, layout="HWC")
            pipe.set_outputs(*graph(ladle.fn, x, dev))
        pipe.feed_input("x", batch)
        outs = pipe.run()
        results.append([[np.array((o.as_cpu() if hasattr(o, "as_cpu") else o).at(i)) for i in range(len(batch))]
                        for o in outs])
        pipe.close()
    for cpu, gpu in zip(*results):
        for a, b in zip(cpu, gpu):
            np.testing.assert_array_equal(a, b)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.float64])
def test_gpu_erase_boxes_equal_cpu(dtype):
    """erase on the GPU (a copy, then each box's elements) against the CPU: overlapping boxes, boxes partly
    outside the image, one fill value and one per channel, odd image sizes."""
    rng = np.random.default_rng(31)
    batch = [(rng.standard_normal((h, w, 3)) * 50).astype(dtype) for h, w in [(33, 47), (1, 1), (64, 64), (17, 5)]]
    name = {np.uint8: "UINT8", np.int16: "INT16", np.float32: "FLOAT", np.float64: "FLOAT64"}[dtype]
    boxes = dict(anchor=[1.5, 2, 8, 9, -3, -4, 10, 30], shape=[4, 5.5, 30, 2, 8, 9, 100, 100])
    results = []
    for dev in ("cpu", "gpu"):
        pipe = ladle.Pipeline(batch_size=len(batch), num_threads=2, device_id=0 if dev == "gpu" else None)
        with pipe:
            x = ladle.fn.external_source(name="x", dtype=getattr(ladle.types, name), ndim=3, layout="HWC")
            x = x.gpu() if dev == "gpu" else x
            pipe.set_outputs(ladle.fn.erase(x, device=dev, fill_value=[7, 8, 9], **boxes),
                             ladle.fn.erase(x, device=dev, fill_value=-5, **boxes),
                             ladle.fn.erase(x, device=dev, anchor=[0.2, 0.1], shape=[0.5, 0.7], normalized=True))
        pipe.feed_input("x", batch)
        outs = pipe.run()
        results.append([[np.array((o.as_cpu() if hasattr(o, "as_cpu") else o).at(i)) for i in range(len(batch))]
                        for o in outs])
        pipe.close()
    for cpu, gpu in zip(*results):
        for a, b in zip(cpu, gpu):
            assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
