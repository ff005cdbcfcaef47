"""ladle.dynamic: operators called eagerly give the bytes the same operators
give inside a pipeline; random draws are reproducible; readers hand out
whole epochs; Batch/Tensor conversions; errors."""

import collections
import os

import numpy as np
import pytest

import ladle
from ladle import fn, types
from conftest import cuda_usable, run_graph

ldd = pytest.importorskip("ladle.dynamic")
torch = pytest.importorskip("torch")


MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def sample_files(count=6):
    root = ladle.sample_data_root()
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.endswith(".jpg"))
    return files[:count]


def encoded(paths):
    return ldd.batch([np.fromfile(p, dtype=np.uint8) for p in paths])


def samples_of(b):
    return [np.array(t) for t in b.cpu().tensors]


def assert_same_samples(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


# --- operators equal the pipeline's -----------------------------------------

def test_decoder_equals_pipeline():
    paths = sample_files(6)
    images = ldd.decoders.image(encoded(paths))
    assert isinstance(images, ldd.Batch) and len(images) == 6
    assert images.layout == "HWC" and images.dtype == types.UINT8 and images.device == "cpu"
    want = run_graph(lambda e: fn.decoders.image(e), 6, paths=paths)
    assert_same_samples(samples_of(images), want)
    gray = ldd.decoders.image(encoded(paths[:2]), output_type=types.GRAY)
    assert gray.shape[0][2] == 1


OPS = {
    "resize_xy": lambda op, x: op.resize(x, resize_x=40, resize_y=30),
    "resize_shorter_cubic": lambda op, x: op.resize(x, resize_shorter=27, interp_type=types.INTERP_CUBIC),
    "resize_max_size": lambda op, x: op.resize(x, resize_shorter=50, max_size=[60, 60]),
    "crop": lambda op, x: op.crop(x, crop=[21, 17], crop_pos_x=0.2, crop_pos_y=0.9),
    "crop_pad": lambda op, x: op.crop(x, crop=[90, 70], out_of_bounds_policy="pad", fill_values=[7]),
    "flip": lambda op, x: op.flip(x, horizontal=1, vertical=1),
    "cmn_f16": lambda op, x: op.crop_mirror_normalize(x, dtype=types.FLOAT16, crop=[24, 24], mean=MEAN, std=STD,
                                                      mirror=1),
    "cmn_u8_hwc": lambda op, x: op.crop_mirror_normalize(x, dtype=types.UINT8, output_layout="HWC"),
    "cast": lambda op, x: op.cast(x, dtype=types.FLOAT),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_operator_equals_pipeline(name):
    paths = sample_files(5)
    graph = OPS[name]
    got = graph(ldd, ldd.decoders.image(encoded(paths)))
    want = run_graph(lambda e: graph(fn, fn.decoders.image(e)), 5, paths=paths)
    assert_same_samples(samples_of(got), want)


def test_single_sample_in_single_out_and_batch_buckets():
    paths = sample_files(5)
    images = ldd.decoders.image(encoded(paths))
    one = ldd.resize(np.array(images.tensors[1]), resize_x=32, resize_y=24)
    assert isinstance(one, ldd.Tensor) and one.shape == (24, 32, 3)
    three = ldd.resize(ldd.batch(samples_of(images)[:3]), resize_x=32, resize_y=24)  # bucket 4, fed 3
    four = ldd.resize(ldd.batch(samples_of(images)[:4]), resize_x=32, resize_y=24)
    five = ldd.resize(images, resize_x=32, resize_y=24)  # bucket 8
    assert (len(three), len(four), len(five)) == (3, 4, 5)
    np.testing.assert_array_equal(np.array(one), samples_of(five)[1])
    assert_same_samples(samples_of(three), samples_of(five)[:3])
    assert_same_samples(samples_of(four), samples_of(five)[:4])
    # A list of arrays and a torch tensor are inputs too.
    from_torch = ldd.flip(torch.from_numpy(samples_of(images)[0]), horizontal=1)
    np.testing.assert_array_equal(np.array(from_torch), samples_of(images)[0][:, ::-1])


def test_per_sample_arguments_from_lists_and_batches():
    paths = sample_files(6)
    images = ldd.decoders.image(encoded(paths))
    flags = [0, 1, 1, 0, 1, 0]
    for horizontal in (flags, ldd.batch(np.array(flags, dtype=np.int32))):
        flipped = ldd.flip(images, horizontal=horizontal, vertical=0)
        want = [s[:, ::-1] if f else s for s, f in zip(samples_of(images), flags)]
        assert_same_samples(samples_of(flipped), want)
    widths = [20.0, 30.0, 40.0, 25.0, 33.0, 21.0]
    resized = ldd.resize(images, resize_x=widths, resize_y=16)
    assert [s[1] for s in resized.shape] == [int(w) for w in widths]


def test_chain_decode_resize_normalize_with_random_mirror():
    paths = sample_files(8)
    ldd.random.set_seed(11)
    images = ldd.resize(ldd.decoders.image(encoded(paths)), resize_x=48, resize_y=40)
    mirror = ldd.random.coin_flip(batch_size=len(images), probability=0.5)
    out = ldd.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW", mean=MEAN, std=STD,
                                    mirror=mirror)
    x = out.torch()
    assert tuple(x.shape) == (8, 3, 40, 48) and x.dtype == torch.float32
    flags = [int(np.array(t)) for t in mirror.tensors]
    assert 0 < sum(flags) < 8
    for i, (img, f) in enumerate(zip(samples_of(images), flags)):
        img = img[:, ::-1] if f else img
        want = ((img.astype(np.float32) - np.float32(MEAN)) / np.float32(STD)).transpose(2, 0, 1)
        np.testing.assert_allclose(x[i].numpy(), want, rtol=1e-5, atol=1e-5)


# --- randomness ---------------------------------------------------------------

def test_random_is_reproducible_and_new_per_call():
    def program():
        ldd.random.set_seed(1234)
        coins = np.array(ldd.random.coin_flip(batch_size=64)).ravel()
        uni = np.array(ldd.random.uniform(batch_size=16, range=[0, 10])).ravel()
        more = np.array(ldd.random.coin_flip(batch_size=64)).ravel()
        return coins, uni, more

    a, b = program(), program()
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    coins, uni, more = a
    assert 10 < coins.sum() < 54 and not np.array_equal(coins, more)  # a new draw per call
    assert uni.min() >= 0 and uni.max() < 10 and len(set(uni.tolist())) == 16
    ldd.random.set_seed(4321)
    assert not np.array_equal(np.array(ldd.random.coin_flip(batch_size=64)).ravel(), coins)
    single = ldd.random.uniform()
    assert isinstance(single, ldd.Tensor) and single.shape == ()


def test_random_resized_crop_reproducible():
    images = ldd.decoders.image(encoded(sample_files(4)))

    def draw():
        return samples_of(ldd.random_resized_crop(images, size=[32, 32]))

    ldd.random.set_seed(3)
    first, second = draw(), draw()
    ldd.random.set_seed(3)
    again = draw()
    assert_same_samples(again, first)
    assert all(s.shape == (32, 32, 3) for s in first)
    assert any(not np.array_equal(x, y) for x, y in zip(first, second))


# --- readers --------------------------------------------------------------------

def test_reader_gives_every_file_once_per_epoch(sample_root):
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(sample_root) for f in fs)
    contents = {np.fromfile(p, dtype=np.uint8).tobytes(): p for p in files}
    reader = ldd.readers.File(file_root=sample_root, random_shuffle=True)
    assert reader.epoch_size == len(files) == 32
    orders = []
    for _ in range(2):
        seen, sizes, labels = collections.Counter(), [], []
        for jpegs, lab in reader.next_epoch(batch_size=5):
            assert isinstance(jpegs, ldd.Batch) and len(jpegs) == len(lab)
            sizes.append(len(jpegs))
            labels += np.array(lab).ravel().tolist()
            for t in jpegs.tensors:
                seen[contents[np.array(t).tobytes()]] += 1
        assert sizes == [5] * 6 + [2]
        assert sorted(seen) == files and set(seen.values()) == {1}
        assert collections.Counter(labels) == {0: 8, 1: 8, 2: 8, 3: 8}
        orders.append(list(seen))
    assert orders[0] != orders[1]  # shuffled anew each epoch
    reader.close()


def test_reader_matches_pipeline_order_and_resumes_after_break(sample_root):
    ldd.random.set_seed(0)
    reader = ldd.readers.File(file_root=sample_root, random_shuffle=True)
    pipe = ladle.Pipeline(batch_size=8, num_threads=1, seed=0)
    with pipe:
        pipe.set_outputs(*fn.readers.file(file_root=sample_root, random_shuffle=True))
    try:
        want = [np.array(pipe.run()[1].as_array()).ravel().tolist() for _ in range(8)]  # two epochs of 4
    finally:
        pipe.close()
    for k, (_, labels) in enumerate(reader.next_epoch(batch_size=8)):
        assert np.array(labels).ravel().tolist() == want[k]
        if k == 1:
            break  # the rest of epoch 0 is skipped
    got = [np.array(l).ravel().tolist() for _, l in reader.next_epoch(batch_size=8)]
    assert got == want[4:]
    with pytest.raises(ladle.InvalidArgumentError, match="batch size"):
        next(iter(reader.next_epoch(batch_size=3)))
    samples = ldd.readers.File(file_root=sample_root)
    first = next(iter(samples.next_epoch()))
    assert isinstance(first[0], ldd.Tensor) and first[1].shape == (1,)


def test_reader_with_pad_last_batch_keeps_batches_full(sample_root):
    reader = ldd.readers.File(file_root=sample_root, pad_last_batch=True)
    assert [len(j) for j, _ in reader.next_epoch(batch_size=5)] == [5] * 7


# --- Batch and Tensor --------------------------------------------------------------

def test_batch_and_tensor_conversions():
    dense = ldd.batch(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    t = dense.torch()
    assert tuple(t.shape) == (2, 3, 4) and t.dtype == torch.float32
    assert t.data_ptr() == dense.tensor_list.data_ptr(0)  # no copy
    np.testing.assert_array_equal(np.from_dlpack(dense), np.arange(24).reshape(2, 3, 4))
    assert dense.__dlpack_device__()[0] == 1
    s = dense.tensors[1]
    assert s.shape == (3, 4) and s.dtype == types.FLOAT and s.device == "cpu"
    np.testing.assert_array_equal(np.asarray(s), np.arange(12, 24).reshape(3, 4))
    assert s.torch().data_ptr() == dense.tensor_list.data_ptr(1)
    assert ldd.as_batch(dense) is dense and ldd.as_batch(dense.tensor_list).tensor_list is dense.tensor_list
    assert len(ldd.as_batch(s)) == 1
    assert ldd.batch([np.zeros(3)]).dtype == types.FLOAT64  # kept, as DALI keeps it
    assert ldd.batch([np.float32(1), np.float32(2)]).shape == [(), ()]  # scalars stay 0-d
    assert ldd.tensor(torch.ones(2, 2, dtype=torch.int32)).dtype == types.INT32
    assert ldd.batch([np.zeros((2, 2, 3), np.uint8)], layout="HWC").layout == "HWC"


def test_batch_torch_pads_ragged_samples():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    b = np.arange(4, dtype=np.int32).reshape(4, 1) + 100
    ragged = ldd.batch([a, b])
    assert ragged.shape == [(2, 3), (4, 1)] and not ragged.is_dense()
    with pytest.raises(ladle.StateError, match="pad=True"):
        ragged.torch()
    with pytest.raises(ladle.StateError):
        ragged.__dlpack__()
    padded = ragged.torch(pad=True)
    assert tuple(padded.shape) == (2, 4, 3) and padded.dtype == torch.int32
    want = np.zeros((2, 4, 3), np.int32)
    want[0, :2, :3] = a
    want[1, :4, :1] = b
    np.testing.assert_array_equal(padded.numpy(), want)


# --- errors ---------------------------------------------------------------------------

def test_errors_are_clear():
    images = ldd.batch([np.zeros((8, 8, 3), np.uint8)] * 2)
    with pytest.raises(ladle.InvalidArgumentError, match=r"ladle.dynamic.resize: unknown argument 'foo'"):
        ldd.resize(images, foo=1)
    with pytest.raises(ladle.InvalidArgumentError, match="must be a constant"):
        ldd.resize(images, size=ldd.batch(np.ones((2, 2), np.float32)))
    with pytest.raises(ladle.InvalidArgumentError, match="disagree"):
        ldd.flip(images, horizontal=[0, 1, 1])
    with pytest.raises(ladle.InvalidArgumentError, match="takes 1 input"):
        ldd.flip()
    with pytest.raises(ladle.InvalidArgumentError, match="device="):
        ldd.flip(images, device="tpu")
    if not cuda_usable():
        with pytest.raises(ladle.NotAvailableError, match="device='gpu' is not available"):
            ldd.resize(images, resize_x=4, resize_y=4, device="gpu")
        with pytest.raises(ladle.NotAvailableError):
            images.gpu()
    with pytest.raises(ladle.InvalidArgumentError, match="unknown argument 'file_rot'"):
        ldd.readers.File(file_rot="/nonexistent")


def test_operator_errors_name_the_dynamic_operator():
    with pytest.raises(ladle.Error, match="ladle.dynamic.resize|resize"):
        ldd.resize(ldd.batch([np.zeros((4, 4), np.uint8)]), resize_x=2)  # 2-D input
    with pytest.raises(ladle.InvalidArgumentError, match="argument .dtype. is required"):
        ldd.cast(ldd.batch([np.zeros(3, np.uint8)]))


def test_set_num_threads():
    ldd.set_num_threads(2)
    assert ldd.get_num_threads() == 2
    with pytest.raises(ladle.InvalidArgumentError):
        ldd.set_num_threads(0)


# --- GPU ------------------------------------------------------------------------------

@pytest.mark.gpu
def test_gpu_operators_equal_cpu():
    paths = sample_files(6)
    cpu = ldd.decoders.image(encoded(paths))
    gpu_in = cpu.gpu()
    assert gpu_in.device == "gpu"
    assert_same_samples(samples_of(gpu_in), samples_of(cpu))
    for name in ("resize_xy", "crop", "flip", "cmn_f16", "cast"):
        got = OPS[name](ldd, gpu_in)
        assert got.device == "gpu"
        assert_same_samples(samples_of(got), samples_of(OPS[name](ldd, cpu)))
    x = ldd.resize(cpu, resize_x=16, resize_y=16, device="gpu").torch()
    assert x.is_cuda and tuple(x.shape) == (6, 16, 16, 3)


@pytest.mark.gpu
def test_gpu_decoder_close_to_cpu():
    paths = sample_files(6)
    gpu = ldd.decoders.image(encoded(paths), device="gpu")
    assert gpu.device == "gpu"
    for g, c in zip(samples_of(gpu), samples_of(ldd.decoders.image(encoded(paths)))):
        assert g.shape == c.shape
        assert np.abs(g.astype(int) - c.astype(int)).mean() < 2
    padded = gpu.torch(pad=True)
    assert padded.is_cuda and padded.shape[0] == 6
