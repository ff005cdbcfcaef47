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
    samples. ladle joins the ops' results with a chain of
    _conditional.merge, as its conditionals do, and its executor computes
    each op's CPU operators only for the samples that take it (GPU
    operators run on the whole batch); the values are the same, because
    every random draw is keyed by (operator, sample). See ladle.auto_aug's
    docstring for the cost."""
    if not ops:
        raise Exception("select: the list of augmentations is empty")
    # The predicates first: the executor then computes each op only for the samples that take it
    # (pipeline/demand.h), since they are known before the ops run.
    picks = [selected_op_idx == k for k in range(len(ops) - 1)]
    outs = [op(*op_args, **op_kwargs) for op in ops]
    result = outs[-1]
    for k in range(len(outs) - 2, -1, -1):
        result = _merge(outs[k], result, picks[k])
    return result
