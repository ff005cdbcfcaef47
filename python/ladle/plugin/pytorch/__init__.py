"""``nvidia.dali.plugin.pytorch`` under ladle: DALI's names for ladle.torch.

    from ladle.plugin.pytorch import DALIClassificationIterator, LastBatchPolicy
    from ladle.plugin.pytorch.experimental import proxy as dali_proxy

The classes are ladle.torch's; see that module for the exact epoch, padding
and sharding semantics and for state_dict() / load_state_dict().
``experimental.proxy`` runs a ladle pipeline on the samples of an ordinary
torch DataLoader. ``TorchPythonFunction`` and ``fn.torch_python_function``
run a Python function on torch tensors inside the pipeline.
"""

from ...torch import ClassificationIterator as DALIClassificationIterator
from ...torch import GenericIterator as DALIGenericIterator
from ...torch import RaggedIterator as DALIRaggedIterator
from ...torch import LastBatchPolicy, feed_ndarray, to_torch_type

from . import fn  # noqa: E402


class TorchPythonFunction:
    """DALI's ops-style TorchPythonFunction: made with the function and its
    arguments, called on DataNodes inside a pipeline definition (see
    fn.torch_python_function)."""

    def __init__(self, function, num_outputs=1, device="cpu", batch_processing=False, **kwargs):
        self._function, self._num_outputs = function, num_outputs
        self._device, self._batch_processing, self._kwargs = device, batch_processing, kwargs

    def __call__(self, *inputs, **kwargs):
        merged = dict(self._kwargs, **kwargs)
        return fn.torch_python_function(*inputs, function=self._function, num_outputs=self._num_outputs,
                                        device=self._device, batch_processing=self._batch_processing, **merged)


__all__ = ["TorchPythonFunction", "fn", "DALIClassificationIterator", "DALIGenericIterator", "DALIRaggedIterator", "LastBatchPolicy",
           "feed_ndarray", "to_torch_type"]
