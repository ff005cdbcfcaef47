"""ladle.dynamic.python_function and dl_tensor_python_function: fn's Python
function operators called eagerly (and deferred, and in a captured loop)."""

import numpy as np
import pytest

import ladle

ldd = pytest.importorskip("ladle.dynamic")


def data():
    return ldd.batch([np.arange(6, dtype=np.int32).reshape(2, 3) + i for i in range(4)])


def test_python_function_per_sample_and_per_batch():
    out = ldd.python_function(data(), function=lambda x: x * 2 + 1)
    np.testing.assert_array_equal(np.array(out.torch()), np.array(data().torch()) * 2 + 1)
    a, b = ldd.python_function(data(), function=lambda xs: ([x.sum(keepdims=True) for x in xs], [-x for x in xs]),
                               num_outputs=2, batch_processing=True)
    ref = np.array(data().torch())
    np.testing.assert_array_equal(np.array(a.torch()).reshape(-1), ref.reshape(4, -1).sum(1))
    np.testing.assert_array_equal(np.array(b.torch()), -ref)


def test_python_function_matches_pipeline_mode():
    from ladle import fn

    f = lambda x: (x.astype(np.float32) / 3).astype(np.float32)  # noqa: E731
    pipe = ladle.Pipeline(batch_size=4, num_threads=1, device_id=None)
    with pipe:
        src = fn.external_source(name="x", dtype=ladle.types.INT32, ndim=2)
        pipe.set_outputs(fn.python_function(src, function=f))
    pipe.feed_input("x", [np.array(t) for t in data().tensors])
    (want,) = pipe.run()
    pipe.close()
    got = ldd.python_function(data(), function=f)
    np.testing.assert_array_equal(np.array(got.torch()), np.stack([np.array(t) for t in want]))


def test_dl_tensor_python_function():
    def double(capsules):
        return [np.from_dlpack(_Capsule(c)) * 2 for c in capsules]

    out = ldd.dl_tensor_python_function(data(), function=double)
    np.testing.assert_array_equal(np.array(out.torch()), np.array(data().torch()) * 2)


class _Capsule:
    """A DLPack capsule as an object NumPy's from_dlpack takes."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, stream=None, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


def test_python_function_deferred_and_single_sample():
    with ldd.EvalMode.deferred:
        out = ldd.python_function(data(), function=lambda x: x + 100)
    np.testing.assert_array_equal(np.array(out.torch()), np.array(data().torch()) + 100)
    t = ldd.python_function(np.ones((2, 2), np.float32), function=lambda x: x * 3)
    assert isinstance(t, ldd.Tensor)
    np.testing.assert_array_equal(np.array(t), np.full((2, 2), 3, np.float32))


def test_python_function_errors():
    with pytest.raises(ladle.InvalidArgumentError, match="python_function.*'function' is required"):
        ldd.python_function(data())
    with pytest.raises(ladle.InvalidArgumentError, match="num_outputs"):
        ldd.python_function(data(), function=lambda x: None, num_outputs=0)

    def boom(x):
        raise ValueError("bad sample")

    with pytest.raises(ladle.Error, match="python_function") as e:
        ldd.python_function(data(), function=boom)
    assert isinstance(e.value.__cause__, ValueError)


def test_python_function_in_a_captured_loop():
    def body(jpegs):
        images = ldd.decoders.image(jpegs)
        return ldd.python_function(ldd.resize(images, resize_x=8, resize_y=8),
                                   function=lambda x: (255 - x).astype(np.uint8))

    def run(capture):
        reader = ldd.readers.File(file_root=ladle.sample_data_root(), seed=2)
        out = [np.array(body(j).torch()) for j, _ in reader.next_epoch(batch_size=8, capture=capture)]
        reader.close()
        return out

    eager, captured = run(False), run(True)
    assert len(eager) == len(captured) == 4
    for a, b in zip(eager, captured):
        np.testing.assert_array_equal(a, b)
