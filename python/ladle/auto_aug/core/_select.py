"""select: one augmentation per sample, chosen by a per-sample index."""

from ... import fn


def _merge(a, b, predicate):
    if a is b:
        return a
    if a.device != b.device:
        a, b = (a.gpu(), b) if b.device == "gpu" else (a, b.gpu())
    return getattr(fn, "_conditional").merge(a, b, predicate=predicate)


def select(ops, selected_op_idx, *op_args, **op_kwargs):
    """ops[selected_op_idx](*op_args, **op_kwargs) sample by sample
    (DALI's select). `selected_op_idx`: per-sample ints in [0, len(ops)).

    DALI splits the batch with conditionals and runs each op on its own
    samples. ladle runs every op on the whole batch and keeps each sample's
    own result (a chain of _conditional.merge, as its conditionals do); the
    values are the same, because every random draw is keyed by (operator,
    sample), and the cost is the work of the ops a sample does not take
    (measured in ladle.auto_aug's docstring)."""
    if not ops:
        raise Exception("select: the list of augmentations is empty")
    outs = [op(*op_args, **op_kwargs) for op in ops]
    if len(outs) == 1:
        return outs[0]
    result = outs[-1]
    for k in range(len(outs) - 2, -1, -1):
        result = _merge(outs[k], result, selected_op_idx == k)
    return result
