"""fn.readers.webdataset: samples from tar files written here with Python's
tarfile module: byte-exact components, int32 labels from raw bytes, extension
alternatives, sharding and shuffling, missing components, corrupt archives,
and a decode pipeline over the reader's output."""

import io
import struct
import tarfile

import numpy as np
import pytest
from PIL import Image

import ladle
from ladle import fn, types

from conftest import requires_ops, sample_jpegs

pytestmark = requires_ops("readers.webdataset")


def write_tar(path, members, fmt=tarfile.PAX_FORMAT):
    """Writes (name, bytes) members to a tar; returns its path as str."""
    with tarfile.open(path, "w", format=fmt) as t:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return str(path)


@pytest.fixture
def shards(tmp_path):
    """Two tars of webdataset samples: key sNNNN with .jpg (a sample JPEG),
    .cls (its label, int32 little-endian) and .idx (the sample number, int32)."""
    jpegs = sample_jpegs()
    samples = []
    tars = []
    for t in range(2):
        members = []
        for i in range(t * 16, (t + 1) * 16):
            label, data = jpegs[i]
            key = f"part{t}/s{i:04d}"
            members += [(key + ".jpg", data), (key + ".cls", struct.pack("<i", label)),
                        (key + ".idx", struct.pack("<i", i))]
            samples.append((data, label))
        tars.append(write_tar(tmp_path / f"shard-{t}.tar", members, fmt=[tarfile.PAX_FORMAT, tarfile.GNU_FORMAT][t]))
    return tars, samples


def run_pipe(graph, batch_size, iterations, **pipe_args):
    pipe = ladle.Pipeline(batch_size=batch_size, num_threads=2, **pipe_args)
    try:
        with pipe:
            outs = graph()
            outs = outs if isinstance(outs, tuple) else (outs,)
            pipe.set_outputs(*outs)
        pipe.build()
        result = [[] for _ in outs]
        for _ in range(iterations):
            for k, tl in enumerate(pipe.run()):
                result[k] += [np.array(tl.at(i)) for i in range(len(tl))]
        return result, pipe.reader_meta("R")
    finally:
        pipe.close()


def test_outputs_are_the_files_bytes_and_int32_labels(shards):
    tars, samples = shards
    (jpgs, labels), meta = run_pipe(
        lambda: fn.readers.webdataset(paths=tars, ext=["jpg", "cls"], dtypes=[types.UINT8, types.INT32], name="R"),
        batch_size=8, iterations=4)
    assert meta["epoch_size"] == 32 and meta["epoch_size_padded"] == 32
    assert len(jpgs) == 32
    for got, got_label, (data, label) in zip(jpgs, labels, samples):
        assert got.dtype == np.uint8 and got.ndim == 1
        assert got.tobytes() == data
        assert got_label.dtype == np.int32 and got_label.shape == (1,)
        assert int(got_label[0]) == label


def test_one_ext_gives_one_node_and_dtype_shapes(shards, tmp_path):
    tars, samples = shards
    (jpgs,), _ = run_pipe(lambda: fn.readers.webdataset(paths=tars[:1], ext="jpg", name="R"), batch_size=4,
                          iterations=1)
    assert [j.tobytes() for j in jpgs] == [s[0] for s in samples[:4]]
    # A multi-element component: 3 int64 values.
    path = write_tar(tmp_path / "vec.tar", [("a.vec", struct.pack("<3q", 5, -6, 1 << 40))])
    (vec,), _ = run_pipe(lambda: fn.readers.webdataset(paths=[path], ext=["vec"], dtypes=types.INT64, name="R"),
                         batch_size=1, iterations=1)
    assert vec[0].dtype == np.int64 and vec[0].tolist() == [5, -6, 1 << 40]


def test_alternatives_and_decoding(tmp_path):
    jpegs = sample_jpegs()[::4]  # 8 images
    members, expect = [], []
    for i, (_, data) in enumerate(jpegs):
        if i % 2:
            buf = io.BytesIO()
            Image.open(io.BytesIO(data)).convert("RGB").save(buf, format="PNG")
            data, ext = buf.getvalue(), "png"
        else:
            ext = "jpg"
        members.append((f"{i:03d}.{ext}", data))
        expect.append((ext, data))
    path = write_tar(tmp_path / "mixed.tar", members, fmt=tarfile.USTAR_FORMAT)

    def graph():
        enc = fn.readers.webdataset(paths=[path], ext=["jpg;png"], name="R")
        return enc, fn.decoders.image(enc, output_type=types.RGB)

    (enc, images), meta = run_pipe(graph, batch_size=4, iterations=2)
    assert meta["epoch_size"] == 8
    for e, img, (ext, data) in zip(enc, images, expect):
        assert e.tobytes() == data
        ref = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
        assert img.shape == ref.shape
        if ext == "png":
            assert np.array_equal(img, ref)
        else:  # libjpeg vs Pillow's libjpeg: a small difference at most
            assert np.abs(img.astype(int) - ref.astype(int)).mean() < 2.0


def test_sharding_covers_every_sample_once_per_epoch(tmp_path):
    n = 30
    members = []
    for i in range(n):
        members += [(f"k{i:03d}.idx", struct.pack("<i", i)), (f"k{i:03d}.txt", b"x" * i)]
    path = write_tar(tmp_path / "thirty.tar", members)
    batch = 4
    seen = []
    for shard in range(2):
        (idx, txt), meta = run_pipe(
            lambda: fn.readers.webdataset(paths=[path], ext=["idx", "txt"], dtypes=[types.INT32, types.UINT8],
                                          shard_id=shard, num_shards=2, pad_last_batch=True, stick_to_shard=True,
                                          name="R"),
            batch_size=batch, iterations=8)
        assert meta["epoch_size"] == n and meta["epoch_size_padded"] == n and meta["number_of_shards"] == 2
        values = [int(v[0]) for v in idx]
        assert all(len(t) == v for t, v in zip(txt, values))  # components stay together
        per_epoch = 4 * batch  # ceil(15 / 4) batches, the last one padded
        epochs = [values[e * per_epoch:(e + 1) * per_epoch] for e in range(2)]
        for ep in epochs:
            real, pad = ep[:15], ep[15:]
            assert pad == [real[-1]] * len(pad)
        assert epochs[0][:15] == epochs[1][:15]  # stick_to_shard, no shuffle: the same shard again
        seen += epochs[0][:15]
    assert sorted(seen) == list(range(n))


def test_shuffle_is_a_permutation_per_epoch(shards):
    tars, _ = shards
    (idx,), _ = run_pipe(lambda: fn.readers.webdataset(paths=tars, ext=["idx"], dtypes=[types.INT32],
                                                         random_shuffle=True, seed=7, name="R"),
                         batch_size=32, iterations=2)
    e0 = [int(v[0]) for v in idx[:32]]
    e1 = [int(v[0]) for v in idx[32:]]
    assert sorted(e0) == list(range(32)) and sorted(e1) == list(range(32))
    assert e0 != list(range(32)) and e0 != e1


def missing_tar(tmp_path):
    members = []
    for i in range(6):
        members.append((f"m{i}.jpg", bytes([i]) * (i + 1)))
        if i not in (2, 4):
            members.append((f"m{i}.cls", struct.pack("<i", 10 * i)))
    return write_tar(tmp_path / "missing.tar", members)


@pytest.mark.parametrize("mode", ["", "empty", "skip"])
def test_missing_component_empty_or_skip(tmp_path, mode):
    path = missing_tar(tmp_path)
    kept = [0, 1, 2, 3, 4, 5] if mode != "skip" else [0, 1, 3, 5]
    (jpg, cls), meta = run_pipe(
        lambda: fn.readers.webdataset(paths=[path], ext=["jpg", "cls"], dtypes=[types.UINT8, types.INT32],
                                      missing_component_behavior=mode, name="R"),
        batch_size=len(kept), iterations=1)
    assert meta["epoch_size"] == len(kept)
    for j, c, i in zip(jpg, cls, kept):
        assert j.tobytes() == bytes([i]) * (i + 1)
        if i in (2, 4):
            assert c.shape == (0,)
        else:
            assert c.tolist() == [10 * i]


def test_missing_component_error_names_tar_and_key(tmp_path):
    path = missing_tar(tmp_path)
    with pytest.raises(ladle.InvalidArgumentError, match=r"missing\.tar: sample \"m2\" has no component"):
        run_pipe(lambda: fn.readers.webdataset(paths=[path], ext=["jpg", "cls"],
                                               missing_component_behavior="error", name="R"),
                 batch_size=1, iterations=1)
    with pytest.raises(ladle.InvalidArgumentError, match="missing_component_behavior"):
        run_pipe(lambda: fn.readers.webdataset(paths=[path], ext=["jpg"], missing_component_behavior="ignore",
                                               name="R"), batch_size=1, iterations=1)


def test_case_insensitive_extensions(tmp_path):
    path = write_tar(tmp_path / "case.tar", [("a.JPG", b"A"), ("b.jpg", b"B"), ("c.Jpg", b"C")])
    (out,), meta = run_pipe(lambda: fn.readers.webdataset(paths=[path], ext=["jpg"], name="R"), batch_size=1,
                            iterations=1)
    assert meta["epoch_size"] == 1 and out[0].tobytes() == b"B"
    (out,), meta = run_pipe(lambda: fn.readers.webdataset(paths=[path], ext=["jpg"], case_sensitive_extensions=False,
                                                          name="R"), batch_size=3, iterations=1)
    assert [o.tobytes() for o in out] == [b"A", b"B", b"C"]


def test_dtype_size_mismatch_names_tar_key_and_extension(tmp_path):
    path = write_tar(tmp_path / "odd.tar", [("x.jpg", b"j"), ("x.cls", b"\x01\x00\x00")])
    with pytest.raises(ladle.InvalidArgumentError, match=r"odd\.tar: component \"x\.cls\" has 3 bytes"):
        run_pipe(lambda: fn.readers.webdataset(paths=[path], ext=["jpg", "cls"], dtypes=[types.UINT8, types.INT32],
                                               name="R"), batch_size=1, iterations=1)


def test_corrupt_truncated_and_missing_tars_are_named(tmp_path):
    members = [(f"k{i}.bin", bytes(700)) for i in range(3)]
    path = write_tar(tmp_path / "bad.tar", members, fmt=tarfile.USTAR_FORMAT)
    raw = bytearray(open(path, "rb").read())
    second = tarfile.open(path).getmembers()[1].offset
    raw[second + 1] ^= 0x01  # a name byte: the checksum no longer matches
    open(path, "wb").write(raw)
    graph = lambda p: (lambda: fn.readers.webdataset(paths=[str(p)], ext=["bin"], name="R"))
    with pytest.raises(ladle.CorruptDataError, match=rf"bad\.tar: header at byte {second}: checksum mismatch"):
        run_pipe(graph(path), batch_size=1, iterations=1)

    good = write_tar(tmp_path / "short.tar", members, fmt=tarfile.USTAR_FORMAT)
    raw = open(good, "rb").read()
    open(good, "wb").write(raw[:512 * 4 + 100])  # inside the data of the second member
    with pytest.raises(ladle.CorruptDataError, match=r"short\.tar: truncated"):
        run_pipe(graph(good), batch_size=1, iterations=1)

    with pytest.raises(ladle.ReadError, match=r"nope\.tar: No such file"):
        run_pipe(graph(tmp_path / "nope.tar"), batch_size=1, iterations=1)


def test_tar_changed_after_build_fails_naming_it(tmp_path):
    members = [(f"k{i}.bin", bytes([i]) * 600) for i in range(4)]
    path = write_tar(tmp_path / "shrinks.tar", members)
    pipe = ladle.Pipeline(batch_size=2, num_threads=1)
    try:
        with pipe:
            pipe.set_outputs(fn.readers.webdataset(paths=[path], ext=["bin"], name="R"))
        pipe.build()
        with open(path, "r+b") as f:
            f.truncate(1024)
        with pytest.raises(ladle.ReadError, match=r"shrinks\.tar changed since it was indexed"):
            for _ in range(3):
                pipe.run()
    finally:
        pipe.close()


def test_index_paths_is_accepted_and_ignored(shards):
    tars, samples = shards
    (jpg,), meta = run_pipe(lambda: fn.readers.webdataset(paths=tars, ext=["jpg"], index_paths=["x.idx", "y.idx"],
                                                          name="R"), batch_size=2, iterations=1)
    assert meta["epoch_size"] == 32 and jpg[1].tobytes() == samples[1][0]
