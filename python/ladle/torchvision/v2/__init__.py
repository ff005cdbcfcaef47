"""ladle.torchvision.v2: the transform classes (as ladle.torchvision) and
the functional API (ladle.torchvision.v2.functional), laid out as
torchvision.transforms.v2 is."""

from .._transforms import (
    CenterCrop,
    ColorJitter,
    Compose,
    Grayscale,
    Normalize,
    PILToTensor,
    RandomGrayscale,
    RandomHorizontalFlip,
    RandomResizedCrop,
    RandomVerticalFlip,
    Resize,
    ToDtype,
    ToPureTensor,
    Transform,
)
from .._io import InterpolationMode
from . import functional

__all__ = [
    "CenterCrop",
    "ColorJitter",
    "Compose",
    "Grayscale",
    "InterpolationMode",
    "Normalize",
    "PILToTensor",
    "RandomGrayscale",
    "RandomHorizontalFlip",
    "RandomResizedCrop",
    "RandomVerticalFlip",
    "Resize",
    "ToDtype",
    "ToPureTensor",
    "Transform",
    "functional",
]
