"""Every file of tools/make_malformed_images.py's corpus through the CPU
pipeline (readers.file -> decoders.image), ladle.dynamic (readers.File ->
decoders.image) and, on a GPU machine, the mixed decoder: no crash and no hang
(each pass runs in a child process under a timeout), every error is a
ladle.Error naming the file, and what decodes agrees with Pillow where Pillow
decodes the same file.

Tolerance against Pillow: both decode with libjpeg-turbo (accurate integer
IDCT, fancy upsampling) and both libpng/zlib-inflate PNGs, so a file both
accept must agree to within 1 level everywhere on the CPU (test_decode.py's
JPEG bound; PNGs are exact in practice); the corrupt files both accept are
ones whose damage the decoders treat the same way (a flipped bit in entropy-
coded data decodes to the same wrong blocks in both). nvJPEG's IDCT and
upsampling differ from libjpeg's: the mixed decoder is held to a mean absolute
difference of 2 levels and a 99th percentile of 16 against Pillow, on the valid
JPEGs only (on corrupt data nvJPEG's recovery is its own); PNGs decode on the
CPU there and stay within 1.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

import ladle

from conftest import cuda_usable, requires_ops

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import make_malformed_images  # noqa: E402

pytestmark = requires_ops("readers.file", "decoders.image")

# One child pass: decodes each file alone (batch_size=1, so an error is that
# file's), prints a line before each file (so a hang names it), saves decoded
# pixels as .npy and writes {path: {"ok": bool, "error": str}} as JSON.
CHILD = r"""
import json, os, sys
import numpy as np
import ladle
from ladle import fn
mode, out, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
results = {}
if mode == "dynamic":
    import ladle.dynamic as ldd
for i, path in enumerate(paths):
    print("file", path, flush=True)
    try:
        if mode == "dynamic":
            reader = ldd.readers.File(files=[path])
            try:
                (enc, _), = list(reader.next_epoch(batch_size=1))
                img = np.array(ldd.decoders.image(enc).tensors[0])
            finally:
                reader.close()
        else:
            pipe = ladle.Pipeline(batch_size=1, num_threads=1, device_id=0 if mode == "mixed" else None)
            with pipe:
                enc, _ = fn.readers.file(files=[path])
                pipe.set_outputs(fn.decoders.image(enc, device=mode))
            try:
                (out_batch,) = pipe.run()
                img = np.array(out_batch.as_cpu()[0])
            finally:
                pipe.close()
        np.save(os.path.join(out, f"{i}.npy"), img)
        results[path] = {"ok": True}
    except ladle.Error as e:
        results[path] = {"ok": False, "error": str(e), "type": type(e).__name__}
    except Exception as e:  # not a ladle error: reported by the test
        results[path] = {"ok": False, "error": f"{type(e).__name__}: {e}", "type": "foreign"}
with open(os.path.join(out, "results.json"), "w") as f:
    json.dump(results, f)
print("done", flush=True)
"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_malformed_images.make_corpus(str(tmp_path_factory.mktemp("malformed")))


def run_child(mode, paths, out_dir, timeout=600):
    # The child imports the ladle this test runs (an instrumented one under tools/sanitize).
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(ladle.__file__)))
    env = dict(os.environ, PYTHONPATH=package_root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    try:
        proc = subprocess.run([sys.executable, "-c", CHILD, mode, str(out_dir)] + paths, env=env, timeout=timeout,
                              capture_output=True, text=True)
    except subprocess.TimeoutExpired as e:
        lines = [ln for ln in (e.stdout or b"").decode(errors="replace").splitlines() if ln.startswith("file ")]
        pytest.fail(f"{mode}: hung (no result within {timeout} s) on {lines[-1][5:] if lines else '?'}")
    files = [ln[5:] for ln in proc.stdout.splitlines() if ln.startswith("file ")]
    assert proc.returncode == 0, (f"{mode}: the child died (exit {proc.returncode}) on {files[-1] if files else '?'}"
                                  f"\n{proc.stderr[-3000:]}")
    with open(os.path.join(out_dir, "results.json")) as f:
        return json.load(f)


def pillow_decode(path):
    """Pillow's RGB decode, or None where Pillow refuses the file."""
    try:
        with Image.open(path) as im:
            im.load()
            return np.asarray(im.convert("RGB"))
    except Exception:  # any refusal: Pillow raises many kinds on corrupt data
        return None


def check(mode, corpus, results, out_dir, compare):
    """Errors are ladle.Errors naming the file; decodes agree
    with Pillow (compare(path, ours, pillow) -> a message or None)."""
    problems, decoded, compared = [], 0, 0
    for i, path in enumerate(corpus):
        r = results[path]
        name = os.path.basename(path)
        if not r["ok"]:
            if r["type"] == "foreign":
                problems.append(f"{name}: not a ladle.Error: {r['error']}")
            elif name not in r["error"]:
                problems.append(f"{name}: the error does not name the file: {r['error']}")
            continue
        decoded += 1
        ours = np.load(os.path.join(out_dir, f"{i}.npy"))
        ref = pillow_decode(path)
        if ref is None:
            continue
        compared += 1
        msg = compare(path, ours, ref)
        if msg:
            problems.append(f"{name}: {msg}")
    print(f"{mode}: {len(corpus)} files, {decoded} decoded, {compared} compared with Pillow, "
          f"{len(corpus) - decoded} refused")
    assert not problems, f"{mode}: {len(problems)} problems:\n" + "\n".join(problems)
    return decoded, compared


def within(tol):
    def compare(path, ours, ref):
        if ours.shape != ref.shape:
            return f"shape {ours.shape} != Pillow's {ref.shape}"
        diff = np.abs(ours.astype(np.int16) - ref.astype(np.int16)).max()
        return f"max difference {diff} > {tol}" if diff > tol else None
    return compare


def test_corpus_is_deterministic_and_varied(tmp_path, corpus):
    again = make_malformed_images.make_corpus(str(tmp_path / "again"))
    assert [os.path.basename(p) for p in again] == [os.path.basename(p) for p in corpus]
    for a, b in zip(again, corpus):
        assert open(a, "rb").read() == open(b, "rb").read(), a
    names = " ".join(os.path.basename(p) for p in corpus)
    for kind in ("trunc_", "bitflip", "huge_size", "zero_width", "dht_", "cut_in_scan", "bad_crc", "idat_",
                 "plte_", "interlace", "other.text.jpg", "other.empty.jpg", "wrong_extension"):
        assert kind in names, kind
    assert len(corpus) > 300


def test_cpu_pipeline(corpus, tmp_path):
    results = run_child("cpu", corpus, tmp_path)
    decoded, compared = check("cpu", corpus, results, tmp_path, within(1))
    valid = [p for p in corpus if ".valid." in p or ".wrong_extension." in p]
    assert all(results[p]["ok"] for p in valid), [os.path.basename(p) for p in valid if not results[p]["ok"]]
    assert compared >= len(valid)
    # Things no decoder can make pixels of are refused.
    for p in corpus:
        if any(k in p for k in ("trunc_1.", "other.", "zero_width", "zero_height", "huge_size", "no_idat",
                                "signature_only", "soi_only", "eoi_only")) and "bmp" not in p and "gif" not in p:
            assert not results[p]["ok"], os.path.basename(p)


def test_dynamic(corpus, tmp_path):
    results = run_child("dynamic", corpus, tmp_path)
    check("dynamic", corpus, results, tmp_path, within(1))
    cpu_dir = tmp_path / "cpu"
    cpu_dir.mkdir()
    cpu = run_child("cpu", corpus, cpu_dir)
    assert {p: r["ok"] for p, r in results.items()} == {p: r["ok"] for p, r in cpu.items()}


@pytest.mark.gpu
def test_mixed_decoder(corpus, tmp_path):
    if not cuda_usable():
        pytest.skip("no usable CUDA device")
    results = run_child("mixed", corpus, tmp_path)

    def compare(path, ours, ref):
        if ours.shape != ref.shape:
            return f"shape {ours.shape} != Pillow's {ref.shape}"
        diff = np.abs(ours.astype(np.int16) - ref.astype(np.int16))
        if path.endswith(".png") and ".wrong_extension." not in path or "png_" in os.path.basename(path):
            return f"PNG max difference {diff.max()} > 1" if diff.max() > 1 else None
        if ".valid." in path and (diff.mean() > 2 or np.percentile(diff, 99) > 16):
            return f"mean difference {diff.mean():.2f} > 2 or 99th percentile {np.percentile(diff, 99)} > 16"
        return None

    check("mixed", corpus, results, tmp_path, compare)
