"""decoders.image and decoders.image_random_crop through real pipelines
(readers.file -> decoder), checked against Pillow's decode of the same files.

References and tolerances:
  - JPEG: Pillow decodes with libjpeg-turbo too (accurate integer IDCT, fancy
    upsampling), so RGB/BGR must agree to within 1 level (what tests/c/test_codec.c
    allows; the difference measured here is 0). GRAY from a colour JPEG is
    libjpeg's Y channel (src/codec/image.h), which is Pillow's draft("L") decode,
    not the luma of the RGB decode (those differ by up to ~14 after chroma
    upsampling and clipping).
  - PNG is lossless: exact. GRAY from colour is BT.601 luma in 16-bit fixed point,
    the same formula as Pillow's convert("L"): exact. 16-bit samples keep the high
    byte; alpha is dropped (not composited), as Pillow's convert("RGB") does.
  - image_random_crop never scales the image when nothing downstream asks for it
    (DCT scaling only happens before a fixed-size resize), so its output is an
    exact window of the full decode.
"""

import math
import os

import numpy as np
import pytest
from PIL import Image, ImageOps

from ladle import fn, types
from conftest import requires_ops, run_graph

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")

pytestmark = requires_ops("readers.file", "decoders.image", "decoders.image_random_crop")


def data(name):
    return os.path.join(DATA, name)


def run_files(paths, graph, batch_size=None, iterations=1, **pipe_args):
    """run_graph on readers.file(files=paths), a batch of all the paths by default."""
    return run_graph(graph, batch_size or len(paths), paths, iterations, **pipe_args)


def decode(paths, **args):
    return run_files(paths, lambda enc: fn.decoders.image(enc, **args))


def pil_reference(path, output_type="RGB", orient=True):
    """Pillow's decode as ladle defines it (see the module docstring)."""
    im = Image.open(path)
    im.load()
    if im.format == "JPEG" and output_type == "GRAY" and im.mode in ("RGB", "YCbCr"):
        im = Image.open(path)
        im.draft("L", im.size)  # libjpeg's own gray output: the Y channel
        assert im.mode == "L"
        im.load()
    if orient:
        im = ImageOps.exif_transpose(im)
    if im.mode in ("I", "I;16", "I;16B"):  # 16-bit gray: the high byte
        a = (np.asarray(im).astype(np.uint32) >> 8).astype(np.uint8)
        im = Image.fromarray(a)  # uint8 [H, W]: mode L
    if output_type == "GRAY":
        if im.mode == "CMYK":  # ladle: the luma of its RGB (equal to Pillow's RGB)
            im = im.convert("RGB")
        return np.asarray(im.convert("L"))[..., None]
    rgb = np.asarray(im.convert("RGB"))
    return rgb[..., ::-1] if output_type == "BGR" else rgb


def assert_close(actual, expected, tol, what):
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    assert actual.dtype == np.uint8
    diff = np.abs(actual.astype(np.int16) - expected.astype(np.int16))
    assert diff.max() <= tol, f"{what}: max difference {diff.max()} > {tol} (mean {diff.mean():.4f})"


# --- test images written here --------------------------------------------------


def scene(w, h, seed):
    """A smooth picture with edges and some noise (JPEG-friendly), asymmetric."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    u, v = x / max(w, 1), y / max(h, 1)
    img = np.stack([40 + 180 * u, 30 + 190 * v, 128 + 90 * np.sin(7 * u + 4 * v)], -1)
    img[(u < 0.3) & (v < 0.4)] = (200, 20, 60)
    img += rng.normal(0, 6, img.shape)
    return np.clip(img + 0.5, 0, 255).astype(np.uint8)


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """JPEGs and PNGs of odd sizes written by Pillow: name -> path."""
    d = tmp_path_factory.mktemp("decode")
    rng = np.random.default_rng(1234)
    files = {}

    def save(name, im, **kw):
        path = str(d / name)
        im.save(path, **kw)
        files[name] = path

    for w, h in [(1, 1), (7, 13), (173, 95)]:
        rgb = Image.fromarray(scene(w, h, w))
        save(f"base_{w}x{h}.jpg", rgb, quality=85)                           # 4:2:0 baseline
        save(f"s444_{w}x{h}.jpg", rgb, quality=95, subsampling=0)
        save(f"prog_{w}x{h}.jpg", rgb, quality=80, progressive=True, optimize=True)
        save(f"gray_{w}x{h}.jpg", rgb.convert("L"), quality=90)
        save(f"cmyk_{w}x{h}.jpg", rgb.convert("CMYK"), quality=90)
        noise = rng.integers(0, 256, (h, w, 4), dtype=np.uint8)
        save(f"rgb_{w}x{h}.png", Image.fromarray(noise[..., :3]))
        # Modes follow from the arrays' dtype and shape: Pillow 13 rejects a mode argument.
        save(f"rgba_{w}x{h}.png", Image.fromarray(noise))
        save(f"l_{w}x{h}.png", Image.fromarray(noise[..., 0]))
        save(f"la_{w}x{h}.png", Image.fromarray(noise[..., :2].copy()))
        save(f"pal_{w}x{h}.png", Image.fromarray(noise[..., :3]).quantize(colors=50))
        save(f"i16_{w}x{h}.png", Image.fromarray(noise[..., 0].astype(np.uint16) * 257 + 3))
    return files


JPEG_DATA = ["j420.jpg", "j422.jpg", "j444.jpg", "jprog.jpg", "jgray.jpg", "jcmyk.jpg", "exif_bad.jpg"]
PNG_DATA = ["p_rgb8.png", "p_rgba8.png", "p_pal8.png", "p_pal4.png", "p_rgb16.png", "p_gray16.png", "p_gray8.png",
            "p_gray2.png", "p_gray1.png", "p_graya8.png", "p_rgb8_adam7.png", "p_rgba16_adam7.png",
            "p_tiny_adam7.png"]


@pytest.mark.filterwarnings("ignore::UserWarning")  # Pillow on exif_bad.jpg and tRNS palettes
@pytest.mark.parametrize("output_type", ["RGB", "BGR", "GRAY"])
def test_decode_matches_pillow(output_type, generated):
    names = JPEG_DATA + PNG_DATA
    paths = [data(n) for n in names] + list(generated.values())
    names += list(generated)
    out = decode(paths, output_type=output_type)
    assert len(out) == len(paths)
    for name, path, got in zip(names, paths, out):
        ref = pil_reference(path, output_type)
        # JPEG: 1 level (libjpeg-turbo on both sides; measured 0). PNG: exact.
        tol = 1 if path.lower().endswith(".jpg") else 0
        assert_close(got, ref, tol, f"{name} {output_type}")


def test_output_types_agree_exactly():
    """BGR is RGB reversed, bit for bit; GRAY is one channel; a gray JPEG's RGB
    repeats its gray value."""
    paths = [data(n) for n in ("j420.jpg", "jcmyk.jpg", "p_pal8.png", "jgray.jpg")]
    rgb = decode(paths, output_type=types.RGB)
    bgr = decode(paths, output_type=types.BGR)
    gray = decode(paths, output_type=types.GRAY)
    for r, b, g in zip(rgb, bgr, gray):
        np.testing.assert_array_equal(b, r[..., ::-1])
        assert g.shape == r.shape[:2] + (1,)
    np.testing.assert_array_equal(rgb[3], np.repeat(gray[3], 3, axis=2))


def test_format_is_sniffed_from_bytes():
    png_named_jpeg, png = decode([data("p_named.JPEG"), data("p_rgb8.png")])
    np.testing.assert_array_equal(png_named_jpeg, png)


@pytest.mark.parametrize("output_type", ["RGB", "GRAY"])
def test_exif_orientation(output_type):
    paths = [data(f"orient_{o}.jpg") for o in range(1, 9)]
    shown = decode(paths, output_type=output_type)
    stored = decode(paths, output_type=output_type, adjust_orientation=False)
    upright = shown[0]
    for o, path, s, raw in zip(range(1, 9), paths, shown, stored):
        assert_close(s, pil_reference(path, output_type, orient=True), 1, f"orient_{o} shown")
        assert_close(raw, pil_reference(path, output_type, orient=False), 1, f"orient_{o} stored")
        assert s.shape == upright.shape  # every file shows the same 61x43 picture
        # the stored image is the shown one transposed for orientations 5..8
        assert raw.shape == (s.shape[1], s.shape[0], s.shape[2]) if o >= 5 else raw.shape == s.shape
        # each file is its own JPEG encode of the same noisy picture: a few levels apart,
        # where a wrong orientation would be tens of levels apart
        assert np.abs(s.astype(int) - upright).mean() < 6


# --- image_random_crop ---------------------------------------------------------


@pytest.fixture(scope="module")
def coord_png(tmp_path_factory):
    """256x256 PNG whose R is x and G is y: a window's origin is its first pixel."""
    rng = np.random.default_rng(99)
    y, x = np.mgrid[0:256, 0:256]
    img = np.stack([x, y, rng.integers(0, 256, (256, 256))], -1).astype(np.uint8)
    path = str(tmp_path_factory.mktemp("coord") / "coord.png")
    Image.fromarray(img).save(path)
    return path, img


def window_of(crop, full):
    """(x, y, w, h) of `crop` inside the coordinate image `full`, asserting that
    the crop is exactly that window."""
    h, w = crop.shape[:2]
    x, y = int(crop[0, 0, 0]), int(crop[0, 0, 1])
    np.testing.assert_array_equal(crop, full[y:y + h, x:x + w])
    return x, y, w, h


def check_window_ranges(w, h, W, H, area, aspect):
    """w, h are round(sqrt(target * ratio)) and round(sqrt(target / ratio)) for some
    target in area * W * H and ratio in aspect: allow each side 0.5 of rounding."""
    assert 1 <= w <= W and 1 <= h <= H
    assert (w + 0.5) * (h + 0.5) >= area[0] * W * H, (w, h)
    assert (w - 0.5) * (h - 0.5) <= area[1] * W * H, (w, h)
    assert (w + 0.5) / (h - 0.5) >= aspect[0], (w, h)
    assert (w - 0.5) / (h + 0.5) <= aspect[1], (w, h)


@pytest.mark.parametrize("area,aspect", [
    ((0.08, 1.0), (3 / 4, 4 / 3)),   # DALI's defaults
    ((0.3, 0.5), (0.5, 2.0)),
    ((0.9, 1.0), (1.0, 1.0)),
])
def test_random_crop_is_a_window_within_the_ranges(coord_png, area, aspect):
    path, full = coord_png
    n = 48
    kwargs = {} if area == (0.08, 1.0) else dict(random_area=list(area), random_aspect_ratio=list(aspect))
    crops = run_files([path] * n, lambda e: fn.decoders.image_random_crop(e, **kwargs), batch_size=n, seed=7)
    windows = [window_of(c, full) for c in crops]
    for x, y, w, h in windows:
        check_window_ranges(w, h, 256, 256, area, aspect)
    # every sample draws its own window (the narrow last case has few possible windows)
    assert len(set(windows)) > (n // 2 if area[0] > 0.5 else n - 2)
    # the draws cover the ranges (not a constant): log-uniform aspect, uniform area
    ratios = [math.log(w / h) for _, _, w, h in windows]
    areas = [w * h / 256 ** 2 for _, _, w, h in windows]
    if aspect[0] < aspect[1]:
        span = math.log(aspect[1]) - math.log(aspect[0])
        assert max(ratios) - min(ratios) > 0.5 * span
    assert max(areas) - min(areas) > 0.4 * (area[1] - area[0])
    # positions are uniform over the places the window fits: not always centred
    assert len({(x, y) for x, y, _, _ in windows}) > n // 2


def test_random_crop_windows_are_reproducible(coord_png):
    path, full = coord_png

    def windows(seed, num_threads=2, iterations=2):
        crops = run_files([path] * 8, fn.decoders.image_random_crop, batch_size=8, iterations=iterations,
                          seed=seed, num_threads=num_threads)
        return [window_of(c, full) for c in crops]

    a = windows(seed=5)
    assert windows(seed=5, num_threads=1) == a          # same seed: same windows
    assert len(set(a)) == len(a)                         # samples and epochs differ
    assert a[:8] != a[8:]                                # epoch 1 is not epoch 0 again
    b = windows(seed=6)
    assert sum(wa == wb for wa, wb in zip(a, b)) <= 1    # another seed: other windows


@pytest.mark.parametrize("aspect,shape,origin", [
    ([10.0, 10.0], (25, 256), (0, 115)),   # too wide for any window: full width, h = trunc(256 / 10) as DALI 2.4
    ([0.1, 0.1], (256, 25), (115, 0)),     # too tall: full height, w = trunc(256 * 0.1) as DALI 2.4
])
def test_random_crop_fallback_is_centred(coord_png, aspect, shape, origin):
    path, full = coord_png
    crops = run_files([path] * 4, lambda e: fn.decoders.image_random_crop(
        e, random_area=[0.5, 1.0], random_aspect_ratio=aspect, num_attempts=3))
    for c in crops:
        assert c.shape[:2] == shape
        x, y, w, h = window_of(c, full)
        assert (x, y) == origin  # centred: ((256 - w) // 2, (256 - h) // 2)


def test_random_crop_fallback_keeps_whole_image_when_aspect_allows(coord_png):
    path, full = coord_png
    # Area fraction 1 exactly with aspect 1: the window is the whole image.
    crops = run_files([path] * 2, lambda e: fn.decoders.image_random_crop(
        e, random_area=[1.0, 1.0], random_aspect_ratio=[1.0, 1.0]))
    for c in crops:
        np.testing.assert_array_equal(c, full)


@pytest.mark.parametrize("name", ["j420.jpg", "j444.jpg", "jprog.jpg", "jgray.jpg", "jcmyk.jpg",
                                  "orient_6.jpg", "orient_7.jpg", "p_rgb8_adam7.png"])
def test_random_crop_of_jpeg_equals_crop_of_full_decode(name):
    """Decoding only the window (libjpeg-turbo crop/skip scanlines; in displayed
    coordinates for EXIF-rotated files) gives exactly the window of the full decode."""
    path = data(name)
    full = decode([path])[0]
    H, W = full.shape[:2]
    crops = run_files([path] * 6, lambda e: fn.decoders.image_random_crop(
        e, random_area=[0.1, 0.6]), batch_size=6, iterations=2, seed=3)
    for c in crops:
        h, w = c.shape[:2]
        check_window_ranges(w, h, W, H, (0.1, 0.6), (3 / 4, 4 / 3))
        # candidates: where the crop's first pixel occurs; then compare whole windows
        starts = np.argwhere((full[:H - h + 1, :W - w + 1] == c[0, 0]).all(-1))
        assert any(np.array_equal(full[y:y + h, x:x + w], c) for y, x in starts), \
            f"{name}: the crop {w}x{h} is no exact window of the full decode"


def test_random_crop_with_dct_scaling_stays_close(tmp_path):
    """Before a fixed-size resize the decoder may decode a JPEG at a reduced DCT scale
    (README: deterministic, slightly different from a full-scale decode). With
    random_area=[1,1] and the image's own aspect the window is the whole image, so
    the result is compared with decode -> resize at full scale."""
    path = str(tmp_path / "big.jpg")
    Image.fromarray(scene(800, 600, 4)).save(path, quality=90)
    aspect = [800 / 600] * 2
    scaled = run_files([path], lambda e: fn.resize(fn.decoders.image_random_crop(
        e, random_area=[1.0, 1.0], random_aspect_ratio=aspect), resize_x=96, resize_y=72))[0]
    full = run_files([path], lambda e: fn.resize(fn.decoders.image(e), resize_x=96, resize_y=72))[0]
    again = run_files([path], lambda e: fn.resize(fn.decoders.image_random_crop(
        e, random_area=[1.0, 1.0], random_aspect_ratio=aspect), resize_x=96, resize_y=72))[0]
    np.testing.assert_array_equal(scaled, again)  # deterministic
    assert scaled.shape == full.shape == (72, 96, 3)
    diff = np.abs(scaled.astype(int) - full)
    # a reduced-scale IDCT vs a full decode + antialiased resize: a few levels
    # (measured: mean 0.44, max 9); a wrong window or scale would be far off
    assert diff.mean() < 1.0 and diff.max() <= 16, (diff.mean(), diff.max())
