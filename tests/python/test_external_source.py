"""fn.external_source and Pipeline.feed_input: data the application supplies,
one batch per iteration, including batches smaller than batch_size, sources
that run out, and (on the GPU machine) GPU batches passed between pipelines."""

import os
import time

import numpy as np
import pytest

import ladle
from ladle import fn, types
from conftest import cuda_usable


def feeding_pipeline(batch_size=4, **kwargs):
    pipe = ladle.Pipeline(batch_size=batch_size, num_threads=2, **kwargs)
    with pipe:
        images = fn.external_source(name="images")
        flipped = fn.flip(images, horizontal=1, vertical=0)
        pipe.set_outputs(flipped, images)
    return pipe


def random_images(rng, n, ragged=True):
    return [rng.integers(0, 256, (int(rng.integers(3, 9)) if ragged else 5, int(rng.integers(2, 7)) if ragged else 4, 3),
                         dtype=np.uint8) for _ in range(n)]


def test_fed_batches_come_out_in_order_with_their_own_sizes():
    rng = np.random.default_rng(0)
    pipe = feeding_pipeline(prefetch_queue_depth=2)
    try:
        fed = [random_images(rng, n) for n in (4, 1, 3)]
        for batch in fed:
            pipe.feed_input("images", batch)
        for batch in fed:
            flipped, same = pipe.run()
            assert len(flipped) == len(batch) == len(same)
            for i, image in enumerate(batch):
                assert np.array_equal(same.at(i), image)
                assert np.array_equal(flipped.at(i), image[:, ::-1])
        with pytest.raises(ladle.StateError, match="external_source 'images' has no data"):
            pipe.run()
        pipe.feed_input("images", random_images(rng, 2))  # the pipeline goes on after that error
        assert len(pipe.run()[0]) == 2
    finally:
        pipe.close()


def test_feed_takes_arrays_torch_tensors_and_tensor_lists():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    dense = rng.integers(0, 256, (3, 5, 4, 3), dtype=np.uint8)
    pipe = feeding_pipeline()
    try:
        pipe.feed_input("images", dense)  # an [N, ...] array
        pipe.feed_input("images", torch.from_numpy(dense.copy()))
        pipe.feed_input("images", [torch.from_numpy(x) for x in dense])
        outputs = [pipe.run() for _ in range(3)]
        for flipped, same in outputs:
            assert np.array_equal(same.as_array(), dense)
        pipe.feed_input("images", outputs[0][0])  # a TensorList, taken as is
        assert np.array_equal(pipe.run()[1].as_array(), dense[:, :, ::-1])
    finally:
        pipe.close()


def test_wrong_data_is_refused_when_fed_naming_the_source():
    pipe = feeding_pipeline(batch_size=2)
    try:
        with pytest.raises(ladle.InvalidArgumentError, match=r'"images".*float32 samples of rank 3.*uint8 of rank 3'):
            pipe.feed_input("images", np.zeros((2, 4, 4, 3), np.float32))
        with pytest.raises(ladle.InvalidArgumentError, match="rank 2"):
            pipe.feed_input("images", np.zeros((2, 4, 4), np.uint8))
        with pytest.raises(ladle.InvalidArgumentError, match="fed 3 samples; a batch holds 1 to 2"):
            pipe.feed_input("images", np.zeros((3, 4, 4, 3), np.uint8))
        with pytest.raises(ladle.InvalidArgumentError, match="no external_source named 'nope'"):
            pipe.feed_input("nope", np.zeros((1, 4, 4, 3), np.uint8))
        with pytest.raises(ladle.StateError, match="no positions"):
            pipe.set_position(0)
    finally:
        pipe.close()


def test_sources_of_one_iteration_must_agree_on_its_size():
    pipe = ladle.Pipeline(batch_size=4, num_threads=1)
    with pipe:
        a = fn.external_source(name="a", ndim=1, layout="")
        b = fn.external_source(name="b", ndim=1, layout="")
        pipe.set_outputs(a, b)
    try:
        pipe.feed_input("a", np.zeros((2, 3), np.uint8))
        pipe.feed_input("b", np.zeros((3, 3), np.uint8))
        with pytest.raises(ladle.InvalidArgumentError, match="'a' 2 samples, 'b' 3"):
            pipe.run()
        pipe.feed_input("a", np.ones((2, 3), np.uint8))
        pipe.feed_input("b", np.ones((2, 3), np.uint8))
        out_a, out_b = pipe.run()
        assert len(out_a) == len(out_b) == 2
    finally:
        pipe.close()


def test_source_callable_iterable_and_cycle():
    calls = []

    def by_iteration(i):
        calls.append(i)
        if i == 3:
            raise StopIteration
        return [np.full((1, 2), i, np.uint8)]

    def values(pipe):
        out = []
        try:
            for _ in range(10):
                out.append(int(pipe.run()[0].at(0)[0, 0]))
        except StopIteration:
            out.append("stop")
        return out

    def make(source, cycle=None):
        pipe = ladle.Pipeline(batch_size=1, num_threads=1, prefetch_queue_depth=2)
        with pipe:
            pipe.set_outputs(fn.external_source(source, ndim=2, cycle=cycle))
        return pipe

    for source, cycle, want in [
        (by_iteration, None, [0, 1, 2, "stop"]),
        ([[np.full((1, 2), v, np.uint8)] for v in (5, 6)], None, [5, 6, "stop"]),
        ([[np.full((1, 2), v, np.uint8)] for v in (5, 6)], True, [5, 6, 5, 6, 5, 6, 5, 6, 5, 6]),
        ([[np.full((1, 2), v, np.uint8)] for v in (5, 6)], "raise", [5, 6, "stop"]),
    ]:
        pipe = make(source, cycle)
        try:
            assert values(pipe) == want, (source, cycle)
            if cycle == "raise":  # starts again after reporting the end
                assert values(pipe) == [5, 6, "stop"]
        finally:
            pipe.close()
    assert calls == [0, 1, 2, 3]
    with pytest.raises(ladle.InvalidArgumentError, match="cycle needs an iterable"):
        make(iter([]), cycle=True)


def test_a_generator_function_is_iterated_and_called_again_to_restart():
    # DALI accepts a generator function as source: it is iterated (not called
    # per batch), and called again for a new generator when it restarts
    # (cycle="raise" after the end, cycle=True at once); without cycle it ends.
    started = []

    def batches():
        started.append(1)
        for v in (5, 6):
            yield [np.full((1, 2), v, np.uint8)]

    def samples():
        for v in range(3):
            yield np.full((1, 2), v, np.uint8)

    def values(pipe, n=7):
        out = []
        for _ in range(n):
            try:
                out.append(pipe.run()[0].as_array()[:, 0, 0].tolist())
            except StopIteration:
                out.append("stop")
        return out

    for source, kwargs, want in [
        (batches, {}, [[5], [6], "stop", "stop"]),
        (batches, {"cycle": "raise"}, [[5], [6], "stop", [5], [6], "stop", [5]]),
        (batches, {"cycle": True}, [[5], [6], [5], [6], [5], [6], [5]]),
        (samples, {"batch": False}, [[0, 1], [2], "stop", "stop"]),
    ]:
        pipe = ladle.Pipeline(batch_size=2 if source is samples else 1, num_threads=1)
        with pipe:
            pipe.set_outputs(fn.external_source(source, ndim=2, **kwargs))
        try:
            assert values(pipe, len(want)) == want, (source.__name__, kwargs)
        finally:
            pipe.close()


def test_fed_jpegs_decode_like_read_ones(sample_root):
    paths = sorted(os.path.join(dp, f) for dp, _, fs in os.walk(sample_root) for f in fs if f.endswith(".jpg"))[:4]
    encoded = [np.fromfile(p, dtype=np.uint8) for p in paths]
    fed = ladle.Pipeline(batch_size=4, num_threads=2)
    with fed:
        fed.set_outputs(fn.decoders.image(fn.external_source(name="jpegs", ndim=1), output_type=types.RGB))
    read = ladle.Pipeline(batch_size=4, num_threads=2)
    with read:
        jpegs, _ = fn.readers.file(files=paths)
        read.set_outputs(fn.decoders.image(jpegs, output_type=types.RGB))
    try:
        fed.feed_input("jpegs", encoded)
        (a,), (b,) = fed.run(), read.run()
        for i in range(4):
            assert np.array_equal(a.at(i), b.at(i))
    finally:
        fed.close()
        read.close()


def test_a_reader_fixes_the_batch_size(sample_root):
    pipe = ladle.Pipeline(batch_size=2, num_threads=1)
    with pipe:
        jpegs, _ = fn.readers.file(file_root=sample_root)
        extra = fn.external_source(name="extra", ndim=1, layout="")
        pipe.set_outputs(jpegs, extra)
    try:
        with pytest.raises(ladle.InvalidArgumentError, match="with a reader in the pipeline every iteration has"):
            pipe.feed_input("extra", np.zeros((1, 3), np.uint8))
        pipe.feed_input("extra", np.zeros((2, 3), np.uint8))
        assert [len(x) for x in pipe.run()] == [2, 2]
    finally:
        pipe.close()


def test_close_with_fed_batches_queued():
    rng = np.random.default_rng(2)
    for _ in range(20):
        pipe = feeding_pipeline()
        for n in (4, 4, 2):
            pipe.feed_input("images", random_images(rng, n))
        pipe.run()
        pipe.close()  # two fed batches are still queued or in flight


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_usable(), reason="needs a CUDA device")
def test_gpu_batches_pass_between_pipelines_without_a_copy():
    rng = np.random.default_rng(3)
    first = ladle.Pipeline(batch_size=4, num_threads=2, device_id=0)
    with first:
        first.set_outputs(fn.flip(fn.external_source(name="x").gpu(), horizontal=1))
    second = ladle.Pipeline(batch_size=4, num_threads=2, device_id=0)
    with second:
        x = fn.external_source(name="x", device="gpu")
        second.set_outputs(fn.cast(fn.flip(x, vertical=1, horizontal=0), dtype=types.FLOAT), x)
    try:
        for n in (4, 3, 4):
            images = random_images(rng, n)
            first.feed_input("x", images)
            (flipped,) = first.run()
            assert flipped.device == "gpu"
            second.feed_input("x", flipped)
            as_float, same = second.run()
            assert same.data_ptr(0) == flipped.data_ptr(0)  # the same memory: no copy
            del flipped, same
            host = as_float.as_cpu()
            for i, image in enumerate(images):
                assert np.array_equal(host.at(i), image[::-1, ::-1].astype(np.float32))
        with pytest.raises(ladle.InvalidArgumentError, match="takes GPU batches"):
            second.feed_input("x", random_images(rng, 2))
    finally:
        first.close()
        second.close()


def test_per_sample_sources_and_batch_info():
    infos = []

    def sample(info):  # batch=False: one sample per call; 7 samples per epoch
        infos.append(info)
        if info.idx_in_epoch == 7:
            raise StopIteration
        return np.array([info.epoch_idx, info.idx_in_epoch], np.int32)

    pipe = ladle.Pipeline(batch_size=3, num_threads=1, prefetch_queue_depth=1)
    with pipe:
        pipe.set_outputs(fn.external_source(sample, batch=False, ndim=1, layout="", dtype=types.INT32))
    try:
        for epoch in range(2):  # a callable starts again after the end of an epoch
            got = []
            with pytest.raises(StopIteration):
                while True:
                    (out,) = pipe.run()
                    got.append([tuple(int(v) for v in out.at(i)) for i in range(len(out))])
            assert got == [[(epoch, 0), (epoch, 1), (epoch, 2)], [(epoch, 3), (epoch, 4), (epoch, 5)], [(epoch, 6)]]
        first = [i for i in infos if i.epoch_idx == 0]
        assert [(i.idx_in_batch, i.iteration) for i in first[:4]] == [(0, 0), (1, 0), (2, 0), (0, 1)]
    finally:
        pipe.close()

    batches = []

    def whole(info):  # batch_info=True: a types.BatchInfo per batch
        batches.append(info)
        return [np.full((2,), info.iteration, np.uint8)]

    pipe = ladle.Pipeline(batch_size=1, num_threads=1, prefetch_queue_depth=1)
    with pipe:
        pipe.set_outputs(fn.external_source(whole, batch_info=True, ndim=1, layout=""))
    try:
        assert [int(pipe.run()[0].at(0)[0]) for _ in range(3)] == [0, 1, 2]
        assert batches[0] == types.BatchInfo(iteration=0, epoch_idx=0)
    finally:
        pipe.close()

    with pytest.raises(ladle.InvalidArgumentError, match="batch=False needs a source"):
        with ladle.Pipeline(batch_size=1, num_threads=1):
            fn.external_source(batch=False)


def test_an_iterable_of_samples():
    pipe = ladle.Pipeline(batch_size=4, num_threads=1)
    with pipe:
        pipe.set_outputs(fn.external_source((np.full((1,), v, np.uint8) for v in range(6)), batch=False, ndim=1,
                                            layout=""))
    try:
        sizes = []
        with pytest.raises(StopIteration):
            while True:
                sizes.append(len(pipe.run()[0]))
        assert sizes == [4, 2]
    finally:
        pipe.close()


def test_sources_are_drawn_prefetch_queue_depth_ahead_in_every_epoch():
    calls = []

    def source(i):
        calls.append(i)
        if i == 4:
            raise StopIteration
        return [np.full((1,), i, np.uint8)]

    pipe = ladle.Pipeline(batch_size=1, num_threads=1, prefetch_queue_depth=3)
    with pipe:
        pipe.set_outputs(fn.external_source(source, dtype=types.UINT8, ndim=1, layout=""))
    try:
        for epoch in range(2):
            before = len(calls)
            assert int(pipe.run()[0].at(0)[0]) == 0
            assert len(calls) - before == 3  # the batch returned and two more for the executor
            assert [int(pipe.run()[0].at(0)[0]) for _ in range(3)] == [1, 2, 3]
            with pytest.raises(StopIteration):
                pipe.run()
    finally:
        pipe.close()


def test_fed_arrays_are_copied_unless_no_copy():
    import gc
    import weakref

    torch = pytest.importorskip("torch")
    for no_copy in (False, True):
        pipe = ladle.Pipeline(batch_size=2, num_threads=1)
        with pipe:
            x = fn.external_source(name="x", ndim=2, layout="", no_copy=no_copy)
            pipe.set_outputs(x)
        try:
            a = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
            alive = weakref.ref(a)
            pipe.feed_input("x", a)
            pointer = a.ctypes.data
            a[:] = 7  # a caller reusing its buffer
            del a
            (out,) = pipe.run()
            assert (out.data_ptr(0) == pointer) == no_copy
            expected = np.full((2, 3, 4), 7, np.uint8) if no_copy else np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
            assert np.array_equal(out.as_array(), expected)
            if no_copy:  # the batch keeps the array alive, and lets it go with its last reference
                assert alive() is not None
                del out
                gc.collect()
                assert alive() is None
            t = torch.arange(8, dtype=torch.int32).view(2, 4).to(torch.uint8).view(2, 2, 2)[:, :, :1].squeeze(2)
            pipe.feed_input("x", t.view(2, 2, 1).expand(2, 2, 3))  # not contiguous: made so
            (out,) = pipe.run()
            assert out.as_array().tolist() == [[[0, 0, 0], [2, 2, 2]], [[4, 4, 4], [6, 6, 6]]]
        finally:
            pipe.close()


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_usable(), reason="needs a CUDA device")
def test_cuda_tensors_feed_a_gpu_source():
    torch = pytest.importorskip("torch")
    pipe = ladle.Pipeline(batch_size=4, num_threads=1, device_id=0)
    with pipe:
        x = fn.external_source(name="x", device="gpu", ndim=3, no_copy=True)
        pipe.set_outputs(fn.flip(x, horizontal=1, vertical=0))
    try:
        for _ in range(3):
            t = torch.randint(0, 256, (4, 5, 6, 3), dtype=torch.uint8, device="cuda")
            expected = t.flip(2).cpu().numpy()
            t.mul_(1)  # work queued on torch's stream that the pipeline must wait for
            pipe.feed_input("x", t)
            (out,) = pipe.run()
            assert out.device == "gpu"
            assert np.array_equal(out.as_cpu().as_array(), expected)
        with pytest.raises(ladle.InvalidArgumentError, match="takes GPU batches"):
            pipe.feed_input("x", torch.zeros((1, 2, 2, 3), dtype=torch.uint8))
    finally:
        pipe.close()


def test_feeding_is_bounded():
    pipe = ladle.Pipeline(batch_size=2, prefetch_queue_depth=2)
    with pipe:
        pipe.set_outputs(fn.external_source(name="x"))
    batch = [np.zeros((2, 2, 3), np.uint8)] * 2
    fed = 0
    with pytest.raises(ladle.LimitError, match=r"external_source 'x' already holds \d+ fed batches .*call run\(\)"):
        for _ in range(100):
            pipe.feed_input("x", batch)
            fed += 1
    assert 10 <= fed <= 12  # depth 2 + 8, and what the executor took meanwhile
    pipe.run()  # the executor then takes the next fed batch for the iteration it prepares: room again
    for _ in range(500):
        try:
            pipe.feed_input("x", batch)
            break
        except ladle.LimitError:
            time.sleep(0.01)
    else:
        pytest.fail("no room after run() consumed an iteration")
    pipe.close()
