"""Bad input files through whole pipelines: each fails pipe.run() with the right
ladle.Error subclass, a message naming the file and the sample ("sample N"), and
the pipeline goes on with the next iteration. A watchdog ends the process (with a
traceback) if anything hangs, so a hang cannot stall the suite."""

import faulthandler
import io
import os
import re

import numpy as np
import pytest
from PIL import Image

import ladle
from ladle import fn, types
from conftest import requires_ops

pytestmark = requires_ops("readers.file", "decoders.image")


@pytest.fixture(autouse=True)
def watchdog():
    faulthandler.dump_traceback_later(120, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def picture(w, h, seed):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    img = np.stack([x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1), (x ^ y) & 255], -1)
    return np.clip(img + rng.normal(0, 8, img.shape), 0, 255).astype(np.uint8)


def jpeg_bytes(w=64, h=48, seed=0, **kw):
    buf = io.BytesIO()
    Image.fromarray(picture(w, h, seed)).save(buf, "JPEG", quality=90, **kw)
    return buf.getvalue()


def png_bytes(w=64, h=48, seed=0):
    buf = io.BytesIO()
    Image.fromarray(picture(w, h, seed)).save(buf, "PNG")
    return buf.getvalue()


def write(path, data):
    path.write_bytes(data)
    return str(path)


def good_files(d, n, size=(64, 48)):
    return [write(d / f"good_{i}.{'png' if i % 2 else 'jpg'}",
                  png_bytes(*size, seed=i) if i % 2 else jpeg_bytes(*size, seed=i)) for i in range(n)]


def make_pipe(files=None, file_list=None, batch_size=2, decoder="image", **pipe_args):
    pipe_args.setdefault("num_threads", 2)
    pipe = ladle.Pipeline(batch_size=batch_size, **pipe_args)
    with pipe:
        if file_list is not None:
            encoded, labels = fn.readers.file(file_list=file_list)
        else:
            encoded, labels = fn.readers.file(files=files)
        if decoder == "image":
            images = fn.decoders.image(encoded, output_type=types.RGB)
        elif decoder == "random_crop":
            images = fn.decoders.image_random_crop(encoded)
            images = fn.resize(images, resize_x=32, resize_y=32)
        pipe.set_outputs(images, labels)
    return pipe


def assert_names(err, path, sample):
    msg = str(err)
    assert path in msg, msg
    assert re.search(rf"\bsample {sample}\b", msg), msg


def check_bad_file(tmp_path, bad_path, error, what=None, decoder="image", **pipe_args):
    """Files good0 good1 | good2 BAD | good4 good5, batch 2: iteration 1 fails at
    sample 1 naming the bad file; iterations 0, 2 and 3 (the next epoch's first
    batch) work."""
    files = good_files(tmp_path, 6)
    files[3] = bad_path
    pipe = make_pipe(files, decoder=decoder, **pipe_args)
    try:
        images, labels = pipe.run()
        assert len(images) == 2 and labels.as_array().ravel().tolist() == [0, 1]
        with pytest.raises(error) as info:
            pipe.run()
        assert isinstance(info.value, ladle.Error)
        assert_names(info.value, bad_path, 1)
        if what:
            assert re.search(what, str(info.value)), str(info.value)
        for expected in ([4, 5], [0, 1]):
            images, labels = pipe.run()
            assert labels.as_array().ravel().tolist() == expected
            assert all(im.shape()[2] == 3 for im in images)  # tl[i] is a Tensor, as in DALI
    finally:
        pipe.close()


@pytest.mark.parametrize("decoder", ["image", "random_crop"])
def test_empty_file(tmp_path, decoder):
    bad = write(tmp_path / "empty.jpg", b"")
    check_bad_file(tmp_path, bad, ladle.CorruptDataError, "empty", decoder=decoder)


@pytest.mark.parametrize("progressive", [False, True])
def test_truncated_jpeg(tmp_path, progressive):
    data = jpeg_bytes(160, 120, seed=9, progressive=progressive)
    bad = write(tmp_path / "truncated.jpg", data[: len(data) // 2])
    check_bad_file(tmp_path, bad, ladle.CorruptDataError)


def test_truncated_png(tmp_path):
    data = png_bytes(160, 120, seed=9)
    bad = write(tmp_path / "truncated.png", data[: len(data) // 2])
    check_bad_file(tmp_path, bad, ladle.CorruptDataError)


@pytest.mark.parametrize("interlace", [False, True])
def test_png_palette_index_past_the_palette(tmp_path, interlace):
    # libpng would decode indices 4..9 as black and warn only at the file's end.
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "data"))
    from make_test_images import write_png
    indices = (np.arange(48 * 64).reshape(48, 64, 1) % 10).astype(np.uint8)
    bad = str(tmp_path / "palette.png")
    write_png(bad, indices, 3, 8, interlace=interlace, palette=[[0, 0, 0], [255, 0, 0], [0, 255, 0], [0, 0, 255]])
    check_bad_file(tmp_path, bad, ladle.CorruptDataError, "palette index [4-9] in row [0-9]+ past the palette's 4 entries")


def test_text_file_named_jpg(tmp_path):
    bad = write(tmp_path / "notes.jpg", b"This is a text file, not an image.\n")
    check_bad_file(tmp_path, bad, ladle.UnsupportedError, "not a JPEG or PNG")


def test_garbage_after_jpeg_signature(tmp_path):
    rng = np.random.default_rng(5)
    bad = write(tmp_path / "garbage.jpg", b"\xff\xd8\xff" + rng.integers(0, 256, 3000, dtype=np.uint8).tobytes())
    check_bad_file(tmp_path, bad, ladle.CorruptDataError)


def test_file_names_that_are_not_utf8(tmp_path):
    # os.listdir gives such names as str with surrogate escapes; bytes work too.
    # The file system's bytes reach the reader; messages show them escaped.
    root = os.fsencode(str(tmp_path))
    good = os.path.join(root, b"caf\xe9.png")
    with open(good, "wb") as f:
        f.write(png_bytes(16, 8, seed=1))
    bad = os.path.join(root, b"bad\xff.jpg")
    with open(bad, "wb") as f:
        f.write(b"")
    for files in ([os.fsdecode(good), os.fsdecode(bad)], [good, bad]):
        pipe = make_pipe(files, batch_size=1)
        try:
            (images, labels) = pipe.run()
            expected = np.asarray(Image.open(io.BytesIO(png_bytes(16, 8, seed=1))))
            np.testing.assert_array_equal(images.as_array()[0], expected)
            with pytest.raises(ladle.CorruptDataError, match=r"bad\\xff\.jpg"):
                pipe.run()
        finally:
            pipe.close()
    pipe = ladle.Pipeline(batch_size=1, num_threads=1)
    with pytest.raises(ladle.InvalidArgumentError, match="NUL"), pipe:
        fn.readers.file(files=[b"a\0b.jpg"])


def test_missing_file_in_files(tmp_path):
    bad = str(tmp_path / "gone.jpg")
    check_bad_file(tmp_path, bad, ladle.ReadError)


def test_missing_file_in_file_list(tmp_path):
    files = good_files(tmp_path, 6)
    missing = str(tmp_path / "deleted.png")
    files[3] = missing
    listing = tmp_path / "list.txt"
    listing.write_text("".join(f"{os.path.basename(f)} {i}\n" for i, f in enumerate(files)))
    pipe = ladle.Pipeline(batch_size=2, num_threads=2)
    with pipe:
        encoded, labels = fn.readers.file(file_root=str(tmp_path), file_list=str(listing))
        pipe.set_outputs(fn.decoders.image(encoded), labels)
    try:
        assert pipe.run()[1].as_array().ravel().tolist() == [0, 1]
        with pytest.raises(ladle.ReadError) as info:
            pipe.run()
        assert "deleted.png" in str(info.value)
        assert_names(info.value, "deleted.png", 1)
        assert pipe.run()[1].as_array().ravel().tolist() == [4, 5]
    finally:
        pipe.close()


@pytest.mark.parametrize("decoder", ["image", "random_crop"])
def test_image_over_max_pixels(tmp_path, decoder):
    bad = write(tmp_path / "huge.png", png_bytes(80, 60, seed=3))   # 4800 px > 4000
    check_bad_file(tmp_path, bad, ladle.LimitError, "4800", decoder=decoder, max_pixels=4000)
    # the cap is inclusive: the good files (64x48 = 3072 px) pass at max_pixels=3072
    pipe = make_pipe(good_files(tmp_path, 2), max_pixels=3072, decoder=decoder)
    assert len(pipe.run()[0]) == 2
    pipe.close()
    pipe = make_pipe(good_files(tmp_path, 2), max_pixels=3071, decoder=decoder)
    with pytest.raises(ladle.LimitError):
        pipe.run()
    pipe.close()


@pytest.mark.parametrize("num_threads,depth", [(1, 1), (2, 3)])
def test_several_bad_files_in_one_batch(tmp_path, num_threads, depth):
    """Three bad samples in a batch of 8: the error names one of them with its own
    sample index, and the batches before and after are unaffected."""
    files = good_files(tmp_path, 16)
    bad_at = {9: write(tmp_path / "a_empty.jpg", b""),
              12: write(tmp_path / "b_text.jpg", b"hello"),
              14: write(tmp_path / "c_cut.png", png_bytes(80, 60, seed=1)[:300])}
    for i, path in bad_at.items():
        files[i] = path
    pipe = make_pipe(files, batch_size=8, num_threads=num_threads, prefetch_queue_depth=depth)
    try:
        assert pipe.run()[1].as_array().ravel().tolist() == list(range(8))
        with pytest.raises(ladle.Error) as info:
            pipe.run()
        msg = str(info.value)
        sample = int(re.search(r"\bsample (\d+)\b", msg).group(1))
        assert 8 + sample in bad_at, msg
        assert bad_at[8 + sample] in msg
        assert pipe.run()[1].as_array().ravel().tolist() == list(range(8))  # epoch 1 starts cleanly
    finally:
        pipe.close()


@pytest.mark.parametrize("kind", ["jpeg", "progressive", "png"])
def test_every_cut_is_an_error(tmp_path, kind):
    """A file cut anywhere before its pixel data ends fails with CorruptDataError
    (never a partly grey image); only the end marker (JPEG EOI, PNG IEND) may be
    missing (src/codec/image.h)."""
    if kind == "png":
        data = png_bytes(96, 64, seed=2)
        tail = 12  # the IEND chunk
    else:
        data = jpeg_bytes(96, 64, seed=2, progressive=kind == "progressive")
        tail = 2   # EOI
    cuts = sorted({1, 3, 9, 40, 150} | {len(data) * k // 10 for k in range(1, 10)} | {len(data) - tail - 1})
    paths = [write(tmp_path / f"cut_{n}.bin", data[:n]) for n in cuts]
    whole = write(tmp_path / "no_end_marker.bin", data[: len(data) - tail])
    for n, path in zip(cuts, paths):
        pipe = make_pipe([path], batch_size=1, num_threads=1)
        try:
            with pytest.raises(ladle.CorruptDataError) as info:
                pipe.run()
            assert_names(info.value, path, 0)
        finally:
            pipe.close()
    pipe = make_pipe([whole], batch_size=1, num_threads=1)
    try:
        (image,), _ = pipe.run()
        ref = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
        assert np.abs(np.array(image).astype(int) - ref).max() <= 1
    finally:
        pipe.close()


def test_pipeline_closes_promptly_after_errors(tmp_path):
    """Errors in flight (prefetched iterations that failed) do not block close()."""
    import time

    bad = write(tmp_path / "bad.jpg", b"\xff\xd8\xff\xe0 nothing")
    pipe = make_pipe([bad] * 4, batch_size=2, num_threads=2, prefetch_queue_depth=3)
    with pytest.raises(ladle.CorruptDataError):
        pipe.run()
    start = time.monotonic()
    pipe.close()
    assert time.monotonic() - start < 5
