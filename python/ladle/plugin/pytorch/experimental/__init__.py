"""``nvidia.dali.plugin.pytorch.experimental`` under ladle: ``proxy``."""

from . import proxy

__all__ = ["proxy"]
