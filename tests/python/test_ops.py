"""Every CPU operator against a reference, through real pipelines: images are
PNG files written here (lossless, so the decoded input is known exactly) and
read by fn.readers.file; non-image inputs come from fn.random.uniform.

References: Pillow for resize, NumPy for everything else (written from the
semantics documented in src/ops/kernels/*.h and the operator schemas in
src/ops/*.c). Tolerances are stated where they are used.
"""

import math

import numpy as np
import pytest
from PIL import Image

import ladle
from ladle import fn, types
from conftest import requires_ops, run_graph

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


# --- helpers ---------------------------------------------------------------------


def on_images(paths, graph, **kw):
    """run_graph on decoded images: graph(images) with images = decoders.image."""
    kw.setdefault("batch_size", len(paths))
    output_type = kw.pop("output_type", "RGB")
    return run_graph(lambda enc: graph(fn.decoders.image(enc, output_type=output_type)), paths=paths, **kw)


def write_png(path, array):
    Image.fromarray(array).save(str(path))
    return str(path)


def noise(h, w, c=3, seed=0):
    a = np.random.default_rng(seed).integers(0, 256, (h, w, c), dtype=np.uint8)
    return a[..., 0] if c == 1 else a


def smooth(h, w, seed=0):
    """Band-limited content: no overshoot for CUBIC/LANCZOS3 to clip."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    u, v = x / w, y / h
    ph = rng.uniform(0, 6, 3)
    img = np.stack([128 + 100 * np.sin(3 * u + 2 * v + ph[c]) * np.cos(2 * v - c * u) for c in range(3)], -1)
    return np.clip(img + 0.5, 0, 255).astype(np.uint8)


def lround(v):
    """C's lround: to nearest, halves away from zero."""
    return int(math.floor(abs(v) + 0.5)) * (1 if v >= 0 else -1)


def bits(a):
    """The bit pattern of a float array (so -0.0 != 0.0 and NaN == NaN)."""
    a = np.ascontiguousarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize]) if a.dtype.kind == "f" else a


@pytest.fixture(scope="module")
def pngs(tmp_path_factory):
    d = tmp_path_factory.mktemp("ops")
    return {
        "noise_a": write_png(d / "noise_a.png", noise(150, 200, seed=1)),
        "noise_b": write_png(d / "noise_b.png", noise(37, 53, seed=2)),
        "noise_c": write_png(d / "noise_c.png", noise(40, 50, seed=3)),
        "gray": write_png(d / "gray.png", noise(29, 41, c=1, seed=4)),
        "smooth_a": write_png(d / "smooth_a.png", smooth(150, 200, seed=5)),
        "smooth_c": write_png(d / "smooth_c.png", smooth(40, 50, seed=6)),
    }


def pixels(path):
    a = np.asarray(Image.open(path))
    return a[..., None] if a.ndim == 2 else a


# --- resize against Pillow -------------------------------------------------------------

PIL_FILTER = {"LINEAR": Image.BILINEAR, "CUBIC": Image.BICUBIC, "LANCZOS3": Image.LANCZOS}
# (input, output (h, w)): downscale by non-integer factors, an integer 2x, upscale, and
# one axis up with the other down
RESIZE_CASES = [("a", (61, 83)), ("a", (37, 29)), ("a", (75, 100)), ("c", (97, 131)), ("c", (90, 21))]


@requires_ops("readers.file", "decoders.image", "resize")
@pytest.mark.parametrize("interp", ["LINEAR", "CUBIC", "LANCZOS3"])
def test_resize_uint8_against_pillow(pngs, interp):
    """Antialiased resize = Pillow's resample (resize.h). LINEAR within 1 level on any
    content: Pillow rounds its intermediate (horizontal) pass to uint8, ladle keeps it
    in float. CUBIC/LANCZOS3 overshoot on noise, and Pillow clips the overshoot of the
    intermediate pass, so they are compared on smooth images (within 1; measured 1);
    on noise only a loose bound holds (measured: 5 downscaling, 36 upscaling)."""
    kinds = ["noise", "smooth"] if interp == "LINEAR" else ["smooth"]
    for kind in kinds:
        for src, (oh, ow) in RESIZE_CASES:
            path = pngs[f"{kind}_{src}"]
            out = on_images([path], lambda im: fn.resize(im, resampling="pil", resize_x=ow, resize_y=oh, interp_type=interp))[0]
            ref = np.asarray(Image.open(path).resize((ow, oh), PIL_FILTER[interp]))
            assert out.shape == ref.shape
            diff = np.abs(out.astype(int) - ref)
            assert diff.max() <= 1, f"{interp} {kind} {src}->{ow}x{oh}: max {diff.max()}"
            assert diff.mean() < 0.5  # most pixels agree exactly (measured 0.10 .. 0.35)
    if interp != "LINEAR":
        for src, (oh, ow) in RESIZE_CASES:
            path = pngs[f"noise_{src}"]
            out = on_images([path], lambda im: fn.resize(im, resampling="pil", resize_x=ow, resize_y=oh, interp_type=interp))[0]
            ref = np.asarray(Image.open(path).resize((ow, oh), PIL_FILTER[interp]))
            diff = np.abs(out.astype(int) - ref)
            assert diff.max() <= 48 and diff.mean() < 1.0, (interp, src, diff.max(), diff.mean())


@requires_ops("readers.file", "decoders.image", "resize", "cast")
@pytest.mark.parametrize("interp", ["LINEAR", "CUBIC", "LANCZOS3"])
def test_resize_float_against_pillow_f_mode(pngs, interp):
    """float32 resize has no intermediate rounding on either side (Pillow's "F" mode
    accumulates in double, ladle in float with float weights): the filters agree to
    float rounding, 1e-3 on values up to ~300 (measured <= 1e-4), on noise too."""
    for src, (oh, ow) in RESIZE_CASES:
        path = pngs[f"noise_{src}"]
        out = on_images([path], lambda im: fn.resize(fn.cast(im, dtype=types.FLOAT), resampling="pil", resize_x=ow, resize_y=oh,
                                                     interp_type=interp))[0]
        img = pixels(path).astype(np.float32)
        ref = np.stack([np.asarray(Image.fromarray(img[..., c], "F").resize((ow, oh), PIL_FILTER[interp]))
                        for c in range(3)], -1)
        assert out.dtype == np.float32 and out.shape == ref.shape
        np.testing.assert_allclose(out, ref, rtol=0, atol=1e-3)


def linear_weights(n_in, n_out):
    """Plain bilinear interpolation (no antialiasing), pixel centres at +0.5, borders
    replicated: the matrix [n_out, n_in]."""
    w = np.zeros((n_out, n_in))
    for i in range(n_out):
        c = min(max((i + 0.5) * n_in / n_out - 0.5, 0.0), n_in - 1.0)
        x0 = int(math.floor(c))
        x1 = min(x0 + 1, n_in - 1)
        w[i, x0] += 1 - (c - x0)
        w[i, x1] += c - x0
    return w


@requires_ops("readers.file", "decoders.image", "resize", "cast")
def test_resize_linear_without_antialias_is_bilinear(pngs):
    path = pngs["noise_b"]
    img = pixels(path).astype(np.float64)
    for oh, ow in [(10, 20), (80, 101), (20, 30)]:
        out = on_images([path], lambda im: fn.resize(fn.cast(im, dtype=types.FLOAT), resampling="pil", resize_x=ow, resize_y=oh,
                                                     antialias=False))[0]
        ref = np.einsum("yi,ijc,xj->yxc", linear_weights(37, oh), img, linear_weights(53, ow), optimize=True)
        np.testing.assert_allclose(out, ref, rtol=0, atol=1e-3)  # float rounding only (measured 4e-5)


@requires_ops("readers.file", "decoders.image", "resize")
def test_triangular_is_antialiased_linear(pngs):
    """TRIANGULAR = LINEAR always antialiased: Pillow's BILINEAR when downscaling even
    with antialias=False; plain LINEAR when upscaling."""
    path = pngs["noise_a"]
    tri = on_images([path], lambda im: fn.resize(im, resampling="pil", resize_x=83, resize_y=61, interp_type="TRIANGULAR",
                                                 antialias=False))[0]
    lin = on_images([path], lambda im: fn.resize(im, resampling="pil", resize_x=83, resize_y=61))[0]
    np.testing.assert_array_equal(tri, lin)
    path = pngs["noise_c"]
    tri_up = on_images([path], lambda im: fn.resize(im, resampling="pil", resize_x=131, resize_y=97, interp_type="TRIANGULAR"))[0]
    lin_up = on_images([path], lambda im: fn.resize(im, resampling="pil", resize_x=131, resize_y=97, antialias=False))[0]
    np.testing.assert_array_equal(tri_up, lin_up)


@requires_ops("readers.file", "decoders.image", "resize")
def test_resize_min_and_mag_filters(pngs):
    """min_filter applies to axes that shrink, mag_filter to axes that grow."""
    path = pngs["noise_b"]  # 53x37
    # width 53 -> 20 shrinks (NN), height 37 -> 80 grows (LINEAR, not antialiased)
    out = on_images([path], lambda im: fn.resize(im, resampling="pil", resize_x=20, resize_y=80, min_filter="NN",
                                                 mag_filter="LINEAR"))[0]
    lin = on_images([path], lambda im: fn.resize(im, resampling="pil", resize_x=53, resize_y=80, antialias=False))[0]
    np.testing.assert_array_equal(out, lin[:, nearest_index(53, 20)])
    out = on_images([path], lambda im: fn.resize(im, resampling="pil", resize_x=20, resize_y=80, mag_filter="NN"))[0]
    ref = on_images([path], lambda im: fn.resize(im, resampling="pil", resize_x=20, resize_y=37))[0]  # LINEAR, antialiased
    np.testing.assert_array_equal(out, ref[nearest_index(37, 80)])


def nearest_index(n_in, n_out):
    """DALI's NN: source index floor((i + 0.5) * n_in / n_out), clamped."""
    centre = (np.arange(n_out) + 0.5) * (n_in / n_out)
    return np.clip(np.floor(centre).astype(int), 0, n_in - 1)


@requires_ops("readers.file", "decoders.image", "resize")
def test_resize_nn_against_numpy(pngs):
    path = pngs["noise_b"]
    img = pixels(path)
    for oh, ow in [(10, 20), (80, 101), (37, 53), (5, 200), (1, 1)]:
        out = on_images([path], lambda im: fn.resize(im, resampling="pil", resize_x=ow, resize_y=oh, interp_type=types.INTERP_NN))[0]
        np.testing.assert_array_equal(out, img[nearest_index(37, oh)][:, nearest_index(53, ow)])


@requires_ops("readers.file", "decoders.image", "resize")
def test_resize_identity_and_gray(pngs):
    path = pngs["gray"]
    img = pixels(path)
    same = on_images([path], lambda im: fn.resize(im, resampling="pil", resize_x=41, resize_y=29), output_type="GRAY")[0]
    np.testing.assert_array_equal(same, img)  # identity: one tap of weight 1
    half = on_images([path], lambda im: fn.resize(im, resampling="pil", resize_x=20, resize_y=14), output_type="GRAY")[0]
    ref = np.asarray(Image.open(path).resize((20, 14), Image.BILINEAR))[..., None]
    assert np.abs(half.astype(int) - ref).max() <= 1


# --- resize: output sizes ------------------------------------------------------------

# (input w, input h): [(resize arguments, expected (h, w)), ...], worked out by hand
# from DALI's rules: missing sizes keep the aspect ratio (default) or the input's extent
# (stretch); not_smaller / not_larger keep the aspect ratio and cover / fit the box;
# resize_shorter / resize_longer fix one side; max_size caps the result, keeping the
# aspect ratio except in stretch mode; every size is rounded to nearest, at least 1.
SIZE_CASES = {
    (640, 480): [
        (dict(resize_x=320), (240, 320)),
        (dict(resize_y=100), (100, 133)),                                  # 133.33
        (dict(resize_x=320, resize_y=100), (100, 320)),
        (dict(resize_x=320, mode="stretch"), (480, 320)),
        (dict(resize_y=100, mode="stretch"), (100, 640)),
        (dict(resize_shorter=256), (256, 341)),                            # 341.33
        (dict(resize_longer=256), (192, 256)),
        (dict(resize_shorter=256, max_size=300), (225, 300)),              # longer side capped
        (dict(size=[200, 300]), (200, 300)),
        (dict(size=[200, 0]), (200, 267)),                                 # 266.67
        (dict(size=[0, 100]), (75, 100)),
        (dict(size=[200, 0], mode="stretch"), (200, 640)),
        (dict(size=[200, 200], mode="not_smaller"), (200, 267)),           # scale 200/480
        (dict(size=[200, 200], mode="not_larger"), (150, 200)),            # scale 200/640
        (dict(size=[300, 300], mode="not_smaller", max_size=360), (270, 360)),
        (dict(resize_x=100, mode="not_larger"), (75, 100)),                # one side: as default
        (dict(resize_x=320, max_size=[100, 1000]), (100, 320)),            # DALI: default mode caps each extent
        (dict(resize_x=1000, resize_y=100, max_size=[40, 500]), (40, 500)),  # DALI 2.4: each extent capped
        (dict(resize_x=1000, resize_y=100, mode="stretch", max_size=[50, 500]), (50, 500)),
        (dict(resize_x=1000, resize_y=100, mode="stretch", max_size=[500, 500]), (100, 500)),
    ],
    (300, 500): [
        (dict(resize_shorter=150), (250, 150)),
        (dict(resize_longer=100), (100, 60)),
        (dict(resize_shorter=200, max_size=[300, 300]), (300, 180)),       # 333.33 high -> 300
        (dict(size=[100, 100], mode="not_larger"), (100, 60)),
        (dict(size=[100, 100], mode="not_smaller"), (167, 100)),           # 166.67
    ],
    (333, 201): [
        (dict(resize_x=100), (60, 100)),                                   # 60.36
        (dict(resize_y=100), (100, 166)),                                  # 165.67
        (dict(resize_shorter=64), (64, 106)),                              # 106.03
        (dict(resize_longer=50), (30, 50)),                                # 30.18
    ],
    (100, 100): [
        (dict(resize_shorter=50), (50, 50)),
        (dict(resize_longer=30), (30, 30)),
        (dict(size=[50, 80], mode="not_larger"), (50, 50)),
        (dict(size=[50, 80], mode="not_smaller"), (80, 80)),
        (dict(size=[50, 80], mode="stretch"), (50, 80)),
        (dict(resize_x=1), (1, 1)),
    ],
    (1000, 10): [
        (dict(resize_x=10), (1, 10)),                                      # 0.1 -> at least 1
        (dict(resize_shorter=20), (20, 2000)),
        (dict(resize_shorter=20, max_size=500), (5, 500)),
    ],
}


@requires_ops("readers.file", "decoders.image", "resize")
@pytest.mark.parametrize("in_size", list(SIZE_CASES), ids=lambda s: f"{s[0]}x{s[1]}")
def test_resize_output_sizes(tmp_path, in_size):
    w, h = in_size
    path = write_png(tmp_path / "flat.png", np.full((h, w, 3), 90, np.uint8))
    cases = SIZE_CASES[in_size]
    outs = on_images([path], lambda im: tuple(fn.resize(im, resampling="pil", **args) for args, _ in cases))
    for (args, expected), out in zip(cases, outs):
        assert out[0].shape == expected + (3,), f"{w}x{h} with {args}"
        assert (out[0] == 90).all()  # a flat image stays flat under any filter


@requires_ops("readers.file", "decoders.image", "resize", "random.uniform")
def test_resize_per_sample_size(pngs):
    path = pngs["noise_b"]  # 53x37

    def graph(im):
        width = fn.random.uniform(values=[10.0, 20.0, 33.0])
        return fn.resize(im, resampling="pil", resize_x=width), width

    images, widths = on_images([path] * 12, graph)
    seen = set()
    for im, wv in zip(images, widths):
        wv = int(wv)
        seen.add(wv)
        assert im.shape == (lround(37 * wv / 53), wv, 3)
    assert len(seen) > 1


# --- random_resized_crop ---------------------------------------------------------


@pytest.fixture(scope="module")
def coord_png(tmp_path_factory):
    """256x256 PNG with R = x, G = y, B = noise."""
    y, x = np.mgrid[0:256, 0:256]
    b = np.random.default_rng(8).integers(0, 256, (256, 256))
    img = np.stack([x, y, b], -1).astype(np.uint8)
    return write_png(tmp_path_factory.mktemp("coord") / "coord.png", img), img


@requires_ops("readers.file", "decoders.image", "random_resized_crop")
def test_rrc_output_shape(pngs):
    paths = [pngs["noise_a"], pngs["noise_b"], pngs["gray"], pngs["noise_c"]]
    square = on_images(paths, lambda im: fn.random_resized_crop(im, resampling="pil", size=48))
    rect = on_images(paths, lambda im: fn.random_resized_crop(im, resampling="pil", size=[24, 40]))
    assert [s.shape for s in square] == [(48, 48, 3)] * 4
    assert [s.shape for s in rect] == [(24, 40, 3)] * 4


@requires_ops("readers.file", "decoders.image", "random_resized_crop", "resize")
@pytest.mark.parametrize("interp", ["LINEAR", "CUBIC", "NN"])
def test_rrc_whole_image_equals_resize(pngs, interp):
    """random_area=[1,1] with the image's own aspect ratio: the window is the whole
    image, so the result is a plain resize, bit for bit."""
    path = pngs["noise_a"]  # 200x150
    out, ref = on_images([path], lambda im: (
        fn.random_resized_crop(im, resampling="pil", size=[61, 83], random_area=[1.0, 1.0], random_aspect_ratio=[200 / 150] * 2,
                               interp_type=interp),
        fn.resize(im, resampling="pil", resize_x=83, resize_y=61, interp_type=interp)))
    np.testing.assert_array_equal(out[0], ref[0])


def rrc_windows(coord, n, seed, **args):
    """The windows random_resized_crop picks on the coordinate image: with NN and an
    output as large as the image, every source column and row of the window appears,
    so the R (x) and G (y) values seen are exactly the window's."""
    path, full = coord
    outs = on_images([path] * n, lambda im: fn.random_resized_crop(im, resampling="pil", size=[256, 256], interp_type="NN", **args),
                     seed=seed)
    windows = []
    for o in outs:
        xs, ys = np.unique(o[..., 0]), np.unique(o[..., 1])
        x, y, w, h = int(xs[0]), int(ys[0]), len(xs), len(ys)
        assert xs[-1] == x + w - 1 and ys[-1] == y + h - 1  # contiguous
        windows.append((x, y, w, h))
    return windows


@requires_ops("readers.file", "decoders.image", "random_resized_crop")
@pytest.mark.parametrize("area,aspect", [((0.08, 1.0), (3 / 4, 4 / 3)), ((0.2, 0.4), (0.5, 2.0))])
def test_rrc_windows_within_ranges(coord_png, area, aspect):
    args = {} if area == (0.08, 1.0) else dict(random_area=list(area), random_aspect_ratio=list(aspect))
    windows = rrc_windows(coord_png, 32, seed=11, **args)
    for x, y, w, h in windows:
        # w, h are rounded from sqrt(target * ratio), sqrt(target / ratio): 0.5 each
        assert 0 <= x and x + w <= 256 and 0 <= y and y + h <= 256
        assert (w + 0.5) * (h + 0.5) >= area[0] * 256 ** 2 and (w - 0.5) * (h - 0.5) <= area[1] * 256 ** 2
        assert (w + 0.5) / (h - 0.5) >= aspect[0] and (w - 0.5) / (h + 0.5) <= aspect[1]
    assert len(set(windows)) == len(windows)
    assert rrc_windows(coord_png, 32, seed=11, **args) == windows  # same seed, same windows


@requires_ops("readers.file", "decoders.image", "random_resized_crop")
def test_rrc_content_is_pillow_resize_of_the_window(coord_png):
    """Windows are a function of (seed, operator position, epoch, sample), not of the
    filter or output size: the same graph with LINEAR at 64x48 crops the windows found
    with NN above, and must equal Pillow's BILINEAR resize of that box within 1."""
    path, full = coord_png
    windows = rrc_windows(coord_png, 12, seed=21)
    outs = on_images([path] * 12, lambda im: fn.random_resized_crop(im, resampling="pil", size=[48, 64]), seed=21)
    pil = Image.open(path)
    for (x, y, w, h), out in zip(windows, outs):
        ref = np.asarray(pil.resize((64, 48), Image.BILINEAR, box=(x, y, x + w, y + h)))
        diff = np.abs(out.astype(int) - ref)
        assert diff.max() <= 1, ((x, y, w, h), diff.max())


@requires_ops("readers.file", "decoders.image", "random_resized_crop")
def test_rrc_fallback_is_centred(coord_png):
    # aspect 5 never fits a window of at least half the area of a square: centred
    # fallback of full width and height round(256 / 5) = 51, at y = (256 - 51) // 2
    windows = rrc_windows(coord_png, 4, seed=1, random_area=[0.5, 1.0], random_aspect_ratio=[5.0, 5.0])
    assert windows == [(0, 102, 256, 51)] * 4


# --- crop and flip ----------------------------------------------------------------


def crop_reference(img, w, h, px, py, policy, fill=0):
    """ladle's crop: x0 = round(px * (W - w)), y0 = round(py * (H - h)) (halves away
    from zero); trim_to_shape first shrinks the window to the image; pad fills."""
    H, W, C = img.shape
    if policy == "trim_to_shape":
        w, h = min(w, W), min(h, H)
    x0, y0 = lround(px * (W - w)), lround(py * (H - h))
    out = np.full((h, w, C), fill, img.dtype)
    ys, xs = np.arange(y0, y0 + h), np.arange(x0, x0 + w)
    iy, ix = (ys >= 0) & (ys < H), (xs >= 0) & (xs < W)
    out[np.ix_(iy, ix)] = img[np.ix_(ys[iy], xs[ix])]
    return out


@requires_ops("readers.file", "decoders.image", "crop")
@pytest.mark.parametrize("args,window", [
    (dict(crop=[20, 30]), (30, 20, 0.5, 0.5, "error")),
    (dict(crop=[16]), (16, 16, 0.5, 0.5, "error")),
    (dict(crop_w=53, crop_h=1, crop_pos_x=0.0, crop_pos_y=1.0), (53, 1, 0.0, 1.0, "error")),
    (dict(crop=[10, 7], crop_pos_x=0.3, crop_pos_y=0.77), (7, 10, 0.3, 0.77, "error")),
    (dict(crop=[50, 60], out_of_bounds_policy="pad"), (60, 50, 0.5, 0.5, "pad")),
    (dict(crop=[45, 70], crop_pos_x=0.1, crop_pos_y=0.9, out_of_bounds_policy="pad", fill_values=[7]),
     (70, 45, 0.1, 0.9, "pad")),
    (dict(crop=[50, 30], crop_pos_y=0.2, out_of_bounds_policy="trim_to_shape"), (30, 50, 0.5, 0.2, "trim_to_shape")),
])
def test_crop_against_numpy(pngs, args, window):
    path = pngs["noise_b"]  # 53x37
    img = pixels(path)
    out = on_images([path], lambda im: fn.crop(im, **args))[0]
    w, h, px, py, policy = window
    np.testing.assert_array_equal(out, crop_reference(img, w, h, px, py, policy, args.get("fill_values", [0])[0]))


@requires_ops("readers.file", "decoders.image", "crop", "cast")
@pytest.mark.parametrize("cast", [False, True])
def test_crop_pads_with_per_channel_fill_values(pngs, cast):
    path = pngs["noise_b"]
    img = pixels(path)
    fill = [7.0, 200.0, 31.0]
    out = on_images([path], lambda im: fn.crop(fn.cast(im, dtype=types.FLOAT) if cast else im, crop=[45, 60],
                                               out_of_bounds_policy="pad", fill_values=fill))[0]
    ref = crop_reference(img, 60, 45, 0.5, 0.5, "pad", 0)
    inside = crop_reference(np.ones_like(img), 60, 45, 0.5, 0.5, "pad", 0) == 1
    ref = np.where(inside, ref, np.array(fill, np.float32)).astype(out.dtype)
    np.testing.assert_array_equal(out, ref)


@requires_ops("readers.file", "decoders.image", "crop", "cast", "random.uniform")
def test_crop_per_sample_position_and_float_input(pngs):
    path = pngs["noise_c"]  # 50x40
    img = pixels(path).astype(np.float32)

    def graph(im):
        px, py = fn.random.uniform(range=[0.0, 1.0]), fn.random.uniform(range=[0.0, 1.0])
        return fn.crop(fn.cast(im, dtype=types.FLOAT), crop=[64, 9], crop_pos_x=px, crop_pos_y=py,
                       out_of_bounds_policy="pad"), px, py

    outs, pxs, pys = on_images([path] * 6, graph)
    for out, px, py in zip(outs, pxs, pys):
        # the position arrives as float32; the window follows from its double value
        ref = crop_reference(img, 9, 64, float(px), float(py), "pad")
        assert out.dtype == np.float32
        np.testing.assert_array_equal(out, ref)
    assert len({float(p) for p in pxs}) == 6


@requires_ops("readers.file", "decoders.image", "crop")
def test_crop_out_of_bounds_error(pngs):
    with pytest.raises(ladle.InvalidArgumentError, match="does not fit"):
        on_images([pngs["noise_b"]], lambda im: fn.crop(im, crop=[38, 10]))


@requires_ops("readers.file", "decoders.image", "flip", "random.coin_flip", "cast")
@pytest.mark.parametrize("kind", ["rgb", "gray", "float"])
def test_flip_per_sample(pngs, kind):
    path = pngs["gray" if kind == "gray" else "noise_b"]
    img = pixels(path)

    def graph(im):
        if kind == "float":
            im = fn.cast(im, dtype=types.FLOAT)
        h, v = fn.random.coin_flip(), fn.random.coin_flip()
        return fn.flip(im, horizontal=h, vertical=v), h, v

    outs, hs, vs = on_images([path] * 16, graph, output_type="GRAY" if kind == "gray" else "RGB")
    for out, h, v in zip(outs, hs, vs):
        ref = img[::-1 if v else 1, ::-1 if h else 1]
        np.testing.assert_array_equal(out, ref.astype(out.dtype))
    assert {(int(h), int(v)) for h, v in zip(hs, vs)} == {(0, 0), (0, 1), (1, 0), (1, 1)}
    # constant arguments: the default is horizontal only
    out = on_images([path], lambda im: fn.flip(im), output_type="GRAY" if kind == "gray" else "RGB")[0]
    np.testing.assert_array_equal(out, img[:, ::-1])


# --- crop_mirror_normalize ---------------------------------------------------------


def to_dtype(v, dtype):
    """normalize.h's stores: float16 by NumPy's float32 -> float16 (nearest even),
    integers round to nearest even and saturate, NaN -> 0."""
    if dtype == "float32":
        return v.astype(np.float32)
    if dtype == "float16":
        with np.errstate(over="ignore"):
            return v.astype(np.float32).astype(np.float16)
    info = np.iinfo(dtype)
    r = np.rint(v.astype(np.float64))
    out = np.zeros(r.shape, dtype)
    with np.errstate(invalid="ignore"):
        inside = (r >= info.min) & (r <= info.max)  # floats: 2**63 itself is already outside
        inside &= r < 2.0 ** 63
        out[inside] = r[inside].astype(dtype)
        out[r < info.min] = info.min
        out[r >= min(info.max, 2.0 ** 63)] = info.max
        out[(r > info.max)] = info.max
    return out


def cmn_reference(img, args, mirror):
    """crop_mirror_normalize per normalize.h, in float32 arithmetic:
    v = ((float)in - mean) * (float(1/std) * scale) + shift, three rounded float
    operations; pixels outside the image are fill_values (output units, then cast)."""
    H, W, C = img.shape
    f32 = np.float32
    mean = np.broadcast_to(np.array(args.get("mean", [0.0]), np.float64), (C,)).astype(f32)
    inv_std = (1.0 / np.broadcast_to(np.array(args.get("std", [1.0]), np.float64), (C,))).astype(f32)
    mul = inv_std * f32(args.get("scale", 1.0))
    v = (img.astype(f32) - mean) * mul + f32(args.get("shift", 0.0))
    crop = args.get("crop")
    ch, cw = (H, W) if crop is None else (crop[0], crop[-1])
    policy = args.get("out_of_bounds_policy", "error")
    if policy == "trim_to_shape":
        cw, ch = min(cw, W), min(ch, H)
    x0 = lround(args.get("crop_pos_x", 0.5) * (W - cw))
    y0 = lround(args.get("crop_pos_y", 0.5) * (H - ch))
    fill = np.broadcast_to(np.array(args.get("fill_values", [0.0]), np.float64), (C,)).astype(f32)
    out = np.empty((ch, cw, C), f32)
    out[...] = fill
    xs = np.arange(cw)
    sx = x0 + cw - 1 - xs if mirror else x0 + xs
    sy = y0 + np.arange(ch)
    iy, ix = (sy >= 0) & (sy < H), (sx >= 0) & (sx < W)
    out[np.ix_(iy, ix)] = v[np.ix_(sy[iy], sx[ix])]
    dtype = args.get("dtype", "float32")
    out = to_dtype(out, dtype)
    if args.get("pad_output"):
        out = np.concatenate([out, np.zeros((ch, cw, 1), out.dtype)], -1)
    if args.get("output_layout", "CHW") == "CHW":
        out = out.transpose(2, 0, 1)
    return np.ascontiguousarray(out)


LADLE_DTYPE = {"float32": types.FLOAT, "float16": types.FLOAT16, "uint8": types.UINT8, "int32": types.INT32,
               "int64": types.INT64}

CMN_CASES = [
    dict(),                                                                          # a float CHW copy
    dict(mean=MEAN, std=STD, dtype="float16"),                                       # the training case
    dict(mean=MEAN, std=STD, dtype="float32", output_layout="HWC"),
    dict(mean=[10.0, 128.0, 250.0], std=[0.5, 2.0, 1.0], scale=2.5, shift=-10.0, dtype="uint8",
         output_layout="HWC"),                                                       # saturates both ways
    dict(mean=[127.5], std=[0.37], scale=0.001, shift=0.5, dtype="float16"),         # one value for all channels
    dict(mean=[3.0], std=[0.01], dtype="int32"),
    dict(mean=[1.0], std=[3.0], dtype="int64", output_layout="HWC"),
    dict(crop=[16, 20], crop_pos_x=0.2, crop_pos_y=0.9, pad_output=True, output_layout="HWC"),
    dict(crop=[16, 20], crop_pos_x=1.0, crop_pos_y=0.0, pad_output=True, dtype="float16", mean=MEAN, std=STD),
    dict(crop=[50, 60], out_of_bounds_policy="pad", fill_values=[1.5, -2.0, 300.0], dtype="float16",
         mean=MEAN, std=STD),                                                        # fill is not normalized
    dict(crop=[45, 70], crop_pos_x=0.1, crop_pos_y=0.8, out_of_bounds_policy="pad", fill_values=[-3.0, 77.6, 300.0],
         dtype="uint8", output_layout="HWC", pad_output=True),                        # fill cast and saturated
    dict(crop=[60, 30], out_of_bounds_policy="trim_to_shape", mean=[100.0], dtype="float32"),
]


@requires_ops("readers.file", "decoders.image", "crop_mirror_normalize", "random.coin_flip")
@pytest.mark.parametrize("args", CMN_CASES, ids=[str(i) for i in range(len(CMN_CASES))])
def test_crop_mirror_normalize_against_numpy(pngs, args):
    paths = [pngs["noise_b"], pngs["noise_c"]] * 4  # 53x37 and 50x40
    images = [pixels(p) for p in paths]
    ladle_args = {k: (LADLE_DTYPE[v] if k == "dtype" else v) for k, v in args.items()}

    def graph(im):
        mirror = fn.random.coin_flip()
        return fn.crop_mirror_normalize(im, mirror=mirror, **ladle_args), mirror

    outs, mirrors = on_images(paths, graph)
    assert {int(m) for m in mirrors} == {0, 1}
    for img, out, m in zip(images, outs, mirrors):
        ref = cmn_reference(img, args, int(m))
        assert out.dtype == ref.dtype and out.shape == ref.shape
        # bit-identical: the kernel documents this exact sequence of float32 operations
        np.testing.assert_array_equal(bits(out), bits(ref))


@requires_ops("readers.file", "decoders.image", "crop_mirror_normalize")
def test_crop_mirror_normalize_gray_and_constant_mirror(pngs):
    path = pngs["gray"]
    img = pixels(path)
    args = dict(mean=[100.0], std=[50.0], dtype="float16", output_layout="CHW", pad_output=True)
    out = on_images([path], lambda im: fn.crop_mirror_normalize(im, mirror=1, mean=[100.0], std=[50.0],
                                                                dtype=types.FLOAT16, pad_output=True),
                    output_type="GRAY")[0]
    assert out.shape == (2, 29, 41)
    np.testing.assert_array_equal(bits(out), bits(cmn_reference(img, args, 1)))


@requires_ops("readers.file", "decoders.image", "crop_mirror_normalize")
def test_crop_mirror_normalize_rejects_mean_of_wrong_length(pngs):
    with pytest.raises(ladle.InvalidArgumentError, match="'mean'"):
        on_images([pngs["gray"]], lambda im: fn.crop_mirror_normalize(im, mean=[1.0, 2.0, 3.0]), output_type="GRAY")


# --- cast -----------------------------------------------------------------------

SPECIAL = [0.0, -0.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 127.5, 128.5, 254.5, 255.5, 256.0, -1.0,
           1e-8, 1e10, -1e10, 3e9, -3e9, 2147483520.0, 2147483648.0, -2147483904.0, 65504.0, 65519.99,
           65520.0, -65520.0, 1e-6, 6.1e-5, 2.9802322e-08, 2.9802326e-08, 1.1920929e-07,
           float("inf"), float("-inf"), float("nan")]
CAST_TYPES = ["uint8", "int32", "int64", "float16", "float32"]


def cast_reference(x, dtype):
    """normalize.h's ladle__convert: floats -> integers round to nearest even, then
    saturate, NaN -> 0; -> float16 nearest even (inf beyond 65520); integers ->
    narrower integers saturate; integers -> floats nearest."""
    if np.dtype(dtype).kind == "f":
        with np.errstate(over="ignore"):  # beyond float16's range: inf, as intended
            return x.astype(dtype)
    if x.dtype.kind == "f":
        return to_dtype(x, dtype)
    info = np.iinfo(dtype)
    return np.clip(x.astype(np.int64), info.min, info.max).astype(dtype)


@requires_ops("random.uniform", "cast")
@pytest.mark.parametrize("dtype", CAST_TYPES)
def test_cast_float_against_numpy(dtype):
    def graph():
        special = fn.random.uniform(values=SPECIAL, shape=[256])
        wide = fn.random.uniform(range=[-1e5, 1e5], shape=[2048])
        near = fn.random.uniform(range=[-300.0, 300.0], shape=[2048])
        d = LADLE_DTYPE[dtype]
        return special, fn.cast(special, dtype=d), wide, fn.cast(wide, dtype=d), near, fn.cast(near, dtype=d)

    outs = run_graph(graph, batch_size=2)
    for k in range(0, 6, 2):
        for x, y in zip(outs[k], outs[k + 1]):
            assert x.dtype == np.float32 and y.dtype == np.dtype(dtype)
            np.testing.assert_array_equal(bits(y), bits(cast_reference(x, dtype)))
    # the special list really was drawn (every value at least once over 512 draws)
    drawn = np.concatenate(outs[0])
    assert np.isnan(drawn).any() and len(np.unique(drawn[~np.isnan(drawn)])) >= len(SPECIAL) - 3


@requires_ops("random.uniform", "cast")
@pytest.mark.parametrize("src", ["int32", "int64", "uint8"])
def test_cast_integers_against_numpy(src):
    values = {"int32": [-5.0, 0.0, 7.0, 255.0, 256.0, 300.0, 65504.0, 65519.0, 65520.0, 70000.0, 16777217.0,
                        -2147483648.0, 2147483647.0],
              "int64": [-5.0, 7.0, 3e9, -3e9, 2.0 ** 53, 70000.0, 16777217.0],
              "uint8": [0.0, 1.0, 127.0, 128.0, 255.0]}[src]

    def graph():
        x = fn.random.uniform(values=values, shape=[200], dtype=LADLE_DTYPE[src])
        return (x,) + tuple(fn.cast(x, dtype=LADLE_DTYPE[t]) for t in CAST_TYPES)

    outs = run_graph(graph, batch_size=2)
    for i in range(2):
        x = outs[0][i]
        assert x.dtype == np.dtype(src)
        assert set(x.tolist()) <= set(int(v) for v in values)
        for t, y in zip(CAST_TYPES, outs[1:]):
            np.testing.assert_array_equal(bits(y[i]), bits(cast_reference(x, t)), err_msg=f"{src} -> {t}")


@requires_ops("readers.file", "decoders.image", "cast")
def test_cast_images(pngs):
    path = pngs["noise_b"]
    img = pixels(path)
    outs = on_images([path], lambda im: tuple(fn.cast(im, dtype=LADLE_DTYPE[t]) for t in CAST_TYPES))
    for t, out in zip(CAST_TYPES, outs):
        assert out[0].dtype == np.dtype(t)
        np.testing.assert_array_equal(out[0], img.astype(t))  # every uint8 is exact in every type
    back = on_images([path], lambda im: fn.cast(fn.cast(im, dtype=types.FLOAT16), dtype=types.UINT8))[0]
    np.testing.assert_array_equal(back, img)


# --- random.coin_flip and random.uniform ---------------------------------------------


def within_sigmas(observed, expected, sigma, k=5.0):
    return abs(observed - expected) <= k * sigma


@requires_ops("random.coin_flip")
@pytest.mark.parametrize("p", [0.0, 0.3, 0.5, 0.97, 1.0])
def test_coin_flip_rate(p):
    def graph():
        return fn.random.coin_flip(probability=p, shape=[2000]), fn.random.coin_flip(probability=p)

    arrays, scalars = run_graph(graph, batch_size=64, iterations=4)
    a = np.concatenate(arrays)
    s = np.array([int(x) for x in scalars])
    assert a.dtype == np.int32 and set(np.unique(a)) <= {0, 1} and set(np.unique(s)) <= {0, 1}
    for draws in (a, s):
        n = draws.size
        sigma = math.sqrt(max(p * (1 - p), 1e-12) / n)
        assert within_sigmas(draws.mean(), p, sigma), (p, draws.mean(), n)
    if 0 < p < 1:
        assert not all(np.array_equal(arrays[0], x) for x in arrays[1:])  # samples have their own streams


@requires_ops("random.coin_flip", "random.uniform")
def test_coin_flip_per_sample_probability_and_dtype():
    def graph():
        p = fn.random.uniform(values=[0.0, 1.0])
        return p, fn.random.coin_flip(probability=p, shape=[50], dtype=types.UINT8), \
            fn.random.coin_flip(dtype=types.FLOAT)

    ps, flips, floats = run_graph(graph, batch_size=32)
    for p, f in zip(ps, flips):
        assert f.dtype == np.uint8
        assert (f == int(p)).all()
    assert {float(p) for p in ps} == {0.0, 1.0}
    assert all(f.dtype == np.float32 and float(f) in (0.0, 1.0) for f in floats)


@requires_ops("random.uniform")
def test_uniform_range_mean_variance():
    lo, hi = 2.0, 5.0

    def graph():
        return fn.random.uniform(range=[lo, hi], shape=[4000]), fn.random.uniform(range=[lo, hi])

    arrays, scalars = run_graph(graph, batch_size=4, iterations=2)
    x = np.concatenate(arrays).astype(np.float64)
    n = x.size
    assert x.min() >= lo and x.max() < hi
    var = (hi - lo) ** 2 / 12
    assert within_sigmas(x.mean(), (lo + hi) / 2, math.sqrt(var / n))
    # sd of the sample variance: sqrt((mu4 - var^2) / n), mu4 = (hi - lo)^4 / 80
    assert within_sigmas(x.var(), var, math.sqrt(((hi - lo) ** 4 / 80 - var ** 2) / n))
    counts, _ = np.histogram(x, bins=10, range=(lo, hi))
    assert all(within_sigmas(c, n / 10, math.sqrt(n * 0.1 * 0.9)) for c in counts)
    s = np.array([float(v) for v in scalars])
    assert ((s >= lo) & (s < hi)).all() and len(set(s.tolist())) == len(s)
    assert not np.array_equal(arrays[0], arrays[1])


@requires_ops("random.uniform")
def test_uniform_values_draws_only_those():
    values = [-1.5, 0.25, 7.0, 1000.0]

    def graph():
        return fn.random.uniform(values=values, shape=[3000])

    x = np.concatenate(run_graph(graph, batch_size=4))
    assert set(np.unique(x).tolist()) == set(values)
    n = x.size
    for v in values:
        assert within_sigmas((x == v).sum(), n / 4, math.sqrt(n * 0.25 * 0.75))


@requires_ops("random.uniform")
def test_uniform_integer_dtype_rounds_like_dali():
    def graph():
        return fn.random.uniform(range=[-3.0, 3.0], shape=[6000], dtype=types.INT32)

    x = np.concatenate(run_graph(graph, batch_size=2))
    # DALI: "converted to the output data type, rounding and clamping": -3 and 3 appear
    # (with half the weight of the inner values), 0 is no likelier than 1
    assert -3 in x and 3 in x
    assert abs((x == 0).mean() - (x == 1).mean()) < 0.02


# --- determinism of the whole training pipeline ------------------------------------------


@requires_ops("readers.file", "decoders.image_random_crop", "decoders.image", "resize", "random_resized_crop",
              "crop_mirror_normalize", "flip", "cast", "random.coin_flip", "random.uniform")
@pytest.mark.parametrize("variant", ["decoder_crop", "rrc"])
def test_determinism_across_threads_and_prefetch(sample_root, variant):
    """Extends test_pipeline_api's check (1 vs 3 threads, 3 iterations) to threads 1/4 x
    prefetch depth 1/3, with shuffling, over 6 iterations that cross an epoch boundary
    (32 samples, batch 8), with every random operator in the graph."""

    def graph(pipe):
        with pipe:
            jpegs, labels = fn.readers.file(file_root=sample_root, random_shuffle=True, name="Reader")
            if variant == "decoder_crop":
                images = fn.decoders.image_random_crop(jpegs, output_type=types.RGB)
                images = fn.resize(images, resize_x=64, resize_y=64)
            else:
                images = fn.decoders.image(jpegs)
                images = fn.random_resized_crop(images, size=[48, 56], interp_type="CUBIC")
                images = fn.flip(images, vertical=fn.random.coin_flip(probability=0.3))
            images = fn.crop_mirror_normalize(images, dtype=types.FLOAT16, output_layout="CHW", mean=MEAN, std=STD,
                                              crop=[40, 40], crop_pos_x=fn.random.uniform(range=[0.0, 1.0]),
                                              mirror=fn.random.coin_flip(probability=0.5))
            pipe.set_outputs(images, labels)

    def run(num_threads, depth):
        pipe = ladle.Pipeline(batch_size=8, num_threads=num_threads, prefetch_queue_depth=depth, seed=1234)
        graph(pipe)
        try:
            return [tuple(np.array(o.as_array()) for o in pipe.run()) for _ in range(6)]
        finally:
            pipe.close()

    ref = run(1, 1)
    for threads, depth in [(4, 1), (1, 3), (4, 3)]:
        got = run(threads, depth)
        for it, ((ia, la), (ib, lb)) in enumerate(zip(ref, got)):
            np.testing.assert_array_equal(la, lb, err_msg=f"labels, iteration {it}, {threads} threads, depth {depth}")
            np.testing.assert_array_equal(bits(ia), bits(ib),
                                          err_msg=f"images, iteration {it}, {threads} threads, depth {depth}")
    # the epochs are shuffled differently, and the augmentation is not constant
    labels0 = np.concatenate([ref[i][1] for i in range(4)]).ravel()
    labels1 = np.concatenate([ref[4][1], ref[5][1]]).ravel()
    assert sorted(labels0.tolist()) == [0] * 8 + [1] * 8 + [2] * 8 + [3] * 8
    assert not np.array_equal(labels0[:16], labels1)
