"""``nvidia.dali.plugin.pytorch`` under ladle: DALI's names for ladle.torch.

    from ladle.plugin.pytorch import DALIClassificationIterator, LastBatchPolicy

The classes are ladle.torch's; see that module for the exact epoch, padding
and sharding semantics and for state_dict() / load_state_dict().
"""

from ..torch import ClassificationIterator as DALIClassificationIterator
from ..torch import GenericIterator as DALIGenericIterator
from ..torch import LastBatchPolicy, feed_ndarray, to_torch_type

__all__ = ["DALIClassificationIterator", "DALIGenericIterator", "LastBatchPolicy", "feed_ndarray", "to_torch_type"]
