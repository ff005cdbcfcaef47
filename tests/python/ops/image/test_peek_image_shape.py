"""peek_image_shape: the decoded shape from the header alone, as DALI reports it."""

import glob
import os

import numpy as np
import pytest

import ladle
from ladle import fn, types
from conftest import run_both

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "..", "data")


def encoded_files():
    files = sorted(glob.glob(os.path.join(DATA, "*.jpg")) + glob.glob(os.path.join(DATA, "p_*.png")))
    files = [f for f in files if "exif_bad" not in f and "short_idat" not in f]
    return [np.fromfile(f, np.uint8) for f in files]


def test_matches_the_decoded_shapes():
    data = encoded_files()
    pipe = ladle.Pipeline(batch_size=len(data), num_threads=2)
    with pipe:
        x = fn.external_source(name="x", dtype=types.UINT8, ndim=1)
        pipe.set_outputs(fn.peek_image_shape(x), fn.decoders.image(x), fn.peek_image_shape(x, dtype=types.INT32,
                                                                                           image_type=types.GRAY))
    pipe.feed_input("x", data)
    shapes, images, gray = pipe.run()
    for i in range(len(data)):
        assert list(np.array(shapes.at(i))) == list(np.array(images.at(i)).shape)
        assert np.array(gray.at(i)).dtype == np.int32 and int(np.array(gray.at(i))[2]) == 1
    pipe.close()


@pytest.mark.parametrize("kwargs", [{}, {"adjust_orientation": False}, {"image_type": "GRAY"},
                                    {"dtype": "INT32"}])
def test_matches_dali(kwargs):
    data = [d for d in encoded_files()]
    def graph(fn, types, x):
        args = dict(kwargs)
        if "image_type" in args:
            args["image_type"] = getattr(types, args["image_type"])
        if "dtype" in args:
            args["dtype"] = getattr(types, args["dtype"])
        return fn.peek_image_shape(x, **args)

    ours, dali = run_both(graph, {"x": [data]}, batch_size=len(data))
    for a, b, d in zip(ours, dali, data):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype


def test_bad_input_is_named():
    pipe = ladle.Pipeline(batch_size=1, num_threads=1)
    with pipe:
        x = fn.external_source(name="x", dtype=types.UINT8, ndim=1)
        pipe.set_outputs(fn.peek_image_shape(x))
    pipe.feed_input("x", [np.frombuffer(b"not an image at all", np.uint8)])
    with pytest.raises(ladle.UnsupportedError, match="not a JPEG or PNG"):
        pipe.run()
    with pytest.raises(ladle.InvalidArgumentError, match="image_type"):
        with ladle.Pipeline(batch_size=1):
            fn.peek_image_shape(fn.external_source(name="y", dtype=types.UINT8, ndim=1), image_type="HSV")
    pipe.close()
