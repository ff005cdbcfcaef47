"""``nvidia.dali.plugin.pytorch.fn`` under ladle: torch_python_function."""

from ... import _python_function


def torch_python_function(*inputs, function, num_outputs=1, batch_processing=False, output_layouts=None,
                          device=None, name=None, preserve=None, bytes_per_sample_hint=None, seed=None):
    """A Python function on torch tensors inside the pipeline (DALI's
    plugin.pytorch.fn.torch_python_function): fn.python_function whose
    function gets torch tensors (views of the pipeline's memory: CPU tensors
    over read-only memory on the cpu, CUDA tensors on the gpu) and returns
    torch tensors. preserve, bytes_per_sample_hint and seed have no effect
    (a Python function is never pruned and draws nothing)."""
    return _python_function.add("torch_python_function", "python_function", inputs, function, num_outputs,
                                batch_processing, output_layouts, device, name, "torch")
