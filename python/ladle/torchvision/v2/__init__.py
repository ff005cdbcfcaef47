"""ladle.torchvision.v2: the transform classes (as ladle.torchvision) and
the functional API (ladle.torchvision.v2.functional), laid out as
torchvision.transforms.v2 is."""

from .. import _api
from .._api import *  # noqa: F401,F403 (the same names as ladle.torchvision: one list, _api.__all__)
from . import functional

__all__ = ["functional"]
__all__ += _api.__all__
