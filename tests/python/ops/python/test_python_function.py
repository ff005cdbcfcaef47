"""fn.python_function, fn.dl_tensor_python_function and the PyTorch plugin's
torch_python_function: results against NumPy and DALI, the function's
errors reaching run() chained, bad outputs named, no deadlock with Python
threads, no crash on close or exit while a function runs."""

import gc
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import ladle
from conftest import dali_or_skip
from ladle import fn, pipeline_def, types

BATCH = 4


def ragged(i):
    """Batch i: BATCH int32 samples of shapes (1+k, 3), values from i and k."""
    return [np.arange((1 + k) * 3, dtype=np.int32).reshape(1 + k, 3) + 100 * i + 10 * k for k in range(BATCH)]


def run_graph(lib, graph, iterations=2, **pipe_args):
    """Runs graph(fn) on an external source of ragged() batches in ladle or
    DALI (lib = "ladle" | "dali"); per output, all samples of all iterations."""
    if lib == "dali":
        dali = dali_or_skip()
        import nvidia.dali.fn as lib_fn
        pipe = dali.Pipeline(batch_size=BATCH, num_threads=2, device_id=None, **pipe_args)
    else:
        lib_fn = fn
        pipe = ladle.Pipeline(batch_size=BATCH, num_threads=2, **pipe_args)
    with pipe:
        x = lib_fn.external_source(source=ragged, batch=True, layout="HW")
        outs = graph(lib_fn, x)
        outs = outs if isinstance(outs, tuple) else (outs,)
        pipe.set_outputs(*outs)
    pipe.build()
    got = [[] for _ in outs]
    layouts = []
    for _ in range(iterations):
        res = pipe.run()
        layouts = [t.layout() for t in res]
        for k, tl in enumerate(res):
            got[k] += [np.array(tl.at(i)) for i in range(len(tl))]
    if lib == "ladle":
        pipe.close()
    return got, layouts


def both(graph, **kw):
    mine, lay = run_graph("ladle", graph, **kw)
    dali, dlay = run_graph("dali", graph, **kw)
    assert lay == dlay
    assert len(mine) == len(dali)
    for out_m, out_d in zip(mine, dali):
        assert len(out_m) == len(out_d)
        for a, b in zip(out_m, out_d):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_array_equal(a, b)
    return mine


# --- results: NumPy formulas and DALI (exact: the same Python code runs in both) ---

def test_per_sample_against_numpy_and_dali():
    def graph(f, x):
        return f.python_function(x, function=lambda a: (a * 2 + 1).astype(np.float32))

    (out,) = both(graph)
    for i in range(2):
        for k, a in enumerate(ragged(i)):
            np.testing.assert_array_equal(out[i * BATCH + k], (a * 2 + 1).astype(np.float32))


def test_batch_processing_and_several_outputs():
    def graph(f, x):
        s, t = f.python_function(x, function=lambda b: ([a.sum(keepdims=True) for a in b], [a.T for a in b]),
                                 num_outputs=2, batch_processing=True, output_layouts=["XY", "WH"])
        return s, t

    s, t = both(graph)
    for i in range(2):
        for k, a in enumerate(ragged(i)):
            np.testing.assert_array_equal(s[i * BATCH + k], a.sum(keepdims=True))
            np.testing.assert_array_equal(t[i * BATCH + k], a.T)


def test_two_inputs_no_inputs_one_string_for_every_layout():
    def graph(f, x):
        y = f.python_function(x, x, function=lambda a, b: a + b)
        z = f.python_function(function=lambda: np.ones((2, 2), np.float64))
        u, v = f.python_function(x, function=lambda a: (a, a + 1), num_outputs=2, output_layouts="AB")
        return y, z, u, v

    y, z, u, v = both(graph)
    np.testing.assert_array_equal(y[1], ragged(0)[1] * 2)
    assert z[0].dtype == np.float64 and z[0].shape == (2, 2)


def test_bool_float16_and_0d_outputs():
    def graph(f, x):
        return (f.python_function(x, function=lambda a: a > 110),
                f.python_function(x, function=lambda a: a.astype(np.float16)),
                f.python_function(x, function=lambda a: np.array(a.max())))

    b, h, m = both(graph)
    assert b[0].dtype == np.bool_ and h[0].dtype == np.float16 and m[0].shape == ()


def test_num_outputs_zero_runs_for_its_side_effects():
    seen = []

    def graph(f, x):
        f.python_function(x, function=lambda a: seen.append(a.shape), num_outputs=0)
        return x

    run_graph("ladle", graph, iterations=1)
    assert seen[:BATCH] == [(1, 3), (2, 3), (3, 3), (4, 3)]  # (and the iterations prepared ahead)
    assert len(seen) % BATCH == 0


def test_dl_tensor_python_function_gets_capsules():
    pytest.importorskip("torch")

    def graph(f, x):  # DALI's default for this operator: batch_processing=True, a list of capsules
        return f.dl_tensor_python_function(x, function=lambda b: [_to_dl(np.from_dlpack(_Cap(c)) * 2) for c in b])

    (out,) = both(graph)
    np.testing.assert_array_equal(out[2], ragged(0)[2] * 2)


class _Cap:
    def __init__(self, c):
        self.c = c

    def __dlpack__(self, stream=None):
        return self.c

    def __dlpack_device__(self):
        return (1, 0)


def _to_dl(a):
    import torch.utils.dlpack
    return torch.utils.dlpack.to_dlpack(torch.from_numpy(np.ascontiguousarray(a)))


def test_torch_python_function_against_torch():
    # DALI's TorchPythonFunction makes a torch.cuda.Stream even on the cpu, which a CPU-only torch refuses:
    # compared with the torch formula only.
    torch = pytest.importorskip("torch")
    import ladle.plugin.pytorch as lp

    def graph(f, x):
        y = lp.fn.torch_python_function(x, function=lambda t: torch.flip(t, [0]) * 3)
        z = lp.fn.torch_python_function(x, function=lambda ts: [t.sum(0) for t in ts], batch_processing=True)
        return y, z

    (y, z), _ = run_graph("ladle", graph)
    for i in range(2):
        for k, a in enumerate(ragged(i)):
            np.testing.assert_array_equal(y[i * BATCH + k], a[::-1] * 3)
            np.testing.assert_array_equal(z[i * BATCH + k], a.sum(0))


def test_torch_python_function_class():
    torch = pytest.importorskip("torch")
    from ladle.plugin.pytorch import TorchPythonFunction

    op = TorchPythonFunction(function=lambda t: t.to(torch.float32) / 2)
    (out,), _ = run_graph("ladle", lambda f, x: op(x), iterations=1)
    np.testing.assert_array_equal(out[0], ragged(0)[0] / 2)


def test_inputs_are_read_only_views():
    seen = []

    def graph(f, x):
        def look(a):
            seen.append(a.flags.writeable)
            return a
        return f.python_function(x, function=look)

    run_graph("ladle", graph, iterations=1)
    assert seen and not any(seen)


def test_outputs_feed_other_operators():
    # The operators reading a Python function's output learn its type at the first iteration.
    def graph(f, x):
        y = f.python_function(x, function=lambda a: np.stack([a, a, a], -1).astype(np.uint8), output_layouts="HWC")
        return f.flip(y, horizontal=1), f.cast(y, dtype=types.FLOAT if f is fn else _dali_float())

    flipped, cast = both(graph)
    a = np.stack([ragged(0)[1]] * 3, -1).astype(np.uint8)
    np.testing.assert_array_equal(flipped[1], a[:, ::-1])


def _dali_float():
    import nvidia.dali.types as t
    return t.FLOAT


# --- errors ---------------------------------------------------------------------

def one(function, **kw):
    @pipeline_def(batch_size=BATCH, num_threads=1)
    def pipe():
        x = fn.external_source(source=ragged, batch=True)
        return fn.python_function(x, function=function, **kw)
    return pipe()


def test_an_exception_reaches_run_chained_with_the_operator_named():
    def f(a):
        if a[0, 0] == 10:
            raise ZeroDivisionError("no such thing")
        return a

    p = one(f)
    with pytest.raises(ladle.Error) as info:
        p.run()
    text = str(info.value)
    assert "python_function" in text and "sample 1" in text and "ZeroDivisionError: no such thing" in text
    assert "[python exception" not in text
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    import traceback
    assert "in f" in "".join(traceback.format_exception(info.value.__cause__))
    p.close()


@pytest.mark.parametrize("function,kw,message", [
    (lambda a: [1, 2], {}, "output 0, sample 0: the function returned list; it must return NumPy arrays"),
    (lambda a: 5, {}, "returned int"),
    (lambda a: np.array(["a"]), {}, "cannot hold"),
    (lambda a: a if a.shape[0] == 1 else a.astype(np.float32), {}, "samples of an output must share a dtype"),
    (lambda a: a if a.shape[0] == 1 else a[None], {}, "samples of an output must share a dtype and rank"),
    (lambda a: (a, a), {}, "tuple of 2 for num_outputs=1"),
    (lambda a: a, {"num_outputs": 2}, "with num_outputs=2 it must return a tuple of 2"),
    (lambda a: (a, a, a), {"num_outputs": 2}, "returned 3 outputs, expected num_outputs=2"),
    (lambda b: b[:1], {"batch_processing": True}, "a list of 1 samples for a batch of 4"),
    (lambda b: np.stack([x[:1] for x in b]), {"batch_processing": True}, "must return a list of samples"),
    (lambda a: a, {"output_layouts": "XYZ"}, "\"XYZ\" does not fit output 0 of rank 2"),
])
def test_bad_outputs_are_named(function, kw, message):
    p = one(function, **kw)
    with pytest.raises(ladle.InvalidArgumentError, match="python_function") as info:
        p.run()
    assert message in str(info.value)
    p.close()


def test_a_changing_output_type_is_an_error():
    calls = []

    def f(a):
        calls.append(1)
        return a if len(calls) <= BATCH else a.astype(np.float64)

    p = one(f)
    p.run()
    with pytest.raises(ladle.InvalidArgumentError, match="earlier iterations gave int32 of rank 2"):
        p.run()
    p.close()


def test_an_output_a_reader_cannot_take_fails_at_the_first_run():
    @pipeline_def(batch_size=BATCH, num_threads=1)
    def pipe():
        x = fn.external_source(source=ragged, batch=True)
        return fn.resize(fn.python_function(x, function=lambda a: a.astype(np.float64)), resize_x=4, resize_y=4)

    p = pipe()
    with pytest.raises(ladle.Error, match="resize"):
        p.run()
    p.close()


def test_bad_arguments():
    @pipeline_def(batch_size=BATCH, num_threads=1)
    def pipe(**kw):
        x = fn.external_source(source=ragged, batch=True)
        return fn.python_function(x, **kw)

    with pytest.raises(ladle.InvalidArgumentError, match="'function' must be callable"):
        pipe(function=3)
    with pytest.raises(ladle.InvalidArgumentError, match="num_outputs"):
        pipe(function=abs, num_outputs=-1)
    with pytest.raises(ladle.InvalidArgumentError, match="output_layouts' has 3 entries"):
        pipe(function=abs, num_outputs=2, output_layouts=["A", "B", "C"]).build()
    with pytest.raises(ladle.InvalidArgumentError, match="unknown argument"):
        pipe(function=abs, frobnicate=1)
    with pytest.raises(TypeError):
        pipe()  # no function


# --- threads, closing, exit -------------------------------------------------------

def test_python_threads_run_beside_the_function():
    # run() waits without the GIL; a thread the function waits for makes progress.
    event = threading.Event()
    ticks = []

    def ticker():
        while not event.is_set():
            ticks.append(1)
            event.wait(0.001)

    t = threading.Thread(target=ticker)
    t.start()

    def f(a):
        n = len(ticks)
        for _ in range(2000):
            if len(ticks) > n:
                break
            threading.Event().wait(0.001)
        return a + (len(ticks) > n)

    p = one(f)
    try:
        (out,) = p.run()
        assert all(int(np.array(out.at(i))[0, 0]) == ragged(0)[i][0, 0] + 1 for i in range(BATCH))
    finally:
        event.set()
        t.join()
        p.close()


def _python(code, timeout=60):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env=_env())


def _env():
    import os
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(ladle.__path__[0])] + sys.path)
    return env


PRELUDE = """
import time, numpy as np, ladle
from ladle import fn, pipeline_def
@pipeline_def(batch_size=2, num_threads=1, prefetch_queue_depth=3)
def slow():
    x = fn.external_source(source=lambda i: [np.zeros(3, np.int32)] * 2, batch=True)
    return fn.python_function(x, function=lambda a: (time.sleep(0.05), a + 1)[1])
"""


def test_close_while_the_function_runs():
    r = _python(PRELUDE + """
p = slow()
p.run()
time.sleep(0.02)  # the executor is inside the function, prefetching
p.close()
print("closed")
""")
    assert r.returncode == 0 and "closed" in r.stdout, r.stderr


def test_exit_and_garbage_collection_without_close():
    r = _python(PRELUDE + """
import gc
p = slow()
p.run()
q = slow()
q.run()
del q
gc.collect()
print("ok")
""")  # p is left to the interpreter's exit
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr


def test_an_exception_in_a_thread_pipeline_does_not_hang():
    r = _python("""
import threading, numpy as np, ladle
from ladle import fn, pipeline_def
@pipeline_def(batch_size=2, num_threads=1)
def bad():
    x = fn.external_source(source=lambda i: [np.zeros(3, np.int32)] * 2, batch=True)
    return fn.python_function(x, function=lambda a: 1 / 0)
out = []
def work():
    p = bad()
    try:
        p.run()
    except ladle.Error as e:
        out.append(type(e.__cause__).__name__)
    p.close()
ts = [threading.Thread(target=work) for _ in range(3)]
[t.start() for t in ts]
[t.join() for t in ts]
print(out)
""")
    assert r.returncode == 0 and r.stdout.strip() == "['ZeroDivisionError', 'ZeroDivisionError', 'ZeroDivisionError']", \
        r.stderr


def test_pipelines_with_functions_are_collected():
    import weakref

    p = one(lambda a: a)
    p.run()
    ref = weakref.ref(p)
    del p
    gc.collect()
    assert ref() is None


# --- GPU ----------------------------------------------------------------------------

@pytest.mark.gpu
def test_gpu_function_gets_cuda_arrays():
    torch = pytest.importorskip("torch")

    @pipeline_def(batch_size=BATCH, num_threads=1, device_id=0)
    def pipe():
        x = fn.external_source(source=lambda i: [a.astype(np.float32) for a in ragged(i)][:1] * BATCH, batch=True)
        y = fn.python_function(x.gpu(), function=lambda a: a * 2, device="gpu")
        return y, fn.cast(y, dtype=types.INT32)

    p = pipe()
    y, z = p.run()
    assert y._batch.device == "cuda"
    a = y.as_cpu()
    np.testing.assert_array_equal(np.array(a.at(0)), ragged(0)[0].astype(np.float32) * 2)
    np.testing.assert_array_equal(np.array(z.as_cpu().at(0)), ragged(0)[0] * 2)
    p.close()


def test_a_pipeline_collected_inside_its_own_function():
    # Garbage collection can run inside a function, on the executor thread; a pipeline it collects there is
    # closed later from another thread (never by its own executor, which could not stop itself).
    r = _python("""
import gc, time, numpy as np, ladle
from ladle import fn, pipeline_def
@pipeline_def(batch_size=2, num_threads=1, prefetch_queue_depth=2)
def pipe():
    x = fn.external_source(source=lambda i: [np.zeros(3, np.int32)] * 2, batch=True)
    return fn.python_function(x, function=lambda a: (gc.collect(), a + 1)[1])
def make():
    p = pipe()
    p.cycle = [p]  # only the garbage collector frees it
    p.run()
make()
time.sleep(0.5)  # the executor prepares more iterations, collecting in them
q = pipe()
q.run()  # closes what was left to close
print("ok")
""")
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr


@pytest.mark.parametrize("flags", [{}, {"exec_async": False, "exec_pipelined": False}])
def test_any_executor_flags(flags):
    # DALI < 1.x asked for exec_async=False, exec_pipelined=False with Python functions; DALI 2.4 and ladle
    # take either.
    def graph(f, x):
        return f.python_function(x, function=lambda a: a - 1)

    (out,) = both(graph, **flags)
    np.testing.assert_array_equal(out[0], ragged(0)[0] - 1)


def test_inside_a_conditional_pipeline():
    # The pipeline function's rewrite reaches the functions defined in it; on NumPy values their ifs, and/or
    # stay Python's.
    @pipeline_def(batch_size=BATCH, num_threads=1, enable_conditionals=True)
    def pipe():
        x = fn.external_source(source=ragged, batch=True)

        def f(a):
            if a.sum() > 100 and not a.min() < 0:
                return a * 0
            return a

        y = fn.python_function(x, function=f)
        if fn.random.coin_flip(probability=1.0):
            y = y + 1
        return y

    p = pipe()
    (out,) = p.run()
    for k, a in enumerate(ragged(0)):
        np.testing.assert_array_equal(np.array(out.at(k)), (a * 0 if a.sum() > 100 else a) + 1)
    p.close()
