"""Batches and TensorLists: DLPack export without copies (NumPy, PyTorch),
dense and ragged batches, lifetimes, dtypes. Batches are made from NumPy
arrays with batch_from_buffer, so no operator is needed."""

import ctypes
import gc

import numpy as np
import pytest

import ladle
from ladle import _ladle, types
from ladle.tensors import TensorList, as_tensor_list, batch_from_samples

torch = pytest.importorskip("torch")

DTYPES = [
    (np.uint8, types.UINT8, torch.uint8),
    (np.int32, types.INT32, torch.int32),
    (np.int64, types.INT64, torch.int64),
    (np.float32, types.FLOAT, torch.float32),
    (np.float16, types.FLOAT16, torch.float16),
]


def random_array(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.random(shape) * 200).astype(dtype)


def test_batch_from_buffer_copies_and_describes():
    a = random_array((3, 4, 5, 2), np.float32)
    b = _ladle.batch_from_buffer(a, layout="HWC")
    assert b.num_samples == 3 and len(b) == 3
    assert b.dtype == "float32"
    assert b.ndim == 3
    assert b.layout == "HWC"
    assert b.device == "cpu" and b.device_id == 0
    assert b.is_dense
    assert b.shape(1) == (4, 5, 2)
    assert b.shapes() == [(4, 5, 2)] * 3
    assert b.data_ptr(0) != a.ctypes.data  # ladle owns a copy
    a[:] = 0  # the copy does not follow the source
    assert np.from_dlpack(b).max() > 0
    with pytest.raises(IndexError):
        b.shape(3)


@pytest.mark.parametrize("np_dtype,ladle_dtype,torch_dtype", DTYPES)
def test_dtypes_round_trip(np_dtype, ladle_dtype, torch_dtype):
    a = random_array((2, 3, 4), np_dtype)
    tl = TensorList(_ladle.batch_from_buffer(a))
    assert tl.dtype == ladle_dtype
    np.testing.assert_array_equal(tl.as_array(), a)
    t = torch.from_dlpack(tl)
    assert t.dtype == torch_dtype
    assert tuple(t.shape) == a.shape
    np.testing.assert_array_equal(t.numpy(), a)


def test_unsupported_element_type():
    with pytest.raises(ladle.UnsupportedError, match="not a ladle dtype"):
        _ladle.batch_from_buffer(np.zeros((2, 2), np.complex64))
    with pytest.raises(ladle.UnsupportedError, match="not a ladle dtype"):
        _ladle.batch_from_buffer(np.zeros((2, 2), object))


def test_numpy_and_torch_share_ladle_memory():
    tl = TensorList(_ladle.batch_from_buffer(random_array((4, 8, 8, 3), np.uint8)))
    a = np.from_dlpack(tl)
    t = torch.from_dlpack(tl)
    assert a.ctypes.data == tl.data_ptr() == t.data_ptr()
    assert a.shape == (4, 8, 8, 3) and tuple(t.shape) == (4, 8, 8, 3)
    t[1, 2, 3, 0] = 7
    assert a[1, 2, 3, 0] == 7
    if a.flags.writeable:  # NumPy 1.x imports DLPack arrays writeable
        a[3, 7, 7, 2] = 11
        assert int(t[3, 7, 7, 2]) == 11
    # Samples are views into the same buffer.
    s = tl.at(2)
    assert s.ctypes.data == tl.data_ptr(2) == a[2].ctypes.data
    assert torch.from_dlpack(tl.sample(2)).data_ptr() == tl.data_ptr(2)


def test_as_tensor_and_array_protocol():
    a = random_array((2, 3), np.int32)
    tl = TensorList(_ladle.batch_from_buffer(a))
    t = tl.as_tensor()
    assert t.shape() == [2, 3]  # a list, as DALI gives it
    assert t.dtype == types.INT32
    assert torch.from_dlpack(t).data_ptr() == tl.data_ptr()
    np.testing.assert_array_equal(np.asarray(tl), a)
    np.testing.assert_array_equal(np.asarray(t), a)


def test_ragged_batch():
    samples = [random_array((h, 5, 3), np.uint8, seed=h) for h in (2, 4, 3)]
    tl = TensorList(batch_from_samples(samples, layout="HWC"))
    assert len(tl) == 3
    assert not tl.is_dense_tensor()
    assert tl.shape() == [(2, 5, 3), (4, 5, 3), (3, 5, 3)]
    assert tl.layout() == "HWC"
    for i, s in enumerate(samples):
        np.testing.assert_array_equal(tl.at(i), s)
        np.testing.assert_array_equal(tl[i - 3], s)  # negative indices
        np.testing.assert_array_equal(torch.from_dlpack(tl.sample(i)).numpy(), s)
    np.testing.assert_array_equal(list(tl)[1], samples[1])
    with pytest.raises(BufferError, match="batch is ragged"):
        np.from_dlpack(tl)
    with pytest.raises(BufferError, match=r"take samples with at\(i\)"):
        torch.from_dlpack(tl)
    with pytest.raises(ladle.StateError, match="ragged"):
        tl.as_array()
    with pytest.raises(IndexError):
        tl.at(3)


def test_ragged_from_flat_buffer_checks_sizes():
    with pytest.raises(ladle.InvalidArgumentError, match="hold 6 elements"):
        _ladle.batch_from_buffer(np.zeros(7, np.uint8), shapes=[(2,), (4,)])
    with pytest.raises(ladle.InvalidArgumentError, match="same number of dimensions"):
        _ladle.batch_from_buffer(np.zeros(8, np.uint8), shapes=[(2, 2), (4,)])


def test_tensor_outlives_tensorlist_and_batch():
    a = random_array((3, 16, 16), np.float32)
    tl = as_tensor_list(a)
    t = torch.from_dlpack(tl)
    sample = tl.at(1)
    ptr = tl.data_ptr()
    del tl
    gc.collect()
    # Churn the allocator: freed memory would be reused here.
    junk = [as_tensor_list(np.full((3, 16, 16), 9, np.float32)) for _ in range(8)]
    assert t.data_ptr() == ptr
    np.testing.assert_array_equal(t.numpy(), a)
    np.testing.assert_array_equal(sample, a[1])
    del junk


def test_capsule_not_consumed_releases_batch():
    tl = as_tensor_list(random_array((2, 2), np.float32))
    for _ in range(100):
        capsule = tl.__dlpack__()
        del capsule  # the capsule destructor runs the deleter
    gc.collect()
    np.testing.assert_array_equal(tl.as_array().shape, (2, 2))


def test_dlpack_device_and_stream_on_cpu():
    tl = as_tensor_list(random_array((2, 2), np.uint8))
    assert tl.__dlpack_device__() == (1, 0)
    assert tl.sample(0).__dlpack_device__() == (1, 0)
    assert tl.device == "cpu"
    tl.__dlpack__(stream=None)  # CPU: nothing to wait for
    tl.__dlpack__(dl_device=(1, 0))
    with pytest.raises(BufferError, match="does not copy"):
        tl.__dlpack__(dl_device=(2, 0))


def test_dlpack_copy_true_gives_private_copy():
    a = random_array((2, 3), np.float32)
    tl = as_tensor_list(a)
    copied = torch.utils.dlpack.from_dlpack(tl.__dlpack__(copy=True))
    assert copied.data_ptr() != tl.data_ptr()
    np.testing.assert_array_equal(copied.numpy(), a)
    copied[0, 0] = -1
    assert tl.as_array()[0, 0] == a[0, 0]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32),
                ("ndim", ctypes.c_int32), ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


def read_capsule(capsule, name):
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return get(capsule, name)


def test_versioned_capsule_when_asked():
    a = random_array((2, 3, 4), np.float16)
    tl = as_tensor_list(a)
    capsule = tl.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(capsule)
    m = DLManagedTensorVersioned.from_address(read_capsule(capsule, b"dltensor_versioned"))
    assert (m.major, m.minor) == (_ladle.DLPACK_MAJOR_VERSION, _ladle.DLPACK_MINOR_VERSION)
    assert m.flags == 0
    t = m.dl_tensor
    assert t.data == tl.data_ptr()
    assert (t.device_type, t.device_id, t.ndim) == (1, 0, 3)
    assert (t.code, t.bits, t.lanes) == (2, 16, 1)
    assert [t.shape[d] for d in range(3)] == [2, 3, 4]
    assert [t.strides[d] for d in range(3)] == [12, 4, 1]
    del capsule, m, t  # unconsumed: the destructor releases the batch
    gc.collect()
    legacy = tl.__dlpack__(max_version=(0, 8))
    assert '"dltensor"' in repr(legacy)
    copied = tl.__dlpack__(max_version=(1, 0), copy=True)
    m = DLManagedTensorVersioned.from_address(read_capsule(copied, b"dltensor_versioned"))
    assert m.flags & 2  # DLPACK_FLAG_BITMASK_IS_COPIED


def test_numpy_from_dlpack_versioned_if_supported():
    # NumPy >= 2.1 asks for max_version=(1, 0) and reads the versioned capsule.
    a = random_array((2, 2), np.int32)
    tl = as_tensor_list(a)
    np.testing.assert_array_equal(np.from_dlpack(tl), a)


def test_tensorlist_metadata():
    tl = as_tensor_list(random_array((5, 2, 2), np.int64), layout="HW")
    assert len(tl) == 5
    assert tl.dtype == types.INT64
    assert tl.layout() == "HW"
    assert tl.is_dense_tensor()
    assert tl.device == "cpu"
    assert tl.as_cpu() is tl
    assert "TensorListCPU" in repr(tl)
    assert ladle.TensorListCPU is ladle.TensorList
    with pytest.raises(TypeError):
        TensorList(np.zeros(3))


def test_scalar_samples():
    tl = as_tensor_list(np.arange(4, dtype=np.int32))
    assert tl.shape() == [(), (), (), ()]
    assert tl.at(2) == 2
    np.testing.assert_array_equal(tl.as_array(), np.arange(4))


def test_ragged_wrap_of_a_flat_array_without_copy():
    """batch_from_dlpack(shapes=...): the samples back to back in one tensor
    (how ladle.torchvision feeds ragged lists of CUDA tensors), no copy."""
    flat = np.arange(10, dtype=np.uint8)
    tl = TensorList(_ladle.batch_from_dlpack(flat, layout="HWC", shapes=[(2, 3, 1), (4, 1, 1)], ready_stream=0))
    assert not tl.is_dense_tensor() and tl.shape() == [(2, 3, 1), (4, 1, 1)] and tl.layout() == "HWC"
    np.testing.assert_array_equal(tl.at(0), flat[:6].reshape(2, 3, 1))
    np.testing.assert_array_equal(tl.at(1), flat[6:].reshape(4, 1, 1))
    assert tl.sample(0).data_ptr() == flat.ctypes.data and tl.sample(1).data_ptr() == flat.ctypes.data + 6
    dense = TensorList(_ladle.batch_from_dlpack(torch.arange(12), shapes=[(2, 3), (2, 3)]))
    assert dense.is_dense_tensor() and torch.equal(torch.from_dlpack(dense), torch.arange(12).view(2, 2, 3))
    with pytest.raises(ladle.InvalidArgumentError, match="shapes hold 9 elements, the tensor 10"):
        _ladle.batch_from_dlpack(flat, shapes=[(2, 3, 1), (3, 1, 1)])
    with pytest.raises(ladle.InvalidArgumentError, match="batch_from_dlpack: all samples need the same number"):
        _ladle.batch_from_dlpack(flat, shapes=[(6,), (4, 1)])
    with pytest.raises(ladle.InvalidArgumentError, match="negative extent"):
        _ladle.batch_from_dlpack(flat, shapes=[(-1,)])
    assert len(TensorList(_ladle.batch_from_dlpack(np.zeros(0, np.uint8), shapes=[]))) == 0


def test_samples_are_tensors_as_in_dali():
    """tl[i] and iteration give Tensors (DALI's TensorCPU methods), tl.at(i) the array."""
    a = random_array((3, 4, 2), np.uint8)
    tl = TensorList(_ladle.batch_from_buffer(a))
    t = tl[1]
    assert t.shape() == [4, 2] and t.ndim() == 2 and t.dtype == types.UINT8
    assert t.as_cpu() is t
    np.testing.assert_array_equal(np.array(t), a[1])
    np.testing.assert_array_equal(tl.at(1), a[1])
    assert [s.shape() for s in tl] == [[4, 2]] * 3
    assert [np.array(s).tolist() for s in tl[0:2]] == a[0:2].tolist()
    np.testing.assert_array_equal(np.array(tl[-1]), a[2])
