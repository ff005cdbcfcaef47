"""GPU batches through the Python API: CUDA DLPack export with stream
synchronization, as_cpu(), DataNode.gpu(). Run on the GPU machine; skipped
where ladle sees no CUDA device, and until the GPU operators exist."""

import numpy as np
import pytest

import ladle
from ladle import fn, types
from ladle.pipeline import op_schemas

pytestmark = pytest.mark.gpu


def has_device(op, device):
    return device in op_schemas().get(op, {}).get("devices", [])


def gpu_pipeline(root, decoder_device, resize_device):
    pipe = ladle.Pipeline(batch_size=4, num_threads=2, device_id=0, seed=5)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=root)
        images = fn.decoders.image(jpegs, device=decoder_device, output_type=types.RGB)
        resized = fn.resize(images, device=resize_device, resize_x=64, resize_y=48)
        pipe.set_outputs(images, resized, labels)
    return pipe


@pytest.fixture
def gpu_outputs(sample_root):
    if not has_device("decoders.image", "mixed") or not has_device("resize", "gpu"):
        pytest.skip("needs the mixed decoder and the GPU resize")
    pipe = gpu_pipeline(sample_root, "mixed", "gpu")
    yield pipe.run()
    pipe.close()


def test_cuda_batches_and_dlpack(gpu_outputs):
    torch = pytest.importorskip("torch")
    images, resized, labels = gpu_outputs
    assert images.device == "gpu" and resized.device == "gpu" and labels.device == "cpu"
    assert images.__dlpack_device__() == (2, 0)
    with pytest.raises(ladle.StateError, match="GPU memory"):
        images.at(0)
    t = torch.from_dlpack(images.sample(1))
    assert t.is_cuda and t.data_ptr() == images.data_ptr(1)
    assert tuple(t.shape) == images.shape()[1]
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):  # torch passes its current stream; ladle makes it wait
        batch = torch.from_dlpack(resized)
        total = batch.float().sum()
    stream.synchronize()
    assert batch.shape == (4, 48, 64, 3) and batch.data_ptr() == resized.data_ptr()
    assert float(total) > 0


def test_stream_argument_values(gpu_outputs):
    _, resized, _ = gpu_outputs
    for stream in (None, -1, 1, 2):
        resized.__dlpack__(stream=stream)
    with pytest.raises(ValueError, match="stream 0"):
        resized.__dlpack__(stream=0)
    with pytest.raises(BufferError, match="does not copy CUDA"):
        resized.__dlpack__(copy=True)


def test_as_cpu_matches_cpu_pipeline(gpu_outputs, sample_root):
    pytest.importorskip("torch")
    images, _, _ = gpu_outputs
    host = images.as_cpu()
    assert host.device == "cpu" and host.shape() == images.shape()
    cpu = gpu_pipeline(sample_root, "cpu", "cpu")
    reference, _, _ = cpu.run()
    cpu.close()
    for i in range(len(host)):
        diff = np.abs(host.at(i).astype(int) - reference.at(i).astype(int))
        assert diff.max() <= 2, f"sample {i}: GPU and CPU decoders differ by {diff.max()}"


def test_tensor_as_cpu_copies_gpu_samples_and_batches(gpu_outputs):
    """DALI's tl[i].as_cpu() and tl.as_tensor().as_cpu() on GPU outputs: host copies with the bytes of
    TensorList.as_cpu(), in a ragged batch (one sample each) and a dense one (the whole batch)."""
    pytest.importorskip("torch")
    images, resized, _ = gpu_outputs
    host = images.as_cpu()
    for i in range(len(images)):
        t = images[i].as_cpu()
        assert t.shape() == list(host.at(i).shape) and t.layout() == "HWC"
        np.testing.assert_array_equal(np.array(t), host.at(i))
    whole = resized.as_tensor().as_cpu()
    assert whole.shape() == [4, 48, 64, 3] and whole.layout() == "NHWC"
    np.testing.assert_array_equal(np.array(whole), resized.as_cpu().as_array())


def test_datanode_gpu_transfer(sample_root):
    if "transfer.to_gpu" not in op_schemas():
        pytest.skip("no transfer.to_gpu operator")
    torch = pytest.importorskip("torch")
    pipe = ladle.Pipeline(batch_size=3, num_threads=1, device_id=0)
    with pipe:
        flips = fn.random.coin_flip(probability=1.0)
        on_gpu = flips.gpu()
        assert on_gpu.device == "gpu"
        pipe.set_outputs(on_gpu)
    (out,) = pipe.run()
    t = torch.from_dlpack(out)
    assert t.is_cuda and t.cpu().tolist() == [1, 1, 1]
    pipe.close()
