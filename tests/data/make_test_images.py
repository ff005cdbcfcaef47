#!/usr/bin/python3
"""Regenerates the small images that tests/c/test_codec.c decodes (run from anywhere:
/usr/bin/python3 tests/data/make_test_images.py). Deterministic: a fixed numpy seed,
Pillow's JPEG encoder (libjpeg-turbo) and our own PNG writer.

JPEG files (j*.jpg, orient_*.jpg, exif_bad.jpg) come with PIL's decode of them as
*.ref.png (RGB, or L for gray), the reference the C test compares against. PNG files
(p_*.png) hold pixels given by formulas that test_codec.c recomputes, so they need no
reference; they are written by write_png() below (PIL cannot write 16-bit RGB or
interlaced PNGs) with the row filters cycling through all five types, and checked
here against PIL's decode.
"""
import io
import os
import struct
import zlib

import numpy as np
from PIL import Image, ImageOps

HERE = os.path.dirname(os.path.abspath(__file__))


# ---------------------------------------------------------------------------
# Pixel formulas shared with tests/c/test_codec.c (keep both in step).
def f_rgb(x, y, c):
    return (x * (3 + c) + y * (5 + 2 * c) + ((x * y) >> (2 + c))) & 255


def f_low(x, y, c):       # the low byte of 16-bit samples (dropped by the decoder)
    return (x + 3 * y + 7 * c) & 255


def f_alpha(x, y):        # alpha (dropped by the decoder)
    return (x * y + 17) & 255


def f_pal_color(i, c):    # palette entry i, channel c
    return ((53, 97, 251)[c] * i + (0, 11, 200)[c]) & 255


def f_pal_index(x, y, n):
    return (x + 3 * y) % n


def formula_rgb(w, h):
    y, x = np.mgrid[0:h, 0:w]
    return np.stack([f_rgb(x, y, c) for c in range(3)], -1).astype(np.uint8)


# ---------------------------------------------------------------------------
# A minimal PNG writer: any colour type / bit depth, optional Adam7.
ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
         (0, 1, 1, 2)]


def _chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


def _filter_rows(rows, bpp, first_filter):
    """rows: list of bytes (unfiltered scanlines). Cycles filters 0..4 per row."""
    out = bytearray()
    prev = bytes(len(rows[0])) if rows else b""
    for i, row in enumerate(rows):
        ft = (first_filter + i) % 5
        f = bytearray(len(row))
        for j in range(len(row)):
            a = row[j - bpp] if j >= bpp else 0
            b = prev[j]
            c = prev[j - bpp] if j >= bpp else 0
            pred = (0, a, b, (a + b) // 2, _paeth(a, b, c))[ft]
            f[j] = (row[j] - pred) & 255
        out.append(ft)
        out += f
        prev = row
    return bytes(out)


def _pack(samples, depth):
    """samples: 2-D uint array (h, n) of one row's samples -> list of packed rows."""
    rows = []
    for r in samples:
        if depth == 16:
            rows.append(b"".join(struct.pack(">H", int(v)) for v in r))
        elif depth == 8:
            rows.append(bytes(int(v) for v in r))
        else:
            per = 8 // depth
            b = bytearray((len(r) + per - 1) // per)
            for i, v in enumerate(r):
                b[i // per] |= int(v) << (8 - depth * (i % per + 1))
            rows.append(bytes(b))
    return rows


def write_png(path, samples, color_type, depth, interlace=False, palette=None, trns=None,
              cut_rows=None):
    """samples: (h, w, channels) array of sample values at `depth` bits.
    cut_rows: compress only that many rows of the (non-interlaced) image (corrupt file)."""
    h, w, ch = samples.shape
    bpp = max(1, ch * depth // 8)
    if interlace:
        raw = b""
        for (x0, y0, dx, dy) in ADAM7:
            sub = samples[y0::dy, x0::dx]
            if sub.shape[0] == 0 or sub.shape[1] == 0:
                continue
            raw += _filter_rows(_pack(sub.reshape(sub.shape[0], -1), depth), bpp, 0)
    else:
        rows = _pack(samples.reshape(h, -1), depth)
        if cut_rows is not None:
            rows = rows[:cut_rows]
        raw = _filter_rows(rows, bpp, 0)
    out = b"\x89PNG\r\n\x1a\n"
    out += _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color_type, 0, 0, int(interlace)))
    if palette is not None:
        out += _chunk(b"PLTE", bytes(np.asarray(palette, np.uint8).ravel()))
    if trns is not None:
        out += _chunk(b"tRNS", trns)
    z = zlib.compress(raw, 9)
    half = len(z) // 2       # two IDAT chunks: libpng must join them
    out += _chunk(b"IDAT", z[:half]) + _chunk(b"IDAT", z[half:])
    out += _chunk(b"IEND", b"")
    with open(path, "wb") as fo:
        fo.write(out)


def make_pngs():
    w, h = 45, 31
    y, x = np.mgrid[0:h, 0:w]
    rgb = np.stack([f_rgb(x, y, c) for c in range(3)], -1)
    low = np.stack([f_low(x, y, c) for c in range(3)], -1)
    alpha = f_alpha(x, y)[..., None]
    gray = rgb[..., :1]
    rgb16 = rgb * 256 + low
    gray16 = rgb16[..., :1]
    alpha16 = alpha * 256 + 5
    p = os.path.join
    write_png(p(HERE, "p_rgb8.png"), rgb, 2, 8)
    write_png(p(HERE, "p_rgba8.png"), np.concatenate([rgb, alpha], -1), 6, 8)
    write_png(p(HERE, "p_rgb16.png"), rgb16, 2, 16, trns=struct.pack(">HHH", 1, 2, 3))
    write_png(p(HERE, "p_gray8.png"), gray, 0, 8)
    write_png(p(HERE, "p_gray16.png"), gray16, 0, 16)
    write_png(p(HERE, "p_graya8.png"), np.concatenate([gray, alpha], -1), 4, 8)
    pal37 = [[f_pal_color(i, c) for c in range(3)] for i in range(37)]
    write_png(p(HERE, "p_pal8.png"), f_pal_index(x, y, 37)[..., None], 3, 8, palette=pal37,
              trns=bytes(range(0, 250, 25)))
    pal13 = [[f_pal_color(i, c) for c in range(3)] for i in range(13)]
    write_png(p(HERE, "p_pal4.png"), f_pal_index(x, y, 13)[..., None], 3, 4, palette=pal13)
    write_png(p(HERE, "p_gray2.png"), ((x + y) & 3)[..., None], 0, 2, trns=struct.pack(">H", 1))
    write_png(p(HERE, "p_gray1.png"), ((x ^ y) & 1)[..., None], 0, 1)
    write_png(p(HERE, "p_rgb8_adam7.png"), rgb, 2, 8, interlace=True)
    write_png(p(HERE, "p_rgba16_adam7.png"), np.concatenate([rgb16, alpha16], -1), 6, 16,
              interlace=True)
    y3, x3 = np.mgrid[0:2, 0:3]
    write_png(p(HERE, "p_tiny_adam7.png"),
              np.stack([f_rgb(x3, y3, c) for c in range(3)], -1), 2, 8, interlace=True)
    write_png(p(HERE, "p_short_idat.png"), rgb, 2, 8, cut_rows=h // 2)
    with open(p(HERE, "p_rgb8.png"), "rb") as fi, open(p(HERE, "p_named.JPEG"), "wb") as fo:
        fo.write(fi.read())

    # Check the writer against PIL (the C test trusts the formulas).
    def pil(name):
        return np.asarray(Image.open(p(HERE, name)))
    assert (pil("p_rgb8.png") == rgb).all()
    assert (pil("p_rgba8.png")[..., :3] == rgb).all()
    assert (pil("p_rgb16.png") == rgb).all()          # PIL keeps the high byte
    assert (pil("p_gray8.png") == gray[..., 0]).all()
    assert (pil("p_gray16.png") == gray16[..., 0]).all()
    assert (pil("p_graya8.png")[..., 0] == gray[..., 0]).all()
    assert (np.asarray(Image.open(p(HERE, "p_pal8.png")).convert("RGB"))
            == np.asarray(pal37, np.uint8)[f_pal_index(x, y, 37)]).all()
    assert (np.asarray(Image.open(p(HERE, "p_pal4.png")).convert("RGB"))
            == np.asarray(pal13, np.uint8)[f_pal_index(x, y, 13)]).all()
    assert (np.asarray(Image.open(p(HERE, "p_gray2.png")).convert("L")) == (x + y & 3) * 85).all()
    assert (np.asarray(Image.open(p(HERE, "p_gray1.png")).convert("L"))
            == ((x ^ y) & 1) * 255).all()
    assert (pil("p_rgb8_adam7.png") == rgb).all()
    assert (pil("p_rgba16_adam7.png")[..., :3] == rgb).all()
    assert (pil("p_tiny_adam7.png") == np.stack([f_rgb(x3, y3, c) for c in range(3)], -1)).all()


# ---------------------------------------------------------------------------
# JPEGs: a photo-like synthetic scene, asymmetric so that a wrong orientation shows.
def scene(w, h, seed):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    u, v = x / w, y / h
    img = np.stack([60 + 150 * u, 40 + 170 * v, 120 + 80 * np.sin(6 * u + 3 * v)], -1)
    img[(u < 0.35) & (v < 0.3)] = (20, 30, 200)                             # top-left block
    img[((u - 0.7) ** 2 + (v - 0.65) ** 2) < 0.03] = (240, 220, 40)          # a disk
    img[(v > 0.8) & (np.floor(x / 3) % 2 == 0)] *= 0.5                      # bottom stripes
    img[(u > 0.85) & (v < 0.2)] = (250, 250, 250)                            # top-right patch
    img += rng.normal(0, 4, img.shape)
    return Image.fromarray(np.clip(img + 0.5, 0, 255).astype(np.uint8), "RGB")


def exif_block(orientation, big_endian):
    """APP1 payload: Exif header, TIFF header, IFD0 with Make then Orientation."""
    e = ">" if big_endian else "<"
    tiff = (b"MM" if big_endian else b"II") + struct.pack(e + "HI", 42, 8)
    tiff += struct.pack(e + "H", 2)
    tiff += struct.pack(e + "HHI", 0x010F, 2, 4) + b"lad\0"                 # Make, inline
    tiff += struct.pack(e + "HHIHH", 0x0112, 3, 1, orientation, 0)          # Orientation
    tiff += struct.pack(e + "I", 0)
    return b"Exif\0\0" + tiff


def save_ref(im, name):
    im.save(os.path.join(HERE, name), "PNG", optimize=True)


def make_jpegs():
    p = os.path.join
    base = scene(131, 97, 1)
    for name, kw in [("j420", dict(subsampling=2)), ("j422", dict(subsampling=1)),
                     ("j444", dict(subsampling=0)), ("jprog", dict(subsampling=2, progressive=True))]:
        base.save(p(HERE, name + ".jpg"), "JPEG", quality=90, **kw)
        save_ref(Image.open(p(HERE, name + ".jpg")).convert("RGB"), name + ".ref.png")
    base.convert("L").save(p(HERE, "jgray.jpg"), "JPEG", quality=90)
    save_ref(Image.open(p(HERE, "jgray.jpg")), "jgray.ref.png")
    base.convert("CMYK").save(p(HERE, "jcmyk.jpg"), "JPEG", quality=90)
    save_ref(Image.open(p(HERE, "jcmyk.jpg")).convert("RGB"), "jcmyk.ref.png")
    # libjpeg's own gray output (the Y channel) and DCT-scaled decodes, through PIL's draft()
    im = Image.open(p(HERE, "j420.jpg"))
    im.draft("L", im.size)
    assert im.mode == "L"
    save_ref(im.convert("L"), "j420_gray.ref.png")
    for scale, tag in ((2, "half"), (4, "quarter")):
        im = Image.open(p(HERE, "j420.jpg"))
        im.draft("RGB", (131 // scale, 97 // scale))
        assert im.size == (-(-131 // scale), -(-97 // scale)), im.size
        save_ref(im.convert("RGB"), "j420_%s.ref.png" % tag)

    # Orientation 1..8 of one displayed image: the stored pixels are such that applying
    # the EXIF orientation gives it back. Even orientations use big-endian EXIF.
    disp = scene(61, 43, 2)
    undo = {1: None, 2: Image.FLIP_LEFT_RIGHT, 3: Image.ROTATE_180, 4: Image.FLIP_TOP_BOTTOM,
            5: Image.TRANSPOSE, 6: Image.ROTATE_90, 7: Image.TRANSVERSE, 8: Image.ROTATE_270}
    for o in range(1, 9):
        stored = disp if undo[o] is None else disp.transpose(undo[o])
        name = "orient_%d" % o
        stored.save(p(HERE, name + ".jpg"), "JPEG", quality=92, exif=exif_block(o, o % 2 == 0))
        im = Image.open(p(HERE, name + ".jpg"))
        assert im.getexif().get(0x0112) == o
        shown = ImageOps.exif_transpose(im).convert("RGB")
        assert shown.size == disp.size
        save_ref(shown, name + ".ref.png")

    # A malformed EXIF block (IFD offset past the end): orientation 1, decodes normally.
    bad = bytearray(exif_block(6, False))
    bad[10:14] = struct.pack("<I", 4000)
    scene(24, 16, 3).save(p(HERE, "exif_bad.jpg"), "JPEG", quality=90, exif=bytes(bad))
    save_ref(Image.open(p(HERE, "exif_bad.jpg")).convert("RGB"), "exif_bad.ref.png")

    with open(p(HERE, "not_an_image.txt"), "w") as fo:
        fo.write("This is a text file, not an image.\n")


if __name__ == "__main__":
    make_pngs()
    make_jpegs()
    total = sum(os.path.getsize(os.path.join(HERE, f)) for f in os.listdir(HERE)
                if not f.endswith(".py"))
    print("test images written to %s (%d bytes)" % (HERE, total))
