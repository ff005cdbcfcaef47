"""ladle.dynamic: ladle's operators called eagerly, one call at a time
(DALI's ``nvidia.dali.experimental.dynamic``, "ndd").

    import ladle.dynamic as ldd

    reader = ldd.readers.File(file_root=root, random_shuffle=True)
    for jpegs, labels in reader.next_epoch(batch_size=32):
        images = ldd.decoders.image(jpegs, device="gpu")
        images = ldd.resize(images, resize_x=224, resize_y=224)
        x = ldd.crop_mirror_normalize(images, dtype=ldd.types.FLOAT16,
                                      mirror=ldd.random.coin_flip(batch_size=len(images)))
        x = x.torch()                      # [32, 3, 224, 224], no copy

Every operator of ``ladle.fn`` is here under the same dotted name, with the
same keyword arguments; readers are classes (``readers.File``, see Reader).

Inputs and outputs. An operator takes Batches (``ldd.batch(...)``, a list of
arrays, a ladle.TensorList) or single samples (a Tensor, a NumPy array, a CPU
torch tensor, a PIL image): a Batch in gives a Batch out, a single sample in a
Tensor out. An [N, ...] array is one sample; make it a batch with
``ldd.batch(array)``. Operators without inputs (random.*) take ``batch_size=``
(without it they return one Tensor). Arguments that the pipeline API accepts
per sample (DataNodes there) accept Batches or lists of numbers here, e.g.
``mirror=ldd.random.coin_flip(batch_size=n)``.

Devices. ``device="gpu"`` runs on the GPU (for decoders that is the pipeline
API's "mixed": host input, GPU output); the default is "cpu", or "gpu" when
an input is in GPU memory. A CPU input of a GPU operator is copied to the GPU
first. GPU operators exist only in a CUDA build; asking for one elsewhere
raises NotAvailableError.

How a call runs. Each call becomes a small ladle.Pipeline (external sources
feeding the operator), built on first use and cached for later calls with
the same operator, device, constant arguments, input dtypes/ranks/layouts/
devices and batch-size bucket (the next power of two); at most
``CACHE_SIZE`` (64) are kept, least recently used closed first. All share one
ladle.ThreadPool of ``set_num_threads(n)`` workers (default min(4, cores)).
There is no fusion across calls (a pipeline fuses resize into
crop_mirror_normalize on the GPU; separate calls do not).

Randomness: see ``random.set_seed``. In short, the default seed is 0 and a
program's random numbers depend only on the seed and the order of its random
calls: the same program gives the same results, each call new numbers.
Operators that draw random numbers build their pipeline per call (about
0.3 ms on the CPU) since the seed is part of a pipeline.
"""

import sys as _sys

from .. import fn as _fn
from .. import types
from ..pipeline import op_schemas as _op_schemas
from . import _exec
from ._data import Batch, Tensor, as_batch, as_tensor, batch, tensor
from ._exec import CACHE_SIZE, clear_cache, get_num_threads, set_num_threads
from ._readers import Reader, make_reader_class

# Operators not offered as functions (by their schemas' flags): readers are
# classes, transfers are Batch.gpu() / Batch.cpu(), and external sources are
# the calls' own inputs.
_NOT_FUNCTIONS = {"reader", "moves_data", "external"}


def _namespace(path):
    return _fn.namespace(_sys.modules[__name__], path)


def _make_operator(schema):
    op_name = schema["name"]
    public = "ladle.dynamic." + op_name

    def operator(*inputs, device=None, batch_size=None, **kwargs):
        return _exec.call_operator(schema, public, inputs, device=device, batch_size=batch_size, kwargs=kwargs)


    base = _exec._fn_op(op_name)
    operator.__name__ = op_name.rsplit(".", 1)[-1]
    operator.__qualname__ = op_name
    operator.__module__ = __name__ + ("." + op_name.rsplit(".", 1)[0] if "." in op_name else "")
    operator.__doc__ = (
        f"{public}(*inputs, device=None, batch_size=None, **kwargs): the eager form of fn.{op_name}.\n\n"
        "Inputs are Batches or single samples; device='gpu' runs on the GPU; batch_size= for operators "
        "without inputs. The arguments are fn's:\n\n" + (base.__doc__ or "")
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
    # Seeds live beside the random operators, as in DALI.
    rnd = _namespace(["random"])
    rnd.set_seed = _exec.set_seed
    rnd.get_seed = _exec.get_seed
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
    "Reader",
    "Tensor",
    "as_batch",
    "as_tensor",
    "batch",
    "clear_cache",
    "get_num_threads",
    "set_num_threads",
    "tensor",
    "types",
]
