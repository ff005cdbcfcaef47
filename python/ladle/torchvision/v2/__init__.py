"""ladle.torchvision.v2: the transform classes (as ladle.torchvision) and
the functional API (ladle.torchvision.v2.functional), laid out as
torchvision.transforms.v2 is."""

from .._transforms import (
    CenterCrop,
    ColorJitter,
    Compose,
    Grayscale,
    GaussianBlur,
    Normalize,
    Pad,
    PILToTensor,
    RandomAffine,
    RandomErasing,
    RandomGrayscale,
    RandomHorizontalFlip,
    RandomResizedCrop,
    RandomRotation,
    RandomVerticalFlip,
    Resize,
    ToDtype,
    ToPureTensor,
    Transform,
)
from .._io import InterpolationMode
from .._autoaug import AutoAugment, AutoAugmentPolicy, ConvertImageDtype, RandAugment, RandomApply, TrivialAugmentWide
from . import functional

__all__ = [
    "AutoAugment",
    "AutoAugmentPolicy",
    "ConvertImageDtype",
    "RandAugment",
    "RandomApply",
    "TrivialAugmentWide",
    "CenterCrop",
    "ColorJitter",
    "Compose",
    "GaussianBlur",
    "Grayscale",
    "InterpolationMode",
    "Normalize",
    "PILToTensor",
    "Pad",
    "RandomAffine",
    "RandomErasing",
    "RandomGrayscale",
    "RandomHorizontalFlip",
    "RandomResizedCrop",
    "RandomRotation",
    "RandomVerticalFlip",
    "Resize",
    "ToDtype",
    "ToPureTensor",
    "Transform",
    "functional",
]
