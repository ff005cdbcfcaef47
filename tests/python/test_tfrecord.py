"""fn.readers.tfrecord: TFRecord files written here by a small writer (CRC32C
and a tf.train.Example encoder of our own; TensorFlow is not needed):
byte-exact JPEGs through fn.decoders.image, int64 labels, float lists,
packed and unpacked encodings, absent features with and without defaults,
value-count and type errors, a corrupted data CRC, a truncated file, and
sharding and shuffling through the sampler."""

import io
import struct

import numpy as np
import pytest
from PIL import Image

import ladle
import ladle.tfrecord as tfrec
from ladle import fn, types

from conftest import requires_ops, sample_jpegs

pytestmark = requires_ops("readers.tfrecord")

# ---- a TFRecord writer ------------------------------------------------------

_CRC_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ (0x82F63B78 if _c & 1 else 0)
    _CRC_TABLE.append(_c)


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = _CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def varint(v):
    v &= (1 << 64) - 1  # int64 as two's complement
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def field(number, payload):
    """A length-delimited field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def bytes_feature(*values):
    return field(1, b"".join(field(1, v) for v in values))


def int64_feature(*values, packed=True):
    if packed:
        body = field(1, b"".join(varint(v) for v in values))
    else:
        body = b"".join(varint(1 << 3 | 0) + varint(v) for v in values)
    return field(3, body)


def float_feature(*values, packed=True):
    if packed:
        body = field(1, struct.pack(f"<{len(values)}f", *values))
    else:
        body = b"".join(varint(1 << 3 | 5) + struct.pack("<f", v) for v in values)
    return field(2, body)


def example(features):
    """features: {name: encoded Feature message}."""
    entries = b"".join(field(1, field(1, k.encode()) + field(2, v)) for k, v in features.items())
    return field(1, entries)


def write_tfrecord(path, records):
    """records: serialized Examples; returns (path, [record header offsets])."""
    offsets = []
    with open(path, "wb") as f:
        for data in records:
            offsets.append(f.tell())
            length = struct.pack("<Q", len(data))
            f.write(length + struct.pack("<I", masked_crc(length)) + data + struct.pack("<I", masked_crc(data)))
    return str(path), offsets


def run_pipe(graph, batch_size, iterations, **pipe_args):
    """Runs graph() (a dict or tuple of DataNodes); returns the samples of
    each output as NumPy arrays (a dict or a list) and reader_meta("R")."""
    pipe = ladle.Pipeline(batch_size=batch_size, num_threads=2, **pipe_args)
    try:
        with pipe:
            outs = graph()
            keys = list(outs) if isinstance(outs, dict) else None
            nodes = [outs[k] for k in keys] if keys else list(outs if isinstance(outs, tuple) else (outs,))
            pipe.set_outputs(*nodes)
        pipe.build()
        result = [[] for _ in nodes]
        for _ in range(iterations):
            for k, tl in enumerate(pipe.run()):
                result[k] += [np.array(tl.at(i)) for i in range(len(tl))]
        return (dict(zip(keys, result)) if keys else result), pipe.reader_meta("R")
    finally:
        pipe.close()


@pytest.fixture
def imagenet_like(tmp_path):
    """Two TFRecord files of 16 Examples each: image/encoded (a sample JPEG),
    image/class/label (int64), index (int64), and a variable float list."""
    jpegs = sample_jpegs()
    files, samples = [], []
    for t in range(2):
        records = []
        for i in range(t * 16, (t + 1) * 16):
            label, data = jpegs[i]
            floats = [i + 0.5 * j for j in range(i % 4)]
            records.append(example({
                "image/encoded": bytes_feature(data),
                "image/class/label": int64_feature(label, packed=t == 0),
                "index": int64_feature(i),
                "bbox": float_feature(*floats, packed=t == 1),
            }))
            samples.append((data, label, floats))
        files.append(write_tfrecord(tmp_path / f"train-{t}.tfrecord", records)[0])
    return files, samples


def test_jpeg_bytes_labels_and_floats(imagenet_like):
    files, samples = imagenet_like
    out, meta = run_pipe(lambda: fn.readers.tfrecord(
        path=files, index_path=["/nonexistent/ignored.idx"] * 2, name="R",
        features={"image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
                  "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1),
                  "bbox": tfrec.VarLenFeature(tfrec.float32, 0.0)}), batch_size=8, iterations=4)
    assert list(out) == ["image/encoded", "image/class/label", "bbox"]
    assert meta["epoch_size"] == 32 and meta["epoch_size_padded"] == 32
    assert len(out["image/encoded"]) == 32
    for enc, label, bbox, (data, want_label, floats) in zip(out["image/encoded"], out["image/class/label"],
                                                            out["bbox"], samples):
        assert enc.dtype == np.uint8 and enc.ndim == 1 and enc.tobytes() == data
        assert label.dtype == np.int64 and label.tolist() == [want_label]
        assert bbox.dtype == np.float32 and bbox.tolist() == floats  # exact: halves are floats


def test_decoding_the_jpegs(imagenet_like):
    files, samples = imagenet_like

    def graph():
        out = fn.readers.tfrecord(path=files, name="R",
                                  features={"image/encoded": tfrec.FixedLenFeature((), tfrec.string, "")})
        return out["image/encoded"], fn.decoders.image(out["image/encoded"], output_type=types.RGB)

    (enc, images), _ = run_pipe(graph, batch_size=16, iterations=2)
    for e, img, (data, _, _) in zip(enc, images, samples):
        assert e.tobytes() == data
        ref = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
        assert img.shape == ref.shape
        assert np.abs(img.astype(int) - ref.astype(int)).mean() < 2.0  # libjpeg vs Pillow's libjpeg


def test_packed_unpacked_negative_and_extreme_values(tmp_path):
    ints = [0, -1, 1, -(1 << 63), (1 << 63) - 1, 300]
    floats = [1.5, -0.0, 3.0e38, -1e-30]
    records = [example({"i": int64_feature(*ints, packed=p), "f": float_feature(*floats, packed=p),
                        "s": bytes_feature(b"ab", b"", b"\x00cd")}) for p in (True, False)]
    path, _ = write_tfrecord(tmp_path / "v.tfrecord", records)
    out, _ = run_pipe(lambda: fn.readers.tfrecord(path=path, name="R", features={
        "i": tfrec.VarLenFeature(tfrec.int64), "f": tfrec.FixedLenFeature([2, 2], tfrec.float32),
        "s": tfrec.VarLenFeature(tfrec.string)}), batch_size=2, iterations=1)
    want_f = np.array(floats, np.float32)
    for k in range(2):
        assert out["i"][k].tolist() == ints
        assert out["f"][k].shape == (4,) and out["f"][k].tobytes() == want_f.tobytes()
        assert out["s"][k].tobytes() == b"ab\x00cd"  # several byte strings: concatenated


def test_one_feature_gives_a_dict_of_one(imagenet_like):
    files, samples = imagenet_like
    out, _ = run_pipe(lambda: fn.readers.tfrecord(path=files[1], name="R", features={
        "index": tfrec.FixedLenFeature([], tfrec.int64)}), batch_size=4, iterations=1)
    assert [v.tolist() for v in out["index"]] == [[16], [17], [18], [19]]


def test_absent_features_use_defaults(tmp_path):
    records = [example({"a": int64_feature(5, 6)}), example({})]
    path, _ = write_tfrecord(tmp_path / "d.tfrecord", records)
    out, _ = run_pipe(lambda: fn.readers.tfrecord(path=[path], name="R", features={
        "a": tfrec.FixedLenFeature([2], tfrec.int64, -1),          # scalar default repeated
        "b": tfrec.FixedLenFeature([3], tfrec.float32, [0.5, 1, 2]),
        "c": tfrec.VarLenFeature(tfrec.int64, []),                   # empty default
        "s": tfrec.FixedLenFeature((), tfrec.string, "none")}), batch_size=2, iterations=1)
    assert out["a"][0].tolist() == [5, 6] and out["a"][1].tolist() == [-1, -1]
    assert [b.tolist() for b in out["b"]] == [[0.5, 1.0, 2.0]] * 2
    assert [c.shape for c in out["c"]] == [(0,), (0,)] and out["c"][0].dtype == np.int64
    assert [s.tobytes() for s in out["s"]] == [b"none", b"none"]


def test_absent_feature_without_default_names_file_record_and_feature(tmp_path):
    records = [example({"a": int64_feature(1)}), example({"b": int64_feature(2)})]
    path, offsets = write_tfrecord(tmp_path / "nodefault.tfrecord", records)
    with pytest.raises(ladle.CorruptDataError,
                       match=rf"nodefault\.tfrecord: the record at byte {offsets[1]}: .*no feature \"a\""):
        run_pipe(lambda: fn.readers.tfrecord(path=path, name="R", features={"a": tfrec.VarLenFeature(tfrec.int64)}),
                 batch_size=2, iterations=1)


def test_value_count_and_type_mismatches_name_the_record(tmp_path):
    records = [example({"a": int64_feature(1), "f": float_feature(1.0)}),
               example({"a": int64_feature(1, 2), "f": int64_feature(1)})]
    path, offsets = write_tfrecord(tmp_path / "m.tfrecord", records)
    with pytest.raises(ladle.CorruptDataError,
                       match=rf"m\.tfrecord: the record at byte {offsets[1]}: .*feature \"a\" has 2 values; it is "
                             r"declared with 1"):
        run_pipe(lambda: fn.readers.tfrecord(path=path, name="R", features={
            "a": tfrec.FixedLenFeature([1], tfrec.int64)}), batch_size=2, iterations=1)
    with pytest.raises(ladle.CorruptDataError,
                       match=rf"m\.tfrecord: the record at byte {offsets[1]}: .*feature \"f\" is a int64_list"):
        run_pipe(lambda: fn.readers.tfrecord(path=path, name="R", features={
            "f": tfrec.VarLenFeature(tfrec.float32)}), batch_size=2, iterations=1)


def test_bad_arguments():
    with pytest.raises(ladle.InvalidArgumentError, match="dtype 'int32'"):
        tfrec.FixedLenFeature([1], "int32", 0)
    assert tfrec.FixedLenFeature([1], types.INT64).dtype == tfrec.int64
    assert tfrec.VarLenFeature(np.dtype(np.float32)).dtype == tfrec.float32
    with pytest.raises(ladle.InvalidArgumentError, match="default \"1 2 3\" has 3 values; the feature has 2"):
        run_pipe(lambda: fn.readers.tfrecord(path="x", name="R", features={
            "a": tfrec.FixedLenFeature([2], tfrec.int64, [1, 2, 3])}), batch_size=1, iterations=1)
    with pytest.raises(ladle.InvalidArgumentError, match="'features' must be a non-empty dict"):
        run_pipe(lambda: fn.readers.tfrecord(path="x", features={}), batch_size=1, iterations=1)
    with pytest.raises(ladle.InvalidArgumentError, match="feature_names' has 7 entries"):
        run_pipe(lambda: fn.readers.tfrecord(path="x", features={
            str(i): tfrec.VarLenFeature(tfrec.int64) for i in range(7)}), batch_size=1, iterations=1)


def test_corrupt_data_crc_names_file_and_record(imagenet_like, tmp_path):
    files, _ = imagenet_like
    raw = bytearray(open(files[0], "rb").read())
    (length,) = struct.unpack_from("<Q", raw, 0)
    second = 12 + length + 4
    raw[second + 12 + 100] ^= 0x10  # a byte of the second record's data
    bad = tmp_path / "bad.tfrecord"
    bad.write_bytes(bytes(raw))
    # Indexing checks only the length CRCs: the build succeeds, the first batch fails.
    with pytest.raises(ladle.CorruptDataError, match=rf"bad\.tfrecord: the record at byte {second} has a bad data CRC"):
        run_pipe(lambda: fn.readers.tfrecord(path=str(bad), name="R", features={
            "index": tfrec.FixedLenFeature([1], tfrec.int64)}), batch_size=4, iterations=1)


def test_truncated_and_missing_files_fail_at_build(imagenet_like, tmp_path):
    files, _ = imagenet_like
    raw = open(files[0], "rb").read()
    short = tmp_path / "short.tfrecord"
    short.write_bytes(raw[:-10])
    feats = {"index": tfrec.FixedLenFeature([1], tfrec.int64)}
    with pytest.raises(ladle.CorruptDataError, match=r"short\.tfrecord: truncated record at byte \d+"):
        run_pipe(lambda: fn.readers.tfrecord(path=[files[1], str(short)], name="R", features=feats),
                 batch_size=1, iterations=1)
    with pytest.raises(ladle.ReadError, match=r"nope\.tfrecord: No such file"):
        run_pipe(lambda: fn.readers.tfrecord(path=str(tmp_path / "nope.tfrecord"), name="R", features=feats),
                 batch_size=1, iterations=1)
    notrec = tmp_path / "img.jpg"
    notrec.write_bytes(sample_jpegs()[0][1])
    with pytest.raises(ladle.CorruptDataError, match=r"img\.jpg: the record at byte 0 has a bad length CRC"):
        run_pipe(lambda: fn.readers.tfrecord(path=str(notrec), name="R", features=feats), batch_size=1, iterations=1)


def test_sharding_two_files_covers_each_record_once_per_epoch(imagenet_like):
    files, _ = imagenet_like
    batch = 5
    seen = []
    for shard in range(2):
        out, meta = run_pipe(lambda: fn.readers.tfrecord(
            path=files, shard_id=shard, num_shards=2, pad_last_batch=True, stick_to_shard=True, name="R",
            features={"index": tfrec.FixedLenFeature([1], tfrec.int64)}), batch_size=batch, iterations=8)
        assert meta["epoch_size"] == 32 and meta["number_of_shards"] == 2
        values = [int(v[0]) for v in out["index"]]
        per_epoch = 4 * batch  # ceil(16 / 5) batches, the last one padded
        epochs = [values[e * per_epoch:(e + 1) * per_epoch] for e in range(2)]
        for ep in epochs:
            real, pad = ep[:16], ep[16:]
            assert pad == [real[-1]] * len(pad)
        assert epochs[0] == epochs[1]
        seen += epochs[0][:16]
    assert sorted(seen) == list(range(32))


def test_shuffle_is_a_permutation_per_epoch(imagenet_like):
    files, _ = imagenet_like
    out, _ = run_pipe(lambda: fn.readers.tfrecord(path=files, random_shuffle=True, seed=3, name="R", features={
        "index": tfrec.FixedLenFeature([1], tfrec.int64)}), batch_size=32, iterations=2)
    e0 = [int(v[0]) for v in out["index"][:32]]
    e1 = [int(v[0]) for v in out["index"][32:]]
    assert sorted(e0) == list(range(32)) and sorted(e1) == list(range(32))
    assert e0 != list(range(32)) and e0 != e1


def test_the_c_lists_directly_give_the_same_dict(imagenet_like):
    files, samples = imagenet_like
    out, _ = run_pipe(lambda: fn.readers.tfrecord(
        path=files, name="R", feature_names=["index", "missing"], feature_types=["int64", "float32"],
        feature_sizes=[1, -1], feature_defaults=["", "2.5, 3"], feature_has_default=[0, 1]),
        batch_size=2, iterations=1)
    assert [v.tolist() for v in out["index"]] == [[0], [1]]
    assert [v.tolist() for v in out["missing"]] == [[2.5, 3.0]] * 2
    with pytest.raises(ladle.InvalidArgumentError, match="either 'features' or feature_names, not both"):
        run_pipe(lambda: fn.readers.tfrecord(path=files, features={"index": tfrec.VarLenFeature(tfrec.int64)},
                                             feature_names=["index"]), batch_size=1, iterations=1)
    with pytest.raises(ladle.InvalidArgumentError, match="type \"int32\" is not one of"):
        run_pipe(lambda: fn.readers.tfrecord(path=files, feature_names=["index"], feature_types=["int32"]),
                 batch_size=1, iterations=1)


def test_dynamic_reader_yields_dicts(tmp_path):
    import ladle.dynamic as ldd
    from ladle import tfrecord as tfrec

    path = str(tmp_path / "d.tfrecord")
    write_tfrecord(path, [example({"label": int64_feature(i), "v": float_feature(i / 2, 1.0)}) for i in range(5)])
    reader = ldd.readers.TFRecord(path=[path], features={"label": tfrec.FixedLenFeature([1], tfrec.int64),
                                                         "v": tfrec.VarLenFeature(tfrec.float32)})
    for _ in range(2):  # two epochs, each exactly the five records
        batches = list(reader.next_epoch(batch_size=2))
        assert [sorted(b) for b in batches] == [["label", "v"]] * 3
        labels = [int(x) for b in batches for x in np.asarray(b["label"]).ravel()]
        assert labels == [0, 1, 2, 3, 4]
        assert np.asarray(batches[0]["v"]).tolist() == [[0.0, 1.0], [0.5, 1.0]]
    reader.close()
