"""fork() and signals: a child of a process with pipelines exits cleanly and
builds its own; Ctrl-C interrupts run() without losing the iteration."""

import os
import signal
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import ladle
from ladle import fn

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")


def run_script(code, timeout=120):
    """Runs `code` in a fresh interpreter (so that a forked child's normal
    exit, with atexit and garbage collection, is what is tested); returns
    (exit code, output)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(ladle.__file__)) + os.pathsep + env.get("PYTHONPATH", "")
    try:
        proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail("a forked process hung")
    return proc.returncode, proc.stdout.decode(errors="replace")


FORK = """
    import os, sys, time
    import numpy as np
    import ladle, ladle.dynamic as ldd
    from ladle import fn

    def labels_pipe():
        pipe = ladle.Pipeline(batch_size=4, num_threads=2)
        with pipe:
            _, labels = fn.readers.file(file_root=ladle.sample_data_root())
            pipe.set_outputs(labels)
        return pipe

    parent = labels_pipe()
    parent.run()  # built: executor and workers running
    x = np.arange(24, dtype=np.uint8).reshape(2, 4, 3)
    ldd.flip(ldd.as_batch([x]))  # dynamic mode caches a pipeline and a pool
    pid = os.fork()
    if pid == 0:
        try:
            parent.run()
            print("child: the inherited pipeline ran")
            sys.exit(4)
        except ladle.StateError as e:
            assert "build the pipeline in this process" in str(e), e
        (labels,) = labels_pipe().run()
        assert len(labels) == 4
        out = ldd.flip(ldd.as_batch([x]))
        assert np.array_equal(np.array(out.tensors[0]), x[:, ::-1])
        print("child ok", flush=True)
        sys.exit(0)  # a normal exit: the inherited pipelines are collected
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        print("child hung")
        sys.exit(5)
    assert len(parent.run()[0]) == 4  # the parent goes on
    print("child exit", os.waitstatus_to_exitcode(status))
"""


def test_forked_child_exits_cleanly_builds_its_own_and_uses_dynamic_mode():
    code, out = run_script(FORK)
    assert code == 0, out
    assert "child ok" in out and "child exit 0" in out, out


def test_ctrl_c_interrupts_run_and_keeps_the_iteration():
    big = [np.zeros((600, 600, 3), np.uint8) + k for k in range(4)]
    pipe = ladle.Pipeline(batch_size=4, num_threads=1, prefetch_queue_depth=1)
    with pipe:
        x = fn.external_source(name="x")
        pipe.set_outputs(fn.resize(x, resize_x=3000, resize_y=3000, interp_type="LANCZOS3"))
    pipe.feed_input("x", big)
    main = threading.get_ident()
    timer = threading.Timer(0.3, lambda: signal.pthread_kill(main, signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        pipe.run()  # several seconds of resizing on one thread: interrupted long before it ends
    timer.join()
    assert pipe.get_position() == 0  # nothing was handed out, nothing lost
    (out,) = pipe.run()
    assert len(out) == 4 and np.array(out.at(3))[0, 0, 0] == 3
    pipe.close()
