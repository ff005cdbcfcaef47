"""ladle.dynamic's evaluation modes and contexts, Batch/Tensor in DALI's
shape (constructors, select, slice, devices), and errors that name the
operator, the argument and the file a sample was read from."""

import os
import shutil
import threading

import numpy as np
import pytest

import ladle
from conftest import cuda_usable, sample_jpegs

ldd = pytest.importorskip("ladle.dynamic")
torch = pytest.importorskip("torch")


def images(n=4):
    return ldd.batch([np.frombuffer(d, np.uint8) for _, d in sample_jpegs()[:n]])


# --- evaluation modes ----------------------------------------------------------------

def test_deferred_calls_return_at_once_and_give_eager_results():
    enc = images(6)
    eager = ldd.resize(ldd.decoders.image(enc), resize_x=32, resize_y=24)
    with ldd.EvalMode.deferred:
        assert ldd.EvalMode.current() is ldd.EvalMode.deferred
        decoded = ldd.decoders.image(enc)
        resized = ldd.resize(decoded, resize_x=32, resize_y=24)  # takes a result not computed yet
        assert "not evaluated" in repr(resized) or resized.evaluate() is resized
        flipped = ldd.flip(resized.tensors[0], horizontal=1)  # a Tensor of a deferred batch
    assert ldd.EvalMode.current() is ldd.EvalMode.eager
    ldd.EvalContext.current().evaluate_all()
    np.testing.assert_array_equal(resized.torch().numpy(), eager.torch().numpy())
    np.testing.assert_array_equal(np.array(flipped), np.array(eager.tensors[0])[:, ::-1])


def test_deferred_work_runs_off_the_calling_thread_in_order():
    gate = threading.Event()
    threads = []
    ctx = ldd.EvalContext(num_threads=1)
    with ctx, ldd.EvalMode.deferred:
        ctx._submit(lambda: (threads.append(threading.current_thread()), gate.wait(10)))
        first = ldd.cast(ldd.batch(np.arange(6, dtype=np.int32).reshape(3, 2)), dtype=ldd.float32)
        second = ldd.cast(first, dtype=ldd.int16)  # takes a deferred result: fed by the worker, in order
        assert second._future is not None and not second._future[0].done()  # queued behind the blocked item
        # A call whose inputs are data is fed to its graph at once: it needs no worker.
        np.testing.assert_array_equal(np.array(first), np.arange(6, dtype=np.float32).reshape(3, 2))
        assert not second._future[0].done()
        gate.set()
        ctx.evaluate_all()
    assert threads and threads[0] is not threading.current_thread()
    np.testing.assert_array_equal(np.array(second), np.arange(6, dtype=np.int16).reshape(3, 2))
    ctx.close()


def test_deferred_errors_surface_where_the_result_is_used():
    bad = ldd.batch([np.zeros(10, np.uint8)])
    with ldd.EvalMode.deferred:
        with pytest.raises(ladle.InvalidArgumentError, match="unknown argument 'foo'"):
            ldd.flip(bad, foo=1)  # argument checks stay immediate
        out = ldd.decoders.image(bad)  # bad data: found by the work
    with pytest.raises(ladle.Error, match="ladle.dynamic.decoders.image: sample 0"):
        out.evaluate()
    with pytest.raises(ladle.Error):
        ldd.EvalContext.current().evaluate_all()


def test_sync_modes_and_context_settings():
    b = ldd.batch(np.ones((2, 3), np.uint8))
    for mode in (ldd.EvalMode.sync_cpu, ldd.EvalMode.sync_full, ldd.EvalMode.default):
        with mode:
            assert np.array(ldd.cast(b, dtype=ldd.float32)).sum() == 6
    pool = ldd.ThreadPool(2)
    assert pool.num_threads == 2
    with ldd.EvalContext(thread_pool=pool) as ctx:
        assert ldd.EvalContext.current() is ctx and ctx.num_threads == 2 and ctx.thread_pool is pool
        ldd.cast(b, dtype=ldd.float32)
        assert len(ctx._cache) == 1  # each context keeps its own graphs
    assert ldd.EvalContext.current() is ldd.EvalContext.default()
    with pytest.raises(ladle.InvalidArgumentError, match="not both"):
        ldd.EvalContext(thread_pool=pool, num_threads=3)
    assert ldd.EvalContext(num_threads=3).num_threads == 3
    assert ldd.device("gpu:1") == ldd.Device("gpu", 1) and str(ldd.device("cpu")) == "cpu"
    assert ldd.device(torch.device("cpu")).device_type == "cpu"


# --- Batch and Tensor as DALI has them ----------------------------------------------------

def test_constructors_select_and_slice():
    a, b = np.arange(12, dtype=np.int32).reshape(3, 4), np.arange(8, dtype=np.int32).reshape(2, 4)
    batch = ldd.Batch([a, b])
    assert batch.batch_size == 2 and batch.shape == [(3, 4), (2, 4)]
    assert isinstance(batch.select(1), ldd.Tensor) and np.array_equal(np.array(batch.select(1)), b)
    sel = batch.select([1])
    assert isinstance(sel, ldd.Batch) and sel.shape == [(2, 4)]
    assert batch.select(slice(None)) is batch and batch.select(...) is batch
    sliced = batch.slice[:, 1:3]
    assert [np.array(t).tolist() for t in sliced] == [a[:, 1:3].tolist(), b[:, 1:3].tolist()]
    per_sample = batch.slice[ldd.batch(np.array([0, 1], np.int32))]  # row 0 of a, row 1 of b
    assert [np.array(t).tolist() for t in per_sample] == [a[0].tolist(), b[1].tolist()]
    t = ldd.Tensor(np.arange(6).reshape(2, 3), dtype=ldd.int32)
    assert t.dtype == ldd.int32 and t.shape == (2, 3) and t.size == 6 and t.nbytes == 24
    assert np.array(t[1, 1:]).tolist() == [4, 5] and ldd.tensor(7).item() == 7
    assert np.array(ldd.Tensor(batch=batch, index_in_batch=0)).tolist() == a.tolist()
    assert ldd.Batch(batch.tensor_list).tensor_list is batch.tensor_list
    assert ldd.Batch([a, a], dtype=ldd.float32).dtype == ldd.float32
    assert ldd.Batch.broadcast(np.ones(3, np.uint8), 4).shape == [(3,)] * 4
    assert batch.to_device("cpu") is batch and t.to_device(ldd.Device("cpu")) is t
    dense = ldd.as_batch(np.zeros((2, 2), np.float32))
    assert dense.torch(copy=True).data_ptr() != dense.tensor_list.data_ptr(0)
    with pytest.raises(ladle.StateError):
        batch.torch(copy=False)
    assert tuple(batch.torch(pad=True).shape) == (2, 3, 4)
    assert ldd.dtype("uint8") == ldd.uint8 == ladle.types.UINT8


# --- errors ---------------------------------------------------------------------------

def test_errors_name_operator_argument_and_file(tmp_path):
    root = tmp_path / "data"
    (root / "a").mkdir(parents=True)
    good = ladle.sample_data_root()
    first = sorted(os.listdir(good))[0]
    for f in sorted(os.listdir(os.path.join(good, first)))[:3]:
        shutil.copy(os.path.join(good, first, f), root / "a" / f)
    (root / "a" / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 this is not a JPEG")
    reader = ldd.readers.File(file_root=str(root))
    (jpegs, _), = list(reader.next_epoch(batch_size=4))
    with pytest.raises(ladle.Error) as info:
        ldd.decoders.image(jpegs)
    text = str(info.value)
    index = [len(t) for t in jpegs.tensors].index(len(b"\xff\xd8\xff\xe0 this is not a JPEG"))
    assert text.startswith(f"ladle.dynamic.decoders.image: sample {index}: ") and "broken.jpg" in text
    with pytest.raises(ladle.InvalidArgumentError, match=r"ladle.dynamic.resize: .*'resize_x'"):
        ldd.resize(ldd.decoders.image(jpegs.select([i for i in range(4) if i != index])), resize_x=-5)
    reader.close()


@pytest.mark.gpu
def test_gpu_deferred_and_stream_ordering():
    if not cuda_usable():
        pytest.skip("no GPU")
    enc = images(6)
    eager = ldd.resize(ldd.decoders.image(enc, device="gpu"), resize_x=32, resize_y=32)
    s = torch.cuda.Stream()
    with ldd.EvalContext(cuda_stream=s), ldd.EvalMode.deferred:
        out = ldd.resize(ldd.decoders.image(enc, device="gpu"), resize_x=32, resize_y=32)
        x = out.torch()  # ordered on s through DLPack's stream protocol
    s.synchronize()
    assert torch.equal(x.cpu(), eager.torch().cpu())
    with ldd.EvalMode.sync_full:
        y = ldd.flip(eager, horizontal=1)
    assert torch.equal(y.torch().cpu(), eager.torch().cpu().flip(2))


def test_streams_are_held_and_found():
    s = ldd.stream(stream=0x1234)
    assert s.handle == 0x1234 and s.__cuda_stream__() == (0, 0x1234) and ldd.stream(stream=s) is s
    ldd.set_current_stream(0x99)
    try:
        assert ldd.get_current_stream().handle == 0x99
        assert ldd.EvalContext().cuda_stream.handle == 0x99  # a context without its own stream
        assert ldd.EvalContext(cuda_stream=s).cuda_stream is s
    finally:
        ldd.set_current_stream(None)
    assert ldd.get_current_stream() is None
    if not cuda_usable():
        with pytest.raises(ladle.NotAvailableError):
            ldd.Stream()
