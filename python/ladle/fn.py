"""fn: ladle's operators as functions, generated at import from the schemas
the C library registers (DALI's ``nvidia.dali.fn``).

The schema "readers.file" becomes ``fn.readers.file``, "resize" becomes
``fn.resize``. Each function takes its inputs (DataNodes) positionally, the
operator's arguments as keywords, ``device`` and ``name``, and returns a
DataNode (or a tuple of them for an operator with several outputs). Call them
inside a pipeline definition (``with pipe:`` or a ``@pipeline_def`` function).

Readers (``fn.readers.*``) given neither ``shard_id`` nor ``num_shards`` shard
by torchrun's environment: shard RANK of WORLD_SIZE when both are set.
"""

import enum
import inspect
import keyword
import os
import sys
import types as _pytypes
import warnings

import numpy as np

from . import _ladle
from . import types
from .pipeline import DataNode, Pipeline, _check_node, _infer_type, _Source, arg_specs, op_schemas, renamed_args

# Argument type numbers (ladle_arg_type).
_INT, _FLOAT, _BOOL, _STRING, _INTS, _FLOATS, _STRINGS, _DTYPE = range(8)

# The arguments every operator takes (seed, DALI's hints), from the library.
_COMMON_ARGS = {a["name"]: a for a in _ladle.op_common_args()}


def _plain(value):
    """NumPy scalars and arrays, enums and tuples as plain Python values."""
    if isinstance(value, enum.Enum) and not isinstance(value, types.DALIDataType):
        return value.value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _convert(public, spec, value):
    """`value` as the C extension expects it for argument `spec`."""
    # A list of dtypes travels as a list of ints (readers.webdataset's dtypes).
    many = spec["type_id"] == _INTS and spec["name"] == "dtypes"
    if spec["type_id"] == _DTYPE or many:
        try:
            if many:
                return [int(types.to_dtype(v)) for v in (value if isinstance(value, (list, tuple)) else [value])]
            return int(types.to_dtype(value))
        except ValueError as e:
            raise _ladle.InvalidArgumentError(f"{public}: argument '{spec['name']}': {e}") from None
    return _plain(value)


def _shard_from_environment(public, kwargs):
    """Under torchrun (RANK and WORLD_SIZE set) a reader given neither
    shard_id nor num_shards reads shard RANK of WORLD_SIZE; giving either
    argument turns this off. Returns the keyword arguments to use."""
    if kwargs.get("shard_id") is not None or kwargs.get("num_shards") is not None:
        return kwargs
    rank, world = os.environ.get("RANK"), os.environ.get("WORLD_SIZE")
    if rank is None or world is None:
        return kwargs
    try:
        rank, world = int(rank), int(world)
    except ValueError:
        raise _ladle.InvalidArgumentError(
            f"{public}: cannot shard by the environment: RANK={rank!r} and WORLD_SIZE={world!r} must be integers; "
            "give shard_id and num_shards"
        ) from None
    return dict(kwargs, shard_id=rank, num_shards=world)


def _make_operator(schema, public=None):
    op_name = schema["name"]
    public = public or "fn." + op_name
    specs = dict(_COMMON_ARGS, **arg_specs(schema))
    devices = schema["devices"]
    min_inputs, max_inputs = schema["min_inputs"], schema["max_inputs"]
    num_outputs = schema["num_outputs"]
    # num_outputs < 0: one output per element of the list argument args[-1 - num_outputs].
    outputs_per = schema["args"][-1 - num_outputs]["name"] if num_outputs < 0 else None
    # Bool arguments that switch on more outputs (readers.coco's polygon_masks, image_ids).
    adding = {a["name"]: a["adds_outputs"] for a in schema["args"] if a.get("adds_outputs", 0) > 0}
    shardable = "reader" in schema["flags"] and "shard_id" in specs and "num_shards" in specs

    def operator(*inputs, device=None, name=None, **kwargs):
        pipe = Pipeline.current()
        if pipe is None:
            raise _ladle.StateError(
                f"{public}() must be called inside a pipeline definition "
                "(`with pipe:` or a @pipeline_def function)"
            )
        for i, x in enumerate(inputs):
            _check_node(pipe, x, f"{public}: input {i}")
        if not min_inputs <= len(inputs) <= max_inputs:
            expected = str(min_inputs) if min_inputs == max_inputs else f"{min_inputs} to {max_inputs}"
            raise _ladle.InvalidArgumentError(f"{public}: takes {expected} input(s), got {len(inputs)}")

        on_gpu = any(x.device == "gpu" for x in inputs)
        if device is None:
            # As in DALI: an operator follows its inputs onto the GPU.
            device = "gpu" if on_gpu and "gpu" in devices else "cpu"
        device = str(device).lower()
        if device == "cuda":
            device = "gpu"
        if device not in devices:
            raise _ladle.InvalidArgumentError(
                f"{public}: device={device!r} is not supported; it runs on: {', '.join(devices)}"
            )
        if on_gpu and device != "gpu":
            raise _ladle.InvalidArgumentError(
                f"{public}: device={device!r} cannot take inputs in GPU memory; use device='gpu'"
            )

        kwargs = renamed_args(public, specs, kwargs)
        if shardable:
            kwargs = _shard_from_environment(public, kwargs)
        # The library judges names, types, ranges and choices; here values
        # only become what the extension takes.
        args = []
        for key, value in kwargs.items():
            if value is None:
                continue
            if isinstance(value, DataNode):
                _check_node(pipe, value, f"{public}: argument {key!r}")
                args.append((key, _ladle.NodeRef(value._id)))
            elif key in specs:
                args.append((key, _convert(public, specs[key], value)))
            else:
                args.append((key, _plain(value)))

        first, instance = pipe._add_op(op_name, device, inputs, args, name)
        out_device = "cpu" if device == "cpu" else "gpu"
        count = num_outputs
        if outputs_per is not None:
            value = kwargs[outputs_per]
            count = len(value) if isinstance(value, (list, tuple)) else 1
        # One fixed output for one choice of a string argument (random_object_bbox's format="box").
        if schema.get("one_output_if") and str(kwargs.get(schema["one_output_if"]) or "").lower() == \
                schema["one_output_choice"]:
            count = 1
        # Outputs DALI adds for optional inputs (random_bbox_crop's labels) and bool arguments (readers.coco's masks).
        count += schema.get("outputs_per_extra_input", 0) * (len(inputs) - min_inputs)
        count += sum(k for arg, k in adding.items() if kwargs.get(arg))
        if count == 1:
            return DataNode(pipe, first, instance, out_device)
        return tuple(DataNode(pipe, first + k, f"{instance}[{k}]", out_device) for k in range(count))

    short = op_name.rsplit(".", 1)[-1]
    operator.__name__ = short
    operator.__qualname__ = op_name
    operator.__module__ = __name__ + ("." + op_name.rsplit(".", 1)[0] if "." in op_name else "")
    operator.__doc__ = _docstring(public, schema)
    operator.__signature__ = _signature(schema)
    operator.schema = schema
    return operator


def _docstring(public, schema):
    lines = [f"{public}(*inputs, device=None, name=None, **kwargs)", ""]
    if schema["doc"]:
        lines += [schema["doc"].strip(), ""]
    lo, hi = schema["min_inputs"], schema["max_inputs"]
    inputs = str(lo) if lo == hi else f"{lo} to {hi}"
    n = schema["num_outputs"]
    outputs = str(n) if n >= 1 else f"one per element of {schema['args'][-1 - n]['name']!r}"
    if schema.get("outputs_per_extra_input"):
        outputs += f", one more per input beyond {lo}"
    if schema.get("one_output_if"):
        outputs += f" (1 when {schema['one_output_if']!r} is {schema['one_output_choice']!r})"
    more = [f"{a['adds_outputs']} with {a['name']}=True" for a in schema["args"] if a.get("adds_outputs", 0) > 0]
    if more:
        outputs += ", " + ", ".join(more)
    lines.append(f"Inputs: {inputs}. Outputs: {outputs}. Devices: {', '.join(schema['devices'])}.")
    for title, arg_list in (("Keyword arguments:", schema["args"]),
                            ("Arguments every operator takes:", list(_COMMON_ARGS.values()))):
        if not arg_list:
            continue
        lines += ["", title]
        for a in arg_list:
            facts = [a["type"]]
            if a["required"]:
                facts.append("required")
            elif a["has_default"]:
                facts.append(f"default {a['default']!r}")
            else:
                facts.append("optional")
            if a["min"] is not None:
                facts.append(f"range [{a['min']}, {a['max']}]")
            if a["choices"]:
                facts.append("one of " + ", ".join(repr(c) for c in a["choices"]))
            if a["per_sample"]:
                facts.append("may be a DataNode (per sample)")
            if a["no_effect"]:
                facts.append("accepted, no effect here")
            lines.append(f"  {a['name']} ({', '.join(facts)})")
            if a["doc"]:
                lines.append(f"      {a['doc'].strip()}")
    lines += ["", "  device: one of the devices above; default \"cpu\", or \"gpu\" when an input is on the GPU.",
              "  name: the operator instance's name (readers: the name reader_meta() takes)."]
    return "\n".join(lines)


def _signature(schema):
    P = inspect.Parameter
    params = [P("inputs", P.VAR_POSITIONAL), P("device", P.KEYWORD_ONLY, default=None),
              P("name", P.KEYWORD_ONLY, default=None)]
    for a in schema["args"]:
        if not a["name"].isidentifier() or keyword.iskeyword(a["name"]) or a["name"] in ("device", "name"):
            continue
        default = P.empty if a["required"] else a["default"]
        params.append(P(a["name"], P.KEYWORD_ONLY, default=default))
    return inspect.Signature(params)


def namespace(root, path):
    """The module object root.<path[0]>.<path[1]>..., made on demand: where
    generated operators live (fn.readers.file; ladle.dynamic.random.uniform)."""
    module = root
    qualified = root.__name__
    for part in path:
        qualified += "." + part
        child = getattr(module, part, None)
        if child is None:
            child = _pytypes.ModuleType(qualified, f"{root.__name__} operators under {qualified[len(root.__name__) + 1:]}.")
            sys.modules[qualified] = child
            setattr(module, part, child)
        module = child
    return module


def _namespace(path):
    return namespace(sys.modules[__name__], path)


def deprecated_alias(public, target, function):
    """`function` under DALI's old name `public`, warning as DALI does."""
    def alias(*args, **kwargs):
        warnings.warn(f"{public} is deprecated; use {target} (DALI's name)", DeprecationWarning, stacklevel=2)
        return function(*args, **kwargs)

    alias.__name__ = public.rsplit(".", 1)[-1]
    alias.__doc__ = f"Deprecated name of {target}.\n\n" + (function.__doc__ or "")
    alias.__signature__ = getattr(function, "__signature__", None)
    alias.schema = getattr(function, "schema", None)
    return alias


def _populate():
    for name in sorted(op_schemas()):
        *path, short = name.split(".")
        setattr(_namespace(path), short, _make_operator(op_schemas()[name]))


def _populate_aliases():
    for alias, target in _ladle.op_aliases().items():
        *path, short = target.split(".")
        setattr(_namespace(alias.split(".")[:-1]), alias.rsplit(".", 1)[-1],
                deprecated_alias("fn." + alias, "fn." + target, getattr(_namespace(path), short)))


_populate()


# DALI's external_source arguments ladle accepts and has no use for.
_EXTERNAL_IGNORED = frozenset({"cuda_stream", "use_copy_kernel", "blocking", "repeat_last"})
_generated_external_source = globals()["external_source"]  # made by _populate() from the schema


def external_source(source=None, *, name=None, device="cpu", dtype=None, ndim=None, layout=None, cycle=None,
                    batch=None, batch_info=False, no_copy=None, parallel=False, prefetch_queue_depth=None,
                    bytes_per_sample_hint=None, **kwargs):
    """fn.external_source(source=None, *, name=None, device="cpu", dtype=None, ndim=None, layout=None,
    cycle=None, batch=True, batch_info=False, no_copy=False)

    Data the application supplies, one batch per iteration: fed with
    ``pipe.feed_input(name, data)`` or drawn from `source`, a callable or an
    iterable returning one batch per call: a list of arrays (shapes may
    differ), an [N, ...] NumPy array or torch tensor (CUDA for
    device="gpu"), or a ladle TensorList (taken as it is). A batch holds 1 to
    batch_size samples. A callable that takes an argument gets the batch's
    index in the epoch (types.BatchInfo with batch_info=True). With
    batch=False the source gives one sample per call instead: a callable gets
    a types.SampleInfo, an iterable yields samples.

    When `source` raises StopIteration, run() raises StopIteration (with
    batch=False, after a last, shorter batch of the samples before it): the
    end of an epoch. A callable is called again in the next epoch; an
    iterable is iterated again only with cycle="raise"; cycle=True (or
    "quiet") restarts it without ending the epoch.

    Fed arrays and tensors are copied unless no_copy=True (then they must not
    change until their iteration has run; see Pipeline.feed_input).

    A generator function as `source` is called once per epoch and its
    generator gives the batches (as in DALI).

    Without dtype (and without ndim and layout), the first batch `source`
    gives decides them, as in DALI (so `source` is asked for it when the
    graph is defined); a source fed with feed_input only defaults to
    dtype=UINT8. ndim defaults to len(layout), else 3; layout defaults to
    "HWC" for ndim 3. Data that differ from the declared dtype or ndim fail
    with an error naming the source. Encoded files (JPEG bytes) are
    dtype=UINT8, ndim=1. DALI's cuda_stream and the like are accepted and
    ignored (with a warning).

    parallel=True (DALI's) runs `source` in the pipeline's worker processes
    (Pipeline(py_num_workers=..., py_start_method="fork"|"spawn")), keeping
    prefetch_queue_depth (default 1) batches in flight. batch=False takes a
    callable of one SampleInfo per sample; batch=True (the default, as DALI
    2.4 behaves whatever its documentation says) a callable of one argument
    (BatchInfo or index), a re-iterable or a generator function. Results come through shared memory; see
    ladle._parallel for errors and shutdown. bytes_per_sample_hint (parallel
    only) has no effect: shared memory is sized to each batch.
    """
    pipe = Pipeline.current()
    if pipe is None:
        raise _ladle.StateError("fn.external_source() must be called inside a pipeline definition")
    if batch is None:
        # DALI 2.4's fn.external_source takes batches also with parallel=True (its documentation says
        # parallel sets batch=False; what it does is what scripts rely on).
        batch = True
    if parallel:
        _check_parallel_source(source, batch, no_copy, prefetch_queue_depth, bytes_per_sample_hint)
        prefetch_queue_depth = 1 if prefetch_queue_depth is None else int(prefetch_queue_depth)
    else:
        for value, what in ((prefetch_queue_depth, "prefetch_queue_depth"),
                            (bytes_per_sample_hint, "bytes_per_sample_hint")):
            if value is not None:
                raise _ladle.InvalidArgumentError(f"fn.external_source: the argument {what!r} is valid only for "
                                                  "parallel external sources (parallel=True)")
    no_copy = bool(no_copy)
    if not batch and source is None:
        raise _ladle.InvalidArgumentError("fn.external_source: batch=False needs a source (feed_input takes batches)")
    unknown = sorted(set(kwargs) - _EXTERNAL_IGNORED)
    if unknown:
        raise _ladle.InvalidArgumentError(f"fn.external_source: unknown argument(s): {', '.join(unknown)}")
    if kwargs:
        warnings.warn(f"fn.external_source: ladle ignores the DALI argument(s) {', '.join(sorted(kwargs))}",
                      stacklevel=2)
    if cycle not in (None, False, True, "quiet", "raise", "no"):
        raise _ladle.InvalidArgumentError(f"fn.external_source: cycle={cycle!r}: use False, True, 'quiet' or 'raise'")
    if source is not None and not callable(source) and cycle not in (None, False, "no") \
            and iter(source) is source:
        raise _ladle.InvalidArgumentError("fn.external_source: cycle needs an iterable that can be iterated again "
                                          "(a list, not an iterator or generator)")
    src = None
    if source is not None:
        src = _Source(name, source, cycle, bool(batch), bool(batch_info), pipe.max_batch_size)
        if parallel:
            from ._parallel import ParallelSource

            src = ParallelSource(name, source, cycle, bool(batch), bool(batch_info), pipe.max_batch_size,
                                 prefetch_queue_depth, src)
        if dtype is None or (ndim is None and layout is None):
            # As DALI: the first batch the source gives decides what is left out.
            first = src.peek()
            if first is not None:
                got_dtype, got_ndim = _infer_type(first, bool(batch), name or "external_source")
                dtype = got_dtype if dtype is None else dtype
                if ndim is None and layout is None:
                    ndim = got_ndim
    layout = str(layout) if layout is not None else None
    if ndim is None:
        ndim = len(layout) if layout else 3
    if layout is None:
        layout = "HWC" if ndim == 3 else ""
    dtype = types.UINT8 if dtype is None else types.to_dtype(dtype)
    node = _generated_external_source(device=device, name=name, dtype=dtype, ndim=int(ndim), layout=layout)
    pipe._add_source(node.name, src, no_copy, dtype, ndim)
    return node


external_source.schema = _generated_external_source.schema
external_source.python_args = dict(
    {k: None for k in _EXTERNAL_IGNORED},
    source="The callable, iterable or generator function giving batches (or samples with batch=False).",
    name="The source's name, for feed_input.",
    cycle="Restarting an iterable: False, True/\"quiet\" or \"raise\" (DALI's).",
    batch="True: the source gives batches; False: samples.",
    batch_info="True: a batch source gets a types.BatchInfo instead of the batch index.",
    no_copy="True: fed arrays are taken without a copy (they must not change until used).",
    parallel="True: the source runs in the pipeline's worker processes (py_num_workers).",
    prefetch_queue_depth="parallel=True: batches computed ahead per source (default 1).",
    bytes_per_sample_hint="parallel=True: a hint with no effect (shared memory is sized to each batch).")


def _check_parallel_source(source, batch, no_copy, depth, hint):
    """DALI's rules for parallel=True sources."""
    import inspect as _inspect

    where = "fn.external_source(parallel=True)"
    if source is None:
        raise _ladle.InvalidArgumentError(f"{where}: needs a source (feed_input cannot feed worker processes)")
    if no_copy is not None and not no_copy:
        raise _ladle.InvalidArgumentError(f"{where}: the argument 'no_copy' cannot be False with parallel=True")
    if isinstance(depth, bool) or (depth is not None and (not isinstance(depth, (int, np.integer)) or depth < 1)):
        raise _ladle.InvalidArgumentError(f"{where}: prefetch_queue_depth must be a positive integer, got {depth!r}")
    if hint is not None and (not isinstance(hint, (int, np.integer)) or hint < 1):
        raise _ladle.InvalidArgumentError(f"{where}: bytes_per_sample_hint must be a positive integer, got {hint!r}")
    generator = callable(source) and _inspect.isgeneratorfunction(_inspect.unwrap(source))
    if callable(source) and not generator:
        try:
            params = [p for p in _inspect.signature(source).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
        except (TypeError, ValueError):
            params = [None]
        if len(params) != 1:
            raise TypeError(f"{where}: the callable must accept exactly one argument: a types.SampleInfo with "
                            "batch=False, or a types.BatchInfo or the batch's index with batch=True")
        return
    if not batch:
        what = "a generator function" if generator else "an iterable"
        raise TypeError(f"{where} with {what} must be run in batch mode (batch=True, the source giving batches)")
    if not generator and iter(source) is source:
        raise _ladle.InvalidArgumentError(f"{where}: an iterator or generator object cannot be handed to a worker "
                                          "process; give a re-iterable (a list) or the generator function itself")


from . import _python_function  # noqa: E402

_generated_python_function = globals()["python_function"]
_generated_dl_tensor_python_function = globals()["dl_tensor_python_function"]


def python_function(*inputs, function, num_outputs=1, batch_processing=False, output_layouts=None, device=None,
                    name=None, **kwargs):
    """fn.python_function(*inputs, function, num_outputs=1, batch_processing=False, output_layouts=None,
    device=None, name=None)

    Runs `function` on the inputs inside the pipeline (DALI's): per sample, or
    once per batch with batch_processing=True (each input then a list of
    samples, each output a list). On the cpu the function gets read-only
    NumPy views of the pipeline's memory and returns NumPy arrays; on the gpu
    CuPy arrays when CuPy is installed, else torch CUDA tensors. It returns a
    tuple of num_outputs arrays when num_outputs > 1, None when 0. Runs on
    the pipeline's executor thread with any exec_async/exec_pipelined (as
    DALI 2.4's default executor allows); an exception in it fails run() with
    ladle.Error chained to it. See ladle._python_function for the details.
    """
    _python_function_common_args(kwargs, "fn.python_function")
    return _python_function.add("fn.python_function", "python_function", inputs, function, num_outputs,
                                batch_processing, output_layouts, device, name, "numpy")


def dl_tensor_python_function(*inputs, function, num_outputs=1, batch_processing=True, output_layouts=None,
                              synchronize_stream=True, device=None, name=None, **kwargs):
    """fn.dl_tensor_python_function(*inputs, function, num_outputs=1, batch_processing=True,
    output_layouts=None, synchronize_stream=True, device=None, name=None)

    fn.python_function on DLPack capsules (DALI's): the function gets a list
    of capsules per input (one capsule per input with batch_processing=False)
    and returns capsules (or objects with __dlpack__) in the same shape.
    batch_processing defaults to True, as DALI's DLTensorPythonFunction does.
    synchronize_stream=False (device="gpu"): the pipeline's stream is not
    waited for before the call; order GPU work after
    ladle.fn.current_dali_stream() yourself.
    """
    _python_function_common_args(kwargs, "fn.dl_tensor_python_function")
    return _python_function.add("fn.dl_tensor_python_function", "dl_tensor_python_function", inputs, function,
                                num_outputs, batch_processing, output_layouts, device, name, "dlpack",
                                extra={"synchronize_stream": bool(synchronize_stream)})


def _python_function_common_args(kwargs, public):
    """DALI's base arguments (preserve, bytes_per_sample_hint, seed) have no
    effect on a Python function; anything else is an error."""
    unknown = sorted(set(kwargs) - set(_COMMON_ARGS))
    if unknown:
        raise _ladle.InvalidArgumentError(f"{public}: unknown argument(s): {', '.join(unknown)}")


_PYTHON_FUNCTION_ARGS = {"function": "The Python callable (see fn.python_function's doc for what it gets and returns)."}
python_function.python_args = _PYTHON_FUNCTION_ARGS
dl_tensor_python_function.python_args = _PYTHON_FUNCTION_ARGS
current_dali_stream = _python_function.current_stream
python_function.schema = _generated_python_function.schema
dl_tensor_python_function.schema = _generated_dl_tensor_python_function.schema

# fn.readers.tfrecord takes and returns dicts (DALI's features=): a wrapper over the generated operator.
from . import tfrecord as _tfrecord  # noqa: E402

_tfrecord._install(_namespace(["readers"]))

_populate_aliases()  # last: fn.tfrecord_reader stands for the wrapper above
