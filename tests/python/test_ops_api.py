"""ladle.ops, DALI's object API: the classes have DALI's names, an instance
adds its operator through fn, and a Pipeline subclass's define_graph builds
the graph. The same script runs on DALI 2.4 with only the imports changed."""

import warnings

import numpy as np
import pytest
from conftest import dali_or_skip

import ladle
from ladle import fn, ops, types
from ladle.pipeline import op_schemas


def make_pipeline_class(Pipeline, ops, types):
    """A DALI-style training pipeline of the object API (as NVIDIA's examples
    write them), for either library."""

    class HybridPipe(Pipeline):
        def __init__(self, batch_size, num_threads, device_id, data_dir, crop):
            super().__init__(batch_size, num_threads, device_id, seed=12)
            self.input = ops.readers.File(file_root=data_dir, random_shuffle=False)
            self.decode = ops.decoders.Image(device="cpu", output_type=types.RGB)
            self.res = ops.Resize(device="cpu", resize_shorter=crop * 1.15)
            self.cmnp = ops.CropMirrorNormalize(device="cpu", dtype=types.FLOAT, output_layout=types.NCHW,
                                                crop=(crop, crop), mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
                                                std=[0.229 * 255, 0.224 * 255, 0.225 * 255])

        def define_graph(self):
            jpegs, labels = self.input(name="Reader")
            images = self.res(self.decode(jpegs))
            return [self.cmnp(images), labels]

    return HybridPipe


def run(pipe, iterations):
    pipe.build()
    out = []
    for _ in range(iterations):
        images, labels = pipe.run()
        out.append(([np.array(images.at(i)) for i in range(len(images))],
                    [int(np.array(labels.at(i)).reshape(-1)[0]) for i in range(len(labels))]))
    return out


def test_a_dali_object_api_pipeline_runs_unchanged_and_matches_dali():
    """The same class, ladle's imports against DALI's: labels equal, images
    within the resize tolerance the fn tests document (1 level, antialiased
    linear resize of the same decoded pixels)."""
    dali = dali_or_skip()
    import nvidia.dali.ops as dops
    import nvidia.dali.types as dtypes

    root = ladle.sample_data_root()
    ours = run(make_pipeline_class(ladle.Pipeline, ops, types)(4, 2, None, root, 64), 2)
    theirs = run(make_pipeline_class(dali.Pipeline, dops, dtypes)(4, 2, None, root, 64), 2)
    for (li, ll), (di, dl) in zip(ours, theirs):
        assert ll == dl
        for a, b in zip(li, di):
            assert a.shape == b.shape == (3, 64, 64)
            assert np.abs(a - b).max() <= 1.0 / 0.224 + 1e-3  # one level of the input, over the smallest std


def test_class_names_are_dalis():
    """Every ladle operator DALI 2.4 also has is at DALI's ops path and class name."""
    dali_or_skip()
    import nvidia.dali.fn as dfn
    import nvidia.dali.ops as dops

    checked = 0
    for name in op_schemas():
        theirs = dfn
        for part in name.split("."):
            theirs = getattr(theirs, part, None)
        if theirs is None or name.startswith("_"):
            continue
        *path, short = name.split(".")
        dali_module, ladle_module = dops, ops
        for part in path:
            dali_module, ladle_module = getattr(dali_module, part), getattr(ladle_module, part)
        expected = getattr(theirs, "_schema_name").split("__")[-1]
        assert hasattr(ladle_module, expected), (name, expected)
        assert hasattr(dali_module, expected), (name, expected)
        checked += 1
    assert checked > 80


def test_old_names_warn_and_work():
    pipe = ladle.Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        with pytest.warns(DeprecationWarning, match="fn.file_reader is deprecated"):
            jpegs, labels = ops.FileReader(file_root=ladle.sample_data_root())()
        with pytest.warns(DeprecationWarning, match="fn.coin_flip is deprecated"):
            flip = ops.CoinFlip(probability=1.0)()
        pipe.set_outputs(labels, flip)
    _, flips = pipe.run()
    assert [int(np.array(flips.at(i))) for i in range(2)] == [1, 1]


def test_arguments_made_and_called():
    """Arguments at construction and at the call (e.g. a DataNode) combine;
    the same one in both places is an error naming the operator."""
    pipe = ladle.Pipeline(batch_size=2, num_threads=1, device_id=None)
    flip = ops.Flip(vertical=0)
    with pipe:
        x = fn.external_source(name="x", layout="HWC")
        pipe.set_outputs(flip(x, horizontal=fn.random.coin_flip(probability=1.0)))
        with pytest.raises(ladle.InvalidArgumentError, match=r"ops.Flip: 'vertical' given both"):
            flip(x, vertical=1)
    img = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    pipe.build()
    pipe.feed_input("x", [img, img])
    out = pipe.run()[0]
    np.testing.assert_array_equal(np.array(out.at(0)), img[:, ::-1])


def test_define_graph_errors():
    class NoOutputs(ladle.Pipeline):
        def define_graph(self):
            return None

    with pytest.raises(ladle.InvalidArgumentError, match="NoOutputs.define_graph must return"):
        NoOutputs(batch_size=1, num_threads=1, device_id=None).build()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a plain pipeline with set_outputs never calls define_graph
        pipe = ladle.Pipeline(batch_size=1, num_threads=1, device_id=None)
        with pipe:
            pipe.set_outputs(fn.random.uniform(range=[0, 1]))
        pipe.build()
