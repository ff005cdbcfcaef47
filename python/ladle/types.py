"""Constants with DALI's names: data types, image types, interpolations, layouts.

Every enum-like operator argument is a string on the C side (``"RGB"``,
``"LINEAR"``, ``"CHW"``); the image, interpolation and layout constants here
are ``str`` enums whose value is that spelling, so they can be passed where a
string is expected and plain strings work too. Data types are ``IntEnum``
members whose value is the C library's ``ladle_dtype`` number (not DALI's
numbering: compare members or names, not numbers).

``DALIDataType`` has DALI's numeric and bool types: INT8, INT16, INT32, INT64,
UINT8, UINT16, UINT32, UINT64, FLOAT16, FLOAT (float32), FLOAT64 and BOOL.
DALI's NO_TYPE, STRING, PYTHON_OBJECT and the argument-only types (FEATURE,
IMAGE_TYPE, DATA_TYPE, INTERP_TYPE, TENSOR_LAYOUT and the ``_*_VEC`` ones)
are left out: a ladle tensor holds fixed-size numbers only, so none of them
can be carried.
"""

import enum
import typing


class DALIDataType(enum.IntEnum):
    """Element types of tensors (values are ``ladle_dtype`` numbers)."""

    UINT8 = 0
    INT32 = 1
    FLOAT = 2  # float32
    FLOAT16 = 3
    INT64 = 4
    INT8 = 5
    INT16 = 6
    UINT16 = 7
    UINT32 = 8
    UINT64 = 9
    FLOAT64 = 10
    BOOL = 11

    @property
    def numpy_name(self):
        return _NUMPY_NAMES[self]

    def __str__(self):
        return self.name


_NUMPY_NAMES = {
    DALIDataType.UINT8: "uint8",
    DALIDataType.INT32: "int32",
    DALIDataType.FLOAT: "float32",
    DALIDataType.FLOAT16: "float16",
    DALIDataType.INT64: "int64",
    DALIDataType.INT8: "int8",
    DALIDataType.INT16: "int16",
    DALIDataType.UINT16: "uint16",
    DALIDataType.UINT32: "uint32",
    DALIDataType.UINT64: "uint64",
    DALIDataType.FLOAT64: "float64",
    DALIDataType.BOOL: "bool",
}


class DALIImageType(str, enum.Enum):
    """Colour spaces of decoded images (``output_type``)."""

    RGB = "RGB"
    BGR = "BGR"
    GRAY = "GRAY"
    YCbCr = "YCbCr"
    ANY_DATA = "ANY_DATA"

    def __str__(self):
        return self.value


class DALIInterpType(str, enum.Enum):
    """Interpolation methods (``interp_type``)."""

    INTERP_NN = "NN"
    INTERP_LINEAR = "LINEAR"
    INTERP_CUBIC = "CUBIC"
    INTERP_LANCZOS3 = "LANCZOS3"
    INTERP_TRIANGULAR = "TRIANGULAR"
    INTERP_GAUSSIAN = "GAUSSIAN"

    def __str__(self):
        return self.value


class TensorLayout(str, enum.Enum):
    """DALI's layout constants (types.NCHW == "CHW" as in DALI: the batch
    dimension is not part of a sample's layout)."""

    NCHW = "CHW"
    NHWC = "HWC"
    NFHWC = "FHWC"
    NFCHW = "FCHW"
    SAME = ""

    def __str__(self):
        return self.value


class PipelineAPIType(enum.Enum):
    """DALI's pipeline API kinds; ladle pipelines support run() and the
    iterator API, which is what BASIC and ITERATOR mean in DALI."""

    BASIC = 0
    ITERATOR = 1
    SCHEDULED = 2


#: DALI's device_id for a pipeline without a GPU (ladle also takes None).
CPU_ONLY_DEVICE_ID = -99999


class BatchInfo(typing.NamedTuple):
    """What an external source's callable gets with batch_info=True: the
    batch's index in the epoch and the epoch's index (DALI's names)."""

    iteration: int
    epoch_idx: int


class SampleInfo(typing.NamedTuple):
    """What a per-sample (batch=False) external source's callable gets: the
    sample's index in the epoch and in its batch, the batch's index in the
    epoch, and the epoch's index (DALI's names)."""

    idx_in_epoch: int
    idx_in_batch: int
    iteration: int
    epoch_idx: int


UINT8 = DALIDataType.UINT8
UINT16 = DALIDataType.UINT16
UINT32 = DALIDataType.UINT32
UINT64 = DALIDataType.UINT64
INT8 = DALIDataType.INT8
INT16 = DALIDataType.INT16
INT32 = DALIDataType.INT32
INT64 = DALIDataType.INT64
FLOAT16 = DALIDataType.FLOAT16
FLOAT = DALIDataType.FLOAT
FLOAT64 = DALIDataType.FLOAT64
BOOL = DALIDataType.BOOL

RGB = DALIImageType.RGB
BGR = DALIImageType.BGR
GRAY = DALIImageType.GRAY
YCbCr = DALIImageType.YCbCr
ANY_DATA = DALIImageType.ANY_DATA

INTERP_NN = DALIInterpType.INTERP_NN
INTERP_LINEAR = DALIInterpType.INTERP_LINEAR
INTERP_CUBIC = DALIInterpType.INTERP_CUBIC
INTERP_LANCZOS3 = DALIInterpType.INTERP_LANCZOS3
INTERP_TRIANGULAR = DALIInterpType.INTERP_TRIANGULAR
INTERP_GAUSSIAN = DALIInterpType.INTERP_GAUSSIAN

NCHW = TensorLayout.NCHW
NHWC = TensorLayout.NHWC
NFHWC = TensorLayout.NFHWC
NFCHW = TensorLayout.NFCHW
SAME = TensorLayout.SAME

# Spellings accepted for dtype arguments besides DALIDataType members: NumPy's
# and torch's names (the latter without "torch."), and a few short forms.
_DTYPE_ALIASES = {name: t for t, name in _NUMPY_NAMES.items()}
_DTYPE_ALIASES.update({
    "u8": UINT8, "u16": UINT16, "u32": UINT32, "u64": UINT64,
    "i8": INT8, "i16": INT16, "i32": INT32, "i64": INT64,
    "float": FLOAT, "f32": FLOAT, "float16": FLOAT16, "half": FLOAT16, "f16": FLOAT16,
    "double": FLOAT64, "f64": FLOAT64, "bool_": BOOL,
})
_SUPPORTED = "int8..int64, uint8..uint64, float16, float32, float64 or bool"


def to_dtype(value):
    """A DALIDataType from a DALIDataType, a name ("float16", "FLOAT64",
    "types.INT8"), a NumPy dtype or scalar type (np.float64, np.bool_, bool),
    or a torch dtype (torch.bool, torch.float64, ...). Raises ValueError
    otherwise, e.g. for object or string arrays, which ladle cannot carry."""
    if isinstance(value, DALIDataType):
        return value
    if isinstance(value, str):
        key = value.lower()
        if key.startswith("types."):
            key = key[len("types."):]
        if key in _DTYPE_ALIASES:
            return _DTYPE_ALIASES[key]
        if value.upper() in DALIDataType.__members__:
            return DALIDataType[value.upper()]
        raise ValueError(f"{value!r} is not a ladle data type (use {_SUPPORTED})")
    if value is bool:
        return BOOL
    if isinstance(value, int) and not isinstance(value, bool):
        return DALIDataType(value)
    # torch dtypes print as "torch.float16"; avoid importing torch.
    if type(value).__module__ == "torch" and type(value).__name__ == "dtype":
        name = str(value).split(".", 1)[1]
        if name not in _DTYPE_ALIASES:
            raise ValueError(f"{value} is not a ladle data type (use {_SUPPORTED})")
        return _DTYPE_ALIASES[name]
    try:
        import numpy as np

        dt = np.dtype(value)
    except TypeError:
        raise ValueError(f"{value!r} is not a ladle data type") from None
    if dt.name not in _NUMPY_NAMES.values() or not dt.isnative:
        what = {"O": "Python objects", "U": "strings", "S": "bytes", "V": "records"}.get(dt.kind, dt.name)
        raise ValueError(f"{what} ({dt.str}) is not a ladle data type (use {_SUPPORTED})")
    return _DTYPE_ALIASES[dt.name]


def from_dtype_name(name):
    """The DALIDataType of a ladle dtype name ("uint8", "float16", ...)."""
    return _DTYPE_ALIASES[name]


def Constant(value, dtype=None, shape=None, layout=None, device=None):
    """DALI's types.Constant: a scalar (without shape, layout or device) is a
    typed constant for arithmetic expressions (a NumPy scalar of `dtype`);
    anything else is an fn.constant node of the pipeline being defined
    (float64 data become float32 and int64 int32 unless `dtype` says)."""
    from . import math

    a = math._constant_array(value, dtype)
    if a.ndim == 0 and shape is None and layout is None and device is None:
        return a.dtype.type(a)
    node = math._constant_node(a, shape=shape, layout=layout)
    return node.gpu() if device == "gpu" else node


def to_numpy_type(dtype):
    """The NumPy scalar type of a DALIDataType (DALI's types.to_numpy_type)."""
    import numpy as np

    return np.dtype(to_dtype(dtype).numpy_name).type


def to_dali_type(dtype):
    """The DALIDataType of a NumPy dtype or type (DALI's types.to_dali_type)."""
    return to_dtype(dtype)
