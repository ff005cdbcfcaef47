"""on_error="skip": bad files are dropped with a budget, batches stay full,
shards keep equal batch counts, output stays a function of the data."""

import logging
import os
import shutil

import numpy as np
import pytest

import ladle
from ladle import fn, types


@pytest.fixture
def corrupt_tree(tmp_path, sample_root):
    """The sample set (4 classes x 8) with 4 bad files among it."""
    root = tmp_path / "data"
    shutil.copytree(sample_root, root)
    good = sorted(str(p) for p in root.rglob("*.jpg"))
    bad = {
        root / "circle" / "circle_9.jpg": b"",                                   # empty
        root / "square" / "square_8.jpg": b"not a jpeg at all" * 10,             # garbage
        root / "stripes" / "stripes_8.jpg": open(good[0], "rb").read()[:300],    # truncated
        root / "triangle" / "triangle_8.jpg": b"\x89PNG\r\n\x1a\n" + b"\0" * 40,  # a broken PNG
    }
    for path, data in bad.items():
        path.write_bytes(data)
    return str(root), sorted(str(p) for p in bad)


def pipeline(root, batch_size=6, num_threads=2, **kwargs):
    pipe = ladle.Pipeline(batch_size=batch_size, num_threads=num_threads, seed=5, **kwargs)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="R", pad_last_batch=True,
                                        **{k: v for k, v in kwargs.pop("reader", {}).items()})
        images = fn.resize(fn.decoders.image(jpegs), resize_x=8, resize_y=8)
        pipe.set_outputs(images, labels)
    return pipe


def epoch(pipe, batches):
    out = []
    for _ in range(batches):
        images, labels = pipe.run()
        assert len(images) == pipe.batch_size  # full, always
        out.append((np.array(images.as_array()).copy(), np.array(labels.as_array()).copy()))
    return out


def test_raise_is_the_default(corrupt_tree):
    root, bad = corrupt_tree
    pipe = pipeline(root)
    with pytest.raises(ladle.Error, match="|".join(os.path.basename(b) for b in bad)):
        epoch(pipe, 6)  # 36 files: 6 batches
    pipe.close()


def test_skip_keeps_batches_full_and_logs_each_file_once(corrupt_tree, caplog):
    root, bad = corrupt_tree
    pipe = pipeline(root, on_error="skip", max_skipped_samples=4)
    with caplog.at_level(logging.WARNING, logger="ladle"):
        first = epoch(pipe, 6)
        second = epoch(pipe, 6)
    skipped = pipe.skipped_samples()
    assert sorted(s["name"] for s in skipped) == bad
    assert all(s["error"] for s in skipped)
    assert sum("skipped a bad sample" in r.message for r in caplog.records) == 4  # once each, not per epoch
    assert pipe.executor_statistics()["skipped_samples"] == 4
    # No output comes from a bad file: every image decoded, labels are the good files' classes.
    for images, labels in first + second:
        assert images.shape == (6, 8, 8, 3)
    pipe.close()


def test_skipping_is_deterministic(corrupt_tree):
    root, _ = corrupt_tree
    runs = []
    for threads in (1, 3):
        pipe = pipeline(root, num_threads=threads, on_error="skip")
        runs.append(epoch(pipe, 12))
        pipe.close()
    for (a, la), (b, lb) in zip(*runs):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(la, lb)
    # A resumed pipeline that has not met the bad files yet gives the same bytes.
    pipe = pipeline(root, on_error="skip")
    pipe.set_position(7)
    for (a, la), (b, lb) in zip(epoch(pipe, 5), runs[0][7:]):
        np.testing.assert_array_equal(a, b)
    pipe.close()


def test_the_budget_is_enforced_and_lists_the_files(corrupt_tree):
    root, bad = corrupt_tree
    pipe = pipeline(root, on_error="skip", max_skipped_samples=2)
    with pytest.raises(ladle.LimitError, match=r"more than max_skipped_samples=2 allows: .*_8\.jpg|_9\.jpg"):
        epoch(pipe, 6)
    pipe.close()
    pipe = pipeline(root, on_error="skip", max_skipped_samples=0.2)  # 20% of 36: 8 allowed
    epoch(pipe, 6)
    pipe.close()


def test_shards_keep_equal_batch_counts(corrupt_tree):
    root, _ = corrupt_tree
    counts = []
    for shard in range(2):
        pipe = ladle.Pipeline(batch_size=4, num_threads=2, on_error="skip")
        with pipe:
            jpegs, labels = fn.readers.file(file_root=root, name="R", shard_id=shard, num_shards=2,
                                            pad_last_batch=True)
            pipe.set_outputs(fn.resize(fn.decoders.image(jpegs), resize_x=8, resize_y=8), labels)
        torch_mod = pytest.importorskip("ladle.torch")
        it = torch_mod.GenericIterator(pipe, ["images", "labels"], reader_name="R",
                                       last_batch_policy=torch_mod.LastBatchPolicy.PARTIAL)
        counts.append(sum(1 for _ in it))
        pipe.close()
    assert counts[0] == counts[1] == 5  # 18 per shard, batch 4


def test_bad_arguments_are_not_skipped(sample_root):
    with pytest.raises(ladle.InvalidArgumentError, match="on_error"):
        ladle.Pipeline(batch_size=2, on_error="ignore")
    with pytest.raises(ladle.InvalidArgumentError, match="needs on_error='skip'"):
        ladle.Pipeline(batch_size=2, max_skipped_samples=3)
    with pytest.raises(ladle.InvalidArgumentError, match="fraction must be in"):
        ladle.Pipeline(batch_size=2, on_error="skip", max_skipped_samples=1.5)


@pytest.mark.gpu
def test_skip_with_the_mixed_decoder(corrupt_tree, tmp_path):
    """device="mixed": bad files fail on the CPU share, or nvJPEG refuses them
    and the CPU decoder retries its share (naming the bad one); either way
    they are skipped and the batches stay full, with the CPU pipeline's labels."""
    from conftest import cuda_usable
    if not cuda_usable():
        pytest.skip("no usable CUDA device")
    root, bad = corrupt_tree
    # A JPEG that ends with its end-of-image marker (so it is routed to nvJPEG)
    # but has a broken Huffman table. It replaces a good file, so the set keeps
    # 36 files: 6 whole batches (a padded last batch of one bad record borrows
    # a sample: test_padded_last_batch_of_one_bad_record_borrows_a_replacement).
    extra = os.path.join(root, "circle", "circle_0.jpg")
    data = bytearray(open(extra, "rb").read())
    dht = data.index(b"\xFF\xC4")
    data[dht + 5:dht + 21] = b"\xFF" * 16
    with open(extra, "wb") as f:
        f.write(bytes(data))
    bad = sorted(bad + [extra])

    def build(device):
        pipe = ladle.Pipeline(batch_size=6, num_threads=2, seed=5, device_id=0, on_error="skip")
        with pipe:
            jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="R", pad_last_batch=True)
            images = fn.resize(fn.decoders.image(jpegs, device=device), resize_x=8, resize_y=8)
            pipe.set_outputs(images, labels)
        return pipe

    mixed, cpu = build("mixed"), build("cpu")
    for _ in range(12):  # two epochs of 36 files
        (images, labels), (_, cpu_labels) = mixed.run(), cpu.run()
        assert len(images) == 6
        assert np.array_equal(np.array(labels.as_array()), np.array(cpu_labels.as_array()))
    assert sorted({s["name"] for s in mixed.skipped_samples()}) == bad
    assert all(os.path.basename(s["name"]) in s["error"] for s in mixed.skipped_samples())
    mixed.close()
    cpu.close()


def external_pipeline(**kwargs):
    pipe = ladle.Pipeline(batch_size=5, num_threads=2, seed=3, **kwargs)
    with pipe:
        enc = fn.external_source(name="E", dtype=types.UINT8, ndim=1)
        pipe.set_outputs(fn.resize(fn.decoders.image(enc), resize_x=8, resize_y=8))
    pipe.build()
    return pipe


def test_external_source_skip_drops_the_sample_and_the_batch_is_smaller(caplog):
    from conftest import sample_jpegs
    good = [np.frombuffer(data, np.uint8) for _, data in sample_jpegs()[:5]]
    bad = np.frombuffer(b"not a jpeg at all" * 10, np.uint8)
    truncated = good[0][:300]
    ref = external_pipeline()
    ref.feed_input("E", good[:2] + good[3:])
    (want,) = ref.run()
    pipe = external_pipeline(on_error="skip", max_skipped_samples=3)
    with caplog.at_level(logging.WARNING, logger="ladle"):
        pipe.feed_input("E", good[:2] + [bad] + good[3:])  # slot 2 is bad
        pipe.feed_input("E", good)                          # all good
        pipe.feed_input("E", [truncated] + good[1:4] + [bad])
        (first,), (second,), (third,) = pipe.run(), pipe.run(), pipe.run()
    assert len(first) == 4 and len(second) == 5 and len(third) == 3
    assert np.array_equal(np.array(first.as_array()), np.array(want.as_array()))  # the good four, in order
    skipped = pipe.skipped_samples()
    assert [(s["iteration"], s["record"]) for s in skipped] == [(0, 2), (2, 10), (2, 14)]
    assert all(s["error"] for s in skipped)
    assert sum("skipped a bad sample" in r.message for r in caplog.records) == 3
    # Past the budget, and a batch with no good sample, fail.
    pipe.feed_input("E", [bad, good[1]])
    with pytest.raises(ladle.Error, match="skipped"):
        pipe.run()
    pipe.close()
    pipe = external_pipeline(on_error="skip")
    pipe.feed_input("E", [bad, truncated])
    with pytest.raises(ladle.Error, match="every sample of the fed batch failed"):
        pipe.run()
    pipe.feed_input("E", good[:2])  # and the pipeline goes on
    assert len(pipe.run()[0]) == 2
    pipe.close()
    ref.close()


def test_dynamic_reader_skips_records_it_cannot_read(tmp_path, sample_root, caplog):
    import ladle.dynamic as ldd
    root = tmp_path / "data"
    shutil.copytree(sample_root, root)
    files = {open(p, "rb").read(): str(p) for p in root.rglob("*.jpg")}

    def reader(**kwargs):
        return ldd.readers.File(file_root=str(root), random_shuffle=True, seed=1, **kwargs)

    ref = reader()
    order = [files[np.array(t).tobytes()] for enc, _ in ref.next_epoch(batch_size=5) for t in enc.tensors]
    ref.close()
    gone = order[26]  # read in the 6th batch, after the pipeline has listed the files
    skipping = reader(on_error="skip", max_skipped_samples=1)
    with caplog.at_level(logging.WARNING, logger="ladle"):
        epoch = skipping.next_epoch(batch_size=5)
        sizes = [len(next(epoch)[0])]
        os.remove(gone)  # it vanished after listing: reading it fails
        sizes += [len(enc) for enc, _ in epoch]
        second = [len(enc) for enc, _ in skipping.next_epoch(batch_size=5)]
    assert sizes == second == [5] * 6 + [2]  # batches stay full (the slot takes the next good sample)
    assert [s["name"] for s in skipping.skipped_samples()] == [gone]
    assert any(os.path.basename(gone) in r.getMessage() for r in caplog.records)
    skipping.close()
    with pytest.raises(ladle.InvalidArgumentError, match="on_error"):
        reader(on_error="ignore")
    with pytest.raises(ladle.InvalidArgumentError, match="max_skipped_samples needs on_error"):
        reader(max_skipped_samples=3).epoch_size
    with pytest.raises(ladle.ReadError, match="ladle.dynamic.readers.File: .*cannot open folder"):
        ldd.readers.File(file_root=str(tmp_path / "none")).epoch_size


def padded_shards(tmp_path, bad, num_files=10, batch_size=4, num_threads=2):
    """files= of num_files sample JPEGs (label = file number), those in `bad`
    corrupt; two shards with pad_last_batch. Returns {shard: labels per batch}
    over two epochs, and the pipelines' skip lists."""
    from conftest import sample_jpegs
    jpegs = [data for _, data in sample_jpegs()]
    files = []
    for i in range(num_files):
        path = tmp_path / f"f{i}.jpg"
        path.write_bytes(b"corrupt" * 20 if i in bad else jpegs[i])
        files.append(str(path))
    out, skipped = {}, {}
    for shard in range(2):
        pipe = ladle.Pipeline(batch_size=batch_size, num_threads=num_threads, on_error="skip")
        with pipe:
            jpegs_node, labels = fn.readers.file(files=files, labels=list(range(num_files)), name="R",
                                                 shard_id=shard, num_shards=2, pad_last_batch=True)
            pipe.set_outputs(fn.resize(fn.decoders.image(jpegs_node), resize_x=8, resize_y=8), labels)
        per_epoch = -(-(num_files // 2) // batch_size)
        batches = []
        for _ in range(2 * per_epoch):
            images, labels_out = pipe.run()
            assert len(images) == batch_size
            batches.append([int(x) for x in np.array(labels_out.as_array()).reshape(-1)])
        out[shard], skipped[shard] = batches, sorted(s["name"] for s in pipe.skipped_samples())
        pipe.close()
    return out, skipped, files


def test_padded_last_batch_of_one_bad_record_borrows_a_replacement(tmp_path):
    """Shard 0 holds files 0-4; with batch 4 its last batch is file 4 padded
    three times. File 4 is corrupt: the batch takes the nearest good sample
    of the shard before it (file 3), padding included, and every shard keeps
    two batches per epoch."""
    out, skipped, files = padded_shards(tmp_path, bad={4})
    assert out[0] == [[0, 1, 2, 3], [3, 3, 3, 3], [5, 6, 7, 8], [9, 9, 9, 9]]  # epoch 1 reads shard 1
    assert out[1] == [[5, 6, 7, 8], [9, 9, 9, 9], [0, 1, 2, 3], [3, 3, 3, 3]]
    assert skipped[0] == skipped[1] == [files[4]]
    (tmp_path / "again").mkdir()
    again, _, _ = padded_shards(tmp_path / "again", bad={4}, num_threads=1)
    assert again == out  # deterministic, whatever the thread count


def test_borrowing_goes_on_past_bad_neighbours_and_forward(tmp_path):
    # Files 3 and 4 bad: file 2 fills the padded batch. Files 0-3 bad: the first
    # batch has nothing good before it and takes file 4 from the batch after.
    out, skipped, files = padded_shards(tmp_path, bad={3, 4})
    assert out[0][:2] == [[0, 1, 2, 0], [2, 2, 2, 2]]  # in a batch: the next good slot, cyclically
    (tmp_path / "b").mkdir()
    out, skipped, files = padded_shards(tmp_path / "b", bad={0, 1, 2, 3})
    assert out[0][:2] == [[4, 4, 4, 4], [4, 4, 4, 4]]
    assert skipped[0] == files[:4]


def test_a_shard_with_no_good_sample_fails(tmp_path):
    with pytest.raises(ladle.Error, match="every other sample of epoch 0"):
        padded_shards(tmp_path, bad=set(range(5)))


def test_dynamic_call_skip_drops_the_sample_and_the_batch_is_smaller(caplog):
    import ladle.dynamic as ldd
    from conftest import sample_jpegs
    good = [np.frombuffer(data, np.uint8) for _, data in sample_jpegs()[:5]]
    bad = np.frombuffer(b"not a jpeg at all" * 10, np.uint8)
    want = ldd.decoders.image(ldd.batch(good[:2] + good[3:]))
    with pytest.raises(ladle.Error, match="ladle.dynamic.decoders.image"):  # the default context raises
        ldd.decoders.image(ldd.batch(good[:2] + [bad] + good[3:]))
    ctx = ldd.EvalContext(on_error="skip", max_skipped_samples=2)
    with ctx, caplog.at_level(logging.WARNING, logger="ladle"):
        got = ldd.decoders.image(ldd.batch(good[:2] + [bad] + good[3:]))  # slot 2 is bad
        assert len(got) == 4
        for a, b in zip(got.tensors, want.tensors):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        assert len(ldd.decoders.image(ldd.batch(good))) == 5
        # A random operator (fed seeds) numbers its samples too: slot 0 is dropped.
        cropped = ldd.decoders.image_random_crop(ldd.batch([good[0][:300]] + good[1:3]), rng=ldd.random.RNG(3))
        assert len(cropped) == 2
        skipped = ctx.skipped_samples()
        assert [(s["operator"], s["call"], s["sample"]) for s in skipped] == [
            ("ladle.dynamic.decoders.image", 0, 2), ("ladle.dynamic.decoders.image_random_crop", 1, 0)]
        assert all(s["error"].startswith("ladle.dynamic.decoders") and s["name"] == "" for s in skipped)
        assert sum("skipped a bad sample" in r.message for r in caplog.records) == 2
        with pytest.raises(ladle.LimitError, match="3 bad samples skipped in this EvalContext, more than "
                                                   "max_skipped_samples=2"):
            ldd.decoders.image(ldd.batch([bad] + good[:2]))
        with pytest.raises(ladle.Error, match="every sample of the fed batch failed"):
            ldd.decoders.image(ldd.batch([bad, bad]))
        assert len(ldd.decoders.image(ldd.batch(good[:3]))) == 3  # and calls go on
    # Bad arguments are never skipped, and the context's arguments are checked.
    with ctx, pytest.raises(ladle.InvalidArgumentError, match="output_type"):
        ldd.decoders.image(ldd.batch(good[:2]), output_type=99)
    for kwargs, match in (({"on_error": "ignore"}, "on_error"), ({"max_skipped_samples": 3}, "needs on_error"),
                          ({"on_error": "skip", "max_skipped_samples": 0.5}, "int >= 0")):
        with pytest.raises(ladle.InvalidArgumentError, match=match):
            ldd.EvalContext(**kwargs)


def test_dynamic_call_skip_names_the_file_a_dynamic_reader_read(tmp_path, sample_root):
    import ladle.dynamic as ldd
    root = tmp_path / "data"
    shutil.copytree(sample_root, root)
    bad = root / "square" / "square_3.jpg"
    bad.write_bytes(b"garbage" * 30)  # readable, so the reader passes it on; decoding fails
    reader = ldd.readers.File(file_root=str(root))
    ctx = ldd.EvalContext(on_error="skip")
    with ctx:
        sizes, labels_kept = [], 0
        for enc, labels in reader.next_epoch(batch_size=8):
            before = len(ctx.skipped_samples())
            images = ldd.decoders.image(enc)
            dropped = {s["sample"] for s in ctx.skipped_samples()[before:]}
            kept = labels.select([i for i in range(len(labels)) if i not in dropped])  # labels kept aligned
            assert len(kept) == len(images)
            sizes.append(len(images))
            labels_kept += len(kept)
    assert sizes == [8, 7, 8, 8] and labels_kept == 31  # square_3 is file 11
    assert [s["name"] for s in ctx.skipped_samples()] == [str(bad)]
    assert ctx.skipped_samples()[0]["error"].startswith("ladle.dynamic.decoders.image")
    reader.close()
