"""Pipeline checkpoints as DALI has them (enable_checkpointing, checkpoint(),
Pipeline(checkpoint=...), iterators' checkpoints()): byte-identical resumption."""

import warnings

import numpy as np
import pytest

import ladle
from ladle import fn, pipeline_def


@pipeline_def(batch_size=5, num_threads=2, seed=11, enable_checkpointing=True)
def augmenting(root):
    jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
    images = fn.decoders.image_random_crop(jpegs)
    images = fn.resize(images, resize_x=16, resize_y=16)
    return fn.flip(images, horizontal=fn.random.coin_flip()), labels


def batches(pipe, n):
    return [tuple(np.array(tl.as_array()).copy() for tl in pipe.run()) for _ in range(n)]


def test_resume_is_byte_identical(sample_root, tmp_path):
    pipe = augmenting(sample_root)
    batches(pipe, 9)  # into the second epoch (32 files, batch 5)
    text = pipe.checkpoint(str(tmp_path / "cpt.json"))
    assert (tmp_path / "cpt.json").read_text() == text
    expected = batches(pipe, 6)
    pipe.close()
    for saved in (text, (tmp_path / "cpt.json").read_text()):
        resumed = augmenting(sample_root, checkpoint=saved)
        for got, want in zip(batches(resumed, 6), expected):
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, w)
        resumed.close()


def test_iterator_checkpoints(sample_root):
    torch_mod = pytest.importorskip("ladle.torch")
    pipe = augmenting(sample_root)
    it = torch_mod.GenericIterator(pipe, ["images", "labels"], reader_name="Reader")
    for _ in range(3):
        next(it)
    (cpt,) = it.checkpoints()  # the iterator has one batch prepared ahead: the checkpoint is where it is
    want = [b[0]["images"].numpy().copy() for b in [next(it), next(it)]]
    pipe.close()
    pipe2 = augmenting(sample_root, checkpoint=cpt)
    it2 = torch_mod.GenericIterator(pipe2, ["images", "labels"], reader_name="Reader")
    got = [b[0]["images"].numpy().copy() for b in [next(it2), next(it2)]]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    pipe2.close()


def test_checkpoint_misuse_is_explained(sample_root):
    with pytest.raises(ladle.InvalidArgumentError, match="needs enable_checkpointing=True"):
        ladle.Pipeline(batch_size=2, checkpoint="{}")
    plain = ladle.Pipeline(batch_size=2)
    with pytest.raises(ladle.StateError, match="enable_checkpointing=True"):
        plain.checkpoint()
    with pytest.raises(ladle.InvalidArgumentError, match="not a checkpoint"):
        augmenting(sample_root, checkpoint="garbage")
    pipe = augmenting(sample_root)
    text = pipe.checkpoint()
    pipe.close()
    other = ladle.Pipeline(batch_size=5, seed=11, enable_checkpointing=True, checkpoint=text)
    with other:
        other.set_outputs(fn.random.coin_flip())
    with pytest.raises(ladle.InvalidArgumentError, match="defined differently .*operators"):
        other.build()
    fed = ladle.Pipeline(batch_size=2, enable_checkpointing=True)
    with fed:
        fed.set_outputs(fn.external_source(name="x"))
    with pytest.raises(ladle.StateError, match="external sources"):
        fed.checkpoint()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # enable_checkpointing is no longer an ignored argument
        ladle.Pipeline(batch_size=1, enable_checkpointing=True).close()
