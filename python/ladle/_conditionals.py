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
GPU operators run both branches on the whole batch. Not supported (clear errors): ``return``,
``break`` or ``continue`` inside a branch of an ``if`` on a DataNode, and
``and``/``or``/``not`` on DataNodes (combine conditions with ``&``, ``|`` and
``==`` instead); ``while`` on a DataNode.
"""

import ast
import inspect
import textwrap

from . import _ladle

_UNDEFINED = object()


def _get(read):
    """The value a variable has before an `if`, or _UNDEFINED."""
    try:
        return read()
    except NameError:
        return _UNDEFINED


def _cond(test, true_branch, false_branch, names, values):
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
            raise _ladle.InvalidArgumentError(
                f"conditionals: variable {name!r} is set in only one branch of an `if` on a DataNode; set it before "
                "the `if` too (or in both branches)")
        if not (isinstance(x, DataNode) and isinstance(y, DataNode)):
            if isinstance(x, DataNode) or isinstance(y, DataNode):
                raise _ladle.InvalidArgumentError(
                    f"conditionals: variable {name!r} is a DataNode in one branch of an `if` on a DataNode and a "
                    "Python value in the other; make it a DataNode in both")
            if x != y:
                raise _ladle.InvalidArgumentError(
                    f"conditionals: variable {name!r} gets different Python values ({x!r}, {y!r}) in the branches "
                    "of an `if` on a DataNode: only DataNodes can differ per sample")
            out.append(x)
            continue
        if x.device != y.device:
            x, y = (x.gpu(), y) if y.device == "gpu" else (x, y.gpu())
        out.append(fn._conditional.merge(x, y, predicate=test))
    return tuple(out)


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


class _Rewriter(ast.NodeTransformer):
    def __init__(self):
        self.count = 0

    def visit_FunctionDef(self, node):
        self.generic_visit(node)
        return node

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
        names = [n for n in _assigned(node.body + node.orelse) if not n.startswith("__ladle")]
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
        call = ast.Call(ast.Name("__ladle_cond", ast.Load()),
                        [node.test, ast.Name(t_name, ast.Load()), ast.Name(f_name, ast.Load()),
                         ast.Tuple([ast.Constant(n) for n in names], ast.Load()), values], [])
        target = ast.Tuple([ast.Name(n, ast.Store()) for n in names], ast.Store())
        out = [true_def, false_def, ast.Assign([target], call) if names else ast.Expr(call)]
        return [ast.fix_missing_locations(ast.copy_location(s, node)) for s in out]

    def visit_While(self, node):
        self.generic_visit(node)
        node.test = ast.Call(ast.Name("__ladle_plain_test", ast.Load()), [node.test, ast.Constant("while")], [])
        return node


def _plain_test(test, what):
    from .pipeline import DataNode

    if isinstance(test, DataNode):
        raise _ladle.InvalidArgumentError(
            f"conditionals: `{what}` on a DataNode condition is not supported (a branch of an `if` on a DataNode "
            "may not contain return, break or continue; per-sample loops do not exist)")
    return test


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
    _Rewriter().visit(fdef)
    # Free variables of the original become parameters of a maker function.
    free = list(func.__code__.co_freevars)
    maker = ast.FunctionDef("__ladle_make", ast.arguments(posonlyargs=[], args=[ast.arg(n) for n in free],
                                                          vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                                                          defaults=[]),
                            [fdef, ast.Return(ast.Name(fdef.name, ast.Load()))], [], None)
    module = ast.fix_missing_locations(ast.Module([maker], type_ignores=[]))
    namespace = dict(func.__globals__)
    namespace.update(__ladle_cond=_cond, __ladle_get=_get, __ladle_plain_test=_plain_test)
    filename = inspect.getsourcefile(func) or "<conditionals>"
    exec(compile(module, filename, "exec"), namespace)
    cells = [c.cell_contents for c in (func.__closure__ or ())]
    converted = namespace["__ladle_make"](*cells)
    converted.__wrapped__ = func
    return converted
