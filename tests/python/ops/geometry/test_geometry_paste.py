"""paste: against a NumPy formula of DALI's placement (float products,
truncated), per-sample arguments, SSD's zoom-out, GPU against CPU
(bit-exact), bad arguments. DALI's paste runs on the GPU only, so it is not
compared here (DALI's CPU operators are the differential reference)."""

import numpy as np
import pytest

import ladle
from ladle import fn
from conftest import requires_ops
from geometry_reference import raises_naming, run_pipeline

pytestmark = requires_ops("paste")

f32 = np.float32


def images(seed, n=4, c=3):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (int(rng.integers(1, 30)), int(rng.integers(1, 30)), c), dtype=np.uint8)
            for _ in range(n)]


def reference(img, ratio, px, py, fill, min_canvas=0.0):
    h, w, c = img.shape
    oh, ow = int(f32(ratio) * f32(h)), int(f32(ratio) * f32(w))
    oh, ow = max(oh, int(min_canvas)), max(ow, int(min_canvas))
    x0, y0 = int(f32(px) * f32(ow - w)), int(f32(py) * f32(oh - h))
    out = np.empty((oh, ow, c), np.uint8)
    out[:] = np.asarray(fill, np.uint8)
    out[y0:y0 + h, x0:x0 + w] = img
    return out


run = run_pipeline


@pytest.mark.parametrize("ratio, px, py", [(1.0, 0.5, 0.5), (2.0, 0.0, 1.0), (3.7, 0.3, 0.9), (1.5, 1.0, 0.0)])
def test_against_numpy(ratio, px, py):
    imgs = images(1)
    got = run(lambda x: fn.paste(x, ratio=ratio, paste_x=px, paste_y=py, fill_value=[10, 20, 30]), {"x": imgs})
    for img, g in zip(imgs, got):
        assert np.array_equal(g, reference(img, ratio, px, py, [10, 20, 30]))


def test_per_sample_arguments_and_min_canvas():
    imgs = images(2, c=1)
    rng = np.random.default_rng(3)
    ratio = rng.uniform(1, 4, 4).astype(np.float32)
    px, py = rng.uniform(0, 1, 4).astype(np.float32), rng.uniform(0, 1, 4).astype(np.float32)
    got = run(lambda x, r, a, b: fn.paste(x, ratio=r, paste_x=a, paste_y=b, fill_value=[7], n_channels=1,
                                          min_canvas_size=40.9),
              {"x": imgs, "r": ratio, "a": px, "b": py})
    for i, (img, g) in enumerate(zip(imgs, got)):
        assert np.array_equal(g, reference(img, ratio[i], px[i], py[i], [7], 40.9))


def test_ssd_zoom_out_with_random_arguments():
    imgs = images(4)
    got = run(lambda x: fn.paste(x, ratio=fn.random.uniform(range=[1, 4]), paste_x=fn.random.uniform(range=[0, 1]),
                                 paste_y=fn.random.uniform(range=[0, 1]), fill_value=[104, 117, 123]), {"x": imgs})
    for img, g in zip(imgs, got):
        h, w, _ = img.shape
        assert g.shape[0] >= h and g.shape[1] >= w
        # the image appears once, unchanged, and everything else is the fill colour
        mask = np.all(g == [104, 117, 123], axis=-1)
        found = [(y, x) for y in range(g.shape[0] - h + 1) for x in range(g.shape[1] - w + 1)
                 if np.array_equal(g[y:y + h, x:x + w], img)]
        assert found
        y, x = found[0]
        rest = mask.copy()
        rest[y:y + h, x:x + w] = True
        assert rest.all()


@pytest.mark.gpu
def test_gpu_equals_cpu():
    imgs = images(5)
    ratio = np.array([1.0, 1.3, 2.5, 4.0], np.float32)
    graph = lambda d: (lambda x, r: fn.paste(x, device=d, ratio=r, paste_x=0.25, fill_value=[1, 2, 3]))  # noqa: E731
    cpu = run(graph("cpu"), {"x": imgs, "r": ratio})
    gpu = run(graph("gpu"), {"x": imgs, "r": ratio}, device="gpu")
    assert all(np.array_equal(a, b) for a, b in zip(cpu, gpu))


@pytest.mark.parametrize("make, words", [
    (lambda x: fn.paste(x, fill_value=[0, 0, 0]), ["paste", "ratio"]),
    (lambda x: fn.paste(x, ratio=0.5, fill_value=[0, 0, 0]), ["paste", "ratio"]),
    (lambda x: fn.paste(x, ratio=2.0), ["paste", "fill_value"]),
    (lambda x: fn.paste(x, ratio=2.0, fill_value=[0]), ["paste", "fill_value", "n_channels"]),
    (lambda x: fn.paste(x, ratio=2.0, fill_value=[0, 0, 300]), ["paste", "fill_value"]),
    (lambda x: fn.paste(x, ratio=2.0, paste_x=1.5, fill_value=[0, 0, 0]), ["paste", "paste_x"]),
    (lambda x: fn.paste(x, ratio=2.0, fill_value=[0], n_channels=1), ["paste", "channels"]),
])
def test_bad_arguments(make, words):
    raises_naming(lambda: run(make, {"x": images(6, n=2)}, batch_size=2), words)


def test_float_input_is_refused():
    with pytest.raises(ladle.Error, match="paste.*uint8"):
        run(lambda x: fn.paste(x, ratio=2.0, fill_value=[0, 0, 0]), {"x": [np.zeros((3, 3, 3), np.float32)] * 2},
            batch_size=2)
