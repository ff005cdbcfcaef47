"""Every dtype in and out of ladle: the buffer protocol and DLPack (NumPy and
torch, bool as DLPack bool where the consumer knows it), types.py against
DALI's nvidia.dali.types, external_source's dtype inference and errors, and
webdataset's dtypes."""

import io
import tarfile

import numpy as np
import pytest
import torch

import ladle
from ladle import _ladle, fn, types
from ladle.tensors import TensorList, to_numpy, to_torch_tensor
from ladle.torch import to_torch
from conftest import dali_or_skip, requires_ops

NAMES = ["uint8", "int8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
         "float16", "float32", "float64", "bool"]


def sample_array(name, shape=(3, 4, 5), seed=0):
    rng = np.random.default_rng(seed)
    if name == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if np.dtype(name).kind == "f":
        return (rng.standard_normal(shape) * 1000).astype(name)
    info = np.iinfo(name)
    return rng.integers(info.min, info.max, shape, dtype=name, endpoint=True)


@pytest.mark.parametrize("name", NAMES)
def test_buffer_and_dlpack_round_trip(name):
    a = sample_array(name)
    for batch in (_ladle.batch_from_buffer(a), _ladle.batch_from_dlpack(a.view(np.uint8) if name == "bool" else a,
                                                                        as_bool=name == "bool")):
        tl = TensorList(batch)
        assert batch.dtype == name and tl.dtype is types.to_dtype(name)
        assert tl.dtype.numpy_name == name
        out = tl.as_array()
        assert out.dtype == np.dtype(name) and out.shape == a.shape
        np.testing.assert_array_equal(out, a)
        np.testing.assert_array_equal(tl.at(2), a[2])
        np.testing.assert_array_equal(np.asarray(tl.as_tensor()), a)
        assert out.ctypes.data == tl.data_ptr()  # a view, not a copy


@pytest.mark.parametrize("name", NAMES)
def test_torch_export_and_import(name):
    a = sample_array(name, seed=1)
    tl = TensorList(_ladle.batch_from_buffer(a))
    if not hasattr(torch, name):  # uint16/32/64 before PyTorch 2.3: a clear error, not wrapped values
        for make in (lambda: to_torch(tl), lambda: to_torch_tensor(tl.sample(0))):
            with pytest.raises(ladle.UnsupportedError, match=f"has no {name} tensors.*fn.cast"):
                make()
        return
    want = getattr(torch, name)
    for t in (to_torch(tl), to_torch_tensor(tl), to_torch_tensor(tl.sample(1))):
        assert t.dtype == want
    t = to_torch(tl)
    assert t.data_ptr() == tl.data_ptr()
    if name in ("uint16", "uint32", "uint64"):  # PyTorch >= 2.3 keeps few operations for them
        np.testing.assert_array_equal(t.view(getattr(torch, f"int{name[4:]}")).numpy().view(name), a)
    else:
        np.testing.assert_array_equal(t.numpy(), a)
        # torch tensors fed back in keep their dtype
        pipe = ladle.Pipeline(batch_size=3, num_threads=1)
        with pipe:
            pipe.set_outputs(fn.external_source(name="x", dtype=types.to_dtype(name), ndim=2, layout=""))
        pipe.feed_input("x", torch.from_numpy(a))
        pipe.feed_input("x", [torch.from_numpy(a[0]), torch.from_numpy(a[1])])
        np.testing.assert_array_equal(pipe.run()[0].as_array(), a)
        got = pipe.run()[0]
        np.testing.assert_array_equal(got.at(1), a[1])
        pipe.close()


def test_bool_uses_dlpack_bool_where_the_consumer_has_it():
    b = _ladle.batch_from_buffer(np.array([[True, False, True]]))
    capsule_dtype = None
    try:
        capsule_dtype = np.from_dlpack(b).dtype  # NumPy >= 1.25 knows kDLBool
    except (TypeError, ValueError, RuntimeError, BufferError):
        pass
    assert capsule_dtype in (None, np.bool_)
    # the uint8 form carries the same bytes
    u8 = np.from_dlpack(ladle.tensors._Compat(b))
    assert u8.dtype == np.uint8 and u8.tolist() == [[1, 0, 1]]
    assert to_numpy(b).dtype == np.bool_ and to_numpy(b).tolist() == [[True, False, True]]


def test_bool_dlpack_code_is_kdlbool():
    # The capsule's DLDataType, read with ctypes: code 6 (kDLBool), 8 bits.
    import ctypes

    class DLDataType(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]

    class DLTensor(ctypes.Structure):
        _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int), ("device_id", ctypes.c_int),
                    ("ndim", ctypes.c_int), ("dtype", DLDataType)]

    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    codes = {}
    for name in NAMES:
        b = _ladle.batch_from_buffer(sample_array(name, (2, 2)))
        for key, cap in (("std", b.__dlpack__()), ("u8", b._dlpack_compat())):
            t = DLTensor.from_address(get(cap, b"dltensor"))
            codes[name, key] = (t.dtype.code, t.dtype.bits, t.dtype.lanes)
    assert codes["bool", "std"] == (6, 8, 1) and codes["bool", "u8"] == (1, 8, 1)
    assert codes["int8", "std"] == (0, 8, 1) and codes["uint16", "std"] == (1, 16, 1)
    assert codes["float64", "std"] == (2, 64, 1) and codes["uint64", "std"] == (1, 64, 1)
    assert codes["uint64", "u8"] == (0, 64, 1) and codes["uint16", "u8"] == (0, 16, 1)  # same bytes, signed
    assert codes["uint8", "u8"] == (1, 8, 1) and codes["float16", "u8"] == (2, 16, 1)


def test_non_numeric_buffers_are_refused_clearly():
    for bad in (np.zeros(3, np.complex64), np.array(["a", "b"]), np.array([object(), 1], dtype=object)):
        with pytest.raises(ladle.UnsupportedError, match="not a ladle dtype"):
            _ladle.batch_from_buffer(bad)
    with pytest.raises(ladle.InvalidArgumentError, match="not a ladle dtype"):
        _ladle.batch_from_dlpack(torch.zeros(2, 2, dtype=torch.complex64))


def test_types_match_dali():
    dali = dali_or_skip()
    import nvidia.dali.types as dt

    for name in ["UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64", "FLOAT16", "FLOAT",
                 "FLOAT64", "BOOL"]:
        ours, theirs = getattr(types, name), getattr(dt, name)
        assert ours.name == theirs.name == name
        assert np.dtype(types.to_numpy_type(ours)) == np.dtype(dt.to_numpy_type(theirs))
        assert types.to_dali_type(dt.to_numpy_type(theirs)) is ours
    for name in ["RGB", "BGR", "GRAY", "YCbCr", "ANY_DATA"]:
        assert getattr(types, name).name == getattr(dt, name).name
    for name in ["NCHW", "NHWC", "NFHWC", "NFCHW", "SAME"]:
        assert getattr(types, name) == getattr(dt, name)
    assert [m for m in types.PipelineAPIType.__members__] == list(dt.PipelineAPIType.__members__)
    assert types.CPU_ONLY_DEVICE_ID == dt.CPU_ONLY_DEVICE_ID
    assert set(types.DALIDataType.__members__) < set(dt.DALIDataType.__members__)
    del dali


def test_to_dtype_spellings():
    assert types.to_dtype(np.bool_) is types.BOOL and types.to_dtype(bool) is types.BOOL
    assert types.to_dtype("float64") is types.FLOAT64 and types.to_dtype("types.INT8") is types.INT8
    assert types.to_dtype(torch.int16) is types.INT16 and types.to_dtype(torch.float64) is types.FLOAT64
    assert types.to_dtype(np.dtype("<u4")) is types.UINT32
    for bad in (np.complex64, object, "str", torch.complex64, np.dtype(">i4")):
        with pytest.raises(ValueError, match="not a ladle data type"):
            types.to_dtype(bad)


# --- external_source ----------------------------------------------------------

def run_all(pipe, epochs=1):
    out = []
    for _ in range(epochs):
        try:
            while True:
                out.append([np.array(t.at(0)) for t in pipe.run()])
        except StopIteration:
            out.append("end")
    return out


def test_external_source_infers_dtype_and_ndim_from_a_generator_function():
    calls = []

    def gen():
        calls.append(1)
        for i in range(3):
            yield [np.full((2, 3), i + 0.25)]  # float64, 2-D

    pipe = ladle.Pipeline(batch_size=1, num_threads=1)
    with pipe:
        x = fn.external_source(source=gen, cycle="raise")  # DALI: a generator function restarts with cycle
        pipe.set_outputs(x, fn.cast(x, dtype=types.INT16))
    got = run_all(pipe, epochs=2)
    assert calls == [1, 1]  # called once per epoch
    firsts = [g for g in got if g != "end"]
    assert [g[0][0, 0] for g in firsts] == [0.25, 1.25, 2.25] * 2
    assert firsts[0][0].dtype == np.float64 and firsts[0][0].shape == (2, 3)
    assert firsts[0][1].dtype == np.int16
    pipe.close()


def test_external_source_infers_from_iterables_callables_and_samples():
    data = [[np.ones((4,), np.float32) * i] for i in range(2)]
    for source, kwargs, dtype, ndim in [
        (data, {}, np.float32, 1),
        (lambda i: np.zeros((1, 2, 2), np.uint16), {}, np.uint16, 2),
        (iter([[np.array([True, False])]]), {}, np.bool_, 1),
        (lambda info: np.int8(info.idx_in_epoch), {"batch": False}, np.int8, 0),
        (lambda: [torch.zeros(2, 2, 2, dtype=torch.float64)], {}, np.float64, 3),
    ]:
        pipe = ladle.Pipeline(batch_size=1, num_threads=1)
        with pipe:
            pipe.set_outputs(fn.external_source(source=source, **kwargs))
        out = pipe.run()[0]
        assert out.at(0).dtype == dtype and out.at(0).ndim == ndim, (source, kwargs)
        pipe.close()


def test_external_source_given_dtype_and_different_data_name_the_source():
    pipe = ladle.Pipeline(batch_size=1, num_threads=1)
    with pipe:
        pipe.set_outputs(fn.external_source(source=lambda: [np.zeros((2,), np.float64)], name="vals",
                                            dtype=types.FLOAT, ndim=1))
    with pytest.raises(ladle.InvalidArgumentError, match=r'external_source "vals": fed float64 .*float32'):
        pipe.run()
    pipe.close()


def test_external_source_non_numeric_data_fail_clearly():
    for data, what in [([np.array(["a", "b"])], "strings"),
                       ([[[1, 2], [3]]], "Python objects"),
                       ([np.array([object()])], "Python objects")]:
        with pytest.raises(ladle.InvalidArgumentError, match=rf"external_source 'bad': sample 0: {what}"):
            with ladle.Pipeline(batch_size=1):
                fn.external_source(source=lambda d=data: d, name="bad")
        pipe = ladle.Pipeline(batch_size=1, num_threads=1)
        with pipe:
            pipe.set_outputs(fn.external_source(name="fed", dtype=types.FLOAT, ndim=1))
        with pytest.raises(ladle.InvalidArgumentError, match=rf"external_source 'fed': sample 0: {what}"):
            pipe.feed_input("fed", data)
        pipe.close()
    with pytest.raises(ladle.InvalidArgumentError, match="not a batch"):
        with ladle.Pipeline(batch_size=1):
            fn.external_source(source=lambda: 5, name="bad")
    pipe = ladle.Pipeline(batch_size=1, num_threads=1)
    with pipe:
        pipe.set_outputs(fn.external_source(name="fed", dtype=types.FLOAT, ndim=1))
    with pytest.raises(ladle.InvalidArgumentError, match="external_source 'fed': got a generator.*generator function"):
        pipe.feed_input("fed", (np.zeros(2, np.float32) for _ in range(2)))
    with pytest.raises(ladle.InvalidArgumentError, match="external_source 'fed': the data: strings"):
        pipe.feed_input("fed", "abc")
    pipe.close()


def test_callable_returning_a_generator_is_a_generator_function():
    def gen(n):
        for i in range(n):
            yield [np.full((2,), i, np.int16)]

    pipe = ladle.Pipeline(batch_size=1, num_threads=1)
    with pipe:
        pipe.set_outputs(fn.external_source(source=lambda: gen(2), cycle="raise"))  # not itself a generator function
    got = run_all(pipe, epochs=2)
    assert [g if g == "end" else g[0].tolist() for g in got] == [[0, 0], [1, 1], "end", [0, 0], [1, 1], "end"]
    pipe.close()


@pytest.mark.parametrize("name", NAMES)
def test_per_sample_arguments_of_any_dtype(name):
    # a per-sample argument may come from a tensor of any numeric type (its first element)
    values = np.array([0, 1, 1, 0]).astype(name)
    pipe = ladle.Pipeline(batch_size=4, num_threads=1)
    with pipe:
        img = fn.external_source(name="img", dtype=types.UINT8, ndim=3)
        flip = fn.external_source(name="flip", dtype=types.to_dtype(name), ndim=0, layout="")
        pipe.set_outputs(fn.flip(img, horizontal=flip))
    imgs = [np.arange(2 * 3 * 1, dtype=np.uint8).reshape(2, 3, 1) for _ in range(4)]
    pipe.feed_input("img", imgs)
    pipe.feed_input("flip", [v for v in values])
    out = pipe.run()[0]
    for i in range(4):
        np.testing.assert_array_equal(out.at(i), imgs[i][:, ::-1] if values[i] else imgs[i])
    pipe.close()


@requires_ops("readers.webdataset")
def test_webdataset_reads_every_dtype(tmp_path):
    arrays = {n: sample_array(n, (6,), seed=3) for n in NAMES}
    arrays["bool"] = np.array([0, 1, 2, 255, 0, 7], np.uint8)  # any nonzero byte is true
    path = tmp_path / "a.tar"
    with tarfile.open(path, "w") as t:
        for n, a in arrays.items():
            info = tarfile.TarInfo(f"s0.{n}")
            info.size = a.nbytes
            t.addfile(info, io.BytesIO(a.tobytes()))
    for group in (NAMES[0:4], NAMES[4:8], NAMES[8:12]):  # at most 4 components per reader
        pipe = ladle.Pipeline(batch_size=1, num_threads=1)
        with pipe:
            outs = fn.readers.webdataset(paths=[str(path)], ext=group, dtypes=[types.to_dtype(n) for n in group])
            pipe.set_outputs(*outs)
        got = pipe.run()
        for n, tl in zip(group, got):
            want = arrays[n] != 0 if n == "bool" else arrays[n]
            assert tl.at(0).dtype == np.dtype(n)
            np.testing.assert_array_equal(tl.at(0), want)
        pipe.close()


@pytest.mark.parametrize("name", NAMES)
def test_host_copy_through_torch_takes_every_dtype(name):
    # as_cpu() of a GPU batch copies through torch, also for types torch lacks (same bytes, viewed back)
    a = sample_array(name, (2, 3), seed=4)
    b = _ladle.batch_from_buffer(a)
    np.testing.assert_array_equal(ladle.tensors._host_copy(b.sample(1)), a[1])
    assert ladle.tensors._host_copy(b).dtype == np.dtype(name)
