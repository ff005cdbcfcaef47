"""ladle.torch.RaggedIterator (DALI's DALIRaggedIterator): per-image boxes and
labels of different lengths, as lists of tensors (SPARSE_LIST_TAG), sparse COO
tensors (SPARSE_COO_TAG), or padded dense tensors with their lengths
(fn.pad + DataNode.shape(), DALI's way); empty samples; PARTIAL cuts of ragged
batches; the errors; and the same outputs as DALI's iterator."""

import numpy as np
import pytest
from conftest import dali_or_skip

import ladle
from ladle import fn, types

torch = pytest.importorskip("torch")
from ladle.torch import LastBatchPolicy, RaggedIterator  # noqa: E402

COUNTS = [3, 0, 1, 5, 2, 0, 4, 1]
BATCH = 4


def ragged_data():
    rng = np.random.default_rng(0)
    boxes = [rng.random((n, 4)).astype(np.float32) for n in COUNTS]
    labels = [(np.arange(n) + 1 + 10 * i).astype(np.int32) for i, n in enumerate(COUNTS)]
    return boxes, labels


def source(data):
    def batches():
        for i in range(0, len(data), BATCH):
            yield data[i:i + BATCH]
    return batches


def graph(fn, types, boxes, labels):
    b = fn.external_source(source=source(boxes), cycle="raise", dtype=types.FLOAT, ndim=2)
    lab = fn.external_source(source=source(labels), cycle="raise", dtype=types.INT32, ndim=1)
    return b, lab, fn.pad(b, fill_value=-1.0, axes=(0,)), b.shape()


def ladle_batches(output_types):
    boxes, labels = ragged_data()
    pipe = ladle.Pipeline(batch_size=BATCH, num_threads=1)
    with pipe:
        pipe.set_outputs(*graph(fn, types, boxes, labels))
    it = RaggedIterator(pipe, ["boxes", "labels", "padded", "shapes"], output_types=output_types)
    return [d[0] for d in it]


LIST, COO, DENSE = RaggedIterator.SPARSE_LIST_TAG, RaggedIterator.SPARSE_COO_TAG, RaggedIterator.DENSE_TAG


def test_sparse_list_coo_and_padded_with_lengths():
    boxes, labels = ragged_data()
    batches = ladle_batches([LIST, COO, DENSE, DENSE])
    assert len(batches) == len(COUNTS) // BATCH
    for k, batch in enumerate(batches):
        want_b, want_l = boxes[k * BATCH:(k + 1) * BATCH], labels[k * BATCH:(k + 1) * BATCH]
        # lists: one tensor per sample, empty ones [0, 4]
        assert [tuple(t.shape) for t in batch["boxes"]] == [w.shape for w in want_b]
        for got, want in zip(batch["boxes"], want_b):
            assert got.dtype == torch.float32 and np.array_equal(got.numpy(), want)
        # COO: [N, max_len] with the samples' values at (sample, position)
        coo = batch["labels"]
        assert coo.layout == torch.sparse_coo and coo.dtype == torch.int32
        dense = coo.to_dense().numpy()
        longest = max(len(w) for w in want_l)
        assert dense.shape == (BATCH, longest)
        for i, w in enumerate(want_l):
            assert np.array_equal(dense[i, :len(w)], w) and not dense[i, len(w):].any()
        # padded: [N, max_len, 4] filled with -1, lengths from .shape()
        padded, shapes = batch["padded"], batch["shapes"]
        assert tuple(padded.shape) == (BATCH, longest, 4)
        assert shapes.tolist() == [[len(w), 4] for w in want_b]
        for i, w in enumerate(want_b):
            assert np.array_equal(padded[i, :len(w)].numpy(), w)
            assert (padded[i, len(w):] == -1).all()


def test_samples_back_to_back_export_as_one_view():
    """_Batch.rows(), the SPARSE_LIST export: the samples concatenated along the
    first axis as one view of the batch (split into the samples by the
    iterator); None where the samples disagree past the first axis or have no
    axes, and the iterator then exports sample by sample."""
    from ladle.tensors import TensorList, batch_from_samples
    from ladle.torch import _sample_tensors, to_torch

    boxes, _ = ragged_data()
    batch = batch_from_samples(boxes)
    rows = batch.rows()
    assert rows.shape == (sum(COUNTS), 4) and rows.data_ptr == batch.data_ptr(0)
    view = to_torch(rows)
    assert np.array_equal(view.numpy(), np.concatenate(boxes))
    copied = torch.utils.dlpack.from_dlpack(rows.__dlpack__(copy=True))
    assert torch.equal(copied, view) and copied.data_ptr() != view.data_ptr()
    assert batch_from_samples([np.zeros((2, 3), np.float32), np.zeros((1, 4), np.float32)]).rows() is None
    assert batch_from_samples([np.float32(1), np.float32(2)]).rows() is None
    mixed = [np.arange(6, dtype=np.int16).reshape(2, 3), np.arange(4, dtype=np.int16).reshape(1, 4)]
    for samples in (boxes, mixed):
        got = _sample_tensors(TensorList(batch_from_samples(samples)), "boxes")
        assert [tuple(t.shape) for t in got] == [s.shape for s in samples]
        assert all(np.array_equal(t.numpy(), s) for t, s in zip(got, samples))


def test_dense_tag_on_a_ragged_output_says_what_to_do():
    with pytest.raises(ladle.Error, match=r"boxes.*ragged.*SPARSE_LIST_TAG.*fn\.pad"):
        ladle_batches([DENSE, COO, DENSE, DENSE])


def test_bad_tags():
    boxes, labels = ragged_data()
    pipe = ladle.Pipeline(batch_size=BATCH, num_threads=1)
    with pipe:
        pipe.set_outputs(*graph(fn, types, boxes, labels)[:2])
    with pytest.raises(ladle.InvalidArgumentError, match="not tags"):
        RaggedIterator(pipe, ["boxes", "labels"], output_types=[LIST, "list"])
    with pytest.raises(ladle.InvalidArgumentError, match="2 outputs"):
        RaggedIterator(pipe, ["boxes", "labels"], output_types=[LIST])


def test_coo_needs_one_dimensional_samples():
    with pytest.raises(ladle.InvalidArgumentError, match="1-D"):
        ladle_batches([COO, COO, DENSE, DENSE])


def test_partial_last_batch_of_ragged_images(sample_root):
    """32 decoded images of several sizes, batch 5, PARTIAL: 7 batches, the last
    a list of 2 images; every image once, at its own size."""
    pipe = ladle.Pipeline(batch_size=5, num_threads=2)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=sample_root, name="Reader")
        pipe.set_outputs(fn.decoders.image(jpegs), labels)
    it = RaggedIterator(pipe, ["images", "labels"], output_types=[LIST, DENSE], reader_name="Reader",
                        last_batch_policy=LastBatchPolicy.PARTIAL)
    batches = [d[0] for d in it]
    assert [len(b["images"]) for b in batches] == [5] * 6 + [2]
    assert [len(b["labels"]) for b in batches] == [5] * 6 + [2]
    shapes = {tuple(t.shape) for b in batches for t in b["images"]}
    assert len(shapes) > 1 and all(len(s) == 3 and s[2] == 3 for s in shapes)


def test_same_as_dalis_ragged_iterator():
    dali_or_skip()
    import nvidia.dali as dali
    from nvidia.dali import fn as dfn
    from nvidia.dali import types as dtypes
    from nvidia.dali.plugin.pytorch import DALIRaggedIterator

    boxes, labels = ragged_data()
    # torch < 2 lacks `with torch.device`, which DALI's iterator uses on the dynamic executor's outputs
    extra = {"exec_dynamic": False} if int(torch.__version__.split(".")[0]) < 2 else {}
    pipe = dali.Pipeline(batch_size=BATCH, num_threads=1, device_id=None, **extra)
    with pipe:
        pipe.set_outputs(*graph(dfn, dtypes, boxes, labels))
    tags = [DALIRaggedIterator.SPARSE_LIST_TAG, DALIRaggedIterator.SPARSE_COO_TAG, DALIRaggedIterator.DENSE_TAG,
            DALIRaggedIterator.DENSE_TAG]
    theirs = [d[0] for d in DALIRaggedIterator(pipe, ["boxes", "labels", "padded", "shapes"], output_types=tags)]
    mine = ladle_batches([LIST, COO, DENSE, DENSE])
    assert len(mine) == len(theirs)
    for a, b in zip(mine, theirs):
        assert len(a["boxes"]) == len(b["boxes"])
        for x, y in zip(a["boxes"], b["boxes"]):
            assert x.shape == y.shape and x.dtype == y.dtype and torch.equal(x, y)
        ca, cb = a["labels"].coalesce(), b["labels"].coalesce()
        assert ca.shape == cb.shape and torch.equal(ca.indices(), cb.indices()) and torch.equal(ca.values(), cb.values())
        assert torch.equal(a["padded"], b["padded"])
        assert torch.equal(a["shapes"].long(), b["shapes"].long())
