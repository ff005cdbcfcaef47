"""ladle: a data-loading library for deep learning with NVIDIA DALI's Python API.

    from ladle import pipeline_def, fn, types

    @pipeline_def(batch_size=64, num_threads=4)
    def train(root):
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
        images = fn.decoders.image_random_crop(jpegs, output_type=types.RGB)
        images = fn.resize(images, resize_x=224, resize_y=224)
        return images, labels

    pipe = train("/data/train")
    images, labels = pipe.run()      # TensorLists; torch.from_dlpack(images) takes no copy

Errors are ``ladle.Error`` (a RuntimeError) or one of its subclasses.
"""

import json as _json
import os as _os

try:
    from . import _ladle
except ImportError as e:  # pragma: no cover - a source tree without the built extension
    raise ImportError(
        f"ladle's C extension is not built or does not load ({e}); install with `pip install .`, or for "
        "development build it with `cmake -S . -B build -DLADLE_PYTHON=ON && cmake --build build` "
        "and set PYTHONPATH=python"
    ) from e
from ._ladle import (
    CorruptDataError,
    CudaError,
    Error,
    InternalError,
    InvalidArgumentError,
    LimitError,
    NotAvailableError,
    OutOfMemoryError,
    ReadError,
    StateError,
    UnsupportedError,
)
from . import types
from .pipeline import DataNode, Pipeline, ThreadPool, pipeline_def
from .tensors import Tensor, TensorList, TensorListCPU, TensorListGPU, as_tensor_list
from . import fn
from . import math
from . import ops

__version__ = _ladle.version()


def build_info():
    """What this build of ladle has (libraries, CUDA kernels, devices found) as a dict."""
    return _json.loads(_ladle.build_info())


def sample_data_root():
    """The directory of the small built-in image set (4 classes of 8 JPEGs),
    laid out for fn.readers.file(file_root=...)."""
    return _os.path.join(_os.path.dirname(__file__), "data", "sample")


def sample_photos_root():
    """The directory of the demo's photographs (12 JPEGs of 2 classes, about
    400 pixels on the longer side, freely licensed: see the COPYRIGHT file
    there), laid out for fn.readers.file(file_root=...)."""
    return _os.path.join(_os.path.dirname(__file__), "data", "photos")


__all__ = [
    "CorruptDataError",
    "CudaError",
    "DataNode",
    "Error",
    "InternalError",
    "InvalidArgumentError",
    "LimitError",
    "NotAvailableError",
    "OutOfMemoryError",
    "Pipeline",
    "ReadError",
    "StateError",
    "Tensor",
    "TensorList",
    "TensorListCPU",
    "TensorListGPU",
    "ThreadPool",
    "UnsupportedError",
    "as_tensor_list",
    "build_info",
    "fn",
    "pipeline_def",
    "sample_data_root",
    "sample_photos_root",
    "types",
]
