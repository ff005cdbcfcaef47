"""ladle.dynamic: ladle's operators called eagerly on batches, in the shape
of DALI's dynamic mode (``nvidia.dali.experimental.dynamic``, "ndd"): a
script written for ndd runs after ``import ladle.dynamic as ndd``.

    import ladle.dynamic as ndd

    reader = ndd.readers.File(file_root=root, random_shuffle=True)
    rng = ndd.random.RNG(seed=42)
    for jpegs, labels in reader.next_epoch(batch_size=32):
        images = ndd.decoders.image_random_crop(jpegs, device="gpu", rng=rng)
        images = ndd.resize(images, resize_x=224, resize_y=224)
        mirror = ndd.random.coin_flip(batch_size=len(images), rng=rng)
        x = ndd.crop_mirror_normalize(images, dtype=ndd.float16, output_layout="CHW", mirror=mirror)
        x = x.torch()                      # [32, 3, 224, 224], no copy

Every operator of ``ladle.fn`` is here under the same dotted name and
arguments, generated from its schema: ``op(input, ..., /, *, batch_size=None,
device=None, <arguments>, rng=None)`` (rng= for random operators); readers
are classes (``readers.File``, see Reader).

Inputs and outputs. An operator takes Batches (``ndd.batch(...)``,
``ndd.Batch([...])``, a list of arrays, a ladle.TensorList) or single samples
(a Tensor, a NumPy array, a CPU torch tensor, a PIL image): a Batch in gives a
Batch out, a single sample in a Tensor out. Operators without inputs
(random.*) take ``batch_size=`` (without it they return one Tensor). Arguments
that the pipeline API accepts per sample accept Batches or lists of numbers
here, e.g. ``mirror=ndd.random.coin_flip(batch_size=n)``. ``b.select(i)``,
``b.slice[...]``, ``b.torch(pad=True)``, ``.cpu()``/``.gpu()`` as in DALI.

Devices. ``device="gpu"`` runs on the GPU (for decoders that is the pipeline
API's "mixed"); the default is "cpu", or "gpu" when an input is in GPU
memory. GPU operators exist only in a CUDA build.

How a call runs. Each call becomes a small ladle.Pipeline (external sources
feeding the operator), built on first use and kept in the current
``EvalContext`` for later calls with the same operator, device, constant
arguments, input dtypes/ranks/layouts/devices and batch-size bucket (the
next power of two); at most ``CACHE_SIZE`` (64) per context, least recently
used closed first. Random operators too: their pipeline is fed the call's
seed (drawn from ``rng``), so steady-state calls build nothing. An
``EvalContext(num_threads=, device_id=, cuda_stream=, thread_pool=)`` holds
the thread pool, device and stream; ``EvalMode`` says when the work is done
(``deferred``: fed to the call's graph at once, or by the context's worker
once its inputs exist, results wait when used; ``eager``, the default: done
when the call returns on the host). There is no
fusion across calls (a pipeline fuses resize into crop_mirror_normalize on the
GPU; separate calls do not).

Randomness. Call k of an RNG seeded S runs with the seed mix(S, k); sample i
draws what sample i of the first iteration of a Pipeline(seed=mix(S, k))
draws. ``random.set_seed`` restarts the default generator (seed 0 at import).
Readers shuffle with their ``seed`` argument, else the default seed when made.

Capture. ``reader.next_epoch(batch_size=n, capture=True)`` (DALI's capture
mode) traces the loop body's first step and runs the later ones as one
pipeline fed by the reader, ahead of the loop, with the same results.

Checkpoints. Readers and RNGs have get_state/set_state;
``checkpoint.Checkpoint`` collects, saves and restores them, and a resumed
run continues with the same bytes. torchdata.nodes nodes: ``pytorch.nodes``.
"""

import inspect as _inspect
import sys as _sys

from .. import fn as _fn
from .. import types
from ..pipeline import op_schemas as _op_schemas
from . import _exec, _random
from ._context import (CACHE_SIZE, Device, EvalContext, EvalMode, ThreadPool, device, get_num_threads,
                       set_num_threads)
from ._data import Batch, Tensor, as_batch, as_tensor, batch, tensor
from ._exec import clear_cache
from ._capture import CaptureError
from ._readers import Reader, make_reader_class
from ._stream import Stream, get_current_stream, get_default_stream, set_current_stream, set_default_stream, stream
from . import checkpoint

# DALI's dtype objects (ndd.uint8, ndd.float32, ...): ladle's DALIDataType values.
uint8, uint16, uint32, uint64 = types.UINT8, types.UINT16, types.UINT32, types.UINT64
int8, int16, int32, int64 = types.INT8, types.INT16, types.INT32, types.INT64
float16, float32, float64 = types.FLOAT16, types.FLOAT, types.FLOAT64
bool = types.BOOL  # noqa: A001 (DALI's name)
DType = DataType = types.DALIDataType
ImageType, InterpType = types.DALIImageType, types.DALIInterpType


def dtype(x):
    """A ladle.types.DALIDataType from a name ("uint8"), a NumPy or torch dtype, or a DALIDataType."""
    return types.to_dtype(x)


# Operators not offered as functions (by their schemas' flags): readers are
# classes, transfers are Batch.gpu() / Batch.cpu(), and external sources are
# the calls' own inputs.
_NOT_FUNCTIONS = {"reader", "moves_data", "external"}


def _namespace(path):
    return _fn.namespace(_sys.modules[__name__], path)


def _signature(schema, random):
    """(input, /, *, batch_size=None, device=None, <arguments>=None..., rng=None), as DALI's."""
    P = _inspect.Parameter
    lo, hi = schema["min_inputs"], schema["max_inputs"]
    params = []
    if hi == 1:
        params.append(P("input", P.POSITIONAL_ONLY, default=P.empty if lo else None))
    elif hi > 1:
        for i in range(hi):
            params.append(P(f"input_{i}", P.POSITIONAL_ONLY, default=P.empty if i < lo else None))
    params += [P("batch_size", P.KEYWORD_ONLY, default=None), P("device", P.KEYWORD_ONLY, default=None)]
    seen = {"batch_size", "device"}
    extra = [{"name": k, "required": True} for k in getattr(_exec._fn_op(schema["name"]), "python_args", None) or {}]
    for a in extra + list(schema["args"]) + list(_fn._COMMON_ARGS.values()):
        if a["name"] in seen or not a["name"].isidentifier():
            continue
        seen.add(a["name"])
        params.append(P(a["name"], P.KEYWORD_ONLY, default=P.empty if a["required"] else None))
    if random:
        params.append(P("rng", P.KEYWORD_ONLY, default=None))
    return _inspect.Signature(params)


def _make_operator(schema):
    op_name = schema["name"]
    public = "ladle.dynamic." + op_name
    info = _exec.OpInfo(schema, public)
    call = _exec.call_operator

    if info.random:
        def operator(*inputs, device=None, batch_size=None, rng=None, **kwargs):
            return call(info, inputs, device, batch_size, kwargs, rng)
    else:
        def operator(*inputs, device=None, batch_size=None, **kwargs):
            return call(info, inputs, device, batch_size, kwargs)

    base = _exec._fn_op(op_name)
    operator.__name__ = op_name.rsplit(".", 1)[-1]
    operator.__qualname__ = op_name
    operator.__module__ = __name__ + ("." + op_name.rsplit(".", 1)[0] if "." in op_name else "")
    operator.__signature__ = _signature(schema, info.random)
    rng_doc = " rng= (a ladle.dynamic.random.RNG) gives the call's seed." if info.random else ""
    operator.__doc__ = (
        f"{public}{operator.__signature__}: the eager form of fn.{op_name}.\n\n"
        "Inputs are Batches or single samples; device='gpu' runs on the GPU; batch_size= for operators "
        f"without inputs.{rng_doc} The arguments are fn's:\n\n" + (base.__doc__ or "")
    )
    operator.schema = schema
    return operator


def _populate():
    schemas = _op_schemas()
    for name in sorted(schemas):
        *path, short = name.split(".")
        flags = set(schemas[name]["flags"])
        if "reader" in flags:
            cls = make_reader_class(schemas[name])
            setattr(_namespace(path), cls.__name__, cls)
            continue
        if flags & _NOT_FUNCTIONS:
            continue
        setattr(_namespace(path), short, _make_operator(schemas[name]))
    # Seeds and generators live beside the random operators, as in DALI.
    rnd = _namespace(["random"])
    for key in ("RNG", "get_default_rng", "set_seed", "get_seed"):
        setattr(rnd, key, getattr(_random, key))
    readers = _namespace(["readers"])
    readers.Reader = Reader
    # DALI's spellings.
    for ours, dalis in (("Tfrecord", "TFRecord"), ("Coco", "COCO")):
        if hasattr(readers, ours):
            setattr(readers, dalis, getattr(readers, ours))


_populate()

__all__ = [
    "Batch",
    "CACHE_SIZE",
    "CaptureError",
    "DType",
    "DataType",
    "Device",
    "EvalContext",
    "EvalMode",
    "Reader",
    "Stream",
    "Tensor",
    "ThreadPool",
    "as_batch",
    "as_tensor",
    "batch",
    "checkpoint",
    "clear_cache",
    "device",
    "dtype",
    "get_current_stream",
    "get_default_stream",
    "get_num_threads",
    "set_current_stream",
    "set_default_stream",
    "set_num_threads",
    "stream",
    "tensor",
    "types",
]
