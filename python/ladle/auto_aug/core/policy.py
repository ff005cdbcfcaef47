"""Policy: the sub-policies of an AutoAugment-style scheme."""

import warnings

from ._augmentation import Augmentation


class Policy:
    """A named list of sub-policies (DALI's Policy): each a sequence of
    (augmentation, probability, magnitude_bin or None); one sub-policy is
    drawn per sample, and each of its steps runs with its probability."""

    def __init__(self, name, num_magnitude_bins, sub_policies):
        if not isinstance(num_magnitude_bins, int) or isinstance(num_magnitude_bins, bool) or num_magnitude_bins < 1:
            raise Exception(f"Policy: `num_magnitude_bins` must be a positive integer, got {num_magnitude_bins!r}")
        if not isinstance(sub_policies, (list, tuple)):
            raise Exception(f"Policy: `sub_policies` must be a list or tuple, got {type(sub_policies).__name__}")
        for sub in sub_policies:
            if not isinstance(sub, (list, tuple)):
                raise Exception(f"Policy: each sub-policy must be a list or tuple, got {sub!r}")
            for step in sub:
                if not isinstance(step, (list, tuple)) or len(step) != 3:
                    raise Exception(f"Policy: each step is (augmentation, probability, magnitude_bin), got {step!r}")
                aug, p, mag = step
                if not isinstance(aug, Augmentation):
                    raise Exception(f"Policy: `{aug!r}` is not an Augmentation (missing @augmentation?)")
                if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
                    raise Exception(f"Policy: the probability of `{aug.name}` must be in [0, 1], got {p!r}")
                if p == 0:
                    warnings.warn(f"Policy {name}: `{aug.name}` has probability 0 in a sub-policy")
                if mag is None:
                    if aug.mag_range is not None:
                        raise Exception(f"Policy {name}: `{aug.name}` has a mag_range and needs a magnitude bin")
                    continue
                if aug.mag_range is None:
                    warnings.warn(f"Policy {name}: `{aug.name}` takes no magnitude; the bin {mag} is ignored "
                                  "(give None)")
                if isinstance(mag, bool) or not isinstance(mag, int) or not 0 <= mag < num_magnitude_bins:
                    raise Exception(f"Policy {name}: the magnitude bin of `{aug.name}` must be an integer in "
                                    f"[0, {num_magnitude_bins - 1}], got {mag!r}")
        self.name = name
        self.num_magnitude_bins = num_magnitude_bins
        self.sub_policies = _unique_names(sub_policies)

    @property
    def augmentations(self):
        augs = {aug for sub in self.sub_policies for aug, _, _ in sub}
        return {a.name: a for a in sorted(augs, key=lambda a: a.name)}

    def __repr__(self):
        subs = ",\n\t".join(repr([(a.name, p, m) for a, p, m in sub]) for sub in self.sub_policies)
        augs = ",\n\t".join(f"{n!r}: {a!r}" for n, a in self.augmentations.items())
        return (f"Policy(name={self.name!r}, num_magnitude_bins={self.num_magnitude_bins!r}, "
                f"sub_policies=[{subs and chr(10) + chr(9) + subs}], augmentations={{{augs and chr(10) + chr(9) + augs}}})")


def _unique_names(sub_policies):
    """Distinct augmentations sharing a name get "<k>__<name>" names (k in
    order of first use), so that a policy's listing is unambiguous."""
    order = []
    for sub in sub_policies:
        for aug, _, _ in sub:
            if aug not in order:
                order.append(aug)
    if len({a.name for a in order}) == len(order):
        return tuple(tuple(sub) for sub in sub_policies)
    width = len(str(len(order) - 1))
    renamed = {a: a.augmentation(name=f"{str(k).zfill(width)}__{a.name}") for k, a in enumerate(order)}
    return tuple(tuple((renamed[a], p, m) for a, p, m in sub) for sub in sub_policies)
