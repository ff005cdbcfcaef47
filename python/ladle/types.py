"""Constants with DALI's names: data types, image types, interpolations, layouts.

Every enum-like operator argument is a string on the C side (``"RGB"``,
``"LINEAR"``, ``"CHW"``); the image, interpolation and layout constants here
are ``str`` enums whose value is that spelling, so they can be passed where a
string is expected and plain strings work too. Data types are ``IntEnum``
members whose value is the C library's ``ladle_dtype`` number.
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
}


class DALIImageType(str, enum.Enum):
    """Colour spaces of decoded images (``output_type``)."""

    RGB = "RGB"
    BGR = "BGR"
    GRAY = "GRAY"
    YCbCr = "YCbCr"

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
    """DALI's old layout constants; ladle spells layouts per sample ("CHW")."""

    NCHW = "CHW"
    NHWC = "HWC"

    def __str__(self):
        return self.value


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
INT32 = DALIDataType.INT32
INT64 = DALIDataType.INT64
FLOAT = DALIDataType.FLOAT
FLOAT16 = DALIDataType.FLOAT16

RGB = DALIImageType.RGB
BGR = DALIImageType.BGR
GRAY = DALIImageType.GRAY
YCbCr = DALIImageType.YCbCr

INTERP_NN = DALIInterpType.INTERP_NN
INTERP_LINEAR = DALIInterpType.INTERP_LINEAR
INTERP_CUBIC = DALIInterpType.INTERP_CUBIC
INTERP_LANCZOS3 = DALIInterpType.INTERP_LANCZOS3
INTERP_TRIANGULAR = DALIInterpType.INTERP_TRIANGULAR
INTERP_GAUSSIAN = DALIInterpType.INTERP_GAUSSIAN

NCHW = TensorLayout.NCHW
NHWC = TensorLayout.NHWC

# Spellings accepted for dtype arguments besides DALIDataType members.
_DTYPE_ALIASES = {
    "uint8": UINT8,
    "u8": UINT8,
    "int32": INT32,
    "i32": INT32,
    "int64": INT64,
    "i64": INT64,
    "float": FLOAT,
    "float32": FLOAT,
    "f32": FLOAT,
    "float16": FLOAT16,
    "half": FLOAT16,
    "f16": FLOAT16,
}


def to_dtype(value):
    """A DALIDataType from a DALIDataType, a ladle dtype name ("float16"), a
    NumPy dtype or scalar type, or a torch dtype. Raises ValueError otherwise."""
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
        raise ValueError(f"{value!r} is not a ladle data type (use uint8, int32, int64, float32 or float16)")
    if isinstance(value, int) and not isinstance(value, bool):
        return DALIDataType(value)
    # torch dtypes print as "torch.float16"; avoid importing torch.
    if type(value).__module__ == "torch" and type(value).__name__ == "dtype":
        return to_dtype(str(value).split(".", 1)[1])
    try:
        import numpy as np

        name = np.dtype(value).name
    except TypeError:
        raise ValueError(f"{value!r} is not a ladle data type") from None
    if name not in _DTYPE_ALIASES:
        raise ValueError(f"{name} is not a ladle data type (use uint8, int32, int64, float32 or float16)")
    return _DTYPE_ALIASES[name]


def from_dtype_name(name):
    """The DALIDataType of a ladle dtype name ("uint8", "float16", ...)."""
    return _DTYPE_ALIASES[name]
