"""ladle.math: DALI's ``nvidia.dali.math`` functions, and the arithmetic
operators of DataNode (pipelines) and of Batch/Tensor (ladle.dynamic).

Every expression is one call of the C operator ``math.arithmetic``; its schema
decides which operations exist, how types promote and which shapes broadcast.
Here values are only sorted into inputs (DataNodes, Batches, Tensors) and
constants (bool, int, float, NumPy scalars and one-element arrays), which
travel as DALI's typed constant operands: a Python int is an int32, a float a
float32, a bool a bool, a NumPy scalar its own type.

    x = fn.decoders.image(jpegs)           # uint8
    y = (x - 128) / 64.0                   # float32
    z = ladle.math.clamp(y, -1, 1)
"""

import numpy as _np

from . import _ladle

_SCHEMA = "math.arithmetic"


def _is_data(x):
    from .dynamic._data import Batch, Tensor
    from .pipeline import DataNode

    return isinstance(x, (DataNode, Batch, Tensor))


def _constant_array(value, dtype=None):
    """`value` as the array DALI's types.Constant makes of it: `dtype` when
    given, else float64 becomes float32 and int64 int32."""
    from . import types

    a = _np.asarray(value)
    if dtype is not None:
        return a.astype(types.to_dtype(dtype).numpy_name)
    if a.dtype == _np.float64:
        return a.astype(_np.float32)
    if a.dtype == _np.int64:
        return a.astype(_np.int32)
    if a.dtype == _np.bool_:
        return a.astype(_np.uint8)  # BOOL once ladle_dtype has it
    return a


def _constant_node(a, shape=None, layout=None):
    """Array `a` as a fn.constant node of the pipeline being defined."""
    from . import fn

    values = dict(fdata=a.ravel().tolist()) if a.dtype.kind == "f" else dict(idata=a.ravel().tolist())
    return fn.constant(shape=list(a.shape if shape is None else _np.atleast_1d(shape)), dtype=a.dtype.name,
                       layout=layout, **values)


def _array_constant(x):
    """A list, tuple or array of more than one element, typed as DALI types
    array constants, or None."""
    if isinstance(x, (list, tuple, _np.ndarray)) and _np.size(x) > 1:
        return _constant_array(x)
    return None


def _tensor_constant(a, like):
    """Array constant `a` as an operand beside data `like`: a constant node
    in a pipeline, the same sample for each of a ladle.dynamic batch."""
    from . import dynamic
    from .pipeline import DataNode

    if isinstance(like, DataNode):
        return _constant_node(a)
    if isinstance(like, dynamic.Tensor):
        return dynamic.tensor(a)
    return dynamic.batch([a] * len(like))


def _constant(x):
    """(type name, value) of a constant operand, as DALI types constants."""
    if isinstance(x, (_np.ndarray, list, tuple)) and _np.size(x) == 1:
        x = _np.asarray(x).reshape(())
        x = x.dtype.type(x)
    if isinstance(x, (bool, _np.bool_)):
        return "bool", int(x)
    if isinstance(x, int):
        # DALI types Python ints as int32; ladle takes larger ones as int64.
        return ("int32" if -2**31 <= x < 2**31 else "int64"), x
    if isinstance(x, float):
        return "float32", x
    if isinstance(x, _np.generic) and x.dtype.kind in "iuf":
        return x.dtype.name, (float(x) if x.dtype.kind == "f" else int(x))
    raise TypeError(f"arithmetic: unsupported operand of type {type(x).__name__}; "
                    "expected a DataNode, a ladle.dynamic Batch/Tensor or a number")


def _apply(op, *args):
    """Operation `op` (a choice of math.arithmetic's `op`) on `args`."""
    from .pipeline import DataNode

    inputs, operands, ints, reals = [], [], [], []
    like = next((x for x in args if _is_data(x)), None)
    for x in args:
        array = _array_constant(x) if like is not None else None
        if array is not None:
            x = _tensor_constant(array, like)
        if _is_data(x):
            operands.append(f"&{len(inputs)}")
            inputs.append(x)
        else:
            type_name, value = _constant(x)
            values = reals if type_name.startswith("float") else ints
            operands.append(f"${len(values)}:{type_name}")
            values.append(value)
    if not inputs:
        raise TypeError(f"ladle.math: '{op}' needs at least one DataNode, Batch or Tensor operand")
    kwargs = dict(op=op, operands=operands, integer_constants=ints or None, real_constants=reals or None)
    if any(isinstance(x, DataNode) for x in inputs):
        from . import fn

        if any(x.device == "gpu" for x in inputs):  # as in DALI: one GPU operand puts the expression there
            inputs = [x.gpu() if isinstance(x, DataNode) else x for x in inputs]
        return fn.math.arithmetic(*inputs, **kwargs)
    from . import dynamic

    return dynamic.math.arithmetic(*inputs, **kwargs)


def _subscript(x, key):
    """x[key] for a DataNode or a ladle.dynamic Tensor: DALI's subscripts
    (indices, slices with steps, negative values, per-sample DataNode
    indices in pipelines) and `...`; the operator _tensor_subscript checks
    them against the data."""
    from .pipeline import DataNode

    key = key if isinstance(key, tuple) else (key,)
    args, position, ellipsis = {}, 0, None
    for k in key:
        if k is Ellipsis:
            if ellipsis is not None:
                raise IndexError("an index can only have a single ellipsis ('...')")
            ellipsis = position
            continue
        if k is None:
            raise NotImplementedError("subscripts: new axes (None) are not supported")
        if isinstance(k, slice):
            for name, v in (("lo", k.start), ("hi", k.stop), ("step", k.step)):
                if v is not None:
                    args[f"{name}_{position}"] = v
        elif isinstance(k, (float, str, bool, _np.bool_)) or isinstance(k, (list, _np.ndarray)):
            raise TypeError(f"subscripts: invalid index of type {type(k).__name__}")
        else:
            args[f"at_{position}"] = k
        position += 1
    args["num_subscripts"] = position
    if ellipsis is not None:
        args["ellipsis"] = ellipsis
    if isinstance(x, DataNode):
        from . import fn

        return getattr(fn, "_tensor_subscript")(x, **args)
    from . import dynamic

    return getattr(dynamic, "_tensor_subscript")(x, **args)


class _Arithmetic:
    """The Python operators of DataNode, Batch and Tensor, as DALI maps them
    (``//`` is "div", ``/`` "fdiv"; unary + returns the operand itself)."""

    __slots__ = ()
    __hash__ = object.__hash__
    # NumPy scalars on the left (types.Constant(255, dtype=types.UINT8) - x) defer to the reflected
    # operator with their type intact, instead of NumPy passing them on as Python ints (int32 constants).
    __array_ufunc__ = None  # __eq__ builds an expression; identity stays the hash

    def __add__(self, other): return _apply("add", self, other)
    def __radd__(self, other): return _apply("add", other, self)
    def __sub__(self, other): return _apply("sub", self, other)
    def __rsub__(self, other): return _apply("sub", other, self)
    def __mul__(self, other): return _apply("mul", self, other)
    def __rmul__(self, other): return _apply("mul", other, self)
    def __truediv__(self, other): return _apply("fdiv", self, other)
    def __rtruediv__(self, other): return _apply("fdiv", other, self)
    def __floordiv__(self, other): return _apply("div", self, other)
    def __rfloordiv__(self, other): return _apply("div", other, self)
    def __mod__(self, other): return _apply("mod", self, other)
    def __rmod__(self, other): return _apply("mod", other, self)
    def __pow__(self, other): return _apply("pow", self, other)
    def __rpow__(self, other): return _apply("pow", other, self)
    def __eq__(self, other): return _apply("eq", self, other)
    def __ne__(self, other): return _apply("neq", self, other)
    def __lt__(self, other): return _apply("lt", self, other)
    def __le__(self, other): return _apply("leq", self, other)
    def __gt__(self, other): return _apply("gt", self, other)
    def __ge__(self, other): return _apply("geq", self, other)
    def __and__(self, other): return _apply("bitand", self, other)
    def __rand__(self, other): return _apply("bitand", other, self)
    def __or__(self, other): return _apply("bitor", self, other)
    def __ror__(self, other): return _apply("bitor", other, self)
    def __xor__(self, other): return _apply("bitxor", self, other)
    def __rxor__(self, other): return _apply("bitxor", other, self)
    def __lshift__(self, other): return _apply("lshift", self, other)
    def __rlshift__(self, other): return _apply("lshift", other, self)
    def __rshift__(self, other): return _apply("rshift", self, other)
    def __rrshift__(self, other): return _apply("rshift", other, self)
    def __invert__(self): return _apply("bitnot", self)
    def __neg__(self): return _apply("minus", self)
    def __pos__(self): return self
    def __abs__(self): return _apply("abs", self)


# The operations only the Python operators reach; every other choice of the
# schema's `op` is a function here (DALI's nvidia.dali.math).
_OPERATOR_ONLY = frozenset({"add", "sub", "mul", "div", "fdiv", "mod", "eq", "neq", "lt", "leq", "gt", "geq",
                            "bitand", "bitor", "bitxor", "lshift", "rshift", "bitnot", "plus", "minus"})


def _make_function(op):
    def function(*operands):
        return _apply(op, *operands)

    function.__name__ = function.__qualname__ = op
    function.__doc__ = (f"ladle.math.{op}(*operands): DALI's math.{op}, element-wise on DataNodes (in a "
                        "pipeline) or ladle.dynamic Batches/Tensors, with numbers as constants.")
    return function


def _populate():
    schema = next((s for s in _ladle.op_schemas() if s["name"] == _SCHEMA), None)
    if schema is None:
        return
    choices = next(a["choices"] for a in schema["args"] if a["name"] == "op")
    for op in choices:
        if op not in _OPERATOR_ONLY:
            globals()[op] = _make_function(op)


_populate()
