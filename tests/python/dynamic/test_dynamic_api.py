"""ladle.dynamic against DALI's dynamic mode (nvidia.dali.experimental.dynamic):
the documented API is all there with DALI's parameter names, and where DALI
is importable its module is compared programmatically: what ladle lacks or
spells differently is listed (pytest -s prints it) and the core is asserted."""

import inspect

import pytest

ldd = pytest.importorskip("ladle.dynamic")

# The API an ndd script uses, by object: the names each must have.
DOCUMENTED = {
    "": ["Batch", "Tensor", "tensor", "as_tensor", "batch", "as_batch", "EvalMode", "EvalContext", "ThreadPool",
         "Device", "device", "Stream", "stream", "get_current_stream", "set_current_stream", "get_default_stream",
         "set_default_stream", "get_num_threads", "set_num_threads", "random", "readers", "decoders", "checkpoint",
         "dtype", "uint8", "int32", "int64", "float16", "float32", "float64", "bool"],
    "EvalMode": ["deferred", "eager", "sync_cpu", "sync_full", "default", "current"],
    "EvalContext": ["current", "default", "evaluate_all", "device_id", "num_threads", "cuda_stream", "thread_pool",
                    "checkpoint"],
    "ThreadPool": ["num_threads", "device_id"],
    "Batch": ["select", "slice", "cpu", "gpu", "torch", "evaluate", "to_device", "tensors", "shape", "dtype",
              "layout", "device", "ndim", "batch_size", "broadcast"],
    "Tensor": ["cpu", "gpu", "torch", "evaluate", "to_device", "item", "itemsize", "nbytes", "size", "shape",
               "dtype", "layout", "device", "ndim"],
    "random": ["RNG", "set_seed", "get_default_rng", "coin_flip", "uniform", "normal", "beta", "choice"],
    "random.RNG": ["advance", "clone", "get_state", "set_state", "state"],
    "checkpoint": ["Checkpoint", "current"],
    "checkpoint.Checkpoint": ["register", "collect", "restore", "save", "load", "serialize", "deserialize",
                              "clear", "names", "is_complete", "is_loaded", "get_state", "set_state"],
    "readers": ["File", "TFRecord", "Webdataset"],
    "readers.File": ["next_epoch", "get_state", "set_state", "get_metadata"],
}

# Callables whose parameter names must be DALI's (checked against DALI when it is importable).
SIGNATURES = {
    "Batch": ["tensors", "dtype", "device", "layout", "copy"],
    "Tensor": ["data", "dtype", "device", "layout", "batch", "index_in_batch", "copy"],
    "EvalContext": ["num_threads", "device_id", "cuda_stream", "thread_pool"],
    "ThreadPool": ["num_threads", "device_id"],
    "random.RNG": ["seed", "state"],
    "readers.File.next_epoch": ["self", "batch_size", "ctx"],
    "checkpoint.Checkpoint.register": ["self", "op", "name"],
    "Batch.broadcast": ["sample", "batch_size", "device", "dtype"],
}


def _get(root, path):
    obj = root
    for part in filter(None, path.split(".")):
        obj = getattr(obj, part)
    return obj


def _params(obj):
    return [p for p in inspect.signature(obj).parameters]


def _dali():
    try:
        import nvidia.dali.experimental.dynamic as ndd
    except Exception:  # not installed, or its backend does not load here
        return None
    return ndd


def test_documented_api_is_there():
    missing = [f"{path}.{name}".lstrip(".") for path, names in DOCUMENTED.items() for name in names
               if not hasattr(_get(ldd, path), name)]
    assert not missing


def test_signatures_use_dalis_names():
    for path, names in SIGNATURES.items():
        got = _params(_get(ldd, path))
        assert got[:len(names)] == names, path


def test_every_operator_is_generated_with_dalis_calling_convention():
    schemas = ldd._op_schemas()
    count = 0
    for name, schema in schemas.items():
        if set(schema["flags"]) & ldd._NOT_FUNCTIONS or "reader" in schema["flags"]:
            continue
        op = _get(ldd, name)
        params = inspect.signature(op).parameters
        kinds = [p.kind for p in params.values()]
        assert kinds[:schema["max_inputs"]] == [inspect.Parameter.POSITIONAL_ONLY] * schema["max_inputs"], name
        assert params["batch_size"].kind is inspect.Parameter.KEYWORD_ONLY and "device" in params, name
        assert ("rng" in params) == ("random" in schema["flags"]), name
        assert {a["name"] for a in schema["args"]} <= set(params), name
        count += 1
    assert count >= 40


def test_against_dalis_module():
    ndd = _dali()
    if ndd is None:
        pytest.skip("nvidia.dali.experimental.dynamic is not importable")
    report = []
    for path, names in DOCUMENTED.items():
        assert all(hasattr(_get(ndd, path), n) for n in names), f"DALI lacks a name listed for {path}"
    typing_names = {"DeviceLike", "NoReturn", "TypeAlias", "Union", "local"}  # DALI's module imports
    top = sorted(n for n in dir(ndd) if not n.startswith("_") and not hasattr(ldd, n) and n not in typing_names)
    report.append(f"top-level names ladle.dynamic lacks: {', '.join(top)}")
    for path, names in SIGNATURES.items():
        theirs = [p for p in _params(_get(ndd, path)) if p not in ("invocation_result",)]
        assert theirs[:len(names)] == names, f"DALI's {path} changed: {theirs}"
    ops_missing, arg_diffs, kind_diffs = [], [], []
    for name, schema in sorted(ldd._op_schemas().items()):
        if set(schema["flags"]) & ldd._NOT_FUNCTIONS or "reader" in schema["flags"] or name.startswith("_"):
            continue
        try:
            theirs = _get(ndd, name)
        except AttributeError:
            ops_missing.append(name)
            continue
        try:
            their_params = inspect.signature(theirs).parameters
        except (TypeError, ValueError):
            continue
        ours = inspect.signature(_get(ldd, name)).parameters
        lacking = sorted(p for p, v in their_params.items() if v.kind is v.KEYWORD_ONLY and p not in ours)
        if lacking:
            arg_diffs.append(f"{name}: {', '.join(lacking)}")
        if ("rng" in their_params) != ("rng" in ours):
            kind_diffs.append(name)
        # Both take batch_size and device by keyword; DALI's positional inputs are positional here too.
        assert "batch_size" in their_params and "device" in their_params
    report.append(f"ladle operators DALI's dynamic mode does not have: {', '.join(ops_missing) or 'none'}")
    report.append("DALI arguments ladle's operators lack (see docs/arguments.md): " + ("; ".join(arg_diffs) or "none"))
    report.append(f"random in one and not the other: {', '.join(kind_diffs) or 'none'}")
    their_ops = {n for n in dir(ndd) if callable(getattr(ndd, n)) and n[0].islower()}
    ours_missing = sorted(n for n in their_ops if not hasattr(ldd, n))
    report.append(f"DALI operators ladle lacks (top level): {', '.join(ours_missing)}")
    print("\n".join(report))
    assert set(ldd.EvalMode.__members__) == set(ndd.EvalMode.__members__)
    public = [n for n in dir(ndd.random.RNG) if not n.startswith("_")] + ["__call__"]
    assert [n for n in public if not hasattr(ldd.random.RNG, n)] == []
    # The random operators both have agree on taking rng=.
    assert not [n for n in kind_diffs if n.startswith("random.")]
