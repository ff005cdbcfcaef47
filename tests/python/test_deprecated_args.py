"""DALI's deprecated argument names (crop_mirror_normalize's output_dtype for
dtype, shapes' type, lookup_table's and warp_affine's output_dtype): the
schema declares each one (ladle_arg_schema.deprecated_name), the library takes
it, and fn and ladle.dynamic warn as DALI does. Also DALI's hints that cannot
change results (the decoders' affine, memory_stats, ...; the readers'
skip_cached_images, tensor_init_bytes)."""

import warnings

import numpy as np
import pytest
from conftest import run_both, sample_jpegs

import ladle
import ladle.dynamic as ldd
from ladle import fn, types

IMAGES = [np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3) * 3]


def run_graph(graph, batches=IMAGES):
    pipe = ladle.Pipeline(batch_size=len(batches), num_threads=1, device_id=None)
    with pipe:
        x = fn.external_source(name="x", layout="HWC")
        pipe.set_outputs(graph(x))
    pipe.build()
    pipe.feed_input("x", batches)
    return [np.asarray(t) for t in pipe.run()[0]]


def test_the_schema_declares_the_old_names():
    schemas = fn.op_schemas()
    declared = {(name, a["deprecated_name"]): a["name"] for name, s in schemas.items() for a in s["args"]
                if a.get("deprecated_name")}
    assert declared == {("crop_mirror_normalize", "output_dtype"): "dtype", ("shapes", "type"): "dtype",
                        ("lookup_table", "output_dtype"): "dtype", ("warp_affine", "output_dtype"): "dtype",
                        ("rotate", "output_dtype"): "dtype"}


@pytest.mark.parametrize("graph_old, graph_new", [
    (lambda x: fn.crop_mirror_normalize(x, output_dtype=types.FLOAT16, mean=[1.0], std=[2.0]),
     lambda x: fn.crop_mirror_normalize(x, dtype=types.FLOAT16, mean=[1.0], std=[2.0])),
    (lambda x: fn.shapes(x, type=types.INT32), lambda x: fn.shapes(x, dtype=types.INT32)),
    (lambda x: fn.lookup_table(x, keys=[0, 3], values=[5.0, 7.0], output_dtype=types.UINT8),
     lambda x: fn.lookup_table(x, keys=[0, 3], values=[5.0, 7.0], dtype=types.UINT8)),
])
def test_an_old_name_is_the_new_one_with_a_warning(graph_old, graph_new):
    with pytest.warns(DeprecationWarning, match="deprecated alias for 'dtype'"):
        old = run_graph(graph_old)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        new = run_graph(graph_new)
    np.testing.assert_array_equal(old[0], new[0])
    assert old[0].dtype == new[0].dtype


def test_both_names_at_once_is_an_error():
    with pytest.raises(ladle.InvalidArgumentError, match=r"crop_mirror_normalize.*'dtype' given twice"):
        run_graph(lambda x: fn.crop_mirror_normalize(x, dtype=types.FLOAT, output_dtype=types.FLOAT))


def test_the_library_itself_takes_the_old_name():
    """C is the judge: ladle_pipeline_add_op takes the deprecated name (no
    Python renaming on this path)."""
    spec = [a for a in fn.op_schemas()["shapes"]["args"] if a["name"] == "dtype"][0]
    assert spec["deprecated_name"] == "type"
    pipe = ladle.Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        x = fn.external_source(name="x", layout="HWC")
        # straight to the extension, as a C caller would
        first, _ = pipe._add_op("shapes", "cpu", [x], [("type", int(types.INT32))], None)
        pipe.set_outputs(ladle.pipeline.DataNode(pipe, first, "shapes", "cpu"))
    pipe.build()
    pipe.feed_input("x", IMAGES)
    out = np.asarray(pipe.run()[0][0])
    assert out.dtype == np.int32 and out.tolist() == [4, 6, 3]


def test_dynamic_mode_renames_and_warns():
    with pytest.warns(DeprecationWarning, match="ladle.dynamic.shapes: argument 'type'"):
        out = ldd.shapes(ldd.as_batch(IMAGES), type=types.INT32)
    got = np.array(out.cpu().tensors[0])
    assert got.dtype == np.int32 and got.tolist() == [4, 6, 3]


def test_cmn_old_name_matches_dali():
    """DALI takes output_dtype too (with its own DeprecationWarning): same bytes."""
    def graph(fn_, types_, x):
        return fn_.crop_mirror_normalize(x, output_dtype=types_.FLOAT, mean=[10.0], std=[3.0])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        lad, dal = run_both(graph, {"x": [IMAGES]}, 1)
    np.testing.assert_array_equal(lad[0][0], dal[0][0])


@pytest.mark.parametrize("args", [dict(affine=False), dict(memory_stats=True), dict(split_stages=True),
                                  dict(use_chunk_allocator=True), dict(device_memory_padding_jpeg2k=1 << 20,
                                                                       host_memory_padding_jpeg2k=1 << 20)])
def test_decoder_hints_change_nothing(args):
    encoded = [np.frombuffer(data, dtype=np.uint8) for _, data in sample_jpegs()[:2]]

    def decode(**kw):
        pipe = ladle.Pipeline(batch_size=len(encoded), num_threads=1, device_id=None)
        with pipe:
            x = fn.external_source(name="x", dtype=types.UINT8, ndim=1)
            pipe.set_outputs(fn.decoders.image(x, **kw))
        pipe.build()
        pipe.feed_input("x", encoded)
        return [np.asarray(t) for t in pipe.run()[0]]

    for got, want in zip(decode(**args), decode()):
        np.testing.assert_array_equal(got, want)
    for name in args:
        spec = [a for a in fn.op_schemas()["decoders.image"]["args"] if a["name"] == name][0]
        assert spec["no_effect"] and spec["doc"].startswith("Accepted for DALI scripts")


@pytest.mark.parametrize("reader", ["readers.file", "readers.coco", "readers.numpy", "readers.tfrecord",
                                    "readers.webdataset"])
def test_reader_hints_are_declared(reader):
    specs = {a["name"]: a for a in fn.op_schemas()[reader]["args"]}
    for name in ("skip_cached_images", "tensor_init_bytes"):
        assert specs[name]["no_effect"], (reader, name)
