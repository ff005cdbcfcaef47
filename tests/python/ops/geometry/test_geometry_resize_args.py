"""resize's DALI arguments (subpixel_scale, roi_start/roi_end/roi_relative,
minibatch_size) and ladle's resampling choice: NumPy references and errors."""

import numpy as np
import pytest

import ladle
from conftest import requires_ops
from ladle import fn

IMG = np.random.default_rng(2).integers(0, 256, (30, 40, 3), dtype=np.uint8)


def resize(img, **args):
    p = ladle.Pipeline(batch_size=1, num_threads=1, seed=0)
    with p:
        x = fn.external_source(name="x", layout="HWC")
        p.set_outputs(fn.resize(x, **args))
    p.build()
    p.feed_input("x", [img])
    out = np.array(p.run()[0].at(0))
    p.close()
    return out


@requires_ops("resize")
def test_roi_selects_the_window():
    # An integer ROI resized to its own size with NN is the crop itself.
    out = resize(IMG, resize_x=20, resize_y=10, roi_start=[5, 8], roi_end=[15, 28], interp_type="NN")
    np.testing.assert_array_equal(out, IMG[5:15, 8:28])
    rel = resize(IMG, resize_x=20, resize_y=10, roi_start=[5 / 30, 8 / 40], roi_end=[0.5, 0.7], roi_relative=True,
                 interp_type="NN")
    np.testing.assert_array_equal(rel, out)


@requires_ops("resize")
def test_flipped_roi_flips():
    out = resize(IMG, resize_x=40, resize_y=30, roi_start=[0, 40], roi_end=[30, 0], interp_type="NN")
    np.testing.assert_array_equal(out, IMG[:, ::-1])


@requires_ops("resize")
def test_subpixel_scale_changes_values_not_sizes():
    a = resize(IMG, resize_x=17.4, resize_y=13.4)
    b = resize(IMG, resize_x=17.4, resize_y=13.4, subpixel_scale=False)
    assert a.shape == b.shape == (13, 17, 3)
    assert not np.array_equal(a, b)  # the window shrinks about its centre with subpixel_scale


@requires_ops("resize")
def test_hints_have_no_effect():
    np.testing.assert_array_equal(resize(IMG, resize_x=17, minibatch_size=4, temp_buffer_hint=100),
                                  resize(IMG, resize_x=17))


@requires_ops("resize")
def test_resampling_variants_differ_and_flat_stays_flat():
    flat = np.full((30, 40, 3), 77, np.uint8)
    for mode in ("dali", "pil"):
        for filt in ("LINEAR", "CUBIC", "LANCZOS3", "GAUSSIAN"):
            assert (resize(flat, resize_x=23, resize_y=61, interp_type=filt, resampling=mode) == 77).all()
    assert not np.array_equal(resize(IMG, resize_x=23, interp_type="CUBIC"),
                              resize(IMG, resize_x=23, interp_type="CUBIC", resampling="pil"))


@requires_ops("resize")
@pytest.mark.parametrize("args,words", [
    (dict(resize_x=10, roi_start=[0, 0]), "roi_start"),
    (dict(resize_x=10, roi_start=[0, 0, 0], roi_end=[1, 1, 1]), "roi_start"),
    (dict(resize_x=10, roi_start=[10, 0], roi_end=[0, 10], resampling="pil"), "flipped"),
    (dict(resize_x=10, roi_start=[5, 5], roi_end=[5, 9]), "roi"),
    (dict(resize_x=10, resampling="lanczos"), "resampling"),
])
def test_bad_arguments(args, words):
    with pytest.raises(ladle.Error) as e:
        resize(IMG, **args)
    assert "resize" in str(e.value) and words in str(e.value)
