"""enable_conditionals against DALI 2.4 itself: and/or/not on DataNodes,
nested if/elif/else, helper functions with their own ifs, numbers meeting
DataNodes at a join, and the errors DALI gives (a variable set in one branch
only and read after; non-bool operands of and/or)."""

import numpy as np
import pytest

import ladle
from conftest import dali_or_skip
from ladle import fn, pipeline_def

N = 6


def values(i):
    return [np.array(k + i, np.int32) for k in range(N)]


def run(lib, body, iterations=2):
    """Outputs of body(fn, x) on scalar int32 samples 0..N-1 (+ iteration), or the exception."""
    if lib == "dali":
        dali = dali_or_skip()
        import nvidia.dali.fn as lib_fn
        deco = dali.pipeline_def(batch_size=N, num_threads=1, device_id=None, enable_conditionals=True)
    else:
        lib_fn, deco = fn, pipeline_def(batch_size=N, num_threads=1, enable_conditionals=True)

    def graph():
        x = lib_fn.external_source(source=values, batch=True)
        return body(lib_fn, x)

    graph.__name__ = body.__name__
    try:
        pipe = deco(graph)()
        pipe.build()
        got = []
        for _ in range(iterations):
            outs = pipe.run()
            got.append([[np.array(t.at(i)) for i in range(len(t))] for t in outs])
        return got
    except Exception as e:  # noqa: BLE001 (compared with DALI's outcome)
        return e


def same(body, iterations=2):
    """body gives the same values (and dtypes) in ladle and DALI; returns ladle's."""
    mine, theirs = run("ladle", body, iterations), run("dali", body, iterations)
    assert not isinstance(theirs, Exception), f"DALI failed: {theirs}"
    assert not isinstance(mine, Exception), f"ladle failed: {mine}"
    for it_m, it_d in zip(mine, theirs):
        for out_m, out_d in zip(it_m, it_d):
            for a, b in zip(out_m, out_d):
                assert a.dtype == b.dtype and a.shape == b.shape
                np.testing.assert_array_equal(a, b)
    return mine


def both_fail(body, match):
    mine, theirs = run("ladle", body), run("dali", body)
    assert isinstance(theirs, Exception), "DALI succeeded"
    assert isinstance(mine, ladle.Error), f"ladle gave {mine!r}"
    assert match in str(mine), str(mine)
    return mine


# Module-level helpers: DALI converts the functions a pipeline calls, and so does ladle.

def clip_big(f, x):
    if x > 3:
        x = x * 0 + 3
    return x


def logical_and(f, x):
    return (x > 1) and (x < 4)


def logical_or(f, x):
    return (x < 1) or (x > 4)


def logical_not(f, x):
    return not (x > 2), not x


def chained(f, x):
    return (x > 0) and (x < 5) and (x != 2), (x == 0) or (x == 3) or (x == 5)


def python_left(f, x):
    return 0 or (x > 2), 1 and (x > 2), True and (x == 1)


def condition_with_logic(f, x):
    if x > 1 and not x > 4:
        y = x * 10
    elif x == 0 or x == 5:
        y = x + 100
    else:
        y = x - 1
    return y


def nested(f, x):
    if x < 3:
        if x == 0:
            y = x + 1000
        else:
            y = x + 2000
    else:
        y = x * 2
        if x == 4:
            y = y + 7
    return y


def calls_a_helper(f, x):
    return clip_big(f, x) + 1


def number_joins(f, x):
    if x > 2:
        y = x
    else:
        y = 5
    if x == 1:
        z = 1.5
    else:
        z = 2.5
    return y, z


def set_in_one_branch_unused(f, x):
    if x > 2:
        unused = x + 1  # noqa: F841 (never read: DALI accepts it)
    return x


def early_return(f, x):
    if x > 3:
        return x * 2
    y = x + 1
    return y


def early_returns_in_a_chain(f, x):
    # DALI 2.4 refuses this one ("The `else` branch must also have a return statement"); ladle moves the
    # code after each returning branch into the other branch, as for the simpler form above.
    if x > 3:
        return x * 2
    y = x + 1
    if y == 2:
        return y * 100
    elif y == 3:
        return y - 1
    return y


def test_early_returns_in_a_chain_against_python():
    out = run("ladle", early_returns_in_a_chain, iterations=1)[0][0]
    python = [k * 2 if k > 3 else ((k + 1) * 100 if k + 1 == 2 else (k if k + 1 == 3 else k + 1)) for k in range(N)]
    assert [int(v) for v in out] == python


def helper_with_returns(f, x):
    def inner(v):
        if v > 2:
            return v + 100
        return v
    return inner(x) + inner(x * 0)


def loop_over_python_range(f, x):
    for i in range(3):
        if x > i:
            x = x + 10
    return x


@pytest.mark.parametrize("body", [early_return, helper_with_returns, loop_over_python_range, logical_and, logical_or, logical_not, chained, python_left, condition_with_logic,
                                  nested, calls_a_helper, number_joins, set_in_one_branch_unused],
                         ids=lambda b: b.__name__)
def test_same_as_dali(body):
    same(body)


def test_values_against_python():
    (got, ) = [r[0] for r in same(condition_with_logic, iterations=1)]
    for k, v in enumerate(got):
        expect = k * 10 if 1 < k <= 4 else (k + 100 if k in (0, 5) else k - 1)
        assert int(v) == expect
    out = same(logical_and, iterations=1)[0][0]
    assert [bool(v) for v in out] == [1 < k < 4 for k in range(N)] and out[0].dtype == np.bool_


def read_after_one_branch(f, x):
    if x > 2:
        y = x + 1
    return y


def else_only(f, x):
    if x > 2:
        pass
    else:
        y = x + 1
    return y


def and_of_ints(f, x):
    return x and x


def and_with_number(f, x):
    return (x > 1) and 5


def not_of_a_vector(f, x):
    return not f.stack(x, x)


def test_errors_as_dali():
    both_fail(read_after_one_branch, "Variable 'y' must also be initialized in the `else` branch")
    both_fail(else_only, "Variable 'y' must also be initialized in the `if` branch")
    both_fail(and_of_ints, "Logical expression `and` is restricted to scalar (0-d tensors) inputs of `bool` type")
    both_fail(and_with_number, "Got an input of type `int32` as the right argument")
    both_fail(not_of_a_vector, "Logical expression `not` is restricted to scalar (0-d tensors) inputs")


def test_python_values_keep_python_meaning():
    @pipeline_def(batch_size=N, num_threads=1, enable_conditionals=True)
    def pipe(flag):
        x = fn.external_source(source=values, batch=True)
        if flag and not False:
            x = x + 1
        return x

    assert int(np.array(pipe(True).run()[0].at(0))) == 1
    assert int(np.array(pipe(0).run()[0].at(0))) == 0


def test_do_not_convert_keeps_a_helper_as_written():
    @ladle.pipeline.do_not_convert
    def helper(x):
        if x > 3:  # a DataNode's truth value: an error when not converted
            x = x + 1
        return x

    @pipeline_def(batch_size=N, num_threads=1, enable_conditionals=True)
    def pipe():
        return helper(fn.external_source(source=values, batch=True))

    with pytest.raises(TypeError, match="no truth value"):
        pipe()
