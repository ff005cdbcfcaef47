#!/usr/bin/env python3
"""Writes a corpus of malformed (and a few valid) images for robustness tests:
truncations, bit flips, wrong markers, huge and zero declared sizes, bad
Huffman and quantization tables, cut progressive scans; PNGs with bad CRCs,
corrupt or missing IDAT, bad palettes, bad interlace/bit depth fields; text
files named .jpg, empty files, PNGs named .jpg.

Deterministic: the base images are drawn from fixed seeds and every mutation
takes its positions from a seeded generator, so a run writes the same bytes
for the same Pillow/zlib (the base images are Pillow's encodes of fixed
arrays). tests/python/test_malformed_corpus.py builds it in a temporary
folder; to look at it:

    python3 tools/make_malformed_images.py OUT_DIR

Each file's name says what was done to it (e.g. jpeg_baseline.trunc_50.jpg).
`make_corpus(out_dir)` returns the list of paths.
"""

import io
import os
import struct
import sys
import zlib

import numpy as np
from PIL import Image


def _scene(w, h, seed):
    """A smooth gradient with a block and some noise (JPEG-friendly)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    u, v = x / w, y / h
    img = np.stack([40 + 180 * u, 30 + 190 * v, 128 + 90 * np.sin(7 * u + 4 * v)], -1)
    img[(u < 0.3) & (v < 0.4)] = (200, 20, 60)
    img += rng.normal(0, 6, img.shape)
    return np.clip(img + 0.5, 0, 255).astype(np.uint8)


def _encode(img, fmt, **kwargs):
    buf = io.BytesIO()
    img.save(buf, fmt, **kwargs)
    return buf.getvalue()


def base_images():
    """name -> (bytes, extension): the valid images the mutations start from."""
    rgb = Image.fromarray(_scene(67, 45, 1))
    gray = Image.fromarray(_scene(40, 33, 2)[..., 0])
    pal = rgb.convert("P", palette=Image.ADAPTIVE, colors=16)
    rgba = Image.fromarray(np.dstack([_scene(31, 29, 3), np.full((29, 31), 200, np.uint8)]))
    return {
        "jpeg_baseline": (_encode(rgb, "JPEG", quality=85), "jpg"),
        "jpeg_420": (_encode(rgb, "JPEG", quality=75, subsampling=2), "jpg"),
        "jpeg_gray": (_encode(gray, "JPEG", quality=90), "jpg"),
        "jpeg_progressive": (_encode(rgb, "JPEG", quality=80, progressive=True), "jpg"),
        "jpeg_restart": (_encode(rgb, "JPEG", quality=80, restart_marker_blocks=2), "jpg"),
        "png_rgb": (_encode(rgb, "PNG"), "png"),
        "png_gray": (_encode(gray, "PNG"), "png"),
        "png_palette": (_encode(pal, "PNG"), "png"),
        "png_rgba": (_encode(rgba, "PNG"), "png"),
        "png_interlaced": (_encode(rgb, "PNG", interlace=1) if _pil_interlaces() else _adam7(rgb), "png"),
    }


def _pil_interlaces():
    """Whether Pillow wrote an Adam7 PNG (newer Pillow takes interlace=1)."""
    data = _encode(Image.new("L", (8, 8)), "PNG", interlace=1)
    return data[28] == 1


def _chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def _adam7(img):
    """An interlaced RGB PNG written by hand (Pillow cannot write Adam7)."""
    a = np.asarray(img.convert("RGB"))
    h, w = a.shape[:2]
    passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
    raw = b""
    for x0, y0, dx, dy in passes:
        sub = a[y0::dy, x0::dx]
        if sub.size:
            raw += b"".join(b"\0" + row.tobytes() for row in sub)
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 1)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", zlib.compress(raw, 9)) + _chunk(b"IEND", b"")


# --- JPEG structure ------------------------------------------------------------

def _jpeg_segments(data):
    """(marker, offset of the marker, length field value) for each segment up to SOS."""
    out, i = [], 2
    while i + 4 <= len(data) and data[i] == 0xFF:
        marker = data[i + 1]
        length = struct.unpack(">H", data[i + 2:i + 4])[0]
        out.append((marker, i, length))
        if marker == 0xDA:
            break
        i += 2 + length
    return out


def _segment(data, marker):
    for m, off, length in _jpeg_segments(data):
        if m == marker:
            return off, length
    raise ValueError(f"no marker FF{marker:02X}")


def _set(data, offset, value):
    out = bytearray(data)
    out[offset:offset + len(value)] = value
    return bytes(out)


def _sof(data):
    for m, off, _ in _jpeg_segments(data):
        if m in (0xC0, 0xC1, 0xC2):
            return off
    raise ValueError("no SOF")


def jpeg_mutations(data, rng):
    """name -> bytes."""
    out = {}
    n = len(data)
    for pct in (1, 5, 20, 50, 90, 99):
        out[f"trunc_{pct}"] = data[:max(2, n * pct // 100)]
    out["trunc_before_eoi"] = data[:-2]
    sos, sos_len = _segment(data, 0xDA)
    out["trunc_after_sos"] = data[:sos + 2 + sos_len]
    for k in range(4):
        pos = rng.integers(sos + 2 + sos_len, n - 2, size=1 + 3 * k)
        b = bytearray(data)
        for p in pos:
            b[p] ^= 1 << int(rng.integers(0, 8))
        out[f"bitflip_scan_{k}"] = bytes(b)
    b = bytearray(data)
    for p in rng.integers(2, sos, size=6):
        b[p] ^= 1 << int(rng.integers(0, 8))
    out["bitflip_headers"] = bytes(b)
    sof = _sof(data)
    out["no_soi"] = b"\0\0" + data[2:]
    out["sof_lossless"] = _set(data, sof + 1, b"\xC3")
    out["sof_arithmetic"] = _set(data, sof + 1, b"\xC9")
    out["sof_hierarchical"] = _set(data, sof + 1, b"\xC5")
    out["huge_size"] = _set(data, sof + 5, struct.pack(">HH", 65535, 65535))
    out["huge_width"] = _set(data, sof + 5, struct.pack(">HH", 8, 65500))
    out["zero_width"] = _set(data, sof + 5, struct.pack(">HH", 45, 0))
    out["zero_height"] = _set(data, sof + 5, struct.pack(">HH", 0, 67))
    out["precision_12"] = _set(data, sof + 4, b"\x0C")
    out["components_0"] = _set(data, sof + 9, b"\x00")
    out["components_9"] = _set(data, sof + 9, b"\x09")
    out["sampling_0"] = _set(data, sof + 11, b"\x00")
    out["quant_table_7"] = _set(data, sof + 12, b"\x07")
    dht, dht_len = _segment(data, 0xC4)
    out["dht_counts_overflow"] = _set(data, dht + 5, b"\xFF" * 16)
    out["dht_counts_zero"] = _set(data, dht + 5, b"\x00" * 16)
    out["dht_class_5"] = _set(data, dht + 4, b"\x50")
    out["dht_length_short"] = _set(data, dht + 2, struct.pack(">H", 3))
    out["dht_length_huge"] = _set(data, dht + 2, struct.pack(">H", 65535))
    out["no_dht"] = data[:dht] + data[dht + 2 + dht_len:]
    dqt, dqt_len = _segment(data, 0xDB)
    out["dqt_zero"] = _set(data, dqt + 5, b"\x00" * 64)
    out["no_dqt"] = data[:dqt] + data[dqt + 2 + dqt_len:]
    out["sos_components_5"] = _set(data, sos + 4, b"\x05")
    out["sos_bad_table"] = _set(data, sos + 6, b"\xFF")
    out["sos_twice"] = data[:-2] + data[sos:]
    out["eoi_only"] = b"\xFF\xD8\xFF\xD9"
    out["soi_only"] = b"\xFF\xD8"
    out["garbage_after_soi"] = b"\xFF\xD8" + bytes(rng.integers(0, 256, 512, dtype=np.uint8))
    out["appended_garbage"] = data + bytes(rng.integers(0, 256, 300, dtype=np.uint8))
    out["doubled"] = data + data
    return out


def progressive_mutations(data, rng):
    """Cuts of a progressive JPEG at each scan after the first."""
    out = {}
    starts = [i for i in range(2, len(data) - 1) if data[i] == 0xFF and data[i + 1] == 0xDA]
    for k, s in enumerate(starts[1:5], 1):
        out[f"cut_before_scan_{k}"] = data[:s]
        out[f"cut_in_scan_{k}"] = data[:s + (starts[k + 1] - s) // 2] if k + 1 < len(starts) else data[:s + 40]
    return out


# --- PNG structure -------------------------------------------------------------

def _png_chunks(data):
    """(type, offset of the length field, length) for each chunk."""
    out, i = [], 8
    while i + 8 <= len(data):
        length = struct.unpack(">I", data[i:i + 4])[0]
        out.append((data[i + 4:i + 8], i, length))
        i += 12 + length
    return out


def _rebuild(chunks):
    return b"\x89PNG\r\n\x1a\n" + b"".join(_chunk(k, body) for k, body in chunks)


def _parts(data):
    return [(k, data[o + 8:o + 8 + n]) for k, o, n in _png_chunks(data)]


def _with_ihdr(data, offset, value):
    """IHDR with `value` at `offset` of its body, the CRC made right."""
    return _rebuild([(k, _set(b, offset, value) if k == b"IHDR" else b) for k, b in _parts(data)])


def png_mutations(data, rng, palette=False):
    out = {}
    n = len(data)
    for pct in (1, 10, 50, 90, 99):
        out[f"trunc_{pct}"] = data[:max(1, n * pct // 100)]
    parts = _parts(data)
    out["no_iend"] = _rebuild([p for p in parts if p[0] != b"IEND"])
    chunks = _png_chunks(data)
    idat = next(o for k, o, _ in chunks if k == b"IDAT")
    idat_len = next(length for k, _, length in chunks if k == b"IDAT")
    out["bad_crc_ihdr"] = _set(data, 8 + 8 + 13, b"\0\0\0\0")
    out["bad_crc_idat"] = _set(data, idat + 8 + idat_len, b"\xDE\xAD\xBE\xEF")
    b = bytearray(data)
    for p in rng.integers(idat + 8, idat + 8 + idat_len, size=4):
        b[p] ^= 1 << int(rng.integers(0, 8))
    out["bitflip_idat"] = bytes(b)
    # IDAT bodies corrupted with the CRC made right: the zlib stream itself is bad.
    def idat_body(f):
        return _rebuild([(k, f(body) if k == b"IDAT" else body) for k, body in parts])
    out["idat_zlib_garbage"] = idat_body(lambda body: bytes(rng.integers(0, 256, len(body), dtype=np.uint8)))
    out["idat_zlib_truncated"] = idat_body(lambda body: body[:len(body) // 2])
    out["idat_empty"] = idat_body(lambda body: b"")
    out["idat_too_much"] = idat_body(lambda body: zlib.compress(zlib.decompress(body) * 2))
    out["idat_too_little"] = idat_body(lambda body: zlib.compress(zlib.decompress(body)[:-50]))
    out["idat_bad_filter"] = idat_body(lambda body: zlib.compress(b"\x09" + zlib.decompress(body)[1:]))
    out["no_idat"] = _rebuild([p for p in parts if p[0] != b"IDAT"])
    out["huge_size"] = _with_ihdr(data, 0, struct.pack(">II", 0x7FFFFFFF, 0x7FFFFFFF))
    out["huge_width"] = _with_ihdr(data, 0, struct.pack(">I", 1 << 30))
    out["zero_width"] = _with_ihdr(data, 0, struct.pack(">I", 0))
    out["zero_height"] = _with_ihdr(data, 4, struct.pack(">I", 0))
    out["bit_depth_3"] = _with_ihdr(data, 8, b"\x03")
    out["color_type_5"] = _with_ihdr(data, 9, b"\x05")
    out["compression_1"] = _with_ihdr(data, 10, b"\x01")
    out["filter_method_1"] = _with_ihdr(data, 11, b"\x01")
    out["interlace_2"] = _with_ihdr(data, 12, b"\x02")
    out["interlace_toggled"] = _with_ihdr(data, 12, b"\x00" if data[28] else b"\x01")
    out["bad_signature"] = b"\x89PNG\r\n\x1a\x00" + data[8:]
    out["signature_only"] = data[:8]
    if palette:
        out["no_plte"] = _rebuild([p for p in parts if p[0] != b"PLTE"])
        out["plte_short"] = _rebuild([(k, b[:6] if k == b"PLTE" else b) for k, b in parts])
        out["plte_not_multiple_of_3"] = _rebuild([(k, b[:-1] if k == b"PLTE" else b) for k, b in parts])
        out["plte_after_idat"] = _rebuild([p for p in parts if p[0] not in (b"PLTE", b"IEND")]
                                          + [p for p in parts if p[0] == b"PLTE"] + [(b"IEND", b"")])
        before = [p for p in parts if p[0] not in (b"IDAT", b"IEND")]
        out["trns_too_long"] = _rebuild(before + [(b"tRNS", b"\x80" * 300)] + parts[len(before):])
    return out


def others(rng):
    return {
        "empty.jpg": b"",
        "empty.png": b"",
        "text.jpg": b"This is not an image, only text named like one.\n" * 20,
        "one_byte.jpg": b"\xFF",
        "html.png": b"<html><body>404 Not Found</body></html>\n",
        "random.jpg": bytes(rng.integers(0, 256, 4096, dtype=np.uint8)),
        "zeros.png": b"\0" * 2048,
        "gif.jpg": _encode(Image.new("P", (9, 7)), "GIF"),
        "bmp.jpg": _encode(Image.new("RGB", (9, 7), (10, 20, 30)), "BMP"),
    }


def make_corpus(out_dir):
    """Writes the corpus into out_dir (created); returns the sorted paths."""
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(20261201)
    files = {}
    for name, (data, ext) in base_images().items():
        files[f"{name}.valid.{ext}"] = data
        if ext == "jpg":
            for m, d in jpeg_mutations(data, rng).items():
                files[f"{name}.{m}.jpg"] = d
            if name == "jpeg_progressive":
                for m, d in progressive_mutations(data, rng).items():
                    files[f"{name}.{m}.jpg"] = d
        else:
            for m, d in png_mutations(data, rng, palette=name == "png_palette").items():
                files[f"{name}.{m}.png"] = d
        other = "png" if ext == "jpg" else "jpg"
        files[f"{name}.wrong_extension.{other}"] = data
    for name, d in others(rng).items():
        files[f"other.{name}"] = d
    paths = []
    for name, d in sorted(files.items()):
        path = os.path.join(out_dir, name)
        with open(path, "wb") as f:
            f.write(d)
        paths.append(path)
    return paths


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    print(f"{len(make_corpus(sys.argv[1]))} files in {sys.argv[1]}")
