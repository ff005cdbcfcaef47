"""Errors: the exception hierarchy, and argument mistakes reported at the
user's line naming the operator and the argument."""

import os
import shutil
import traceback

import numpy as np
import pytest

import ladle
from ladle import _ladle, fn, types
from conftest import requires_ops

FAMILIES = {
    "InvalidArgumentError": ValueError,
    "OutOfMemoryError": MemoryError,
    "ReadError": OSError,
    "CorruptDataError": None,
    "UnsupportedError": None,
    "LimitError": None,
    "StateError": None,
    "CudaError": None,
    "NotAvailableError": None,
    "InternalError": None,
}


def test_hierarchy():
    assert issubclass(ladle.Error, RuntimeError)
    for name, extra in FAMILIES.items():
        cls = getattr(ladle, name)
        assert cls is getattr(_ladle, name)
        assert issubclass(cls, ladle.Error), name
        assert issubclass(cls, RuntimeError), name
        if extra is not None:
            assert issubclass(cls, extra), name
        assert cls.__module__ == "ladle"
        assert cls.__doc__


def test_error_carries_status_name():
    with pytest.raises(ladle.UnsupportedError) as info:
        _ladle.batch_from_buffer(np.zeros(2, np.complex128))
    assert info.value.status == "LADLE_ERROR_UNSUPPORTED"


def test_dali_style_except_clause_catches():
    with pytest.raises(RuntimeError):
        with ladle.Pipeline(batch_size=1):
            fn.readers.file(no_such_argument=1)


def test_fn_outside_pipeline():
    with pytest.raises(ladle.StateError, match=r"fn\.random\.coin_flip\(\) must be called inside a pipeline"):
        fn.random.coin_flip()


@requires_ops("readers.file", "resize")
class TestArgumentErrors:
    def define(self, pipe, **resize_args):
        with pipe:
            jpegs, _ = fn.readers.file(file_root=ladle.sample_data_root())
            return fn.resize(jpegs, **resize_args)

    def test_unknown_argument_names_op_argument_and_choices(self, pipe_factory):
        with pytest.raises(ladle.InvalidArgumentError) as info:
            self.define(pipe_factory(), resize_xx=224)
        text = str(info.value)
        assert "fn.resize" in text and "'resize_xx'" in text
        assert "resize_x" in text and "interp_type" in text  # the valid names are listed

    def test_error_points_at_the_users_line(self, pipe_factory):
        pipe = pipe_factory()
        try:
            with pipe:
                jpegs, _ = fn.readers.file(file_root=ladle.sample_data_root())
                fn.resize(jpegs, resize_xx=1)  # THE LINE
        except ladle.InvalidArgumentError as e:
            frames = traceback.extract_tb(e.__traceback__)
        assert any("THE LINE" in (f.line or "") or "resize_xx=1" in (f.line or "") for f in frames)
        assert frames[0].filename == __file__

    def test_wrong_type(self, pipe_factory):
        with pytest.raises(ladle.InvalidArgumentError, match=r"resize: argument 'resize_x' expects float, got str"):
            self.define(pipe_factory(), resize_x="wide")

    def test_float_for_int_argument_is_rejected(self, pipe_factory):
        pipe = pipe_factory()
        with pytest.raises(ladle.InvalidArgumentError, match=r"readers\.file: argument 'num_shards' expects int"):
            with pipe:
                fn.readers.file(file_root=ladle.sample_data_root(), num_shards=2.5)

    def test_bool_is_not_a_number(self, pipe_factory):
        with pytest.raises(ladle.InvalidArgumentError, match="'resize_x' expects float, got bool"):
            self.define(pipe_factory(), resize_x=True)

    def test_out_of_range(self, pipe_factory):
        with pytest.raises(ladle.InvalidArgumentError, match=r"resize: argument 'resize_x' = -5 is out of range"):
            self.define(pipe_factory(), resize_x=-5)

    def test_wrong_element_in_list(self, pipe_factory):
        pipe = pipe_factory()
        with pytest.raises(ladle.InvalidArgumentError, match="'file_filters' expects list of str"):
            with pipe:
                fn.readers.file(file_root=ladle.sample_data_root(), file_filters=["*.jpg", 3])

    def test_numpy_values_are_accepted(self, pipe_factory):
        self.define(pipe_factory(), resize_x=np.float32(224), resize_y=np.int64(224))

    def test_invalid_device(self, pipe_factory):
        devices = ", ".join(ladle.pipeline.op_schemas()["resize"]["devices"])
        with pytest.raises(ladle.InvalidArgumentError, match=f"device='tpu' is not supported; it runs on: {devices}"):
            self.define(pipe_factory(), device="tpu")

    def test_wrong_number_of_inputs(self, pipe_factory):
        with pytest.raises(ladle.InvalidArgumentError, match=r"fn\.resize: takes 1 input\(s\), got 0"):
            with pipe_factory():
                fn.resize(resize_x=4)

    def test_input_must_be_a_node(self, pipe_factory):
        with pytest.raises(ladle.InvalidArgumentError, match="input 0 must be a DataNode"):
            with pipe_factory():
                fn.resize(np.zeros((4, 4, 3)), resize_x=4)

    def test_node_from_another_pipeline(self, pipe_factory):
        a, b = pipe_factory(), pipe_factory()
        with a:
            jpegs, _ = fn.readers.file(file_root=ladle.sample_data_root())
        with pytest.raises(ladle.InvalidArgumentError, match="belongs to another pipeline"):
            with b:
                fn.resize(jpegs, resize_x=4)

    def test_duplicate_instance_name(self, pipe_factory):
        with pytest.raises(ladle.InvalidArgumentError, match="'Reader' is already in the pipeline"):
            with pipe_factory():
                fn.readers.file(file_root=ladle.sample_data_root(), name="Reader")
                fn.readers.file(file_root=ladle.sample_data_root(), name="Reader")


@requires_ops("readers.file", "random.coin_flip", "crop_mirror_normalize", "decoders.image")
def test_per_sample_argument_rules(pipe_factory):
    pipe = pipe_factory()
    with pipe:
        jpegs, _ = fn.readers.file(file_root=ladle.sample_data_root())
        images = fn.decoders.image(jpegs)
        flip = fn.random.coin_flip()
        fn.crop_mirror_normalize(images, mirror=flip)  # per-sample: fine
        with pytest.raises(ladle.InvalidArgumentError, match="'dtype' must be a constant"):
            fn.crop_mirror_normalize(images, dtype=flip)


@requires_ops("cast", "readers.file")
def test_missing_required_argument(pipe_factory):
    with pytest.raises(ladle.InvalidArgumentError, match=r"fn\.cast: argument 'dtype' is required"):
        with pipe_factory():
            jpegs, _ = fn.readers.file(file_root=ladle.sample_data_root())
            fn.cast(jpegs)


@requires_ops("cast", "readers.file")
def test_bad_dtype_value(pipe_factory):
    with pytest.raises(ladle.InvalidArgumentError, match=r"fn\.cast: argument 'dtype'.*complex64"):
        with pipe_factory():
            jpegs, _ = fn.readers.file(file_root=ladle.sample_data_root())
            fn.cast(jpegs, dtype=np.complex64)


def test_batch_size_required():
    pipe = ladle.Pipeline()
    with pytest.raises(ladle.InvalidArgumentError, match="batch_size"):
        pipe.build()


def test_unknown_pipeline_argument():
    with pytest.raises(TypeError, match="batch_sise"):
        ladle.Pipeline(batch_sise=4)


def test_ignored_dali_pipeline_argument_warns():
    with pytest.warns(UserWarning, match="enable_memory_stats"):
        ladle.Pipeline(batch_size=2, enable_memory_stats=True).close()


def test_build_without_outputs(pipe_factory):
    with pytest.raises(ladle.StateError, match="no outputs"):
        pipe_factory().build()


def test_closed_pipeline(pipe_factory):
    pipe = pipe_factory()
    pipe.close()
    pipe.close()  # idempotent
    with pytest.raises(ladle.StateError, match="closed"):
        pipe.run()


def test_close_from_another_thread_during_run():
    # run() waits on a slow iteration; close() from another thread ends that
    # wait with a StateError, then destroys the pipeline; it stays closed.
    import threading
    import time
    pipe = ladle.Pipeline(batch_size=4, num_threads=1)
    with pipe:
        pipe.set_outputs(fn.gaussian_blur(fn.external_source(name="x"), sigma=30.0))
    pipe.build()
    pipe.feed_input("x", np.zeros((4, 600, 600, 3), np.uint8))
    outcome = {}

    def consumer():
        try:
            outcome["outputs"] = pipe.run()
        except ladle.Error as e:
            outcome["error"] = e

    thread = threading.Thread(target=consumer)
    thread.start()
    time.sleep(0.3)
    pipe.close()  # blocks until run() has stopped waiting (and the sample in hand is done)
    thread.join(30)
    assert not thread.is_alive()
    # The iteration takes seconds (4 samples of a 181x181 blur on one thread), so
    # run() was still waiting.
    assert isinstance(outcome.get("error"), ladle.StateError), outcome
    assert "closed while run() waited" in str(outcome["error"])
    with pytest.raises(ladle.StateError, match="closed"):
        pipe.run()
    pipe.close()  # idempotent


@requires_ops("readers.file")
def test_missing_folder_is_a_read_error(pipe_factory, tmp_path):
    pipe = pipe_factory(batch_size=1)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=str(tmp_path / "nowhere"))
        pipe.set_outputs(jpegs, labels)
    with pytest.raises(ladle.ReadError, match="nowhere") as info:
        pipe.build()
    assert isinstance(info.value, OSError)


@requires_ops("readers.file", "decoders.image")
def test_corrupt_sample_names_the_file_and_pipeline_goes_on(pipe_factory, tmp_path, sample_root):
    good = tmp_path / "a"
    bad = tmp_path / "b"
    good.mkdir()
    bad.mkdir()
    src = os.path.join(sample_root, "circle", "circle_0.jpg")
    shutil.copy(src, good / "good.jpg")
    with open(src, "rb") as f:
        (bad / "truncated.jpg").write_bytes(f.read()[:2000])
    pipe = pipe_factory(batch_size=1, num_threads=1)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=str(tmp_path))
        pipe.set_outputs(fn.decoders.image(jpegs, output_type=types.RGB), labels)
    images, labels = pipe.run()
    assert images.shape() == [(240, 320, 3)]
    with pytest.raises(ladle.CorruptDataError, match="truncated.jpg"):
        pipe.run()
    images, labels = pipe.run()  # the next iteration (epoch 1) is fine
    assert labels.as_array().ravel().tolist() == [0]


def test_gpu_transfer_unavailable_without_the_operator(pipe_factory):
    if "transfer.to_gpu" in ladle.pipeline.op_schemas():
        pytest.skip("this build has GPU transfers")
    if "random.coin_flip" not in ladle.pipeline.op_schemas():
        pytest.skip("operator(s) not registered yet: random.coin_flip")
    with pipe_factory():
        flip = fn.random.coin_flip()
        with pytest.raises(ladle.NotAvailableError, match="GPU support is not built"):
            flip.gpu()


@pytest.mark.parametrize("kwargs, message", [
    ({"batch_size": 2.7}, "batch_size must be an integer"),
    ({"batch_size": 0}, "batch_size must be >= 1"),
    ({"batch_size": 4, "num_threads": 0}, "num_threads must be >= 1"),
    ({"batch_size": 4, "num_threads": -3}, "num_threads must be >= -1"),
    ({"batch_size": 4, "prefetch_queue_depth": -2}, "prefetch_queue_depth must be >= 1"),
    ({"batch_size": 4, "max_pixels": -1}, "max_pixels must be >= 1"),
    ({"batch_size": 4, "seed": 1.5}, "seed must be an integer"),
    ({"batch_size": 4, "seed": 2**64}, "seed must be < 2\\*\\*64"),
    ({"batch_size": True}, "batch_size must be an integer"),
])
def test_pipeline_arguments_are_checked(kwargs, message):
    with pytest.raises(ladle.InvalidArgumentError, match=message):
        ladle.Pipeline(**kwargs)


def test_position_overflow_is_refused(sample_root):
    pipe = ladle.Pipeline(batch_size=256)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=sample_root)
        pipe.set_outputs(labels)
    with pytest.raises(ladle.InvalidArgumentError, match="too large"):
        pipe.set_position(10**18)  # 10**18 x 256 samples do not fit in 63 bits
    pipe.set_position(10**16)  # they do: the sample is the one the arithmetic says
    (labels,) = pipe.run()
    first = 10**16 * 256 % 32
    assert int(np.array(labels.at(0))[0]) == first // 8  # 8 files per class, listed in order
    pipe.close()


@pytest.mark.parametrize("make", [
    lambda x: fn.crop(x, crop=[30000, 30000], out_of_bounds_policy="pad"),
    lambda x: fn.resize(x, resize_x=100000, resize_y=100000),
])
def test_output_sizes_are_capped(make):
    pipe = ladle.Pipeline(batch_size=1, num_threads=1)
    with pipe:
        x = fn.external_source(name="x")
        pipe.set_outputs(make(x))
    pipe.feed_input("x", [np.zeros((8, 8, 3), np.uint8)])
    with pytest.raises(ladle.LimitError, match=r"(crop|resize): output 0 of sample 0 would be .* more than "
                                               r"max_pixels x 4"):
        pipe.run()
    pipe.close()


def test_resize_needs_a_size():
    with ladle.Pipeline(batch_size=1) as pipe:
        x = fn.external_source(name="x")
        pipe.set_outputs(fn.resize(x))
    with pytest.raises(ladle.InvalidArgumentError, match=r"resize: no output size: give resize_x"):
        pipe.build()
    pipe.close()
