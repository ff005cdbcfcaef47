"""Checkpoints of ladle.dynamic: a training-style loop (reader -> decode ->
random crop -> random mirror) stopped mid-epoch and resumed from a saved
Checkpoint in fresh objects continues with byte-identical batches."""

import json

import numpy as np
import pytest

import ladle

ldd = pytest.importorskip("ladle.dynamic")

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]


def step(jpegs, rng):
    images = ldd.decoders.image(jpegs)
    images = ldd.random_resized_crop(images, size=[32, 32], rng=rng)
    mirror = ldd.random.coin_flip(batch_size=len(images), rng=rng)
    out = ldd.crop_mirror_normalize(images, dtype=ldd.float32, mean=MEAN, mirror=mirror)
    return np.array(out).tobytes()


def make(sample_root):
    reader = ldd.readers.File(file_root=sample_root, random_shuffle=True, seed=5)
    return reader, ldd.random.RNG(seed=123)


def run(reader, rng, steps, epochs=3, batch_size=6):
    """Up to `steps` step results, going over epochs; stops mid-epoch."""
    out = []
    for _ in range(epochs):
        for jpegs, labels in reader.next_epoch(batch_size=batch_size):
            out.append(step(jpegs, rng) + np.array(labels).tobytes())
            if len(out) == steps:
                return out
    return out


def test_resume_is_byte_identical(sample_root, tmp_path):
    reader, rng = make(sample_root)
    whole = run(reader, rng, steps=15)  # 32 files, batch 6: 6 steps an epoch, so 2.5 epochs
    assert len(whole) == 15
    reader.close()

    for seq, stop in enumerate((3, 6, 8)):  # mid-epoch, on an epoch boundary, in the second epoch
        reader, rng = make(sample_root)
        ckpt = ldd.checkpoint.Checkpoint()
        ckpt.register(reader, "reader")
        ckpt.register(rng, "rng")
        first = run(reader, rng, steps=stop)
        ckpt.collect()
        path = ckpt.save(str(tmp_path / "ckpt_{seq:03d}.json"))
        assert path == str(tmp_path / f"ckpt_{seq:03d}.json")
        reader.close()

        reader2, rng2 = make(sample_root)
        loaded = ldd.checkpoint.Checkpoint()
        assert loaded.load(str(tmp_path / "ckpt_{seq:03d}.json")) == path  # the newest file
        loaded.register(reader2, "reader")
        loaded.register(rng2, "rng")
        rest = []
        for _ in range(3):
            for jpegs, labels in reader2.next_epoch(batch_size=6):
                rest.append(step(jpegs, rng2) + np.array(labels).tobytes())
                if stop + len(rest) == 15:
                    break
            if stop + len(rest) == 15:
                break
        assert first == whole[:stop]
        assert rest == whole[stop:], f"resume after {stop} steps differs"
        reader2.close()


def test_reader_state_in_sample_mode_and_errors(sample_root):
    reader = ldd.readers.File(file_root=sample_root)
    it = reader.next_epoch()
    taken = [np.array(next(it)[0]).tobytes() for _ in range(40 % 32 + 3)]
    state = reader.get_state()
    json.dumps(state)  # plain values
    rest = [np.array(s[0]).tobytes() for s in it]
    again = ldd.readers.File(file_root=sample_root)
    again.set_state(json.dumps(state))
    assert [np.array(s[0]).tobytes() for s in again.next_epoch()] == rest
    assert len(taken) + len(rest) == 32
    with pytest.raises(ladle.InvalidArgumentError, match="not a reader state"):
        again.set_state({"epoch": 1})
    ckpt = ldd.checkpoint.Checkpoint()
    with pytest.raises(TypeError, match="get_state"):
        ckpt.register(object())
    with pytest.raises(ladle.InvalidArgumentError, match="not a ladle.dynamic checkpoint"):
        ckpt.deserialize("{}")
    assert ckpt.register(reader) == "__op_0" and ckpt.register(reader) == "__op_0" and "__op_0" in ckpt
    assert ldd.checkpoint.current() is ldd.EvalContext.current().checkpoint
