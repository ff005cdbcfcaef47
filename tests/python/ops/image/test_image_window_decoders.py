"""decoders.image_crop and decoders.image_slice: the window of the decoded
image, decoded directly (ROI decoding), checked against decode + crop/slice
in ladle and against DALI 2.4's CPU decoders."""

import glob
import os

import numpy as np
import pytest

import ladle
from ladle import fn, types
from conftest import run_both

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "..", "data")


def encoded(limit=None):
    """JPEGs of several subsamplings, orientations and a PNG: (name, bytes)."""
    files = sorted(glob.glob(os.path.join(ladle.sample_data_root(), "*", "*.jpg")))[:6]
    files += [os.path.join(DATA, f) for f in ("j420.jpg", "j422.jpg", "j444.jpg", "jgray.jpg", "jprog.jpg",
                                               "orient_3.jpg", "orient_6.jpg")]
    files += sorted(glob.glob(os.path.join(DATA, "p_*.png")))[:1]
    files = [f for f in files if os.path.exists(f)]
    return [np.fromfile(f, np.uint8) for f in files[:limit]]


def run_ladle(make, data, extra=None, batch_size=None):
    pipe = ladle.Pipeline(batch_size=batch_size or len(data), num_threads=2)
    with pipe:
        x = fn.external_source(name="x", dtype=types.UINT8, ndim=1)
        feeds = {k: fn.external_source(name=k, dtype=v[1], ndim=1) for k, v in (extra or {}).items()}
        pipe.set_outputs(fn.decoders.image(x), make(fn, x, **feeds))
    pipe.feed_input("x", data)
    for k, v in (extra or {}).items():
        pipe.feed_input(k, v[0])
    full, win = pipe.run()
    out = [(np.array(full.at(i)), np.array(win.at(i))) for i in range(len(data))]
    pipe.close()
    return out


def crop_reference(img, cw, ch, px, py, truncate=False):
    """DALI's formula: x = crop_pos_x * (W - crop_W) in float32, rounded (halves away from zero) or truncated."""
    h, w = img.shape[:2]
    fx = float(np.float32(px)) * (w - cw)
    fy = float(np.float32(py)) * (h - ch)
    rnd = (lambda v: int(np.trunc(v))) if truncate else (lambda v: int(np.floor(abs(v) + 0.5) * np.sign(v)))
    x, y = rnd(fx), rnd(fy)
    return img[y:y + ch, x:x + cw]


@pytest.mark.parametrize("kwargs", [dict(crop=(24, 28)), dict(crop_w=27, crop_h=21, crop_pos_x=0.3, crop_pos_y=0.7),
                                    dict(crop_w=27, crop_h=21, crop_pos_x=0.3, crop_pos_y=0.7, rounding="truncate"),
                                    dict(crop=(30, 30), crop_pos_x=0.0, crop_pos_y=1.0), {},
                                    dict(crop=(20, 30), output_type="GRAY")])
def test_image_crop_equals_decode_then_crop(kwargs):
    data = encoded()
    args = dict(kwargs)
    if "output_type" in args:
        args["output_type"] = getattr(types, args["output_type"])

    def make(fn, x):
        return fn.decoders.image_crop(x, **args)

    def make_full(fn, x):
        return fn.decoders.image(x, **{k: v for k, v in args.items() if k == "output_type"})

    pipe = ladle.Pipeline(batch_size=len(data), num_threads=2)
    with pipe:
        x = fn.external_source(name="x", dtype=types.UINT8, ndim=1)
        pipe.set_outputs(make_full(fn, x), make(fn, x))
    pipe.feed_input("x", data)
    full, win = pipe.run()
    for i in range(len(data)):
        img, got = np.array(full.at(i)), np.array(win.at(i))
        ch, cw = kwargs.get("crop", (kwargs.get("crop_h", img.shape[0]), kwargs.get("crop_w", img.shape[1])))
        want = crop_reference(img, cw, ch, kwargs.get("crop_pos_x", 0.5), kwargs.get("crop_pos_y", 0.5),
                              kwargs.get("rounding") == "truncate")
        # ROI decoding of JPEG reproduces the full decode's pixels (libjpeg-turbo decodes whole MCU rows and
        # blocks around the window and the same upsampling applies): exact.
        np.testing.assert_array_equal(got, want)
    pipe.close()


def test_image_crop_per_sample_arguments():
    data = encoded(6)
    n = len(data)
    pos = np.linspace(0, 1, n).astype(np.float32)
    size = (20 + 7 * np.arange(n)).astype(np.float32)
    pipe = ladle.Pipeline(batch_size=n, num_threads=2)
    with pipe:
        x = fn.external_source(name="x", dtype=types.UINT8, ndim=1)
        px = fn.external_source(name="px", dtype=types.FLOAT, ndim=0)
        cw = fn.external_source(name="cw", dtype=types.FLOAT, ndim=0)
        pipe.set_outputs(fn.decoders.image(x), fn.decoders.image_crop(x, crop_w=cw, crop_h=cw, crop_pos_x=px))
    pipe.feed_input("x", data)
    pipe.feed_input("px", [np.array(p) for p in pos])
    pipe.feed_input("cw", [np.array(s) for s in size])
    full, win = pipe.run()
    for i in range(n):
        s = int(size[i])
        np.testing.assert_array_equal(np.array(win.at(i)), crop_reference(np.array(full.at(i)), s, s, pos[i], 0.5))
    pipe.close()


def slice_reference(img, x0, y0, w, h):
    return img[y0:y0 + h, x0:x0 + w]


SLICES = [
    (dict(rel_start=(0.1, 0.2), rel_shape=(0.5, 0.3)), None),
    (dict(start=(3, 5), shape=(20, 20)), None),
    (dict(start=(3, 5), end=(20, 25)), None),
    (dict(rel_start=(0.25, 0.25), rel_end=(0.75, 0.5)), None),
    (dict(start=(3, 5), shape=(20, 30), axis_names="HW"), None),
    (dict(start=(7,), shape=(20,), axes=[0]), None),
]


@pytest.mark.parametrize("kwargs", [s[0] for s in SLICES])
def test_image_slice_matches_dali_and_decode_then_slice(kwargs):
    data = encoded()
    ours, dali = run_both(lambda fn, types, x: (fn.decoders.image(x), fn.decoders.image_slice(x, **kwargs)),
                          {"x": [data]}, batch_size=len(data))
    for full, a, b in zip(ours[0], ours[1], dali[1]):
        # DALI's CPU decoder is libjpeg-turbo with the same settings here: the same bytes (measured: exact).
        np.testing.assert_array_equal(a, b)
    # And exactly ladle's own decode, sliced by fn.slice.
    got = run_ladle(lambda fn, x: fn.decoders.image_slice(x, **kwargs), data)
    sliced = run_ladle(lambda fn, x: fn.slice(fn.decoders.image(x), **kwargs), data)
    for (full, a), (_, b) in zip(got, sliced):
        np.testing.assert_array_equal(a, b)


def test_image_crop_matches_dali():
    data = encoded()
    ours, dali = run_both(lambda fn, types, x: fn.decoders.image_crop(x, crop_w=27, crop_h=21, crop_pos_x=0.3,
                                                                      crop_pos_y=0.7),
                          {"x": [data]}, batch_size=len(data))
    for a, b in zip(ours, dali):
        np.testing.assert_array_equal(a, b)  # the same libjpeg-turbo decode (measured: exact)


@pytest.mark.parametrize("dtype,anchor,shape,kwargs", [
    ("float32", [0.1, 0.2], [0.5, 0.3], {}),
    ("int32", [3, 5], [20, 20], {}),
    ("float32", [3, 5], [20, 20], dict(normalized_anchor=False, normalized_shape=False)),
])
def test_image_slice_positional_inputs(dtype, anchor, shape, kwargs):
    data = encoded(6)
    n = len(data)
    t = types.FLOAT if dtype == "float32" else types.INT32
    feeds = {"a": ([np.array(anchor, dtype)] * n, t), "s": ([np.array(shape, dtype)] * n, t)}
    got = run_ladle(lambda fn, x, a, s: fn.decoders.image_slice(x, a, s, **kwargs), data, feeds)
    for full, win in got:
        H, W = full.shape[:2]
        if dtype == "float32" and not kwargs:
            x0, y0 = round(anchor[0] * W), round(anchor[1] * H)
            w = round(anchor[0] * W + shape[0] * W) - x0
            h = round(anchor[1] * H + shape[1] * H) - y0
        else:
            x0, y0, w, h = anchor[0], anchor[1], shape[0], shape[1]
        np.testing.assert_array_equal(win, slice_reference(full, x0, y0, w, h))

    # DALI agrees on the window.
    def graph(fn, types, x, a, s):
        return fn.decoders.image_slice(x, a, s, **kwargs)
    ours, dali = run_both(graph, {"x": [data], "a": [feeds["a"][0]], "s": [feeds["s"][0]]}, batch_size=n)
    for a, b in zip(ours, dali):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("make,words", [
    (lambda fn, x: fn.decoders.image_crop(x, crop_w=5000, crop_h=10), ["decoders.image_crop", "does not fit"]),
    (lambda fn, x: fn.decoders.image_crop(x, crop_w=10), ["decoders.image_crop", "crop_w", "crop_h"]),
    (lambda fn, x: fn.decoders.image_crop(x, crop=(10, 10, 3)), ["decoders.image_crop", "crop"]),
    (lambda fn, x: fn.decoders.image_crop(x, rounding="floor"), ["decoders.image_crop", "rounding"]),
    (lambda fn, x: fn.decoders.image_slice(x, start=(-10, 0), shape=(50, 50)), ["decoders.image_slice", "fit"]),
    (lambda fn, x: fn.decoders.image_slice(x, start=(0, 0), shape=(50, 50), rel_shape=(0.5, 0.5)),
     ["decoders.image_slice", "shape"]),
    (lambda fn, x: fn.decoders.image_slice(x, start=(0, 0, 0), shape=(5, 5, 1), axis_names="WHC"),
     ["decoders.image_slice", "channel"]),
    (lambda fn, x: fn.decoders.image_slice(x, start=(0,), shape=(5,)), ["decoders.image_slice", "start"]),
])
def test_bad_arguments_are_named(make, words):
    data = encoded(1)
    with pytest.raises(ladle.Error) as e:
        run_ladle(make, data)
    for w in words:
        assert w in str(e.value), str(e.value)


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["crop", "slice"])
def test_mixed_equals_cpu(kind):
    data = encoded()
    args = dict(crop_w=27, crop_h=21, crop_pos_x=0.3, crop_pos_y=0.7) if kind == "crop" else \
        dict(rel_start=(0.1, 0.2), rel_shape=(0.5, 0.3))
    outs = {}
    for device in ("cpu", "mixed"):
        pipe = ladle.Pipeline(batch_size=len(data), num_threads=2, device_id=0)
        with pipe:
            x = fn.external_source(name="x", dtype=types.UINT8, ndim=1)
            op = fn.decoders.image_crop if kind == "crop" else fn.decoders.image_slice
            pipe.set_outputs(op(x, device=device, **args))
        pipe.feed_input("x", data)
        (b,) = pipe.run()
        outs[device] = [np.array(b.as_cpu().at(i)) if hasattr(b, "as_cpu") else np.array(b.at(i))
                        for i in range(len(data))]
        pipe.close()
    for a, b in zip(outs["cpu"], outs["mixed"]):
        assert a.shape == b.shape
        # nvJPEG's IDCT and chroma upsampling differ from libjpeg-turbo's by a few levels (as decoders.image).
        assert np.abs(a.astype(int) - b.astype(int)).max() <= 40


def test_slice_integer_anchor_inputs_are_absolute():
    """fn.slice shares image_slice's window code: integer anchor/shape inputs are pixels even with
    normalized_anchor/normalized_shape True (their default), as in DALI."""
    img = np.arange(40 * 50 * 3, dtype=np.uint8).reshape(40, 50, 3)
    feeds = {"x": [[img]], "a": [[np.array([3, 5], np.int32)]], "s": [[np.array([20, 30], np.int32)]]}
    ours, dali = run_both(lambda fn, types, x, a, s: fn.slice(x, a, s), feeds, batch_size=1)
    np.testing.assert_array_equal(ours[0], img[5:35, 3:23])
    np.testing.assert_array_equal(ours[0], dali[0])

