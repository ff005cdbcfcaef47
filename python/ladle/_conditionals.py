"""Per-sample ``if`` on DataNodes (DALI's ``enable_conditionals=True``).

``@pipeline_def(enable_conditionals=True)`` rewrites the function's ``if``
statements before it runs: each branch becomes a function of the variables
it assigns, both branches build their operators, and every variable they set
is joined sample by sample by ``_conditional.merge`` under the condition::

    if fn.random.coin_flip(probability=0.3):
        images = fn.rotate(images, angle=30)
    else:
        images = fn.flip(images)

When the condition is not a DataNode the ``if`` runs as plain Python.

How ladle differs from DALI, and why the results agree: DALI splits the batch
and runs each branch on its own samples; ladle runs both branches on every
sample and keeps each sample's own branch. A sample's values are the same
either way, random ones included, because every draw is keyed by (operator,
epoch, sample), not by how many samples an operator saw. Since the condition
is computed before the branches, the executor leaves out the samples of a
branch's CPU operators that take the other branch (src/pipeline/demand.h);
GPU operators run both branches on the whole batch.

As in DALI: ``and``, ``or`` and ``not`` take DataNodes that are scalars on
the cpu (``and``/``or``: bool ones, checked by _conditional.validate_logical)
and give a bool scalar per sample, ``a and b`` being b where a is true and
false elsewhere (DALI evaluates b only on those samples; ladle evaluates it
on all and keeps the same values, as for ``if``). A Python value as the
first operand keeps Python's meaning. A variable set in only one branch is an
error only when it is read after the ``if`` (DALI's message); Python numbers
meeting DataNodes (or other numbers) at the join become constants (int ->
int32, float -> float32, bool -> bool), as DALI promotes them.

Early returns (``if c: return a`` then more code) work as in DALI: the code
after an ``if`` whose branch always returns moves into its other branch, and
the returns become one variable returned after the ``if`` (ladle also takes
chains that DALI 2.4 refuses). Functions the pipeline function calls are
converted too, unless marked with ladle.pipeline.do_not_convert or they
belong to ladle, NumPy, torch or the standard library.

Not supported (clear errors): ``return`` inside a loop, ``break`` or
``continue`` inside a branch of an ``if`` on a DataNode, and ``while`` on a
DataNode.
"""

import ast
import inspect
import sys
import textwrap
import types as _pytypes
import weakref

from . import _ladle

_UNDEFINED = object()


def _get(read):
    """The value a variable has before an `if`, or _UNDEFINED."""
    try:
        return read()
    except NameError:
        return _UNDEFINED


def _is_number(x):
    import numpy as np

    return isinstance(x, (bool, int, float, np.bool_, np.integer, np.floating)) or \
        (isinstance(x, np.ndarray) and x.ndim == 0)


def _promote(x):
    """A Python number as a constant DataNode of DALI's type for it."""
    import numpy as np

    from .math import _constant_node

    if isinstance(x, (bool, np.bool_)):
        a = np.array(bool(x))
    elif isinstance(x, int):
        a = np.array(x, np.int32)
    elif isinstance(x, float):
        a = np.array(x, np.float32)
    else:
        a = np.asarray(x)
    return _constant_node(a)


def _cond(test, true_branch, false_branch, names, values, live):
    from . import fn
    from .pipeline import DataNode

    if not isinstance(test, DataNode):
        return true_branch(*values) if test else false_branch(*values)
    a, b = true_branch(*values), false_branch(*values)
    out = []
    for name, before, x, y in zip(names, values, a, b):
        if x is y:
            out.append(x)
            continue
        if x is _UNDEFINED or y is _UNDEFINED:
            if name not in live:  # never read after the `if`: nothing to join (DALI likewise)
                out.append(y if x is _UNDEFINED else x)
                continue
            raise _ladle.InvalidArgumentError(
                "Encountered inconsistent outputs out of the `if/else` control flow statement. Variables need to be "
                f"initialized in every code path (both `if` branches). Variable {name!r} must also be initialized "
                f"in the `{'if' if x is _UNDEFINED else 'else'}` branch.")
        if not (isinstance(x, DataNode) and isinstance(y, DataNode)):
            if (isinstance(x, DataNode) or _is_number(x)) and (isinstance(y, DataNode) or _is_number(y)):
                if not isinstance(x, DataNode) and not isinstance(y, DataNode) and type(x) is type(y) and x == y:
                    out.append(x)  # the same number either way: it stays a Python value
                    continue
                x = x if isinstance(x, DataNode) else _promote(x)
                y = y if isinstance(y, DataNode) else _promote(y)
            elif isinstance(x, DataNode) or isinstance(y, DataNode):
                raise _ladle.InvalidArgumentError(
                    f"conditionals: variable {name!r} is a DataNode in one branch of an `if` on a DataNode and a "
                    f"{type(y if isinstance(x, DataNode) else x).__name__} in the other; make it a DataNode (or a "
                    "number) in both")
            elif x != y:
                raise _ladle.InvalidArgumentError(
                    f"conditionals: variable {name!r} gets different Python values ({x!r}, {y!r}) in the branches "
                    "of an `if` on a DataNode: only DataNodes and numbers can differ per sample")
            else:
                out.append(x)
                continue
        if x.device != y.device:
            x, y = (x.gpu(), y) if y.device == "gpu" else (x, y.gpu())
        out.append(fn._conditional.merge(x, y, predicate=test))
    return tuple(out)


def _logical_operand(value, expression, side):
    """An operand of `and`/`or` on DataNodes, checked (a bool scalar on the cpu)."""
    from . import fn
    from .pipeline import DataNode

    if not isinstance(value, DataNode):
        if not _is_number(value):
            raise _ladle.InvalidArgumentError(
                f"Logical expression `{expression}` is restricted to scalar (0-d tensors) inputs of `bool` type; got "
                f"{type(value).__name__} as the {side} argument")
        value = _promote(value)
    if value.device != "cpu":
        raise _ladle.InvalidArgumentError(
            f"Logical expression `{expression}` is restricted to scalar (0-d tensors) inputs of `bool` type, that "
            f"are placed on CPU. Got a GPU input as the {side} argument in logical expression.")
    return fn._conditional.validate_logical(value, expression_name=expression, expression_side=side)


def _and(a, b):
    """`a and b` (b a function giving the right operand)."""
    from . import fn
    from .pipeline import DataNode

    if not isinstance(a, DataNode):
        return b() if a else a
    a = _logical_operand(a, "and", "left")
    right = _logical_operand(b(), "and", "right")
    return fn._conditional.merge(right, a, predicate=a)


def _or(a, b):
    """`a or b` (b a function giving the right operand)."""
    from . import fn
    from .pipeline import DataNode

    if not isinstance(a, DataNode):
        return a if a else b()
    a = _logical_operand(a, "or", "left")
    right = _logical_operand(b(), "or", "right")
    return fn._conditional.merge(a, right, predicate=a)


def _not(a):
    from . import fn
    from .pipeline import DataNode

    if not isinstance(a, DataNode):
        return not a
    if a.device != "cpu":
        raise _ladle.InvalidArgumentError(
            "Logical expression `not` is restricted to scalar (0-d tensors) inputs, that are placed on CPU. Got a "
            "GPU input in logical expression.")
    return fn._conditional.not_(a)


# --- early returns: `if c: return a` followed by more code -----------------------
# As DALI's AutoGraph does, the statements after an `if` whose branch always
# returns move into its other branch, and the returns inside become
# assignments to one variable returned after the `if`, so the `if` can be
# joined sample by sample. Returns inside loops are left as they are.

_RETURN = "__ladle_return"


def _returns(stmts):
    """Whether a return is among stmts (not in nested functions or loops)."""
    for s in stmts:
        for n in _walk_block(s):
            if isinstance(n, ast.Return):
                return True
    return False


def _walk_block(node):
    yield node
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.For, ast.While,
                         ast.AsyncFor)):
        return
    for child in ast.iter_child_nodes(node):
        yield from _walk_block(child)


def _loop_returns(stmts):
    """Whether a return sits in a loop of stmts (then nothing is restructured)."""
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, (ast.For, ast.While, ast.AsyncFor)) and any(
                    isinstance(m, ast.Return) for b in (n.body, n.orelse) for x in b for m in _walk_block(x)):
                return True
    return False


def _always_returns(stmts):
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, ast.Return):
        return True
    return isinstance(last, ast.If) and _always_returns(last.body) and _always_returns(last.orelse)


def _end(node):
    ends = [(n.end_lineno, n.end_col_offset) for n in ast.walk(node) if getattr(n, "end_lineno", None) is not None]
    return max(ends)


def _single_exit(stmts):
    """stmts with the code after an early-returning `if` moved into its other branch."""
    out = []
    for i, s in enumerate(stmts):
        if isinstance(s, ast.If) and _returns([s]):
            body, orelse, rest = _single_exit(s.body), _single_exit(s.orelse), stmts[i + 1:]
            if _always_returns(body) and not _always_returns(orelse):
                orelse = _single_exit(orelse + rest)
            elif _always_returns(orelse) and not _always_returns(body):
                body = _single_exit(body + rest)
            elif not (_always_returns(body) and _always_returns(orelse)):
                return out + stmts[i:]  # a return on some paths only: left as written
            new = ast.copy_location(ast.If(s.test, body, orelse), s)
            new.end_lineno, new.end_col_offset = _end(new)
            return out + [new]  # what followed is in the branches now (or was unreachable)
        out.append(s)
    return out


def _assign_returns(stmts):
    """The returns of an `if` tree as assignments to _RETURN."""
    out = []
    for s in stmts:
        if isinstance(s, ast.Return):
            value = s.value if s.value is not None else ast.Constant(None)
            out.append(ast.copy_location(ast.Assign([ast.Name(_RETURN, ast.Store())], value), s))
        elif isinstance(s, ast.If):
            s.body, s.orelse = _assign_returns(s.body), _assign_returns(s.orelse)
            out.append(s)
        else:
            out.append(s)
    return out


class _Returns(ast.NodeTransformer):
    """Early returns in every function of the tree made single-exit (above)."""

    def visit_FunctionDef(self, node):
        self.generic_visit(node)
        if _loop_returns(node.body):
            return node
        body = _single_exit(node.body)
        last = body[-1] if body else None
        if isinstance(last, ast.If) and _always_returns([last]) and _returns([last]):
            ret = ast.Return(ast.Name(_RETURN, ast.Load()))
            ret.lineno = ret.end_lineno = last.end_lineno
            ret.col_offset = ret.end_col_offset = last.end_col_offset + 1
            body = body[:-1] + _assign_returns([last]) + [ret]
        node.body = body
        return node

    visit_AsyncFunctionDef = visit_FunctionDef


class _Unsupported(ast.NodeVisitor):
    """Finds return/break/continue/yield that leave a branch (not those of
    nested functions or loops inside it)."""

    def __init__(self):
        self.found = None
        self._loops = 0

    def visit_FunctionDef(self, node):
        pass

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef

    def _loop(self, node):
        self._loops += 1
        self.generic_visit(node)
        self._loops -= 1

    visit_For = visit_While = _loop

    def visit_Return(self, node):
        self.found = self.found or "return"

    def visit_Yield(self, node):
        self.found = self.found or "yield"

    def visit_Break(self, node):
        if not self._loops:
            self.found = self.found or "break"

    def visit_Continue(self, node):
        if not self._loops:
            self.found = self.found or "continue"


def _assigned(stmts):
    """Names a block assigns (not inside nested functions), in order."""
    names = []

    class Visitor(ast.NodeVisitor):
        def visit_Name(self, node):
            if isinstance(node.ctx, ast.Store) and node.id not in names:
                names.append(node.id)

        def visit_FunctionDef(self, node):
            if node.name not in names:
                names.append(node.name)

        visit_AsyncFunctionDef = visit_FunctionDef

        def visit_Lambda(self, node):
            pass

    for s in stmts:
        Visitor().visit(s)
    return names


def _loads(tree):
    """(line, column, name) of every variable read in `tree`."""
    return [(n.lineno, n.col_offset, n.id) for n in ast.walk(tree)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]


def _after(pos, node):
    return pos > (node.end_lineno, node.end_col_offset)


def _within(pos, node):
    return (node.lineno, node.col_offset) <= pos <= (node.end_lineno, node.end_col_offset)


class _Rewriter(ast.NodeTransformer):
    def __init__(self, loads):
        self.count = 0
        self.loads = loads  # of the whole function, before rewriting
        self.loops = []     # the loops around the node being visited

    def visit_FunctionDef(self, node):
        self.generic_visit(node)
        return node

    def _lazy(self, node):
        return ast.Lambda(ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                                        kwarg=None, defaults=[]), node)

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        if any(isinstance(n, ast.NamedExpr) for v in node.values[1:] for n in ast.walk(v)):
            return node  # a := in a later operand would bind inside the lambda: left as Python's
        helper = "__ladle_and" if isinstance(node.op, ast.And) else "__ladle_or"
        result = node.values[-1]
        for value in reversed(node.values[:-1]):
            result = ast.Call(ast.Name(helper, ast.Load()), [value, self._lazy(result)], [])
        return ast.copy_location(result, node)

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and (node.func.id == "super" or node.func.id.startswith("__ladle")):
            return node
        node.func = ast.copy_location(ast.Call(ast.Name("__ladle_call", ast.Load()), [node.func], []), node.func)
        return node

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if not isinstance(node.op, ast.Not):
            return node
        return ast.copy_location(ast.Call(ast.Name("__ladle_not", ast.Load()), [node.operand], []), node)

    def _loop(self, node):
        self.loops.append(node)
        self.generic_visit(node)
        self.loops.pop()
        return node

    visit_For = _loop

    def _live(self, node, names):
        """The names read after `node` (or anywhere in a loop around it)."""
        live = set()
        for pos in self.loads:
            if pos[2] in names and (_after(pos[:2], node) or any(_within(pos[:2], loop) for loop in self.loops)):
                live.add(pos[2])
        return live

    def visit_If(self, node):
        self.generic_visit(node)  # inner ifs first
        check = _Unsupported()
        for s in node.body + node.orelse:
            check.visit(s)
        if check.found:
            node.test = ast.Call(ast.Name("__ladle_plain_test", ast.Load()),
                                 [node.test, ast.Constant(check.found)], [])
            return node
        k = self.count
        self.count += 1
        names = [n for n in _assigned(node.body + node.orelse) if not n.startswith("__ladle_if_")]
        args = ast.arguments(posonlyargs=[], args=[ast.arg(n) for n in names], vararg=None, kwonlyargs=[],
                             kw_defaults=[], kwarg=None, defaults=[])
        ret = ast.Return(ast.Tuple([ast.Name(n, ast.Load()) for n in names], ast.Load()))
        t_name, f_name = f"__ladle_if_true_{k}", f"__ladle_if_false_{k}"
        true_def = ast.FunctionDef(t_name, args, list(node.body) + [ret], [], None)
        false_def = ast.FunctionDef(f_name, args, (list(node.orelse) or [ast.Pass()]) + [ret], [], None)
        values = ast.Tuple([ast.Call(ast.Name("__ladle_get", ast.Load()),
                                     [ast.Lambda(ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                                                               kw_defaults=[], kwarg=None, defaults=[]),
                                                 ast.Name(n, ast.Load()))], [])
                            for n in names], ast.Load())
        live = sorted(self._live(node, names))
        call = ast.Call(ast.Name("__ladle_cond", ast.Load()),
                        [node.test, ast.Name(t_name, ast.Load()), ast.Name(f_name, ast.Load()),
                         ast.Tuple([ast.Constant(n) for n in names], ast.Load()), values,
                         ast.Tuple([ast.Constant(n) for n in live], ast.Load())], [])
        target = ast.Tuple([ast.Name(n, ast.Store()) for n in names], ast.Store())
        out = [true_def, false_def, ast.Assign([target], call) if names else ast.Expr(call)]
        return [ast.fix_missing_locations(ast.copy_location(s, node)) for s in out]

    def visit_While(self, node):
        self._loop(node)
        node.test = ast.Call(ast.Name("__ladle_plain_test", ast.Load()), [node.test, ast.Constant("while")], [])
        return node


def _plain_test(test, what):
    from .pipeline import DataNode

    if isinstance(test, DataNode):
        raise _ladle.InvalidArgumentError(
            f"conditionals: `{what}` on a DataNode condition is not supported (a branch of an `if` on a DataNode "
            "may not contain return, break or continue; per-sample loops do not exist)")
    return test


# Functions the pipeline function calls are converted too (as DALI's AutoGraph
# does), unless they are ladle's, a library's or marked with do_not_convert.
_LIBRARIES = frozenset({"ladle", "numpy", "torch", "torchvision", "nvidia", "PIL", "cupy"})
_converted: "weakref.WeakKeyDictionary[object, object]" = weakref.WeakKeyDictionary()


def _call(func):
    """What a call in a converted function calls: `func` converted, when it is
    a plain function of the user's; `func` itself otherwise."""
    if not isinstance(func, _pytypes.FunctionType) or getattr(func, "__ladle_do_not_convert__", False):
        return func
    module = (getattr(func, "__module__", None) or "").split(".")[0]
    if module in _LIBRARIES or module in getattr(sys, "stdlib_module_names", ()) or func.__name__ == "<lambda>" \
            or inspect.isgeneratorfunction(func) or inspect.iscoroutinefunction(func):
        return func
    done = _converted.get(func)
    if done is None:
        try:
            done = convert(func)
        except Exception:  # no source, a closure not yet filled in ...: called as written
            done = func
        _converted[func] = done
    return done


def convert(func):
    """`func` with its `if` statements on DataNodes made per-sample."""
    try:
        source = textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError) as e:
        raise _ladle.InvalidArgumentError(
            f"enable_conditionals: the source of {func.__name__} is needed to rewrite its `if`s ({e})") from None
    tree = ast.parse(source)
    ast.increment_lineno(tree, func.__code__.co_firstlineno - 1)  # tracebacks point at the user's lines
    fdef = tree.body[0]
    if not isinstance(fdef, (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise _ladle.InvalidArgumentError(f"enable_conditionals: {func.__name__} is not a plain function")
    fdef.decorator_list = []
    _Returns().visit(fdef)
    ast.fix_missing_locations(fdef)
    _Rewriter(_loads(fdef)).visit(fdef)
    # Free variables of the original become parameters of a maker function.
    free = list(func.__code__.co_freevars)
    maker = ast.FunctionDef("__ladle_make", ast.arguments(posonlyargs=[], args=[ast.arg(n) for n in free],
                                                          vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                                                          defaults=[]),
                            [fdef, ast.Return(ast.Name(fdef.name, ast.Load()))], [], None)
    module = ast.fix_missing_locations(ast.Module([maker], type_ignores=[]))
    namespace = dict(func.__globals__)
    namespace.update(__ladle_cond=_cond, __ladle_get=_get, __ladle_plain_test=_plain_test, __ladle_and=_and,
                     __ladle_or=_or, __ladle_not=_not, __ladle_call=_call)
    filename = inspect.getsourcefile(func) or "<conditionals>"
    exec(compile(module, filename, "exec"), namespace)
    cells = [c.cell_contents for c in (func.__closure__ or ())]
    converted = namespace["__ladle_make"](*cells)
    converted.__wrapped__ = func
    return converted
