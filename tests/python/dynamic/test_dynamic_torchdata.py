"""ladle.dynamic's torchdata.nodes nodes: a Loader over Reader -> DictMapper
-> ToTorch gives the pipeline's batches as torch tensors, and its state dict
resumes mid-epoch with identical batches."""

import numpy as np
import pytest

import ladle

ldd = pytest.importorskip("ladle.dynamic")
torch = pytest.importorskip("torch")
tn = pytest.importorskip("torchdata.nodes", reason="torchdata is not installed (pip install torchdata)")
from ladle.dynamic.pytorch import nodes  # noqa: E402


def make(root):
    node = nodes.Reader(ldd.readers.File, batch_size=5, file_root=root, random_shuffle=True, seed=3)
    node = nodes.DictMapper(node, lambda j: ldd.resize(ldd.decoders.image(j), resize_x=16, resize_y=12))
    return tn.Loader(nodes.ToTorch(node))


def test_loader_gives_tensors_and_resumes(sample_root):
    loader = make(sample_root)
    whole = [(x.clone(), y.clone()) for x, y in loader]
    assert [tuple(x.shape) for x, _ in whole] == [(5, 12, 16, 3)] * 6 + [(2, 12, 16, 3)]
    assert all(y.dtype == torch.int32 and y.shape[1] == 1 for _, y in whole)
    # The same bytes as the pipeline API's reader with the same seed.
    pipe = ladle.Pipeline(batch_size=5, num_threads=1, seed=3)
    with pipe:
        pipe.set_outputs(ladle.fn.readers.file(file_root=sample_root, random_shuffle=True)[1])
    want = [np.array(pipe.run()[0].as_array()).ravel().tolist() for _ in range(6)]
    pipe.close()
    assert [y.ravel().tolist() for _, y in whole[:6]] == want

    first = make(sample_root)
    it = iter(first)
    taken = [next(it) for _ in range(3)]
    state = first.state_dict()
    resumed = make(sample_root)
    resumed.load_state_dict(state)
    rest = list(resumed)
    assert len(taken) + len(rest) == 7
    for (x, y), (wx, wy) in zip(taken + rest, whole):
        assert torch.equal(x, wx) and torch.equal(y, wy)


def test_reader_node_needs_names_for_other_output_counts(sample_root):
    node = nodes.Reader(ldd.readers.File, batch_size=4, file_root=sample_root, output_names=("jpegs",))
    node.reset()
    with pytest.raises(ValueError, match="output_names"):
        node.next()
