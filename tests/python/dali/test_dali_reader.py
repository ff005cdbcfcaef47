"""Differential tests of readers.file against DALI 2.4 (CPU pipelines).

DALI's PyTorch iterator (nvidia.dali.plugin.pytorch) needs CUDA even for a CPU
pipeline (it enters a torch.cuda device context: measured with DALI 2.4 and
torch 1.13 on a machine without a GPU), so the comparison is at the pipeline
level: the per-iteration sample sequences over several epochs and the reader
metadata that DALI's iterator computes len()/_size from. The iterator's own
LastBatchPolicy arithmetic is checked against DALI's documented example in
tests/python/test_torch_iterator.py."""

import fnmatch

import numpy as np
import pytest

import ladle
from conftest import dali_or_skip

N_FILES = 10


@pytest.fixture(scope="module")
def file_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("files")
    for c in range(2):
        (root / f"class{c}").mkdir()
    for i in range(N_FILES):
        (root / f"class{i % 2}" / f"{i:02d}.jpg").write_bytes(bytes([i, 100 + i]))
    return str(root)


def run_reader(lib, root, batch_size, iterations, **reader_args):
    """(per-iteration list of (payload byte, label), reader_meta) from DALI or ladle."""
    if lib == "dali":
        dali = dali_or_skip()
        import nvidia.dali.fn as dfn

        pipe = dali.Pipeline(batch_size=batch_size, num_threads=1, device_id=None, seed=1)
        f = dfn
    else:
        pipe = ladle.Pipeline(batch_size=batch_size, num_threads=1, seed=1)
        f = ladle.fn
    with pipe:
        data, label = f.readers.file(file_root=root, name="R", **reader_args)
        pipe.set_outputs(data, label)
    pipe.build()
    seq = []
    for _ in range(iterations):
        d, lab = pipe.run()
        seq.append([(int(np.array(d.at(i))[0]), int(np.array(lab.at(i)).reshape(-1)[0])) for i in range(len(d))])
    meta = pipe.reader_meta("R")
    if lib != "dali":
        pipe.close()
    return seq, meta


CASES = [dict(num_shards=s, shard_id=k, pad_last_batch=p, stick_to_shard=st)
         for s in (1, 2, 3) for k in range(s) for p in (False, True) for st in (False, True)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "s{num_shards}k{shard_id}p{pad_last_batch:d}t{stick_to_shard:d}".format(**c))
@pytest.mark.parametrize("batch_size", [3, 4])
def test_sequence_and_meta_match_dali(file_root, case, batch_size):
    """Exact: the same files in the same order, shard boundaries, padding with
    the last sample (pad_last_batch) and the wrap into the next epoch, over
    four epochs' worth of iterations; and the metadata DALI's iterators read."""
    iters = 4 * (N_FILES // batch_size + 1)
    lad, lmeta = run_reader("ladle", file_root, batch_size, iters, **case)
    dal, dmeta = run_reader("dali", file_root, batch_size, iters, **case)
    assert lad == dal
    for key in ("epoch_size", "epoch_size_padded", "number_of_shards", "shard_id", "pad_last_batch",
                "stick_to_shard"):
        assert lmeta[key] == dmeta[key], key


def test_shuffle_differs_by_design(file_root):
    """random_shuffle: ladle draws a true permutation per epoch (every file once
    per epoch, keyed by (seed, epoch)); DALI shuffles through a buffer of
    initial_fill samples. The documented difference: ladle's epochs are
    permutations, and the order is not DALI's."""
    lad, _ = run_reader("ladle", file_root, 5, 6, random_shuffle=True)
    dal, _ = run_reader("dali", file_root, 5, 6, random_shuffle=True)
    epochs = [sum(lad[2 * e:2 * e + 2], []) for e in range(3)]
    for ep in epochs:
        assert sorted(p for p, _ in ep) == list(range(N_FILES))
    assert epochs[0] != epochs[1]
    assert lad != dal
    for it in dal:
        assert all(0 <= p < N_FILES for p, _ in it)


def test_shuffle_after_epoch_seed_is_the_shuffles_seed(file_root):
    """DALI's shuffle_after_epoch_seed seeds the shuffle: the same epochs as
    seed= gives, other epochs under another value, and an error naming both
    when two different seeds are given (ladle only: no DALI needed)."""
    by_seed, _ = run_reader("ladle", file_root, 5, 6, shuffle_after_epoch=True, seed=7)
    by_name, _ = run_reader("ladle", file_root, 5, 6, shuffle_after_epoch=True, shuffle_after_epoch_seed=7)
    other, _ = run_reader("ladle", file_root, 5, 6, shuffle_after_epoch=True, shuffle_after_epoch_seed=8)
    assert by_seed == by_name != other
    assert sorted(p for it in other[:2] for p, _ in it) == list(range(N_FILES))
    with pytest.raises(ladle.InvalidArgumentError, match=r"readers.file.*'seed' \(7\) and 'shuffle_after_epoch_seed' \(8\)"):
        run_reader("ladle", file_root, 5, 1, shuffle_after_epoch=True, seed=7, shuffle_after_epoch_seed=8)


def test_bad_reader_arguments_fail_in_both(file_root, tmp_path):
    """The same bad configurations are errors in both libraries."""
    dali_or_skip()
    for args in (dict(num_shards=2, shard_id=2), dict(file_root=str(tmp_path / "missing"))):
        root = args.pop("file_root", file_root)
        for lib in ("ladle", "dali"):
            with pytest.raises(Exception):
                run_reader(lib, root, 2, 1, **args)


@pytest.fixture(scope="module")
def filter_root(tmp_path_factory):
    """Four class folders of mixed-case names and suffixes; cow also has a
    nested folder (where ladle and DALI differ, below)."""
    root = tmp_path_factory.mktemp("filters")
    names = ["a.jpg", "B.JPG", "c.png", "d.txt", "x1.jpg", "y.Png"]
    for d in ["cat", "dog", "Bird", "cow"]:
        (root / d).mkdir()
        for f in names:
            (root / d / f).write_text(f"{d}/{f}")
    (root / "cow" / "sub").mkdir()
    (root / "cow" / "sub" / "deep.jpg").write_text("cow/sub/deep.jpg")
    return str(root)


def listing(lib, root, **args):
    """Every (path under root, label) of one epoch, in order."""
    if lib == "dali":
        dali = dali_or_skip()
        import nvidia.dali.fn as dfn

        pipe, f = dali.Pipeline(batch_size=1, num_threads=1, device_id=None), dfn
    else:
        pipe, f = ladle.Pipeline(batch_size=1, num_threads=1, device_id=None), ladle.fn
    with pipe:
        data, label = f.readers.file(file_root=root, name="R", **args)
        pipe.set_outputs(data, label)
    pipe.build()
    out = []
    for _ in range(pipe.reader_meta("R")["epoch_size"]):
        d, lab = pipe.run()
        out.append((bytes(np.array(d.at(0))).decode(), int(np.array(lab.at(0)).reshape(-1)[0])))
    return out


FILTER_CASES = [dict(), dict(file_filters=["*.jpg"]), dict(file_filters=["*.jpg"], case_sensitive_filter=True),
                dict(file_filters=["x?.jpg", "[ab]*"]), dict(file_filters=["*.p?g", "*.txt"]),
                dict(dir_filters=["c*"]), dict(dir_filters=["c*"], file_filters=["*.png"]),
                dict(dir_filters=["b*"]), dict(dir_filters=["dog", "cat"], case_sensitive_filter=True),
                dict(dir_filters=["*"], file_filters=["*"])]


@pytest.mark.parametrize("args", FILTER_CASES, ids=lambda a: ",".join(f"{k}={v}" for k, v in a.items()) or "none")
def test_filters_match_dali(filter_root, args):
    """file_filters and dir_filters are globs on the name, case-insensitive
    unless case_sensitive_filter, and labels number the kept class folders.
    ladle also lists the files of folders inside a class folder (cow/sub: as
    torchvision's ImageFolder does); DALI 2.4 lists a class folder's own files
    only, so that one record is the documented difference."""
    lad = listing("ladle", filter_root, **args)
    dal = listing("dali", filter_root, **args)
    nested = [(p, lab) for p, lab in lad if p.startswith("cow/sub/")]
    assert [r for r in lad if r not in nested] == dal
    kept = [d for d in sorted(["cat", "dog", "Bird", "cow"]) if any(fnmatch.fnmatch(d, p) for p in
                                                                     args.get("dir_filters", ["*"]))]
    deep = any(fnmatch.fnmatch("deep.jpg", p) for p in args.get("file_filters", ["*.jpg"]))
    assert nested == ([("cow/sub/deep.jpg", kept.index("cow"))] if "cow" in kept and deep else [])


def test_filters_that_keep_nothing_name_the_filter(filter_root):
    with pytest.raises(ladle.InvalidArgumentError, match=r"none of the 4 subfolders .* matches dir_filters \(zebra\*\)"):
        listing("ladle", filter_root, dir_filters=["zebra*"])
    with pytest.raises(ladle.InvalidArgumentError, match=r"no files matching file_filters \(\*\.gif\)"):
        listing("ladle", filter_root, file_filters=["*.gif"])
