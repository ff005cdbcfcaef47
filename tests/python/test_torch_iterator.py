"""ladle.torch: the DALI-style PyTorch iterator: epochs, last-batch policies,
padding and shards against hand-computed tables and an independent model of
the reader's stream; auto_reset; no-copy tensors; checkpoints."""

import math
import os
import random
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ladle  # noqa: E402
from ladle import fn, types  # noqa: E402
from ladle.datasets import make_shapes  # noqa: E402
from ladle.torch import ClassificationIterator, GenericIterator, LastBatchPolicy, to_torch  # noqa: E402

FILL, DROP, PARTIAL = LastBatchPolicy.FILL, LastBatchPolicy.DROP, LastBatchPolicy.PARTIAL


@pytest.fixture(scope="module")
def tiny_files(tmp_path_factory):
    """24 one-pixel PNGs; reading them is all the tests below need."""
    from PIL import Image

    root = tmp_path_factory.mktemp("tiny")
    paths = []
    for i in range(24):
        path = str(root / f"{i:02d}.png")
        Image.new("RGB", (1, 1), (i * 10, 0, 0)).save(path)
        paths.append(path)
    return paths


@pytest.fixture
def closing():
    """Registers pipelines to close at the end of the test."""
    made = []
    yield made.append
    for p in made:
        p.close()


def label_pipe(closing, files, n, batch, shard_id=0, num_shards=1, pad=False, stick=False, shuffle=False, seed=0):
    """A pipeline whose one output is the label of each sample: its index."""
    pipe = ladle.Pipeline(batch_size=batch, num_threads=1, seed=seed, prefetch_queue_depth=2)
    with pipe:
        _, labels = fn.readers.file(files=files[:n], labels=list(range(n)), name="Reader", pad_last_batch=pad,
                                    shard_id=shard_id, num_shards=num_shards, stick_to_shard=stick,
                                    random_shuffle=shuffle)
        pipe.set_outputs(labels)
    closing(pipe)
    return pipe


def epoch_labels(it):
    """One epoch of a label iterator: per pipeline, the list of batches (lists of labels)."""
    per_pipe = None
    for data in it:
        if per_pipe is None:
            per_pipe = [[] for _ in data]
        for k, d in enumerate(data):
            assert d["label"].dtype == torch.int32 and d["label"].dim() == 2 and d["label"].shape[1] == 1
            per_pipe[k].append(d["label"].view(-1).tolist())
    return per_pipe or []


# --- DALI's documented example -------------------------------------------------

DALI_EXAMPLE = {
    # (policy, pad): (last batch of the first epoch, first batch of the next), 1-based as in DALI's docs
    (PARTIAL, True): ([7], [1, 2]),
    (PARTIAL, False): ([7], [2, 3]),
    (FILL, True): ([7, 7], [1, 2]),
    (FILL, False): ([7, 1], [2, 3]),
    (DROP, True): ([5, 6], [1, 2]),
    (DROP, False): ([5, 6], [2, 3]),
}


@pytest.mark.parametrize("policy,pad", sorted(DALI_EXAMPLE, key=str))
def test_dali_documented_example(closing, tiny_files, policy, pad):
    it = GenericIterator(label_pipe(closing, tiny_files, 7, 2, pad=pad), ["label"], reader_name="Reader",
                         last_batch_policy=policy)
    first = epoch_labels(it)[0]
    it.reset()
    second = epoch_labels(it)[0]
    last, next_first = DALI_EXAMPLE[(policy, pad)]
    assert [x + 1 for x in first[-1]] == last
    assert [x + 1 for x in second[0]] == next_first


# --- the hand-computed table: 7 samples, batch 2, 1/2/3 shards, two epochs ------
#
# Shards of 7 samples (positions [floor(s*7/S), floor((s+1)*7/S))):
#   S=2: {0,1,2} {3,4,5,6};   S=3: {0,1} {2,3} {4,5,6}.
# Rank r reads shard (r + epoch) % S. Without padding a rank's stream is its
# shards back to back (rank 0 of 2: 0 1 2 3 4 5 6 0 1 2 ...); with padding each
# epoch is ceil(ceil(7/S)/2) batches, completed with the shard's last sample.
# An epoch ends at the first batch at which every shard has finished it.
#
# TABLE[(policy, pad, S)] = (per rank: [epoch 0 batches, epoch 1 batches], [len e0, len e1], [_size e0, _size e1])
TABLE = {
    (FILL, True, 1): ([[[[0, 1], [2, 3], [4, 5], [6, 6]], [[0, 1], [2, 3], [4, 5], [6, 6]]]], [4, 4], [7, 7]),
    (FILL, False, 1): ([[[[0, 1], [2, 3], [4, 5], [6, 0]], [[1, 2], [3, 4], [5, 6]]]], [4, 3], [8, 6]),
    (DROP, True, 1): ([[[[0, 1], [2, 3], [4, 5]], [[0, 1], [2, 3], [4, 5]]]], [3, 3], [7, 7]),
    (DROP, False, 1): ([[[[0, 1], [2, 3], [4, 5]], [[1, 2], [3, 4], [5, 6]]]], [3, 3], [7, 6]),
    (PARTIAL, True, 1): ([[[[0, 1], [2, 3], [4, 5], [6]], [[0, 1], [2, 3], [4, 5], [6]]]], [4, 4], [7, 7]),
    (PARTIAL, False, 1): ([[[[0, 1], [2, 3], [4, 5], [6]], [[1, 2], [3, 4], [5, 6]]]], [4, 3], [8, 6]),

    # S=2. Padded: rank 0 reads [0,1][2,2] then [3,4][5,6]; rank 1 the other way round.
    (FILL, True, 2): ([[[[0, 1], [2, 2]], [[3, 4], [5, 6]]],
                       [[[3, 4], [5, 6]], [[0, 1], [2, 2]]]], [2, 2], [4, 4]),
    # Unpadded: rank 0 reads 3 ahead in its epoch-0 batch [2,3]; epoch 1 goes on from there.
    (FILL, False, 2): ([[[[0, 1], [2, 3]], [[4, 5], [6, 0]]],
                        [[[3, 4], [5, 6]], [[0, 1], [2, 3]]]], [2, 2], [4, 4]),
    # DROP keeps N//S = 3 samples per shard: one batch.
    (DROP, True, 2): ([[[[0, 1]], [[3, 4]]],
                       [[[3, 4]], [[0, 1]]]], [1, 1], [3, 3]),
    (DROP, False, 2): ([[[[0, 1]], [[4, 5]]],
                        [[[3, 4]], [[0, 1]]]], [1, 1], [3, 3]),
    (PARTIAL, True, 2): ([[[[0, 1], [2]], [[3, 4], [5, 6]]],
                          [[[3, 4], [5, 6]], [[0, 1], [2]]]], [2, 2], [4, 4]),
    # Rank 0's sample 3 of epoch 1 was read (and cut) in epoch 0: its epoch 1 is 4 5 6.
    (PARTIAL, False, 2): ([[[[0, 1], [2]], [[4, 5], [6]]],
                           [[[3, 4], [5, 6]], [[0, 1], [2]]]], [2, 2], [4, 4]),

    # S=3. Padded: ceil(7/3) = 3 per shard, 2 batches per epoch.
    (FILL, True, 3): ([[[[0, 1], [1, 1]], [[2, 3], [3, 3]]],
                       [[[2, 3], [3, 3]], [[4, 5], [6, 6]]],
                       [[[4, 5], [6, 6]], [[0, 1], [1, 1]]]], [2, 2], [3, 3]),
    # Unpadded streams: rank 0: 0 1 2 3 4 5 6 0 ..; rank 1: 2 3 4 5 6 0 1 ..; rank 2: 4 5 6 0 1 2 3 ..
    # Epoch 0 ends after batch 1 (rank 2 needs two batches), epoch 1 after batch 2.
    (FILL, False, 3): ([[[[0, 1], [2, 3]], [[4, 5]]],
                        [[[2, 3], [4, 5]], [[6, 0]]],
                        [[[4, 5], [6, 0]], [[1, 2]]]], [2, 1], [4, 2]),
    (DROP, True, 3): ([[[[0, 1]], [[2, 3]]],
                       [[[2, 3]], [[4, 5]]],
                       [[[4, 5]], [[0, 1]]]], [1, 1], [2, 2]),
    # No batch lies wholly inside epochs 1..4 on every rank: they are skipped; the
    # next epoch returned is epoch 5 (batch 6: positions 12, 13 of each stream).
    (DROP, False, 3): ([[[[0, 1]], [[5, 6]]],
                        [[[2, 3]], [[0, 1]]],
                        [[[4, 5]], [[2, 3]]]], [1, 1], [2, 2]),
    # Ranks with a 2-sample shard get an empty last batch, as in DALI.
    (PARTIAL, True, 3): ([[[[0, 1], []], [[2, 3], []]],
                          [[[2, 3], []], [[4, 5], [6]]],
                          [[[4, 5], [6]], [[0, 1], []]]], [2, 2], [3, 3]),
    (PARTIAL, False, 3): ([[[[0, 1], []], [[]]],
                           [[[2, 3], []], [[6]]],
                           [[[4, 5], [6]], [[1]]]], [2, 1], [4, 2]),
}


def _table_id(key):
    return f"{key[0].name}-{'pad' if key[1] else 'nopad'}-S{key[2]}"


@pytest.mark.parametrize("key", sorted(TABLE, key=str), ids=_table_id)
@pytest.mark.parametrize("together", [False, True], ids=["rank-per-iterator", "one-iterator"])
def test_hand_computed_table(closing, tiny_files, key, together):
    policy, pad, shards = key
    expected, lens, sizes = TABLE[key]
    pipes = [label_pipe(closing, tiny_files, 7, 2, shard_id=r, num_shards=shards, pad=pad) for r in range(shards)]
    if together:  # all shards in one iterator (one pipeline per GPU)
        its = [GenericIterator(pipes, ["label"], reader_name="Reader", last_batch_policy=policy)]
    else:  # one iterator per rank, as in DDP
        its = [GenericIterator(p, ["label"], reader_name="Reader", last_batch_policy=policy) for p in pipes]
    got = [[] for _ in range(shards)]
    for epoch in range(2):
        for it in its:
            assert (len(it), it.size, it._size) == (lens[epoch], sizes[epoch], sizes[epoch])
        k = 0
        for it in its:
            for batches in epoch_labels(it):
                got[k].append(batches)
                k += 1
            it.reset()
    assert got == expected


# --- an independent model of the stream, for many configurations ---------------

def model_epochs(n, b, s, pad, stick, policy, epochs):
    """What the iterator must return: per epoch, per rank, the batches, plus
    len() and _size. Built from a sample-by-sample simulation of the readers."""
    bounds = [k * n // s for k in range(s + 1)]
    per_epoch = math.ceil(math.ceil(n / s) / b)
    horizon = (epochs + 4 * s + 2 * b + 8) + 2
    streams = []
    for rank in range(s):
        items = []
        for e in range(horizon):
            shard = rank if stick else (rank + e) % s
            samples = list(range(bounds[shard], bounds[shard + 1]))
            items += [(e, x, False) for x in samples]
            if pad:
                items += [(e, samples[-1], True)] * (per_epoch * b - len(samples))
        streams.append(items)

    def first_batch(r):  # the first batch at which every stream is in epoch >= r
        t = 0
        while not all(st[t * b][0] >= r for st in streams):
            t += 1
        return t

    out = []
    r = 0
    while len(out) < epochs:
        begin, end = first_batch(r), first_batch(r + 1)
        ranks = [[] for _ in range(s)]
        for t in range(begin, end):
            chunk = [st[t * b:(t + 1) * b] for st in streams]
            if policy == DROP and not all(e == r and not p for c in chunk for e, _, p in c):
                continue
            for rank, c in enumerate(chunk):
                if policy == PARTIAL:
                    ranks[rank].append([x for e, x, p in c if e == r and not p])
                else:
                    ranks[rank].append([x for _, x, _ in c])
        count = len(ranks[0])
        if count:
            if pad:
                size = n // s if policy == DROP else math.ceil(n / s)
            elif policy == DROP:
                size = min(sum(1 for e, _, _ in st[begin * b:] if e == r) for st in streams)
            else:
                size = count * b
            out.append((ranks, count, size))
        r += 1
    return out


def _random_configs(count, seed):
    rng = random.Random(seed)
    configs = []
    for _ in range(count):
        s = rng.choice([1, 2, 3, 4])
        n = rng.randint(s, 20)
        b = rng.randint(1, 6)
        configs.append((n, b, s, rng.random() < 0.5, rng.random() < 0.25, rng.choice(list(LastBatchPolicy))))
    return configs


@pytest.mark.parametrize("n,b,s,pad,stick,policy", _random_configs(40, seed=1234))
def test_matches_stream_model(closing, tiny_files, n, b, s, pad, stick, policy):
    try:
        expected = model_epochs(n, b, s, pad, stick, policy, epochs=3)
    except IndexError:  # the model found no epoch with a batch (DROP, batch > shard)
        expected = None
    pipes = [label_pipe(closing, tiny_files, n, b, shard_id=r, num_shards=s, pad=pad, stick=stick) for r in range(s)]
    if expected is None or (policy == DROP and b > n // s):
        with pytest.raises(ladle.Error):
            GenericIterator(pipes, ["label"], reader_name="Reader", last_batch_policy=policy)
        return
    it = GenericIterator(pipes, ["label"], reader_name="Reader", last_batch_policy=policy, auto_reset=True)
    for ranks, count, size in expected:
        assert (len(it), it._size) == (count, size)
        assert epoch_labels(it) == ranks


# --- auto_reset, StopIteration, reset() ----------------------------------------

def test_stop_iteration_is_sticky_without_auto_reset(closing, tiny_files):
    it = GenericIterator(label_pipe(closing, tiny_files, 5, 2, pad=True), ["label"], reader_name="Reader")
    assert len(epoch_labels(it)[0]) == 3
    for _ in range(3):  # never loops on: StopIteration until reset()
        with pytest.raises(StopIteration):
            next(it)
    it.reset()
    assert len(epoch_labels(it)[0]) == 3


def test_iter_resets_after_an_epoch(closing, tiny_files):
    it = GenericIterator(label_pipe(closing, tiny_files, 6, 2, pad=True), ["label"], reader_name="Reader")
    first = epoch_labels(it)
    second = epoch_labels(it)  # `for` calls iter(), which starts the next epoch (DALI)
    assert first == second == [[[0, 1], [2, 3], [4, 5]]]


@pytest.mark.parametrize("mode", [True, "yes"])
def test_auto_reset_yes(closing, tiny_files, mode):
    it = GenericIterator(label_pipe(closing, tiny_files, 5, 2, pad=True), ["label"], reader_name="Reader",
                         auto_reset=mode, last_batch_policy=PARTIAL)
    epochs = [epoch_labels(it) for _ in range(3)]
    assert epochs == [[[[0, 1], [2, 3], [4]]]] * 3


def test_auto_reset_quiet_never_stops(closing, tiny_files):
    it = GenericIterator(label_pipe(closing, tiny_files, 5, 2, pad=True), ["label"], reader_name="Reader",
                         auto_reset="quiet", last_batch_policy=DROP)
    got = [next(it)[0]["label"].view(-1).tolist() for _ in range(7)]
    assert got == [[0, 1], [2, 3], [0, 1], [2, 3], [0, 1], [2, 3], [0, 1]]
    assert len(it) == 2


def test_reset_mid_epoch_is_ignored(closing, tiny_files):
    it = GenericIterator(label_pipe(closing, tiny_files, 7, 2), ["label"], reader_name="Reader")
    next(it)
    with pytest.warns(UserWarning, match="middle of an epoch"):
        it.reset()
    rest = [d[0]["label"].view(-1).tolist() for d in it]
    assert rest == [[2, 3], [4, 5], [6, 0]]


def test_bad_auto_reset_and_policy(closing, tiny_files):
    pipe = label_pipe(closing, tiny_files, 5, 2)
    with pytest.raises(ladle.InvalidArgumentError, match="auto_reset"):
        GenericIterator(pipe, ["label"], reader_name="Reader", auto_reset="sometimes")
    with pytest.raises(ladle.InvalidArgumentError, match="last_batch_policy"):
        GenericIterator(pipe, ["label"], reader_name="Reader", last_batch_policy="FILLED")


@pytest.mark.parametrize("prepare", [True, False])
def test_prepare_first_batch_changes_nothing(closing, tiny_files, prepare):
    it = GenericIterator(label_pipe(closing, tiny_files, 7, 2), ["label"], reader_name="Reader",
                         prepare_first_batch=prepare, auto_reset=True)
    assert [epoch_labels(it)[0] for _ in range(2)] == [[[0, 1], [2, 3], [4, 5], [6, 0]], [[1, 2], [3, 4], [5, 6]]]


def test_without_reader_name_uses_the_one_reader(closing, tiny_files):
    it = GenericIterator(label_pipe(closing, tiny_files, 5, 2, pad=True), ["label"], last_batch_policy=PARTIAL)
    assert epoch_labels(it) == [[[0, 1], [2, 3], [4]]]


# --- size= (DALI's older, counter-based mode) ----------------------------------

@pytest.mark.parametrize("policy,padded,expected", [
    # counter += 2 per batch against size 7; FILL unpadded keeps counter % size.
    (FILL, False, [[[0, 1], [2, 3], [4, 5], [6, 0]], [[1, 2], [3, 4], [5, 6]]]),
    (FILL, True, [[[0, 1], [2, 3], [4, 5], [6, 6]], [[0, 1], [2, 3], [4, 5], [6, 6]]]),
    (PARTIAL, True, [[[0, 1], [2, 3], [4, 5], [6]], [[0, 1], [2, 3], [4, 5], [6]]]),
    (DROP, True, [[[0, 1], [2, 3], [4, 5]], [[0, 1], [2, 3], [4, 5]]]),
])
def test_size_mode(closing, tiny_files, policy, padded, expected):
    pipe = label_pipe(closing, tiny_files, 7, 2, pad=padded)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        it = GenericIterator(pipe, ["label"], size=7, last_batch_policy=policy, last_batch_padded=padded)
    got = []
    for _ in range(2):
        assert len(it) == len(expected[len(got)]) or policy == FILL
        got.append(epoch_labels(it)[0])
        it.reset()
    assert got == expected


def test_size_mode_partial_counts_over_pipelines(closing, tiny_files):
    # Two pipelines, 2 x 2 samples per step, size 6: the second step returns
    # the first pipeline's batch only (exactly 6 samples in all).
    pipes = [label_pipe(closing, tiny_files, 8, 2, shard_id=r, num_shards=2, pad=True) for r in range(2)]
    it = GenericIterator(pipes, ["label"], size=6, last_batch_policy=PARTIAL, last_batch_padded=True)
    assert len(it) == 2
    got = [[d["label"].view(-1).tolist() for d in data] for data in it]
    assert got == [[[0, 1], [4, 5]], [[2, 3]]]


def test_argument_errors(closing, tiny_files):
    pipe = label_pipe(closing, tiny_files, 7, 2)
    with pytest.raises(ladle.InvalidArgumentError, match="reader_name or size"):
        GenericIterator(pipe, ["label"], size=7, reader_name="Reader")
    with pytest.raises(ladle.InvalidArgumentError, match="last_batch_padded"):
        GenericIterator(pipe, ["label"], reader_name="Reader", last_batch_padded=True)
    with pytest.raises(ladle.InvalidArgumentError, match="distinct"):
        GenericIterator(pipe, ["a", "a"], reader_name="Reader")
    with pytest.raises(ladle.InvalidArgumentError, match="output_map"):
        GenericIterator(pipe, ["a", "b"], reader_name="Reader")
    with pytest.raises(ladle.Error, match="whole batch"):
        GenericIterator(label_pipe(closing, tiny_files, 3, 4, pad=True), ["label"], reader_name="Reader",
                        last_batch_policy=DROP)
    other = label_pipe(closing, tiny_files, 7, 3)
    with pytest.raises(ladle.InvalidArgumentError, match="batch size"):
        GenericIterator([pipe, other], ["label"], reader_name="Reader")


def test_ragged_output_is_refused(closing, tmp_path):
    from PIL import Image

    files = []
    for i in range(2):
        files.append(str(tmp_path / f"{i}.png"))
        Image.new("RGB", (1 + i, 1), (0, 0, 0)).save(files[-1])
    pipe = ladle.Pipeline(batch_size=2, num_threads=1)
    with pipe:
        images = fn.decoders.image(fn.readers.file(files=files, name="Reader")[0])
        pipe.set_outputs(images)  # 1x1 and 2x1 pixels: a ragged batch
    closing(pipe)
    it = GenericIterator(pipe, ["image"], reader_name="Reader", prepare_first_batch=False)
    with pytest.raises(ladle.StateError, match="ragged"):
        next(it)


# --- tensors: no copy, types, lifetime ------------------------------------------

@pytest.fixture(scope="module")
def shapes_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("shapes")
    make_shapes(str(root), classes=4, train_per_class=5, val_per_class=0, size=24, seed=3)
    return os.path.join(str(root), "train")


def image_pipe(closing, root, batch=4, shard_id=0, num_shards=1, pad=True, seed=7, size=16):
    pipe = ladle.Pipeline(batch_size=batch, num_threads=2, seed=seed)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader", pad_last_batch=pad,
                                        shard_id=shard_id, num_shards=num_shards)
        images = fn.decoders.image_random_crop(jpegs, output_type=types.RGB)
        images = fn.resize(images, resize_x=size, resize_y=size)
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW", mean=[128.0] * 3,
                                          std=[64.0] * 3, mirror=fn.random.coin_flip(probability=0.5))
        pipe.set_outputs(images, labels)
    closing(pipe)
    return pipe


def test_classification_iterator_outputs(closing, shapes_root):
    it = ClassificationIterator(image_pipe(closing, shapes_root), reader_name="Reader",
                                last_batch_policy=PARTIAL)
    batches = list(it)
    assert len(batches) == len(it) == 5  # 20 images, batch 4
    seen = []
    for data in batches:
        x, y = data[0]["data"], data[0]["label"]
        assert x.dtype == torch.float32 and x.shape == (4, 3, 16, 16) and x.device.type == "cpu"
        assert y.dtype == torch.int32 and y.shape == (4, 1)
        seen += y.squeeze(-1).long().tolist()
    assert sorted(seen) == sorted([c for c in range(4) for _ in range(5)])


def test_to_torch_takes_no_copy(closing, shapes_root):
    images, labels = image_pipe(closing, shapes_root).run()
    x = to_torch(images)
    assert x.data_ptr() == images.data_ptr()
    assert np.array_equal(x.numpy(), images.as_array())
    assert to_torch(labels).data_ptr() == labels.data_ptr()


def test_tensors_stay_valid_while_referenced(closing, shapes_root):
    it = ClassificationIterator(image_pipe(closing, shapes_root), reader_name="Reader", auto_reset=True)
    kept = []
    for _ in range(3):
        for data in it:
            x = data[0]["data"]
            kept.append((x, x.clone(), x.data_ptr()))
    pointers = [p for _, _, p in kept]
    assert len(set(pointers)) == len(pointers)  # never handed out the same memory twice while held
    for x, copy, _ in kept:
        assert torch.equal(x, copy)


# --- checkpoints -----------------------------------------------------------------

def _stream(it, first_epoch, epochs):
    for epoch in range(first_epoch, epochs):
        for data in it:
            yield epoch, [{k: v.clone() for k, v in d.items()} for d in data]


@pytest.mark.parametrize("policy", list(LastBatchPolicy))
@pytest.mark.parametrize("pad", [True, False])
@pytest.mark.parametrize("shards", [1, 3])
def test_resume_matches_uninterrupted_run(closing, shapes_root, tmp_path, policy, pad, shards):
    epochs = 3
    rng = random.Random(hash((policy.name, pad, shards)) & 0xFFFF)

    def make(rank):
        return ClassificationIterator(image_pipe(closing, shapes_root, batch=3, shard_id=rank, num_shards=shards,
                                                 pad=pad), reader_name="Reader", auto_reset=True,
                                      last_batch_policy=policy)

    for rank in range(shards):
        full = list(_stream(make(rank), 0, epochs))
        stop = rng.randrange(1, len(full))
        it = make(rank)
        gen = _stream(it, 0, epochs)
        head = [next(gen) for _ in range(stop)]
        assert all(torch.equal(a[1][0]["data"], b[1][0]["data"]) for a, b in zip(head, full))
        path = tmp_path / f"state{rank}.pt"
        torch.save({"loader": it.state_dict(), "epoch": head[-1][0]}, path)
        del it, gen

        saved = torch.load(path)
        resumed = make(rank)
        resumed.load_state_dict(saved["loader"])
        rest = list(_stream(resumed, saved["epoch"], epochs))
        assert len(rest) == len(full) - stop
        for (e1, a), (e2, b) in zip(rest, full[stop:]):
            assert e1 == e2
            assert torch.equal(a[0]["label"], b[0]["label"])
            assert a[0]["data"].numpy().tobytes() == b[0]["data"].numpy().tobytes()


def test_state_is_the_same_on_every_rank(closing, tiny_files):
    its = [GenericIterator(label_pipe(closing, tiny_files, 7, 2, shard_id=r, num_shards=2, pad=True), ["label"],
                           reader_name="Reader") for r in range(2)]
    for it in its:
        next(it)
    assert its[0].state_dict() == its[1].state_dict()


def test_load_state_dict_checks_the_setup(closing, tiny_files):
    a = GenericIterator(label_pipe(closing, tiny_files, 7, 2), ["label"], reader_name="Reader")
    b = GenericIterator(label_pipe(closing, tiny_files, 7, 2, pad=True), ["label"], reader_name="Reader")
    with pytest.raises(ladle.InvalidArgumentError, match="pad_last_batch"):
        b.load_state_dict(a.state_dict())
    with pytest.raises(ladle.InvalidArgumentError, match="not a state"):
        b.load_state_dict({"position": 3})


# --- DALI's module names and torchrun defaults ------------------------------------

def test_dali_alias_module():
    from ladle.plugin.pytorch import DALIClassificationIterator, DALIGenericIterator
    from ladle.plugin.pytorch import LastBatchPolicy as Policy

    assert DALIGenericIterator is GenericIterator
    assert DALIClassificationIterator is ClassificationIterator
    assert Policy is LastBatchPolicy


def test_reader_shards_by_torchrun_environment(closing, tiny_files, monkeypatch):
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("WORLD_SIZE", "3")
    monkeypatch.setenv("LOCAL_RANK", "0")
    pipe = ladle.Pipeline(batch_size=2, num_threads=1)
    with pipe:
        _, labels = fn.readers.file(files=tiny_files[:7], name="Reader")
        pipe.set_outputs(labels)
    closing(pipe)
    meta = pipe.reader_meta("Reader")
    assert (meta["shard_id"], meta["number_of_shards"]) == (2, 3)
    # device_id follows LOCAL_RANK only where ladle has that CUDA device.
    cuda = int(ladle.build_info().get("cuda_devices", 0))
    assert pipe.device_id == (0 if cuda > 0 else -1)
    # Explicit arguments win over the environment.
    explicit = ladle.Pipeline(batch_size=2, num_threads=1, device_id=None)
    with explicit:
        _, labels = fn.readers.file(files=tiny_files[:7], name="Reader", shard_id=0, num_shards=1)
        explicit.set_outputs(labels)
    closing(explicit)
    assert explicit.reader_meta("Reader")["number_of_shards"] == 1
    assert explicit.device_id == -1
    monkeypatch.setenv("RANK", "x")
    bad = ladle.Pipeline(batch_size=2, num_threads=1)
    closing(bad)
    with bad, pytest.raises(ladle.InvalidArgumentError, match="RANK"):
        fn.readers.file(files=tiny_files[:7])


def test_iterator_on_a_pipeline_already_run(closing, tiny_files):
    # Batches 0..4 of the stream were taken with run(): the iterator starts in
    # the epoch that batch 5 belongs to (epoch 1 = batches 4..6), one batch in.
    pipe = label_pipe(closing, tiny_files, 7, 2)
    for _ in range(5):
        pipe.run()
    it = GenericIterator(pipe, ["label"], reader_name="Reader", auto_reset=True)
    assert len(it) == 3
    assert epoch_labels(it) == [[[3, 4], [5, 6]]]
    assert epoch_labels(it) == [[[0, 1], [2, 3], [4, 5], [6, 0]]]


# --- GPU outputs (run on the GPU machine) -----------------------------------------

def _gpu_decoding():
    from ladle.pipeline import op_schemas

    return "mixed" in op_schemas().get("decoders.image", {}).get("devices", [])


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu_decoding(), reason="ladle has no GPU decoding (decoders.image device='mixed') yet")
def test_gpu_outputs_on_the_current_stream(closing, shapes_root):
    def make(device):
        pipe = ladle.Pipeline(batch_size=4, num_threads=2, device_id=0 if device == "mixed" else None, seed=3)
        with pipe:
            jpegs, labels = fn.readers.file(file_root=shapes_root, name="Reader", pad_last_batch=True)
            images = fn.decoders.image(jpegs, device=device, output_type=types.RGB)
            images = fn.resize(images, resize_x=16, resize_y=16)
            images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW", mean=[128.0] * 3,
                                              std=[64.0] * 3)
            pipe.set_outputs(images, labels)
        closing(pipe)
        return ClassificationIterator(pipe, reader_name="Reader", last_batch_policy=PARTIAL)

    gpu, cpu = make("mixed"), make("cpu")
    side = torch.cuda.Stream()
    kept = []
    with torch.cuda.stream(side):  # tensors must be ready on the stream current at next()
        for g, c in zip(gpu, cpu):
            x = g[0]["data"]
            assert x.is_cuda and x.device.index == 0 and x.shape == (4, 3, 16, 16)
            total = x.double().sum()  # queued on `side` right away: must see ladle's finished output
            kept.append((x, total, c[0]["data"], c[0]["label"], g[0]["label"]))
    torch.cuda.synchronize()
    for x, total, xc, yc, yg in kept:
        assert torch.equal(yg.cpu(), yc)
        assert abs(total.item() - x.double().sum().item()) < 1e-6 * max(1.0, abs(total.item()))
        assert (x.cpu() - xc).abs().mean().item() < 4.0 / 64  # nvJPEG and libjpeg may differ slightly


# --- pipelines fed by external sources: epochs end at the source's StopIteration ---


def fed_pipeline(cycle, batches=3):
    data = [[np.full((2,), i, np.int32), np.full((2,), 10 + i, np.int32)] for i in range(batches)]
    pipe = ladle.Pipeline(batch_size=2, num_threads=1)
    with pipe:
        pipe.set_outputs(fn.external_source(data, ndim=1, layout="", dtype=types.INT32, cycle=cycle))
    return pipe


def first_values(it, limit=20):
    out = []
    for batch in it:
        assert batch[0]["x"].shape == (2, 2)
        out.append(int(batch[0]["x"][0, 0]))
        if len(out) == limit:
            break
    return out


@pytest.mark.parametrize("auto_reset", [False, True])
def test_epochs_of_a_restarting_source(auto_reset):
    it = GenericIterator(fed_pipeline("raise"), ["x"], auto_reset=auto_reset)
    assert first_values(it) == [0, 1, 2]
    if not auto_reset:
        with pytest.raises(StopIteration):  # again at every next() until a reset
            next(it)
    assert first_values(it) == [0, 1, 2]  # the next epoch (reset by iter() or by itself)


def test_quiet_reset_goes_on_through_the_epochs():
    it = GenericIterator(fed_pipeline("raise"), ["x"], auto_reset="quiet")
    assert first_values(it, limit=7) == [0, 1, 2, 0, 1, 2, 0]
    # A source with nothing left after its one batch: "quiet" must stop, not loop for ever.
    ended = GenericIterator(fed_pipeline(None, batches=1), ["x"], auto_reset="quiet")
    assert first_values(ended) == [0]


def test_a_source_that_ends_ends_every_later_epoch_at_once():
    it = GenericIterator(fed_pipeline(None), ["x"])
    assert first_values(it) == [0, 1, 2]
    assert first_values(it) == []
    state = it.state_dict()
    with pytest.raises(ladle.StateError, match="no positions"):
        GenericIterator(fed_pipeline(None), ["x"]).load_state_dict(state)
