"""fn.readers.numpy: .npy files written here by NumPy (every dtype ladle has,
C and Fortran order, format versions 1.0/2.0/3.0, big-endian), read whole and
by region of interest, checked against np.load plus a NumPy slice formula
and against DALI 2.4's reader on the same files (same listing order, same
arrays); bad headers are CorruptDataErrors naming the file; bad arguments
name the operator and the argument; sharding, shuffling and padding through
the shared sampler; ladle.dynamic.readers.Numpy; device="gpu"."""

import collections
import errno
import os

import numpy as np
import pytest

import ladle
import ladle.dynamic as ldd
from ladle import fn

from conftest import dali_or_skip, requires_ops

pytestmark = requires_ops("readers.numpy")

DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "float32",
          "float64"]


def read(batch_size=1, iterations=1, lib=None, **kw):
    """Every sample of `iterations` batches of readers.numpy(**kw), in ladle (lib None) or DALI."""
    out = []
    if lib is None:
        pipe = ladle.Pipeline(batch_size=batch_size, num_threads=2, seed=3)
        reader = fn.readers.numpy
    else:
        pipe = lib.Pipeline(batch_size=batch_size, num_threads=2, device_id=None, seed=3)
        import nvidia.dali.fn as dfn
        reader = dfn.readers.numpy
    with pipe:
        pipe.set_outputs(reader(**kw))
    pipe.build()
    try:
        for _ in range(iterations):
            tl = pipe.run()[0]
            out += [np.array(tl.at(i)) for i in range(len(tl))]
    finally:
        if lib is None:
            pipe.close()
    return out


def arrays(seed, dtype, shapes):
    rng = np.random.default_rng(seed)
    out = []
    for sh in shapes:
        if dtype == "bool":
            out.append(rng.integers(0, 2, sh).astype(bool))
        elif np.dtype(dtype).kind == "f":
            out.append(rng.normal(0, 100, sh).astype(dtype))
        else:
            info = np.iinfo(dtype)
            out.append(rng.integers(info.min, info.max, sh, dtype=dtype, endpoint=True))
    return out


def save(path, a, version=None, fortran=False):
    a = np.asfortranarray(a) if fortran else a
    with open(path, "wb") as f:
        np.lib.format.write_array(f, a, version=version)
    return str(path)


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_and_order_reads_as_np_load(tmp_path, dtype):
    shapes = [(3, 4), (5, 1), (2, 7)]
    files = []
    for k, a in enumerate(arrays(1, dtype, shapes)):
        files.append(save(tmp_path / f"{k}.npy", a, fortran=k == 1))
    got = read(batch_size=3, files=files)
    for f, g in zip(files, got):
        want = np.load(f)
        assert g.dtype == want.dtype and g.shape == want.shape
        np.testing.assert_array_equal(g, want)
        assert g.flags.c_contiguous


@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)])
def test_format_versions_and_big_endian(tmp_path, version):
    a = np.arange(24, dtype=np.int32).reshape(2, 3, 4) * 1000003
    files = [save(tmp_path / "a.npy", a, version=version), save(tmp_path / "b.npy", a.astype(">i4"), version=version),
             save(tmp_path / "c.npy", a.astype(">i4"), version=version, fortran=True)]
    for g in read(batch_size=3, files=files):
        assert g.dtype == np.int32
        np.testing.assert_array_equal(g, a)


def test_scalar_empty_and_long_header(tmp_path):
    s = save(tmp_path / "s.npy", np.float64(2.5))
    assert read(files=[s])[0].shape == () and read(files=[s])[0] == 2.5
    e = save(tmp_path / "e.npy", np.zeros((0, 3), np.int16))
    assert read(files=[e])[0].shape == (0, 3)
    # A header much longer than 4 KiB (padded), as another writer may produce: read in a second step.
    a = np.arange(6, dtype=np.uint16).reshape(2, 3)
    head = "{'descr': '<u2', 'fortran_order': False, 'shape': (2, 3), }"
    head += " " * (9000 - len(head)) + "\n"
    p = tmp_path / "long.npy"
    p.write_bytes(b"\x93NUMPY\x02\x00" + len(head).to_bytes(4, "little") + head.encode() + a.tobytes())
    np.testing.assert_array_equal(read(files=[str(p)])[0], a)
    # Double quotes, another key order, Python 2 longs, no trailing comma, unaligned data.
    head = '{"shape": (2L, 3L), "fortran_order": True, "descr": "<u2"}\n'
    p2 = tmp_path / "odd.npy"
    p2.write_bytes(b"\x93NUMPY\x01\x00" + len(head).to_bytes(2, "little") + head.encode() + a.T.tobytes())
    np.testing.assert_array_equal(read(files=[str(p2)])[0], a)


def tree(tmp_path):
    """A folder as DALI lists it: files in it and in its immediate subfolders."""
    root = tmp_path / "root"
    for d in ["", "sub", "b", "-x", "sub/deep"]:
        (root / d).mkdir(parents=True, exist_ok=True)
    names = ["z.npy", "a.npy", "sub/a.npy", "sub/B.npy", "b/c.npy", "-x/q.npy", "sub/deep/d.npy", "a.txt",
             "sub/x.NPY"]
    for k, n in enumerate(names):
        save(root / n, np.full((2, 2), k, np.int32))
    return root, names


def test_listing_order_and_filter_match_dali(tmp_path):
    root, names = tree(tmp_path)
    got = [int(a[0, 0]) for a in read(batch_size=6, file_root=str(root))]
    # DALI's order: the folder's own files, then each subfolder's ('-' sorts before '.'), one level deep.
    assert [names[k] for k in got] == ["a.npy", "z.npy", "-x/q.npy", "b/c.npy", "sub/B.npy", "sub/a.npy"]
    got_a = [int(a[0, 0]) for a in read(batch_size=2, file_root=str(root), file_filter="*a.npy")]
    assert [names[k] for k in got_a] == ["a.npy", "sub/a.npy"]
    dali = dali_or_skip()
    assert [int(a[0, 0]) for a in read(batch_size=6, lib=dali, file_root=str(root))] == got
    assert [int(a[0, 0]) for a in read(batch_size=2, lib=dali, file_root=str(root), file_filter="*a.npy")] == got_a


def test_file_list_and_files_relative_to_root(tmp_path):
    root, names = tree(tmp_path)
    lst = root / "list.txt"
    lst.write_text("sub/a.npy\n\n  b/c.npy  \r\n" + str(root / "z.npy") + "\n")
    got = [int(a[0, 0]) for a in read(batch_size=3, file_list=str(lst))]
    assert got == [names.index("sub/a.npy"), names.index("b/c.npy"), names.index("z.npy")]
    other = tmp_path / "elsewhere.txt"
    other.write_text("sub/a.npy\n")
    assert int(read(file_list=str(other), file_root=str(root))[0][0, 0]) == names.index("sub/a.npy")
    got = [int(a[0, 0]) for a in read(batch_size=2, file_root=str(root), files=["b/c.npy", "a.npy"])]
    assert got == [names.index("b/c.npy"), names.index("a.npy")]
    dali = dali_or_skip()
    assert [int(a[0, 0]) for a in read(batch_size=2, lib=dali, file_root=str(root), files=["b/c.npy", "a.npy"])] == got


def np_roi(a, start, end, axes, policy, fill):
    """The reference: the region [start, end) of axes (all axes when None) of a, padded or trimmed."""
    axes = list(range(a.ndim)) if axes is None else axes
    lo, hi = [0] * a.ndim, list(a.shape)
    for k, ax in enumerate(axes):
        lo[ax], hi[ax] = start[k], end[k]
    if policy == "trim_to_shape":
        lo = [min(max(l, 0), s) for l, s in zip(lo, a.shape)]
        hi = [max(min(h, s), l) for h, s, l in zip(hi, a.shape, lo)]
    out = np.full([h - l for l, h in zip(lo, hi)], fill, a.dtype)
    src = tuple(slice(max(l, 0), min(h, s)) for l, h, s in zip(lo, hi, a.shape))
    dst = tuple(slice(max(l, 0) - l, max(l, 0) - l + max(min(h, s) - max(l, 0), 0)) for l, h, s in zip(lo, hi, a.shape))
    if all(s.stop > s.start for s in src):
        out[dst] = a[src]
    return out


ROI_CASES = [
    dict(roi_start=[1, 0, 2], roi_end=[3, 2, 5]),
    dict(roi_start=[1, 2], roi_shape=[4, 2], roi_axes=[2, 0]),
    dict(rel_roi_start=[0.25, 0.3], rel_roi_shape=[0.5, 0.5], roi_axes=[0, 2]),
    dict(rel_roi_end=[0.5, 0.75], roi_axes=[2, 1]),
    dict(roi_start=[-2, 1, 4], roi_shape=[5, 2, 4], out_of_bounds_policy="pad", fill_value=-7),
    dict(roi_start=[-2, 1, 4], roi_shape=[5, 2, 4], out_of_bounds_policy="trim_to_shape"),
    dict(roi_start=[9], roi_shape=[2], roi_axes=[0], out_of_bounds_policy="pad", fill_value=3),
    dict(roi_start=[9], roi_shape=[2], roi_axes=[0], out_of_bounds_policy="trim_to_shape"),
    dict(roi_start=[1], roi_end=[1], roi_axes=[1]),
]


@pytest.mark.parametrize("case", range(len(ROI_CASES)))
@pytest.mark.parametrize("fortran", [False, True])
def test_roi_matches_numpy_and_dali(tmp_path, case, fortran):
    kw = dict(ROI_CASES[case])
    a = np.arange(4 * 3 * 6, dtype=np.int16).reshape(4, 3, 6) - 50
    f = save(tmp_path / "a.npy", a, fortran=fortran)
    got = read(files=[f], **kw)[0]
    axes = kw.get("roi_axes")
    naxes = len(axes) if axes else a.ndim
    ext = [a.shape[ax] for ax in (axes or range(a.ndim))]
    start = kw.get("roi_start") or [e * r for e, r in zip(ext, kw.get("rel_roi_start", [0] * naxes))]
    if "roi_end" in kw or "rel_roi_end" in kw:
        end = kw.get("roi_end") or [e * r for e, r in zip(ext, kw["rel_roi_end"])]
    elif "roi_shape" in kw or "rel_roi_shape" in kw:
        end = [s + (v if "roi_shape" in kw else v * e)
               for s, v, e in zip(start, kw.get("roi_shape") or kw["rel_roi_shape"], ext)]
    else:
        end = ext
    start = [int(np.floor(x + 0.5)) for x in start]  # round half away from zero (all positive here)
    end = [int(np.floor(x + 0.5)) for x in end]
    want = np_roi(a, start, end, axes, kw.get("out_of_bounds_policy", "error"), kw.get("fill_value", 0))
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    dali = dali_or_skip()
    np.testing.assert_array_equal(read(files=[f], lib=dali, **kw)[0], got)


def test_random_rois_match_numpy(tmp_path):
    rng = np.random.default_rng(5)
    for it in range(30):
        shape = tuple(int(x) for x in rng.integers(1, 6, rng.integers(1, 4)))
        dtype = rng.choice(["uint8", "int32", "float64", "int16"])
        a = arrays(it, dtype, [shape])[0]
        fortran, big = bool(rng.integers(2)), bool(rng.integers(2))
        f = save(tmp_path / f"{it}.npy", a.astype(a.dtype.newbyteorder(">")) if big else a, fortran=fortran)
        start = [int(rng.integers(-3, s + 2)) for s in shape]
        end = [st + int(rng.integers(0, s + 3)) for st, s in zip(start, shape)]
        policy = rng.choice(["pad", "trim_to_shape"])
        got = read(files=[f], roi_start=start, roi_end=end, out_of_bounds_policy=policy, fill_value=9)[0]
        np.testing.assert_array_equal(got, np_roi(a, start, end, None, policy, 9), err_msg=f"{shape} {start} {end}")


def test_per_sample_roi(tmp_path):
    a = np.arange(30, dtype=np.float32).reshape(5, 6)
    files = [save(tmp_path / f"{k}.npy", a + k) for k in range(3)]
    starts = [np.array([k, k], np.int32) for k in range(3)]
    pipe = ladle.Pipeline(batch_size=3, num_threads=2)
    with pipe:
        st = fn.external_source(name="st", dtype=ladle.types.INT32, ndim=1)
        pipe.set_outputs(fn.readers.numpy(files=files, roi_start=st, roi_shape=[2, 3]))
    try:
        pipe.feed_input("st", starts)
        tl = pipe.run()[0]
        for k in range(3):
            np.testing.assert_array_equal(np.array(tl.at(k)), (a + k)[k:k + 2, k:k + 3])
    finally:
        pipe.close()


@pytest.mark.parametrize("mutate, match", [
    (lambda b: b"\x93NUMPX" + b[6:], "magic"),
    (lambda b: b[:6] + b"\x04\x00" + b[8:], "version 4.0"),
    (lambda b: b[:40], "ends inside"),
    (lambda b: b[:-3], "truncated"),
    (lambda b: b.replace(b"'descr'", b"'dexcr'"), "unknown key 'dexcr'"),
    (lambda b: b.replace(b"<f4", b"<c8"), "dtype '<c8' is not supported"),
    (lambda b: b.replace(b"False", b"Maybe"), "fortran_order"),
    (lambda b: b.replace(b"(2, 3)", b"(2, -3)"), "shape"),
    (lambda b: b.replace(b"{", b"["), "dict"),
])
def test_bad_headers_name_the_file(tmp_path, mutate, match):
    good = tmp_path / "good.npy"
    save(good, np.zeros((2, 3), np.float32))
    bad = tmp_path / "bad.npy"
    bad.write_bytes(mutate(good.read_bytes()))
    with pytest.raises(ladle.CorruptDataError, match=match) as e:
        read(files=[str(good), str(bad)], batch_size=2)
    assert str(bad) in str(e.value) and "readers.numpy" in str(e.value)


def test_bad_header_fuzz_never_crashes(tmp_path):
    good = tmp_path / "good.npy"
    save(good, np.arange(12, dtype=np.int16).reshape(3, 4))
    data = bytearray(good.read_bytes())
    rng = np.random.default_rng(11)
    bad = tmp_path / "m.npy"
    outcomes = collections.Counter()
    for _ in range(150):
        m = bytearray(data)
        for _ in range(int(rng.integers(1, 4))):
            m[int(rng.integers(0, 80))] = int(rng.integers(0, 256))
        bad.write_bytes(bytes(m))
        try:
            read(files=[str(good), str(bad)], batch_size=2)
            outcomes["ok"] += 1
        except (ladle.CorruptDataError, ladle.InvalidArgumentError) as e:
            assert "readers.numpy" in str(e)
            outcomes["error"] += 1
    assert outcomes["error"] > 50


def test_mixed_types_are_an_error(tmp_path):
    f1 = save(tmp_path / "a.npy", np.zeros((2, 2), np.int32))
    f2 = save(tmp_path / "b.npy", np.zeros((2, 2), np.float32))
    with pytest.raises(ladle.CorruptDataError, match="same type"):
        read(batch_size=2, files=[f1, f2])


@pytest.mark.parametrize("kw, match", [
    (dict(files=["x.npy"], file_list="l.txt"), "'files' or 'file_list'"),
    (dict(), "'file_root'"),
    (dict(roi_start=[1, 1], rel_roi_start=[0.5, 0.5]), "'roi_start' and 'rel_roi_start'"),
    (dict(roi_end=[1, 1], roi_shape=[1, 1]), "'roi_end'"),
    (dict(roi_axes=[3]), "roi_axes"),
    (dict(roi_axes=[0, 0]), "roi_axes"),
    (dict(roi_start=[0, 0, 0]), "'roi_start' has 3 values for 2 axes"),
    (dict(roi_start=[1, 0], roi_end=[0, 1]), "ends before it starts"),
    (dict(roi_start=[1, 0], roi_end=[9, 1]), "out_of_bounds_policy"),
    (dict(out_of_bounds_policy="wrap"), "out_of_bounds_policy"),
    (dict(use_o_direct=True), "use_o_direct"),
])
def test_bad_arguments_name_operator_and_argument(tmp_path, kw, match):
    f = save(tmp_path / "a.npy", np.zeros((2, 3), np.uint8))
    if "files" not in kw and "file_list" not in kw and kw:
        kw = dict(kw, files=[f])
    with pytest.raises(ladle.Error, match=match) as e:
        read(**kw)
    assert "readers.numpy" in str(e.value)


def test_missing_file_and_empty_folder(tmp_path):
    with pytest.raises(ladle.Error, match="nothing.npy"):
        read(files=[str(tmp_path / "nothing.npy")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ladle.Error, match="file_filter"):
        read(file_root=str(tmp_path / "empty"))


def test_o_direct_reads_the_same(tmp_path):
    a = np.arange(5000, dtype=np.float64).reshape(50, 100)
    f = save(tmp_path / "a.npy", a)
    try:
        fd = os.open(f, os.O_RDONLY | os.O_DIRECT)
        os.close(fd)
    except OSError as e:
        if e.errno == errno.EINVAL:
            pytest.skip("this file system refuses O_DIRECT")
        raise
    kw = dict(files=[f], dont_use_mmap=True, use_o_direct=True)
    np.testing.assert_array_equal(read(**kw)[0], a)
    np.testing.assert_array_equal(read(roi_start=[7, 3], roi_shape=[20, 90], **kw)[0], a[7:27, 3:93])


def test_sharding_shuffle_and_padding(tmp_path):
    files = [save(tmp_path / f"{k:02d}.npy", np.array([k], np.int64)) for k in range(10)]
    shards = [[int(x[0]) for x in read(batch_size=5, files=files, num_shards=2, shard_id=s)] for s in range(2)]
    assert shards == [list(range(5)), list(range(5, 10))]
    shuffled = [int(x[0]) for x in read(batch_size=10, files=files, random_shuffle=True)]
    assert sorted(shuffled) == list(range(10)) and shuffled != list(range(10))
    padded = [int(x[0]) for x in read(batch_size=4, iterations=3, files=files, pad_last_batch=True)]
    assert padded == list(range(10)) + [9, 9]
    pipe = ladle.Pipeline(batch_size=4, num_threads=1)
    with pipe:
        pipe.set_outputs(fn.readers.numpy(files=files, name="R", num_shards=3, shard_id=1, pad_last_batch=True))
    pipe.build()
    meta = pipe.reader_meta("R")
    pipe.close()
    assert meta["epoch_size"] == 10 and meta["epoch_size_padded"] == 12


def test_dynamic_reader(tmp_path):
    files = [save(tmp_path / f"{k}.npy", np.full((2,), k, np.uint8)) for k in range(5)]
    reader = ldd.readers.Numpy(files=files)
    got = [np.array(t).tolist() for (b,) in reader.next_epoch(batch_size=2) for t in b.tensors]
    assert got == [[k, k] for k in range(5)]
    reader.close()


@pytest.mark.gpu
def test_gpu_reader_matches_cpu(tmp_path):
    rng = np.random.default_rng(2)
    files = [save(tmp_path / f"{k}.npy", rng.normal(size=(int(rng.integers(1, 40)), 7)).astype(np.float32),
                  fortran=k % 2 == 1) for k in range(6)]
    kw = dict(files=files, roi_start=[1, 2], roi_shape=[30, 4], out_of_bounds_policy="pad", fill_value=-1)
    cpu = read(batch_size=3, iterations=2, **kw)
    pipe = ladle.Pipeline(batch_size=3, num_threads=2, device_id=0)
    with pipe:
        pipe.set_outputs(fn.readers.numpy(device="gpu", **kw))
    try:
        gpu = []
        for _ in range(2):
            tl = pipe.run()[0].as_cpu()
            gpu += [np.array(tl.at(i)) for i in range(len(tl))]
    finally:
        pipe.close()
    for c, g in zip(cpu, gpu):
        np.testing.assert_array_equal(c, g)
