"""``nvidia.dali.plugin.pytorch`` under ladle: DALI's names for ladle.torch.

    from ladle.plugin.pytorch import DALIClassificationIterator, LastBatchPolicy
    from ladle.plugin.pytorch.experimental import proxy as dali_proxy

The classes are ladle.torch's; see that module for the exact epoch, padding
and sharding semantics and for state_dict() / load_state_dict().
``experimental.proxy`` runs a ladle pipeline on the samples of an ordinary
torch DataLoader. Not here yet: TorchPythonFunction (ladle has no
fn.python_function yet).
"""

from ...torch import ClassificationIterator as DALIClassificationIterator
from ...torch import GenericIterator as DALIGenericIterator
from ...torch import RaggedIterator as DALIRaggedIterator
from ...torch import LastBatchPolicy, feed_ndarray, to_torch_type

__all__ = ["DALIClassificationIterator", "DALIGenericIterator", "DALIRaggedIterator", "LastBatchPolicy",
           "feed_ndarray", "to_torch_type"]
