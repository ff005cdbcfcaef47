"""The DALI-style API: fn generated from the schemas, Pipeline, pipeline_def,
types, reader metadata, determinism and resuming."""

import inspect
import os
import time
import warnings

import numpy as np
import pytest

import ladle
from ladle import _ladle, fn, pipeline_def, types
from ladle.pipeline import _parse_cpu_list, op_schemas
from conftest import requires_ops

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def lookup(path):
    obj = fn
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


# --- fn generation -------------------------------------------------------------


def test_every_schema_becomes_a_function_with_docs():
    schemas = _ladle.op_schemas()
    assert len(schemas) == len(op_schemas())
    for s in schemas:
        f = lookup(s["name"])
        assert callable(f), s["name"]
        assert f.__doc__.startswith(f"fn.{s['name']}("), s["name"]
        for a in s["args"]:
            assert a["name"] in f.__doc__, (s["name"], a["name"])
        params = inspect.signature(f).parameters
        assert "device" in params and "name" in params
        for a in s["args"]:
            if a["name"].isidentifier():
                assert a["name"] in params
                p = params[a["name"]]
                assert p.kind is inspect.Parameter.KEYWORD_ONLY
                if a["required"]:
                    assert p.default is inspect.Parameter.empty
                elif s["name"] != "external_source":  # its Python side derives ndim and layout from each other
                    assert p.default == a["default"]


def test_host_inputs_are_schema():
    """Inputs read on the host whatever the device (DALI's CPU-only inputs) are in the schema, for
    fn and ladle.dynamic alike."""
    schemas = {s["name"]: s for s in _ladle.op_schemas()}
    assert schemas["slice"]["host_inputs_from"] == 1 and schemas["filter"]["host_inputs_from"] == 1
    assert schemas["resize"]["host_inputs_from"] == 0


def test_schema_dicts_are_well_formed():
    types_seen = set()
    for s in _ladle.op_schemas():
        assert set(s) == {"name", "doc", "min_inputs", "max_inputs", "num_outputs", "devices", "flags", "args",
                          "outputs_per_extra_input", "one_output_if", "one_output_choice", "host_inputs_from"}
        assert 0 <= s["host_inputs_from"] <= max(s["max_inputs"], 0)
        names = {a["name"]: a for a in s["args"]}
        for a in s["args"]:  # bool arguments that add outputs when true
            assert a["adds_outputs"] >= 0 and (a["adds_outputs"] == 0 or a["type"] == "bool")
        if s["one_output_if"]:  # one fixed output for one choice of a string argument
            assert s["one_output_choice"] in names[s["one_output_if"]]["choices"]
        assert set(s["flags"]) <= {"random", "reader", "moves_data", "external", "stateful", "callback", "epilogue",
                                   "accepts_epilogue"}
        assert 0 <= s["min_inputs"] <= s["max_inputs"]
        if s["num_outputs"] < 0:  # one output per element of a list argument, or as many as an int one says
            kind = s["args"][-1 - s["num_outputs"]]["type"]
            assert kind.startswith("list of") or (kind == "int" and "callback" in s["flags"])
        else:
            assert s["num_outputs"] >= 1
        assert s["devices"] and set(s["devices"]) <= {"cpu", "gpu", "mixed"}
        for a in s["args"]:
            types_seen.add(a["type"])
            assert isinstance(a["required"], bool) and isinstance(a["per_sample"], bool)
            assert (a["min"] is None) == (a["max"] is None)
            if a["min"] is not None:
                assert a["min"] <= a["max"]
            if not a["has_default"]:
                assert a["default"] is None
            if a["choices"] is not None:
                assert a["type"] == "str" and a["choices"]
                if a["has_default"]:
                    assert a["default"].lower() in [c.lower() for c in a["choices"]]
    assert all(isinstance(t, str) and t for t in types_seen)


@requires_ops("readers.file", "decoders.image_random_crop", "random.coin_flip", "crop_mirror_normalize")
def test_dali_names_exist():
    assert fn.readers.file.__name__ == "file"
    assert fn.decoders.image_random_crop.__qualname__ == "decoders.image_random_crop"
    from ladle.fn import readers  # namespaces are importable

    assert readers.file is fn.readers.file


def test_types_constants():
    assert types.FLOAT16 == 3 and types.UINT8 == 0 and types.FLOAT == 2 and types.INT32 == 1 and types.INT64 == 4
    assert str(types.RGB) == "RGB" and types.RGB == "RGB"
    assert types.INTERP_LINEAR.value == "LINEAR" and types.INTERP_LANCZOS3 == "LANCZOS3"
    assert types.NCHW == "CHW" and types.NHWC == "HWC"
    assert types.to_dtype("float16") is types.FLOAT16
    assert types.to_dtype(np.float32) is types.FLOAT
    assert types.to_dtype(np.dtype("int64")) is types.INT64
    assert types.to_dtype("FLOAT16") is types.FLOAT16
    torch = pytest.importorskip("torch")
    assert types.to_dtype(torch.float16) is types.FLOAT16
    assert types.to_dtype(torch.uint8) is types.UINT8
    assert types.to_dtype(np.float64) is types.FLOAT64 and types.to_dtype(torch.bool) is types.BOOL
    with pytest.raises(ValueError):
        types.to_dtype(np.complex64)


def test_affinity_list_parsing(monkeypatch):
    assert _parse_cpu_list("0,1,4-6") == [0, 1, 4, 5, 6]
    assert _parse_cpu_list(" 3 ") == [3]
    with pytest.raises(ladle.InvalidArgumentError, match="LADLE_AFFINITY"):
        _parse_cpu_list("a-b")
    monkeypatch.setenv("LADLE_AFFINITY", "0")
    pipe = ladle.Pipeline(batch_size=1, num_threads=2)
    assert pipe._cpus == [0]
    pipe.close()


def test_pipeline_attributes():
    pipe = ladle.Pipeline(batch_size=8, num_threads=3, device_id=-1, seed=7, prefetch_queue_depth={"cpu_size": 2,
                                                                                                  "gpu_size": 3})
    assert (pipe.batch_size, pipe.max_batch_size, pipe.num_threads, pipe.device_id) == (8, 8, 3, -1)
    assert pipe.seed == 7 and pipe.prefetch_queue_depth == 3
    assert ladle.Pipeline(batch_size=1).seed == 0  # documented: reproducible by default
    assert ladle.Pipeline.current() is None
    with pipe:
        assert ladle.Pipeline.current() is pipe
    assert ladle.Pipeline.current() is None
    pipe.close()


def test_version_and_build_info():
    assert ladle.__version__ == "0.1.0"
    info = ladle.build_info()
    assert isinstance(info, dict) and info


# --- running pipelines ----------------------------------------------------------


@pipeline_def(batch_size=4, num_threads=2, seed=42)
def training(root, size=64, shuffle=True):
    jpegs, labels = fn.readers.file(file_root=root, random_shuffle=shuffle, name="Reader")
    images = fn.decoders.image_random_crop(jpegs, device="cpu", output_type=types.RGB)
    images = fn.resize(images, resize_x=size, resize_y=size)
    images = fn.crop_mirror_normalize(images, dtype=types.FLOAT16, output_layout=types.NCHW, mean=MEAN, std=STD,
                                      mirror=fn.random.coin_flip(probability=0.5))
    return images, labels


TRAINING_OPS = ("readers.file", "decoders.image_random_crop", "resize", "crop_mirror_normalize", "random.coin_flip")


@requires_ops(*TRAINING_OPS)
def test_training_pipeline_outputs(sample_root):
    pipe = training(sample_root)
    try:
        images, labels = pipe.run()
        assert isinstance(images, ladle.TensorList)
        assert len(images) == 4
        assert images.dtype == types.FLOAT16
        assert images.layout() == "CHW"
        assert images.is_dense_tensor()
        assert images.shape() == [(3, 64, 64)] * 4
        arr = images.as_array()
        assert arr.shape == (4, 3, 64, 64) and arr.dtype == np.float16
        assert np.isfinite(arr.astype(np.float32)).all()
        assert -3 < arr.min() and arr.max() < 3  # normalized
        assert labels.dtype == types.INT32
        assert set(labels.as_array().ravel().tolist()) <= {0, 1, 2, 3}
    finally:
        pipe.close()


@requires_ops(*TRAINING_OPS)
def test_pipeline_def_overrides_and_function_args(sample_root):
    pipe = training(sample_root, size=32, batch_size=2, seed=1)
    assert pipe.batch_size == 2 and pipe.seed == 1 and pipe.num_threads == 2
    images, _ = pipe.run()
    assert images.shape() == [(3, 32, 32)] * 2
    pipe.close()


def test_pipeline_def_without_parentheses_and_shadowing():
    @pipeline_def
    def noop(batch_size):
        return fn.random.coin_flip()

    if "random.coin_flip" not in op_schemas():
        pytest.skip("operator(s) not registered yet: random.coin_flip")
    with pytest.warns(UserWarning, match="shadows the Pipeline argument"):
        with pytest.raises(ladle.InvalidArgumentError):  # the pipeline itself got no batch_size
            noop(batch_size=3).run()


def test_pipeline_def_must_return_nodes():
    @pipeline_def(batch_size=1)
    def nothing():
        pass

    with pytest.raises(ladle.InvalidArgumentError, match="must return the pipeline's outputs"):
        nothing()


@requires_ops("random.coin_flip", "random.uniform")
def test_outputs_with_several_nodes_and_scalars():
    @pipeline_def(batch_size=5, num_threads=1, seed=3)
    def two():
        return fn.random.coin_flip(probability=1.0), fn.random.uniform(range=[2.0, 3.0], shape=[2])

    pipe = two()
    flips, values = pipe.run()
    assert flips.as_array().tolist() == [1] * 5
    v = values.as_array()
    assert v.shape == (5, 2) and ((v >= 2) & (v < 3)).all()
    pipe.close()


@requires_ops(*TRAINING_OPS)
def test_reader_meta_and_epoch_size(sample_root):
    pipe = training(sample_root)
    meta = pipe.reader_meta("Reader")
    assert meta["epoch_size"] == 32
    assert meta["number_of_shards"] == 1 and meta["shard_id"] == 0
    assert pipe.reader_meta() == {"Reader": meta}
    assert pipe.epoch_size("Reader") == 32
    assert pipe.epoch_size() == {"Reader": 32}
    with pytest.raises(ladle.InvalidArgumentError, match="no reader named 'Nope'"):
        pipe.reader_meta("Nope")
    pipe.close()


def run_arrays(pipe, iterations):
    out = []
    for _ in range(iterations):
        images, labels = pipe.run()
        out.append((images.as_array().copy(), labels.as_array().copy()))
    pipe.close()
    return out


@requires_ops(*TRAINING_OPS)
def test_same_seed_same_bytes_for_any_thread_count(sample_root):
    a = run_arrays(training(sample_root, num_threads=1), 3)
    b = run_arrays(training(sample_root, num_threads=3, prefetch_queue_depth=1), 3)
    for (ia, la), (ib, lb) in zip(a, b):
        np.testing.assert_array_equal(la, lb)
        np.testing.assert_array_equal(ia, ib)
    c = run_arrays(training(sample_root, seed=43), 1)
    assert not np.array_equal(a[0][0], c[0][0])


@requires_ops(*TRAINING_OPS)
def test_resume_from_position(sample_root):
    full = run_arrays(training(sample_root), 5)
    pipe = training(sample_root)
    pipe.run()
    pipe.run()
    assert pipe.get_position() == 2
    pipe.set_position(3)
    images, labels = pipe.run()
    np.testing.assert_array_equal(images.as_array(), full[3][0])
    np.testing.assert_array_equal(labels.as_array(), full[3][1])
    assert pipe.get_position() == 4
    pipe.close()


@requires_ops(*TRAINING_OPS)
def test_outputs_outlive_the_pipeline(sample_root):
    import gc

    torch = pytest.importorskip("torch")
    pipe = training(sample_root)
    images, labels = pipe.run()
    expected = images.as_array().copy()
    t = torch.from_dlpack(images)
    a = images.at(1)
    ptr = images.data_ptr()
    pipe.close()
    del images, labels, pipe
    gc.collect()
    # Another pipeline reuses freed memory; ours must stay intact.
    other = training(ladle.sample_data_root(), seed=99)
    for _ in range(3):
        other.run()
    other.close()
    assert t.data_ptr() == ptr
    np.testing.assert_array_equal(t.numpy(), expected)
    np.testing.assert_array_equal(a, expected[1])


@requires_ops("readers.file", "decoders.image")
def test_with_block_dali_style(sample_root):
    pipe = ladle.Pipeline(batch_size=3, num_threads=1)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=sample_root, name="R")
        images = fn.decoders.image(jpegs, output_type=types.GRAY)
    pipe.set_outputs(jpegs, images, labels)
    pipe.build()
    jpegs, images, labels = pipe.run()
    assert not jpegs.is_dense_tensor() or len(set(jpegs.shape())) == 1
    assert jpegs.dtype == types.UINT8
    assert images.layout() == "HWC"
    assert all(s[2] == 1 for s in images.shape())
    assert labels.shape() == [(1,)] * 3  # DALI's label shape
    with open(os.path.join(sample_root, "circle", "circle_0.jpg"), "rb") as f:
        assert jpegs.at(0).tobytes() == f.read()
    pipe.close()


@requires_ops(*TRAINING_OPS)
def test_demo_runs_and_writes_png(tmp_path):
    from ladle import demo

    out = tmp_path / "grid.png"
    assert demo.main(["--batch-size", "4", "--iters", "2", "--threads", "1", "--out", str(out)]) == 0
    data = out.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    Image = pytest.importorskip("PIL.Image")
    with Image.open(out) as im:
        im.load()
        assert im.mode == "RGB"
        assert im.size == (2 * 228 + 4, 2 * 228 + 4) or im.size == (4 * 228 + 4, 228 + 4)


def test_write_png_matches_pillow(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    from ladle.demo import write_png

    rgb = np.random.default_rng(5).integers(0, 256, size=(7, 9, 3), dtype=np.uint8)
    write_png(tmp_path / "x.png", rgb)
    with Image.open(tmp_path / "x.png") as im:
        np.testing.assert_array_equal(np.asarray(im), rgb)


def test_hint_arguments_are_accepted_and_documented():
    # DALI's hints cannot change results: accepted quietly, documented as such.
    with ladle.Pipeline(batch_size=1) as pipe:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fn.random.coin_flip(bytes_per_sample_hint=8, preserve=True)
    pipe.close()
    common = {a["name"]: a for a in _ladle.op_common_args()}
    assert common["bytes_per_sample_hint"]["no_effect"] and common["preserve"]["no_effect"]
    assert not common["seed"]["no_effect"]
    assert "bytes_per_sample_hint" in fn.resize.__doc__ and "accepted, no effect here" in fn.resize.__doc__


def test_flags_say_what_an_operator_is():
    schemas = op_schemas()
    assert "random" in schemas["random.coin_flip"]["flags"]
    assert "random" in schemas["decoders.image_random_crop"]["flags"]
    assert "random" not in schemas["resize"]["flags"]
    assert "reader" in schemas["readers.file"]["flags"]
    assert set(schemas["external_source"]["flags"]) == {"moves_data", "external"}


def test_choices_are_checked_by_the_library():
    with ladle.Pipeline(batch_size=1) as pipe:
        x = fn.external_source(name="x")
        with pytest.raises(ladle.InvalidArgumentError,
                           match=r"fn\.crop: argument 'out_of_bounds_policy' = \"wrap\": use \"error\", \"pad\" or "
                                 r"\"trim_to_shape\""):
            fn.crop(x, crop=[2, 2], out_of_bounds_policy="wrap")
        fn.crop(x, crop=[2, 2], out_of_bounds_policy="PAD")  # case does not matter
    pipe.close()
    assert op_schemas()["resize"]["args"][0]["choices"] == ["NN", "LINEAR", "CUBIC", "LANCZOS3", "TRIANGULAR",
                                                            "GAUSSIAN"]


def test_unknown_argument_is_named_by_the_library():
    with ladle.Pipeline(batch_size=1) as pipe:
        x = fn.external_source(name="x")
        with pytest.raises(ladle.InvalidArgumentError, match=r"^fn\.flip: unknown argument 'horizonal' \(arguments: "):
            fn.flip(x, horizonal=1)
    pipe.close()


def test_bools_are_taken_where_dali_takes_them():
    # DALI's own training example passes mirror=False and horizontal=True.
    data = np.arange(2 * 3 * 4 * 3, dtype=np.uint8).reshape(2, 3, 4, 3)
    with ladle.Pipeline(batch_size=2) as pipe:
        x = fn.external_source(name="x")
        pipe.set_outputs(fn.flip(x, horizontal=True, vertical=False),
                         fn.crop_mirror_normalize(x, mirror=False, dtype=types.UINT8, output_layout="HWC"))
    pipe.feed_input("x", data)
    flipped, same = pipe.run()
    np.testing.assert_array_equal(np.from_dlpack(flipped), data[:, :, ::-1])
    np.testing.assert_array_equal(np.from_dlpack(same), data)
    pipe.close()


def test_deprecated_aliases_warn_and_work():
    with ladle.Pipeline(batch_size=2, seed=3) as pipe:
        with pytest.warns(DeprecationWarning, match="fn.coin_flip is deprecated; use fn.random.coin_flip"):
            a = fn.coin_flip()
        b = fn.random.coin_flip(seed=7)
        pipe.set_outputs(a, b)
    pipe.run()
    pipe.close()
    assert "fn.image_decoder" in fn.image_decoder.__doc__ or "decoders.image" in fn.image_decoder.__doc__


def test_per_operator_seed_fixes_its_draws():
    def draws(seed, extra_ops):
        with ladle.Pipeline(batch_size=16, seed=seed) as pipe:
            for _ in range(extra_ops):
                fn.random.uniform()
            pipe.set_outputs(fn.random.uniform(seed=1234))
        (out,) = pipe.run()
        pipe.close()
        return np.from_dlpack(out).copy()

    # An operator with its own seed draws the same whatever the pipeline's seed and the operators before it.
    np.testing.assert_array_equal(draws(0, 0), draws(99, 2))
    with ladle.Pipeline(batch_size=16) as pipe:
        pipe.set_outputs(fn.random.uniform(seed=1235))
    (other,) = pipe.run()
    assert not np.array_equal(np.from_dlpack(other), draws(0, 0))
    pipe.close()


def test_pipelines_share_a_thread_pool(sample_root):
    """Two pipelines on one ladle.ThreadPool give the bytes each gives on
    workers of its own, at once; the pool outlives the Python object."""
    import gc

    def build(**kw):
        pipe = ladle.Pipeline(batch_size=8, seed=3, **kw)
        with pipe:
            jpegs, labels = fn.readers.file(file_root=sample_root, random_shuffle=True)
            images = fn.decoders.image_random_crop(jpegs)
            pipe.set_outputs(fn.resize(images, resize_x=32, resize_y=32), labels)
        return pipe

    pool = ladle.ThreadPool(2)
    assert pool.num_threads == 2
    shared = [build(thread_pool=pool), build(thread_pool=pool)]
    del pool
    gc.collect()
    own = build(num_threads=3)
    for _ in range(3):
        expected = [np.asarray(t.as_array()) for t in own.run()]
        for pipe in shared:
            got = [np.asarray(t.as_array()) for t in pipe.run()]
            assert all(np.array_equal(a, b) for a, b in zip(expected, got))
    for pipe in shared + [own]:
        pipe.close()
    with pytest.raises(TypeError):
        ladle.Pipeline(batch_size=2, thread_pool=4)


@requires_ops(*TRAINING_OPS)
def test_executor_statistics_account_for_the_iterations(sample_root):
    pipe = training(sample_root, prefetch_queue_depth=1)
    try:
        pipe.build()
        stats = pipe.executor_statistics()
        assert [op["op"] for op in stats["operators"]] == [
            "readers.file", "decoders.image_random_crop", "resize", "random.coin_flip", "crop_mirror_normalize"]
        assert stats["operators"][0]["name"] == "Reader"
        assert all(op["device"] == "cpu" and not op["fused"] for op in stats["operators"])
        t0 = time.perf_counter()
        for _ in range(3):
            pipe.run()
        elapsed = time.perf_counter() - t0
        stats = pipe.executor_statistics()
        # Three delivered and, with a queue of one, at most two more in the making.
        assert 3 <= stats["iterations"] <= 5
        assert stats["prepare_seconds"] > 0
        busy = sum(op["seconds"] for op in stats["operators"])
        assert 0 < busy <= stats["prepare_seconds"] + 1e-6
        decode = stats["operators"][1]["seconds"]
        assert decode > 0
        assert all(0 <= op["setup_seconds"] <= op["seconds"] for op in stats["operators"])
        assert stats["operators"][1]["setup_seconds"] > 0  # the decoder reads the headers in its setup
        assert 0 <= stats["wait_seconds"] <= elapsed
    finally:
        pipe.close()


def test_wait_seconds_counts_the_consumers_wait():
    """run() from Python waits in slices (for Ctrl-C) before taking the outputs:
    that wait is the consumer's too. Each iteration sleeps 0.1 s in the executor and
    the consumer asks at once, so it must have waited for most of it."""
    def slow(x):
        time.sleep(0.1)
        return x

    pipe = ladle.Pipeline(batch_size=1, num_threads=1, device_id=None, prefetch_queue_depth=1, seed=1)
    with pipe:
        pipe.set_outputs(fn.python_function(fn.random.uniform(range=[0, 1]), function=slow))
    pipe.build()
    try:
        for _ in range(4):
            pipe.run()
        stats = pipe.executor_statistics()
    finally:
        pipe.close()
    # Four iterations in run(): at least three sleeps (one may have been made before the first run()).
    assert stats["wait_seconds"] >= 0.25, stats


@pytest.mark.parametrize("op, arg, value, message", [
    ("coin_flip", "probability", 5.0, r"random\.coin_flip: argument 'probability' = 5 for sample 0 is out of range \[0, 1\]"),
    ("flip", "horizontal", 2.5, r"flip: argument 'horizontal' = 2\.5 for sample 0 is not 0 or 1"),
])
def test_per_sample_values_get_the_constant_checks(op, arg, value, message):
    with ladle.Pipeline(batch_size=2) as pipe:
        x = fn.external_source(name="x")
        v = fn.external_source(name="v", dtype=types.FLOAT, ndim=0)
        out = fn.random.coin_flip(probability=v) if op == "coin_flip" else fn.flip(x, horizontal=v)
        pipe.set_outputs(out)
    pipe.feed_input("x", np.zeros((2, 2, 2, 3), np.uint8))
    pipe.feed_input("v", np.array([value, 0.0], np.float32))
    with pytest.raises(ladle.InvalidArgumentError, match=message):
        pipe.run()
    pipe.close()
