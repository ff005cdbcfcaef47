"""Element-wise chains of math.arithmetic merged into one pass (pipeline/plan.c,
LADLE_OP_ELEMENTWISE): fused results against the same pipelines built with
LADLE_NO_FUSION=1 (run in a subprocess, bit for bit), against NumPy formulas
with per-step rounding written here, and on the GPU against the CPU."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import ladle
from ladle import fn, types
from conftest import requires_ops

pytestmark = requires_ops("math.arithmetic")

T = {"bool": types.BOOL, "uint8": types.UINT8, "int32": types.INT32, "float16": types.FLOAT16,
     "float32": types.FLOAT}
BATCH = 3
f32, f16 = np.float32, np.float16


def inputs(seed=0):
    """Per sample: tensors of several types and shapes, and per-sample scalars."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(BATCH):
        h = 4 + i  # shapes differ per sample
        out.append({
            "f": rng.uniform(-4, 4, (h, 37)).astype(f32),
            "g": rng.uniform(-4, 4, (1, 37)).astype(f32),   # broadcast over rows
            "c": rng.uniform(-4, 4, (h, 1)).astype(f32),    # broadcast over columns
            "h": rng.uniform(-4, 4, (h, 37)).astype(f16),
            "u": rng.integers(0, 256, (h, 37)).astype(np.uint8),
            "v": rng.integers(0, 256, (37,)).astype(np.uint8),  # lower rank
            "i": rng.integers(-1000, 1000, (h, 37)).astype(np.int32),
            "s": np.array(rng.uniform(0.5, 2), f32),            # per-sample scalar, shape []
            "k": np.array(int(rng.integers(1, 9)), np.int32),   # per-sample int scalar
            "b": rng.integers(0, 2, (h, 37)).astype(bool),
        })
    return out


def s16(x):
    return np.asarray(x, f32).astype(f16)


# name: (expression on the sources, NumPy formula with DALI's per-step types and
# rounding, or None where the unfused run is the reference). Each step of a
# formula is rounded to its type as math.arithmetic stores it.
CASES = {
    "affine_f32": (lambda d: d["f"] * 0.5 + 1, lambda d: (d["f"] * f32(0.5)) + f32(1)),
    "five_steps_f32": (lambda d: (((d["f"] * 0.5 + 1) - d["g"]) * d["c"]) / 3.0,
                       lambda d: (((d["f"] * f32(0.5) + f32(1)) - d["g"]) * d["c"]) / f32(3)),
    "constant_left_and_minus": (lambda d: -(1 - d["f"]) * 2, lambda d: -(f32(1) - d["f"]) * f32(2)),
    "sqrt_of_square": (lambda d: ladle.math.sqrt(d["f"] * d["f"] + 1), lambda d: np.sqrt(d["f"] * d["f"] + f32(1))),
    # uint8 + uint8 wraps in uint8; * an int (an int32 constant) promotes to int32.
    "uint8_wraps_then_float": (lambda d: (d["u"] + d["v"]) * 3 - 7 + 0.5,
                               lambda d: (((d["u"].astype(np.int32) + d["v"]) % 256 * 3 - 7)
                                          .astype(f32) + f32(0.5))),
    "int32_floor_div_mod": (lambda d: (d["i"] * 7 - 3) // 5 + d["i"] % 4,
                            lambda d: np.fix((d["i"] * 7 - 3) / 5).astype(np.int32) + np.fmod(d["i"], 4)),
    "per_sample_scalars": (lambda d: d["f"] * d["s"] + d["k"] - d["s"],
                           lambda d: (d["f"] * d["s"] + f32(d["k"])) - d["s"]),
    # float16 * float16 rounds to float16; - a float (a float32 constant) promotes to float32.
    "float16_chain": (lambda d: (d["h"] * d["h"] - 1.5) * d["h"],
                      lambda d: (s16(d["h"].astype(f32) * d["h"]).astype(f32) - f32(1.5)) * d["h"]),
    "float16_only": (lambda d: (d["h"] * d["h"] + d["h"]) * d["h"],
                     lambda d: s16(s16(s16(d["h"].astype(f32) * d["h"]).astype(f32) + d["h"]).astype(f32) * d["h"])),
    "float16_with_float32": (lambda d: d["h"] * 2 + d["f"], lambda d: s16(d["h"].astype(f32) * 2).astype(f32) + d["f"]),
    "comparison_chain": (lambda d: (d["f"] * 2 < d["g"]) == d["b"], lambda d: (d["f"] * f32(2) < d["g"]) == d["b"]),
    "bool_arith": (lambda d: (d["f"] > 0) + (d["f"] < 1) * 3,
                   lambda d: ((d["f"] > 0).astype(np.int32) + (d["f"] < 1).astype(np.int32) * 3)),
    "eight_steps": (lambda d: ((((((((d["f"] + 1) * 2) - 3) / 4) + d["g"]) * d["c"]) - d["s"]) * 0.25),
                    lambda d: ((((((((d["f"] + f32(1)) * f32(2)) - f32(3)) / f32(4)) + d["g"]) * d["c"]) - d["s"])
                               * f32(0.25))),
    "twelve_steps_split": (lambda d: _long(d["f"], 12), lambda d: _long(d["f"], 12, np_=True)),
    "clamp_and_functions": (lambda d: ladle.math.clamp(ladle.math.abs(d["f"] - 1) * 2, 0.5, 3) + ladle.math.floor(d["c"]),
                            lambda d: np.clip(np.abs(d["f"] - f32(1)) * f32(2), f32(0.5), f32(3)) + np.floor(d["c"])),
    "diamond_shared_input": (lambda d: (d["f"] + 1) * (d["f"] - 1) + d["f"], lambda d: (d["f"] + f32(1)) * (d["f"] - f32(1)) + d["f"]),
    "exp_chain": (lambda d: ladle.math.exp(d["f"] * 0.5) - 1, None),
}


def _long(x, n, np_=False):
    for j in range(n):
        c = (j % 3) + 1
        if np_:
            x = x * f32(0.5) + f32(c) if j % 2 else x - f32(c)
        else:
            x = x * 0.5 + c if j % 2 else x - c
    return x


SOURCES = ("f", "g", "c", "h", "u", "v", "i", "s", "k", "b")


def run_case(name, device="cpu", data=None):
    """(per-sample outputs, executor_statistics) of case `name`."""
    data = data or inputs()
    pipe = ladle.Pipeline(batch_size=BATCH, num_threads=2, device_id=0 if device == "gpu" else None)
    try:
        with pipe:
            nodes = {}
            for k in SOURCES:
                a = data[0][k]
                nodes[k] = fn.external_source(name=k, dtype=T[a.dtype.name], ndim=a.ndim)
                if device == "gpu":
                    nodes[k] = nodes[k].gpu()
            pipe.set_outputs(CASES[name][0](nodes))
        for k in SOURCES:
            pipe.feed_input(k, [d[k] for d in data])
        (tl,) = pipe.run()
        if device == "gpu":
            tl = tl.as_cpu()
        return [np.array(tl.at(i)) for i in range(BATCH)], pipe.executor_statistics()
    finally:
        pipe.close()


def dump(devices, path):
    """Every case's outputs as lists (for the LADLE_NO_FUSION=1 subprocess)."""
    out = {}
    for dev in devices:
        for name in CASES:
            arrays, _ = run_case(name, dev)
            out[f"{dev}:{name}"] = [[a.dtype.name, list(a.shape), a.tobytes().hex()] for a in arrays]
    with open(path, "w") as f:
        json.dump(out, f)


def in_subprocess(call):
    """stdout of `call` (an expression on this module, `t`) run with LADLE_NO_FUSION=1."""
    here = os.path.dirname(os.path.abspath(__file__))
    tests = os.path.dirname(os.path.dirname(here))
    package = os.path.dirname(os.path.dirname(os.path.abspath(ladle.__file__)))
    code = f"import sys; sys.path[:0] = [{here!r}, {tests!r}, {package!r}]; import test_math_fusion as t; print({call})"
    return subprocess.run([sys.executable, "-c", code], env=dict(os.environ, LADLE_NO_FUSION="1"), check=True,
                          capture_output=True, text=True, cwd=here).stdout


def unfused(devices, tmp_path):
    path = tmp_path / "unfused.json"
    in_subprocess(f"t.dump({list(devices)!r}, {str(path)!r})")
    with open(path) as f:
        raw = json.load(f)
    return {k: [np.frombuffer(bytes.fromhex(h), dtype=t).reshape(s) for t, s, h in v] for k, v in raw.items()}


def fused_count(stats):
    return sum(op["fused"] for op in stats["operators"] if op["op"] == "math.arithmetic")


def test_fused_equals_unfused_bit_for_bit(tmp_path):
    ref = unfused(["cpu"], tmp_path)
    for name in CASES:
        got, stats = run_case(name)
        assert fused_count(stats) > 0, name
        for a, b in zip(got, ref[f"cpu:{name}"]):
            assert a.dtype == b.dtype and a.shape == b.shape, name
            assert a.tobytes() == b.tobytes(), name


@pytest.mark.parametrize("name", [n for n in CASES if CASES[n][1] is not None])
def test_fused_vs_numpy(name):
    data = inputs(1)
    got, _ = run_case(name, data=data)
    for a, d in zip(got, data):
        want = np.asarray(CASES[name][1](d))
        assert a.shape == want.shape, name
        if a.dtype == np.bool_ or want.dtype == np.bool_:
            np.testing.assert_array_equal(a.astype(bool), want.astype(bool), err_msg=name)
        else:
            assert a.dtype == want.dtype, (name, a.dtype, want.dtype)
            np.testing.assert_array_equal(a, want, err_msg=name)


def test_chain_runs_as_one_node():
    _, stats = run_case("five_steps_f32")
    ops = [op for op in stats["operators"] if op["op"] == "math.arithmetic"]
    assert len(ops) == 5 and [op["fused"] for op in ops] == [True] * 4 + [False]
    _, stats = run_case("eight_steps")
    assert fused_count(stats) == 7  # 8 steps: one program
    _, stats = run_case("twelve_steps_split")
    assert fused_count(stats) == 15  # 18 operations in programs of at most 8 steps: 8 + 8 + 2


def test_no_fusion_env_disables_merging():
    assert in_subprocess("t.fused_count(t.run_case('five_steps_f32')[1])").strip().splitlines()[-1] == "0"


def test_shared_or_output_intermediates_are_not_merged():
    data = inputs()
    pipe = ladle.Pipeline(batch_size=BATCH, num_threads=2, device_id=None)
    try:
        with pipe:
            x = fn.external_source(name="f", dtype=types.FLOAT, ndim=2)
            a = x * 2          # read by two nodes: kept
            b = a + 1          # a pipeline output: kept
            c = b * a - 3      # merges nothing it may not
            pipe.set_outputs(c, b)
        pipe.feed_input("f", [d["f"] for d in data])
        c, b = pipe.run()
        for i, d in enumerate(data):
            a = d["f"] * f32(2)
            np.testing.assert_array_equal(np.array(b.at(i)), a + f32(1))
            np.testing.assert_array_equal(np.array(c.at(i)), (a + f32(1)) * a - f32(3))
        fused = [op["fused"] for op in pipe.executor_statistics()["operators"] if op["op"] == "math.arithmetic"]
        assert fused == [False, False, True, False]  # only b * a merged into - 3
    finally:
        pipe.close()


def test_broadcast_error_and_division_by_zero_as_unfused():
    data = inputs()
    pipe = ladle.Pipeline(batch_size=BATCH, num_threads=2, device_id=None)
    with pipe:
        x = fn.external_source(name="i", dtype=types.INT32, ndim=2)
        k = fn.external_source(name="k", dtype=types.INT32, ndim=0)
        pipe.set_outputs((x + 1) // k * 2)
    try:
        pipe.feed_input("i", [d["i"] for d in data])
        pipe.feed_input("k", [np.array(2, np.int32), np.array(0, np.int32), np.array(1, np.int32)])
        with pytest.raises(ladle.Error, match="integer division by zero"):
            pipe.run()
    finally:
        pipe.close()
    pipe = ladle.Pipeline(batch_size=1, num_threads=2, device_id=None)
    with pipe:
        x = fn.external_source(name="a", dtype=types.FLOAT, ndim=2)
        y = fn.external_source(name="b", dtype=types.FLOAT, ndim=2)
        pipe.set_outputs((x + y) * 2)
    try:
        pipe.feed_input("a", [np.zeros((2, 3), f32)])
        pipe.feed_input("b", [np.zeros((4, 3), f32)])
        with pytest.raises(ladle.Error, match=r"\[2, 3\] and \[4, 3\] cannot be broadcast"):
            pipe.run()
    finally:
        pipe.close()


@pytest.mark.gpu
def test_gpu_fused_matches_cpu_and_unfused(tmp_path):
    ref = unfused(["gpu"], tmp_path)
    for name in CASES:
        cpu, _ = run_case(name, "cpu")
        gpu, stats = run_case(name, "gpu")
        assert fused_count(stats) > 0, name
        for c, g, u in zip(cpu, gpu, ref[f"gpu:{name}"]):
            assert g.tobytes() == u.tobytes(), name  # fused and unfused GPU kernels: the same formulas
            if name == "exp_chain":
                # CUDA's expf vs libm's: a few ulps (math_kernel.h), then one correctly rounded subtraction.
                np.testing.assert_allclose(g, c, rtol=1e-6, atol=1e-6)
            else:
                assert np.array_equal(g, c, equal_nan=g.dtype.kind == "f"), name


@pytest.mark.gpu
def test_gpu_integer_division_by_zero_gives_zero():
    data = inputs()
    pipe = ladle.Pipeline(batch_size=BATCH, num_threads=2, device_id=0)
    with pipe:
        x = fn.external_source(name="i", dtype=types.INT32, ndim=2).gpu()
        k = fn.external_source(name="k", dtype=types.INT32, ndim=0).gpu()
        pipe.set_outputs((x + 1) // k * 2)
    try:
        pipe.feed_input("i", [d["i"] for d in data])
        pipe.feed_input("k", [np.array(2, np.int32), np.array(0, np.int32), np.array(1, np.int32)])
        (out,) = pipe.run()
        out = out.as_cpu()
        np.testing.assert_array_equal(np.array(out.at(1)), np.zeros_like(data[1]["i"]))
        np.testing.assert_array_equal(np.array(out.at(0)), np.fix((data[0]["i"] + 1) / 2).astype(np.int32) * 2)
        assert fused_count(pipe.executor_statistics()) == 2
    finally:
        pipe.close()


FLAT_CASES = {  # (source type, expression): the CUDA kernel's vector loop (one leaf) and flat loop
    "uint8_affine": (np.uint8, lambda x: x * 0.5 + 1),            # uint8 -> float32 (the benchmark)
    "float32_affine": (f32, lambda x: (x - 0.25) * 3 / 7),        # float32 -> float32
    "float16_int_constants": (f16, lambda x: (x * 3 + 1) * x),    # float16 -> float16, float16 steps
    "float16_to_float32": (f16, lambda x: x * 0.5 + 1),          # float16 -> float32
    "uint8_constant_first": (np.uint8, lambda x: 1 - (2 - x * 0.25) / 3),  # constants on the left
    "uint8_two_leaves": (np.uint8, lambda x: x * 0.5 + x[:, :, 0:1]),      # two leaves: the flat loop
}


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(FLAT_CASES))
def test_gpu_flat_path_matches_cpu(name):
    """HWC samples of odd sizes packed in one batch (most start off a 16-byte boundary), one larger than
    one grid-stride pass (4096 blocks x 2048 elements)."""
    dtype, expr = FLAT_CASES[name]
    rng = np.random.default_rng(5)
    shapes = [(1, 1, 3), (225, 223, 3), (7, 13, 3), (1, 5, 1), (1500, 2001, 3), (3, 3, 3)]
    data = [(rng.integers(0, 256, s) if dtype == np.uint8 else rng.uniform(-4, 4, s)).astype(dtype) for s in shapes]
    outs = {}
    for dev in ("cpu", "gpu"):
        pipe = ladle.Pipeline(batch_size=len(shapes), num_threads=2, device_id=0 if dev == "gpu" else None)
        try:
            with pipe:
                x = fn.external_source(name="x", dtype=T[np.dtype(dtype).name], ndim=3)
                pipe.set_outputs(expr(x.gpu() if dev == "gpu" else x))
            pipe.feed_input("x", data)
            (tl,) = pipe.run()
            if dev == "gpu":
                tl = tl.as_cpu()
            outs[dev] = [np.array(tl.at(i)) for i in range(len(shapes))]
        finally:
            pipe.close()
    for c, g in zip(outs["cpu"], outs["gpu"]):
        assert c.dtype == g.dtype and c.shape == g.shape, name
        assert np.array_equal(g, c, equal_nan=True), name
    if name == "uint8_affine":
        np.testing.assert_array_equal(outs["cpu"][1], data[1].astype(f32) * f32(0.5) + f32(1))
