"""plugin.pytorch.experimental.proxy: a torch DataLoader's samples finished by a
ladle pipeline, batches matched to their targets, clean early exits."""

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ladle  # noqa: E402
from ladle import fn, pipeline_def  # noqa: E402
from ladle.plugin.pytorch.experimental import proxy as dali_proxy  # noqa: E402


class Files(torch.utils.data.Dataset):
    """(path bytes through the proxy, index) per file: an ImageFolder in miniature."""

    def __init__(self, paths, transform):
        self.paths, self.transform = paths, transform

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        return self.transform(np.frombuffer(self.paths[i].encode(), np.uint8)), i


def sample_paths():
    root = ladle.sample_data_root()
    return sorted(os.path.join(root, c, f) for c in sorted(os.listdir(root)) for f in os.listdir(os.path.join(root, c)))


@pipeline_def(batch_size=8, num_threads=2, device_id=None)
def decode_pipe():
    paths = fn.external_source(name="images", dtype=ladle.types.UINT8, ndim=1, no_copy=True)
    images = fn.decoders.image(fn.io.file.read(paths))
    return fn.resize(images, resize_x=32, resize_y=24)


def reference(paths):
    """The same pipeline fed directly, one image at a time."""
    pipe = decode_pipe(batch_size=1)
    out = []
    for p in paths:
        pipe.feed_input("images", [np.frombuffer(p.encode(), np.uint8)])
        (tl,) = pipe.run()
        out.append(np.array(tl.at(0)))
    pipe.close()
    return out


@pytest.mark.parametrize("workers", [0, 2])
def test_batches_come_back_in_order_with_their_targets(workers):
    paths = sample_paths()[:20]
    expected = reference(paths)
    with dali_proxy.DALIServer(decode_pipe()) as server:
        loader = dali_proxy.DataLoader(server, Files(paths, server.proxy), batch_size=8, num_workers=workers,
                                       shuffle=False)
        seen = []
        for _ in range(2):  # two epochs: nothing stale is left between them
            seen.clear()
            for images, index in loader:
                assert isinstance(images, torch.Tensor) and images.shape[1:] == (24, 32, 3)
                assert len(images) == len(index)
                for img, i in zip(images, index.tolist()):
                    np.testing.assert_array_equal(img.numpy(), expected[i])
                    seen.append(i)
            assert seen == list(range(20))


def test_distributed_sampler_and_early_break():
    paths = sample_paths()[:24]
    expected = reference(paths)
    with dali_proxy.DALIServer(decode_pipe()) as server:
        data = Files(paths, server.proxy)
        sampler = torch.utils.data.distributed.DistributedSampler(data, num_replicas=2, rank=1, shuffle=True, seed=3)
        loader = dali_proxy.DataLoader(server, data, batch_size=4, sampler=sampler, num_workers=1)
        for k, (images, index) in enumerate(loader):
            if k == 1:
                break  # batches fed ahead are run off
        got = [(img, i) for images, index in loader for img, i in zip(images, index.tolist())]
    assert [i for _, i in got] == list(sampler)
    for img, i in got:
        np.testing.assert_array_equal(img.numpy(), expected[i])


def test_proxy_names_inputs_and_refuses_misuse():
    pipe = decode_pipe()
    server = dali_proxy.DALIServer(pipe)
    with pytest.raises(ladle.InvalidArgumentError, match=r"no input named 'labels'"):
        server.proxy(labels=np.zeros(3, np.uint8))
    with pytest.raises(ladle.InvalidArgumentError, match=r"missing pipeline input\(s\): \['images'\]"):
        server.proxy()
    loader = dali_proxy.DataLoader(server, Files(sample_paths()[:4], server.proxy), batch_size=2)
    with pytest.raises(ladle.StateError, match="context manager"):
        next(iter(loader))
    with pytest.raises(ladle.InvalidArgumentError, match="collate_fn"):
        dali_proxy.DataLoader(server, [], collate_fn=lambda b: b)
    pipe.close()


def test_a_missing_file_is_named():
    with dali_proxy.DALIServer(decode_pipe()) as server:
        loader = dali_proxy.DataLoader(server, Files(["/nonexistent/cat.jpg"], server.proxy), batch_size=1)
        with pytest.raises(ladle.ReadError, match="/nonexistent/cat.jpg"):
            next(iter(loader))


def test_ragged_iterator_formats():
    from ladle.plugin.pytorch import DALIRaggedIterator

    rng = np.random.default_rng(1)
    boxes = [rng.random((k, 4), dtype=np.float32) for k in (1, 3, 0, 2)]
    lengths = [rng.random(k, dtype=np.float32) for k in (2, 1, 3, 1)]
    pipe = ladle.Pipeline(batch_size=4, num_threads=1)
    with pipe:
        b = fn.external_source(source=lambda: boxes, dtype=ladle.types.FLOAT, ndim=2)
        v = fn.external_source(source=lambda: lengths, dtype=ladle.types.FLOAT, ndim=1)
        pipe.set_outputs(b, v)
    it = DALIRaggedIterator(pipe, ["boxes", "values"], size=4,
                            output_types=[DALIRaggedIterator.SPARSE_LIST_TAG, DALIRaggedIterator.SPARSE_COO_TAG])
    (batch,) = next(it)
    assert [x.shape for x in batch["boxes"]] == [(1, 4), (3, 4), (0, 4), (2, 4)]
    for got, want in zip(batch["boxes"], boxes):
        np.testing.assert_array_equal(got.numpy(), want)
    dense = batch["values"].to_dense()
    assert batch["values"].is_sparse and dense.shape == (4, 3)
    for i, want in enumerate(lengths):
        np.testing.assert_array_equal(dense[i, :len(want)].numpy(), want)
    with pytest.raises(ladle.InvalidArgumentError, match="output_types"):
        DALIRaggedIterator(pipe, ["boxes", "values"], size=4, output_types=["dense"])
    pipe.close()
