"""The building blocks of ladle.auto_aug (DALI's nvidia.dali.auto_aug.core):
the @augmentation decorator, signed_bin, select and Policy."""

from ._augmentation import Augmentation as _Augmentation
from ._augmentation import augmentation, signed_bin
from ._select import select
from .policy import Policy

__all__ = ("signed_bin", "augmentation", "select", "Policy", "_Augmentation")
