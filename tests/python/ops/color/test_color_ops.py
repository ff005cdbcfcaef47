"""The colour operators against NumPy formulas written here and against
DALI 2.4 itself (run_both, DALI's CPU operators) on random images.

Tolerances against DALI, measured on these images:
- brightness, contrast, brightness_contrast: exact for every input/output type
  (the same float operations: mul = brightness * contrast,
  add = shift * range + brightness * (center - contrast * center)).
- hsv, hue, saturation, color_twist: uint8 outputs exact; float outputs
  within 2.5e-7 relative (DALI multiplies its five 3x3 matrices in float,
  ladle in double and rounds the product once, so the matrices differ in the
  last bits; a zero hue is the identity in both).
- color_space_conversion: exact, except BGR -> YCbCr where about 1 pixel in
  2500 is one level apart (DALI's sum order for BGR input is not known; the
  value lies at a rounding tie).
- jitter: DALI has it on the GPU only, with its own random numbers: tested
  here for its properties (displacement range, fill, mask, seed).
"""

import numpy as np
import pytest

import ladle
from ladle import fn, types
from conftest import run_both, run_graph, requires_ops, cuda_usable

_DEVICE = 0 if cuda_usable() else None  # GPU cases need a device; CPU ones run either way

pytestmark = requires_ops("brightness", "contrast", "brightness_contrast", "hsv", "hue", "saturation", "color_twist",
                          "color_space_conversion", "jitter")

F32 = np.float32
RGB2YIQ = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]])


def u8_images(seed, n=4, c=3):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (int(rng.integers(3, 40)), int(rng.integers(3, 40)), c), dtype=np.uint8)
            for _ in range(n)]


def f32_images(seed, n=4, c=3):
    rng = np.random.default_rng(seed)
    return [(rng.random((int(rng.integers(3, 30)), int(rng.integers(3, 30)), c)) * 1.2 - 0.1).astype(F32)
            for _ in range(n)]


def run_ladle(graph, images, **feeds):
    """Runs graph(fn, x, **per-sample nodes) in ladle on the images (one batch)."""
    pipe = ladle.Pipeline(batch_size=len(images), num_threads=2, seed=3, device_id=_DEVICE)
    with pipe:
        x = fn.external_source(name="x", dtype=types.to_dtype(images[0].dtype), ndim=3, layout="HWC")
        nodes = {k: fn.external_source(name=k, dtype=types.FLOAT, ndim=0) for k in feeds}
        out = graph(fn, x, **nodes)
        outs = out if isinstance(out, tuple) else (out,)
        pipe.set_outputs(*outs)
    try:
        pipe.feed_input("x", images, layout="HWC")
        for k, v in feeds.items():
            pipe.feed_input(k, np.asarray(v, F32))
        tls = [tl.as_cpu() if tl.device == "gpu" else tl for tl in pipe.run()]
        res = [[np.array(tl.at(i)) for i in range(len(tl))] for tl in tls]
    finally:
        pipe.close()
    return res if len(res) > 1 else res[0]


def to_type(v, dtype):
    """DALI's ConvertSat: round half away from zero, saturate."""
    if dtype == np.uint8:
        return np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5), 0, 255).astype(np.uint8)
    if dtype == np.int32:
        return np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5), -2**31, 2**31 - 1).astype(np.int32)
    return v.astype(dtype)


def assert_close(got, want, dtype, rel=1e-6):
    assert got.dtype == dtype and got.shape == want.shape
    if dtype == np.uint8:
        d = np.abs(got.astype(np.int32) - to_type(want, dtype).astype(np.int32))
        frac = np.abs(want - np.floor(want) - 0.5)
        # one level where float rounding meets a tie
        assert np.all((d == 0) | ((d == 1) & (frac < 1e-3))), d.max()
    else:
        atol = rel * (255 if np.abs(want).max() > 2 else 1)
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=rel, atol=atol)


# --- NumPy formulas -------------------------------------------------------------

@pytest.mark.parametrize("src,dt", [("u8", None), ("u8", "FLOAT"), ("f32", None), ("f32", "UINT8"), ("u8", "INT32"),
                                    ("f32", "FLOAT16")])
def test_brightness_contrast_formula(src, dt):
    images = u8_images(1) if src == "u8" else f32_images(1)
    out_dtype = np.dtype({None: images[0].dtype, "FLOAT": np.float32, "UINT8": np.uint8, "INT32": np.int32,
                          "FLOAT16": np.float16}[dt])
    rng = np.random.default_rng(5)
    b, s, c = (rng.uniform(0.5, 1.5, 4), rng.uniform(-0.2, 0.2, 4), rng.uniform(0, 2, 4))
    kw = {} if dt is None else {"dtype": getattr(types, dt)}
    outs = run_ladle(lambda fn, x, b, s, c: (fn.brightness_contrast(x, brightness=b, brightness_shift=s, contrast=c,
                                                                    **kw),
                                             fn.brightness(x, brightness=b, brightness_shift=s, **kw),
                                             fn.contrast(x, contrast=c, contrast_center=0.25, **kw)),
                     images, b=b, s=s, c=c)
    half = 128.0 if src == "u8" else 0.5
    rng_out = {"uint8": 255.0, "int32": 2147483647.0}.get(out_dtype.name, 1.0)
    for i, x in enumerate(images):
        x = x.astype(np.float64)
        want_bc = s[i] * rng_out + b[i] * (half + c[i] * (x - half))
        want_b = s[i] * rng_out + b[i] * x
        want_c = 0.25 + c[i] * (x - 0.25)
        rel = 1e-3 if out_dtype == np.float16 else 1e-6
        for got, want in zip((outs[0][i], outs[1][i], outs[2][i]), (want_bc, want_b, want_c)):
            if out_dtype == np.int32:
                assert np.abs(got.astype(np.float64) - want).max() <= 1e-6 * np.abs(want).max() + 1
            else:
                assert_close(got, want, out_dtype, rel)


def yiq_matrix(hue, sat, val):
    h = np.deg2rad(hue)
    m = np.array([[1, 0, 0], [0, np.cos(h), np.sin(h)], [0, -np.sin(h), np.cos(h)]]) @ np.diag([1, sat, sat])
    return np.linalg.inv(RGB2YIQ) @ m @ RGB2YIQ * val


@pytest.mark.parametrize("src", ["u8", "f32"])
def test_hsv_family_formula(src):
    images = u8_images(2) if src == "u8" else f32_images(2)
    rng = np.random.default_rng(6)
    h, s, v, b, c = (rng.uniform(-180, 180, 4), rng.uniform(0, 2, 4), rng.uniform(0.5, 1.5, 4),
                     rng.uniform(0.5, 1.5, 4), rng.uniform(0.5, 1.5, 4))
    outs = run_ladle(lambda fn, x, h, s, v, b, c: (fn.hsv(x, hue=h, saturation=s, value=v, dtype=types.FLOAT),
                                                   fn.hue(x, hue=h, dtype=types.FLOAT),
                                                   fn.saturation(x, saturation=s),
                                                   fn.color_twist(x, hue=h, saturation=s, brightness=b, contrast=c,
                                                                  dtype=types.FLOAT)),
                     images, h=h, s=s, v=v, b=b, c=c)
    half = 128.0 if src == "u8" else 0.5
    for i, x in enumerate(images):
        x = x.astype(np.float64)
        wants = (x @ yiq_matrix(h[i], s[i], v[i]).T, x @ yiq_matrix(h[i], 1, 1).T, x @ yiq_matrix(0, s[i], 1).T,
                 x @ (yiq_matrix(h[i], s[i], 1) * b[i] * c[i]).T + (half - half * c[i]) * b[i])
        for got, want, dtype in zip((o[i] for o in outs), wants, (np.float32, np.float32, images[0].dtype,
                                                                  np.float32)):
            assert_close(got, want, dtype)


def test_hsv_default_dtype_is_uint8():
    images = f32_images(3)
    out = run_ladle(lambda fn, x: fn.hsv(x, hue=10.0), images)
    assert all(o.dtype == np.uint8 for o in out)


def test_zero_hue_is_identity():
    images = f32_images(4)
    out = run_ladle(lambda fn, x: (fn.hue(x, hue=0.0), fn.color_twist(x)), images)
    for o in out:
        for got, x in zip(o, images):
            np.testing.assert_allclose(got, x, rtol=0, atol=1e-6)


def test_color_space_conversion_formula():
    images = u8_images(7)
    convs = [("RGB", "GRAY"), ("RGB", "YCbCr"), ("YCbCr", "RGB"), ("RGB", "BGR"), ("BGR", "GRAY"), ("YCbCr", "GRAY")]
    outs = run_ladle(lambda fn, x: tuple(fn.color_space_conversion(x, image_type=a, output_type=b) for a, b in convs),
                     images)
    for (a, b), got_list in zip(convs, outs):
        for got, img in zip(got_list, images):
            x = img.astype(np.float64)
            if a == "BGR":
                x = x[..., ::-1]
            r, g, bl = x[..., 0], x[..., 1], x[..., 2]
            if b == "GRAY" and a != "YCbCr":
                # OpenCV's fixed point, as DALI's CPU operator computes it
                want = np.floor((r * 9798 + g * 19235 + bl * 3735 + 16384) / 32768)[..., None]
            elif b == "YCbCr":
                want = np.stack([16 + (65.481 * r + 128.553 * g + 24.966 * bl) / 255,
                                 128 + (-37.797 * r - 74.203 * g + 112 * bl) / 255,
                                 128 + (112 * r - 93.786 * g - 18.214 * bl) / 255], -1)
            elif a == "YCbCr":
                y, cb, cr = (r - 16) * 255 / 219, (g - 128) * 255 / 224, (bl - 128) * 255 / 224
                want = (y[..., None] if b == "GRAY" else
                        np.stack([y + 1.402 * cr, y - 0.344136 * cb - 0.714136 * cr, y + 1.772 * cb], -1))
            else:
                want = x[..., ::-1]
            assert_close(got, want, np.uint8)


# --- against DALI ---------------------------------------------------------------

def dali_is(fn_mod):
    return "nvidia" in fn_mod.__name__


def compare(graph, images, exact=True, rel=2.5e-7, feeds=None, tie_fraction=0.0):
    feeds = dict(feeds or {})
    feeds["x"] = [images]
    ours, theirs = run_both(graph, feeds, len(images))
    ours = ours if isinstance(ours[0], list) else [ours]
    theirs = theirs if isinstance(theirs[0], list) else [theirs]
    for o_list, t_list in zip(ours, theirs):
        for o, t in zip(o_list, t_list):
            assert o.dtype == t.dtype and o.shape == t.shape, (o.dtype, t.dtype, o.shape, t.shape)
            if exact or o.dtype == np.uint8:
                diff = o.astype(np.float64) != t.astype(np.float64)
                if tie_fraction:
                    assert np.abs(o.astype(np.int32) - t).max() <= 1 and diff.mean() <= tie_fraction
                else:
                    assert not diff.any(), np.abs(o.astype(np.float64) - t).max()
            else:
                np.testing.assert_allclose(o, t, rtol=rel, atol=rel * max(1.0, float(np.abs(t).max())))


def per_sample(values):
    """A per-sample scalar feed for run_both: one batch of 1-element float32 arrays (run_both's
    np.ascontiguousarray turns 0-d arrays into 1-d ones; DALI and ladle take either)."""
    return [[np.asarray([v], F32) for v in values]]


@pytest.mark.parametrize("src", ["u8", "f32"])
@pytest.mark.parametrize("dt", [None, "UINT8", "FLOAT", "INT32"])
def test_brightness_contrast_vs_dali(src, dt):
    images = u8_images(11) if src == "u8" else f32_images(11)
    rng = np.random.default_rng(12)
    feeds = {"b": per_sample(rng.uniform(0.5, 1.5, 4)), "s": per_sample(rng.uniform(-0.1, 0.1, 4)),
             "c": per_sample(rng.uniform(0, 2, 4)),
             "cc": per_sample(rng.uniform(0, 1, 4) * (255 if src == "u8" else 1))}

    def graph(fn, t, x, b, s, c, cc):
        kw = {} if dt is None else {"dtype": getattr(t, dt)}
        return (fn.brightness_contrast(x, brightness=b, brightness_shift=s, contrast=c, **kw),
                fn.brightness(x, brightness=b, brightness_shift=s, **kw),
                fn.contrast(x, contrast=c, **kw),
                fn.contrast(x, contrast=c, contrast_center=cc, **kw))

    compare(graph, images, feeds=feeds)


@pytest.mark.parametrize("src", ["u8", "f32"])
@pytest.mark.parametrize("dt", [None, "UINT8", "FLOAT"])
def test_hsv_family_vs_dali(src, dt):
    images = u8_images(13) if src == "u8" else f32_images(13)
    rng = np.random.default_rng(14)
    feeds = {"h": per_sample(rng.uniform(-180, 180, 4)), "s": per_sample(rng.uniform(0, 2, 4)),
             "v": per_sample(rng.uniform(0.5, 1.5, 4)), "b": per_sample(rng.uniform(0.5, 1.5, 4)),
             "c": per_sample(rng.uniform(0.5, 1.5, 4))}

    def graph(fn, t, x, h, s, v, b, c):
        kw = {} if dt is None else {"dtype": getattr(t, dt)}
        return (fn.hsv(x, hue=h, saturation=s, value=v, **kw), fn.hue(x, hue=h, **kw),
                fn.saturation(x, saturation=s, **kw),
                fn.color_twist(x, hue=h, saturation=s, brightness=b, contrast=c, **kw),
                fn.color_twist(x, hue=h, image_type=t.BGR, **kw))

    compare(graph, images, exact=False, feeds=feeds)


@pytest.mark.parametrize("conv", [("RGB", "BGR"), ("RGB", "YCbCr"), ("RGB", "GRAY"), ("BGR", "RGB"), ("BGR", "YCbCr"),
                                  ("BGR", "GRAY"), ("YCbCr", "RGB"), ("YCbCr", "BGR"), ("YCbCr", "GRAY"),
                                  ("GRAY", "RGB"), ("GRAY", "BGR"), ("GRAY", "YCbCr")])
def test_color_space_conversion_vs_dali(conv):
    a, b = conv
    images = [rng_img[..., :1].copy() if a == "GRAY" else rng_img for rng_img in u8_images(15, n=4)]
    images += [np.random.default_rng(16).integers(0, 256, (64, 64, 1 if a == "GRAY" else 3), dtype=np.uint8)]
    compare(lambda fn, t, x: fn.color_space_conversion(x, image_type=getattr(t, a), output_type=getattr(t, b)), images,
            tie_fraction=1e-3 if conv == ("BGR", "YCbCr") else 0.0)


# --- per-sample arguments from random operators ---------------------------------

def test_per_sample_random_argument():
    images = u8_images(17, n=6)
    pipe = ladle.Pipeline(batch_size=6, num_threads=2, seed=21, device_id=_DEVICE)
    with pipe:
        x = fn.external_source(name="x", dtype=types.UINT8, ndim=3, layout="HWC")
        b = fn.random.uniform(range=[0.5, 1.5])
        pipe.set_outputs(fn.brightness(x, brightness=b), b)
    try:
        pipe.feed_input("x", images, layout="HWC")
        out, bs = pipe.run()
        bs = [float(np.array(bs.at(i))) for i in range(6)]
        assert len(set(bs)) == 6
        for i, img in enumerate(images):
            want = to_type(F32(bs[i]) * img.astype(F32) + F32(0), np.uint8)
            np.testing.assert_array_equal(np.array(out.at(i)), want)
    finally:
        pipe.close()


# --- jitter ---------------------------------------------------------------------

def jitter_images(n=3, h=30, w=41):
    """Every pixel unique: (x + 1, y + 1, 7)."""
    y, x = np.mgrid[0:h, 0:w]
    img = np.stack([x + 1, y + 1, np.full_like(x, 7)], -1).astype(np.uint8)
    return [img.copy() for _ in range(n)]


@pytest.mark.parametrize("n_degree", [1, 2, 3, 6])
def test_jitter_properties(n_degree):
    images = jitter_images()
    out = run_ladle(lambda fn, x: fn.jitter(x, nDegree=n_degree, fill_value=0), images)
    lo, hi = -(n_degree // 2), n_degree - 1 - n_degree // 2
    for o in out:
        inside = o[..., 2] == 7
        assert np.all(o[~inside] == 0)
        y, x = np.mgrid[0:o.shape[0], 0:o.shape[1]]
        dx, dy = o[..., 0].astype(int) - 1 - x, o[..., 1].astype(int) - 1 - y
        assert dx[inside].min() >= lo and dx[inside].max() <= hi
        assert dy[inside].min() >= lo and dy[inside].max() <= hi
        if n_degree > 1:
            assert len(np.unique(dx[inside])) == n_degree  # every offset occurs
        else:
            np.testing.assert_array_equal(o, images[0])
    assert n_degree == 1 or not np.array_equal(out[0], out[1])  # each sample draws its own


def test_jitter_mask_fill_and_seed():
    images = jitter_images()
    mask = [0, 1, 0]
    a = run_ladle(lambda fn, x, m: fn.jitter(x, nDegree=4, fill_value=200, mask=fn.cast(m, dtype=types.INT32)), images,
                  m=mask)
    b = run_ladle(lambda fn, x, m: fn.jitter(x, nDegree=4, fill_value=200, mask=fn.cast(m, dtype=types.INT32)), images,
                  m=mask)
    np.testing.assert_array_equal(a[0], images[0])
    np.testing.assert_array_equal(a[2], images[2])
    assert np.any(np.all(a[1] == 200, -1))  # border pixels came from outside
    for x, y in zip(a, b):  # the same seed draws the same
        np.testing.assert_array_equal(x, y)


# --- errors -----------------------------------------------------------------------

def build_error(graph, dtype=types.UINT8, ndim=3):
    pipe = ladle.Pipeline(batch_size=1, num_threads=1, device_id=_DEVICE)
    try:
        with pipe:
            x = fn.external_source(name="x", dtype=dtype, ndim=ndim)
            pipe.set_outputs(graph(x))
        pipe.build()
    finally:
        pipe.close()


def test_errors_at_build():
    with pytest.raises(ladle.UnsupportedError, match="brightness.*uint8 or float32.*int32"):
        build_error(lambda x: fn.brightness(x, brightness=2.0), dtype=types.INT32)
    with pytest.raises(ladle.InvalidArgumentError, match="hsv.*HWC.*got 2"):
        build_error(lambda x: fn.hsv(x), ndim=2)
    with pytest.raises(ladle.UnsupportedError, match="color_space_conversion.*uint8.*float32"):
        build_error(lambda x: fn.color_space_conversion(x, image_type=types.RGB, output_type=types.GRAY),
                    dtype=types.FLOAT)
    with pytest.raises(ladle.UnsupportedError, match="color_space_conversion.*RGB to RGB"):
        build_error(lambda x: fn.color_space_conversion(x, image_type=types.RGB, output_type=types.RGB))
    with pytest.raises(ladle.Error, match="output_type"):
        build_error(lambda x: fn.color_space_conversion(x, image_type="RGB", output_type="HSV"))
    with pytest.raises(ladle.Error, match="image_type"):
        build_error(lambda x: fn.color_space_conversion(x, output_type="RGB"))
    with pytest.raises(ladle.UnsupportedError, match="jitter.*uint8"):
        build_error(lambda x: fn.jitter(x), dtype=types.FLOAT)
    with pytest.raises(ladle.Error, match="nDegree"):
        build_error(lambda x: fn.jitter(x, nDegree=0))
    with pytest.raises(ladle.Error, match="interp_type"):
        build_error(lambda x: fn.jitter(x, interp_type=types.INTERP_LINEAR))
    with pytest.raises(ladle.UnsupportedError, match="dtype.*INT64"):
        build_error(lambda x: fn.contrast(x, dtype=types.INT64))


def test_wrong_channel_count_names_operator():
    with pytest.raises(ladle.InvalidArgumentError, match="hsv.*3 channels, got 4"):
        run_ladle(lambda fn, x: fn.hsv(x, hue=3.0), u8_images(20, n=1, c=4))
    with pytest.raises(ladle.InvalidArgumentError, match="color_space_conversion.*1 channel, got 3"):
        run_ladle(lambda fn, x: fn.color_space_conversion(x, image_type="GRAY", output_type="RGB"), u8_images(20, n=1))
    # brightness and contrast take any number of channels
    out = run_ladle(lambda fn, x: fn.brightness(x, brightness=0.5), u8_images(20, n=1, c=5))
    assert out[0].shape[2] == 5


def test_schema_flags():
    from ladle.pipeline import op_schemas

    schemas = op_schemas()
    assert "brightness" in schemas
    import ladle.dynamic  # noqa: F401  the generated functions exist
    assert callable(fn.color_twist) and callable(fn.jitter)


# --- GPU against CPU ---------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("src", ["u8", "f32"])
def test_gpu_matches_cpu(src):
    # odd sizes (1-pixel images too), packed in one batch: most samples start off a 16-byte boundary
    images = u8_images(30) if src == "u8" else f32_images(30)
    images[1] = images[1][:1, :1]
    rng = np.random.default_rng(31)
    feeds = {k: rng.uniform(lo, hi, 4) for k, lo, hi in (("h", -180, 180), ("s", 0, 2), ("b", 0.5, 1.5),
                                                           ("c", 0, 2))}

    def graph(dev):
        def g(fn, x, h, s, b, c):
            y = x.gpu() if dev == "gpu" else x
            outs = [fn.brightness_contrast(y, device=dev, brightness=b, contrast=c, brightness_shift=0.05),
                    fn.brightness(y, device=dev, brightness=b, dtype=types.FLOAT16),
                    fn.hsv(y, device=dev, hue=h, saturation=s, dtype=types.FLOAT),
                    fn.color_twist(y, device=dev, hue=h, saturation=s, brightness=b, contrast=c),
                    fn.saturation(y, device=dev, saturation=s, dtype=types.INT32),
                    # the GPU's vector kernel: every (in, out) type pair it specialises, both modes
                    fn.brightness(y, device=dev, brightness=b, brightness_shift=-0.1, dtype=types.FLOAT),
                    fn.contrast(y, device=dev, contrast=c),
                    fn.hsv(y, device=dev, hue=h, saturation=s, value=b),
                    fn.hsv(y, device=dev, hue=h, saturation=s, dtype=types.FLOAT16)]
            if src == "u8":
                gray = fn.color_space_conversion(y, device=dev, image_type="RGB", output_type="GRAY")
                outs += [fn.color_space_conversion(y, device=dev, image_type="RGB", output_type="YCbCr"),
                         fn.color_space_conversion(y, device=dev, image_type="BGR", output_type="GRAY"),
                         gray, fn.color_space_conversion(gray, device=dev, image_type="GRAY", output_type="YCbCr"),
                         fn.brightness_contrast(gray, device=dev, brightness=b, contrast=c, dtype=types.FLOAT16),
                         fn.jitter(y, device=dev, nDegree=5, fill_value=9)]
            return tuple(outs)
        return g

    cpu = run_ladle(graph("cpu"), images, **feeds)
    gpu = run_ladle(graph("gpu"), images, **feeds)
    for a, b in zip(cpu, gpu):
        for x, y in zip(a, b):
            assert x.dtype == y.dtype and x.shape == y.shape
            assert np.array_equal(x.view(np.uint8), y.view(np.uint8))
