"""AutoAugment (https://arxiv.org/abs/1805.09501) as DALI's
nvidia.dali.auto_aug.auto_augment: the paper's policies for ImageNet,
reduced ImageNet, SVHN and reduced CIFAR-10, and apply_auto_augment for
any Policy."""

import numpy as np

from .. import fn, types
from . import augmentations as a
from .core import Policy, signed_bin
from .core._augmentation import forbid_unused_kwargs
from .core._utils import get_translations, pretty_select

_NO_TRANSLATION = ("reduced_image_net",)


def auto_augment(data, policy_name="image_net", shape=None, fill_value=128, interp_type=None,
                 max_translate_abs=None, max_translate_rel=None, seed=None):
    """One of the predefined policies applied to `data` (uint8 HWC images or
    FHWC videos): "image_net" (default), "reduced_image_net", "svhn",
    "reduced_cifar10". shape: (height, width) or a DataNode of it; with it,
    translations reach max_translate_rel (default 1) of the extent, without
    it max_translate_abs pixels (default 250). fill_value: the warps'
    padding (None: the border repeats); interp_type: the warps'
    interpolation; seed: for the random choices."""
    policies = {"image_net": get_image_net_policy, "reduced_image_net": get_reduced_image_net_policy,
                "svhn": get_svhn_policy, "reduced_cifar10": get_reduced_cifar10_policy}
    if not isinstance(policy_name, str) or policy_name not in policies:
        raise Exception(f"`policy_name` must be one of {', '.join(policies)}; got {policy_name!r}")
    kwargs = dict(fill_value=fill_value, interp_type=interp_type)
    if policy_name in _NO_TRANSLATION:
        for value, name in ((shape, "shape"), (max_translate_abs, "max_translate_abs"),
                            (max_translate_rel, "max_translate_rel")):
            if value is not None:
                raise Exception(f"The policy `{policy_name}` has no translations: `{name}` must not be given")
        policy = policies[policy_name]()
    else:
        policy = policies[policy_name](use_shape=shape is not None, max_translate_abs=max_translate_abs,
                                       max_translate_rel=max_translate_rel)
        if shape is not None:
            kwargs["shape"] = shape
    return apply_auto_augment(policy, data, seed, **kwargs)


def auto_augment_image_net(data, shape=None, fill_value=128, interp_type=None, max_translate_abs=None,
                           max_translate_rel=None, seed=None):
    """auto_augment with policy_name="image_net"."""
    return auto_augment(data, "image_net", shape, fill_value, interp_type, max_translate_abs, max_translate_rel,
                        seed)


def _tables(policy):
    """Per sub-policy and step: probability, magnitude bin, and index into
    the step's list of augmentations (identity for missing steps)."""
    subs = policy.sub_policies
    steps = max(len(s) for s in subs)
    prob = np.zeros((len(subs), steps), np.float32)
    mags = np.zeros((len(subs), steps), np.int32)
    per_step = []
    for k in range(steps):
        augs = []
        for s in subs:
            if k < len(s) and s[k][0] not in augs:
                augs.append(s[k][0])
        per_step.append(augs + [a.identity])
    ids = np.array([[len(per_step[k]) - 1 for k in range(steps)] for _ in subs], np.int32)
    for i, s in enumerate(subs):
        for k, (aug, p, m) in enumerate(s):
            prob[i, k] = p
            # None: the augmentation takes no magnitude. DALI stores -999 there; ladle stores 0 because every
            # augmentation of a step looks its parameter up for every sample (see select), so the bin must
            # be a valid index even where it is not used.
            mags[i, k] = 0 if m is None else m
            ids[i, k] = per_step[k].index(aug)
    return prob, mags, ids, per_step


def apply_auto_augment(policy, data, seed=None, **kwargs):
    """`policy` applied AutoAugment-style: per sample one sub-policy drawn
    uniformly, each of its steps run with its probability. kwargs go to the
    augmentations that take them (shape, fill_value, interp_type)."""
    if not policy.sub_policies:
        raise Exception(f"apply_auto_augment: the policy {policy.name} is empty")
    prob, mags, ids, per_step = _tables(policy)
    steps = prob.shape[1]
    should_run = fn.random.uniform(range=[0, 1], shape=[steps], dtype=types.FLOAT, seed=seed)
    sub_id = fn.random.uniform(values=list(range(len(policy.sub_policies))), dtype=types.INT32, seed=seed)
    run_prob = types.Constant(prob)[sub_id]
    bins = types.Constant(mags)[sub_id]
    aug_ids = types.Constant(ids)[sub_id]
    if any(aug.randomly_negate for aug in policy.augmentations.values()):
        bins = signed_bin(bins, seed=seed, shape=(steps,))
    forbid_unused_kwargs(policy.augmentations.values(), kwargs, "apply_auto_augment")
    run = [should_run[k] < run_prob[k] for k in range(steps)]  # known before the steps' augmentations
    for k in range(steps):
        applied = pretty_select(per_step[k], aug_ids[k], dict(data=data, magnitude_bin=bins[k],
                                                                num_magnitude_bins=policy.num_magnitude_bins,
                                                                **kwargs),
                                "apply_auto_augment", "get_image_net_policy")
        data = getattr(fn, "_conditional").merge(applied, data, predicate=run[k]) \
            if applied is not data else data
    return data


def _suite(use_shape, max_translate_abs, max_translate_rel):
    translate_x, translate_y = get_translations(use_shape, 250, 1.0, max_translate_abs, max_translate_rel)
    return dict(
        translate_x=translate_x, translate_y=translate_y,
        shear_x=a.shear_x.augmentation((0, 0.3), True), shear_y=a.shear_y.augmentation((0, 0.3), True),
        rotate=a.rotate.augmentation((0, 30), True),
        brightness=a.brightness.augmentation((0.1, 1.9), False, None),
        color=a.color.augmentation((0.1, 1.9), False, None),
        contrast=a.contrast.augmentation((0.1, 1.9), False, None),
        sharpness=a.sharpness.augmentation((0.1, 1.9), False, a.sharpness_kernel_shifted),
        posterize=a.posterize.augmentation((0, 4), False, a.poster_mask_uint8),
        solarize=a.solarize.augmentation((0, 256), False),
        solarize_add=a.solarize_add.augmentation((0, 110), False),
        invert=a.invert, equalize=a.equalize, auto_contrast=a.auto_contrast)


def _policy(name, table, suite):
    return Policy(name=name, num_magnitude_bins=11,
                  sub_policies=[[(suite[op], p, m) for op, p, m in sub] for sub in table])


# The policies as the AutoAugment paper lists them: (operation, probability, magnitude bin of 0..10).
_IMAGE_NET = [
    [("equalize", 0.8, None), ("shear_y", 0.8, 4)], [("color", 0.4, 9), ("equalize", 0.6, None)],
    [("color", 0.4, 1), ("rotate", 0.6, 8)], [("solarize", 0.8, 3), ("equalize", 0.4, None)],
    [("solarize", 0.4, 2), ("solarize", 0.6, 2)], [("color", 0.2, 0), ("equalize", 0.8, None)],
    [("equalize", 0.4, None), ("solarize_add", 0.8, 3)], [("shear_x", 0.2, 9), ("rotate", 0.6, 8)],
    [("color", 0.6, 1), ("equalize", 1.0, None)], [("invert", 0.4, None), ("rotate", 0.6, 0)],
    [("equalize", 1.0, None), ("shear_y", 0.6, 3)], [("color", 0.4, 7), ("equalize", 0.6, None)],
    [("posterize", 0.4, 6), ("auto_contrast", 0.4, None)], [("solarize", 0.6, 8), ("color", 0.6, 9)],
    [("solarize", 0.2, 4), ("rotate", 0.8, 9)], [("rotate", 1.0, 7), ("translate_y", 0.8, 9)],
    [("solarize", 0.8, 4)], [("shear_y", 0.8, 0), ("color", 0.6, 4)], [("color", 1.0, 0), ("rotate", 0.6, 2)],
    [("equalize", 0.8, None)], [("equalize", 1.0, None), ("auto_contrast", 0.6, None)],
    [("shear_y", 0.4, 7), ("solarize_add", 0.6, 7)], [("posterize", 0.8, 2), ("solarize", 0.6, 10)],
    [("solarize", 0.6, 8), ("equalize", 0.6, None)], [("color", 0.8, 6), ("rotate", 0.4, 5)],
]
_REDUCED_CIFAR10 = [
    [("invert", 0.1, None), ("contrast", 0.2, 6)], [("rotate", 0.7, 2), ("translate_x", 0.3, 9)],
    [("sharpness", 0.8, 1), ("sharpness", 0.9, 3)], [("shear_y", 0.5, 8), ("translate_y", 0.7, 9)],
    [("auto_contrast", 0.5, None), ("equalize", 0.9, None)], [("shear_y", 0.2, 7), ("posterize", 0.3, 7)],
    [("color", 0.4, 3), ("brightness", 0.6, 7)], [("sharpness", 0.3, 9), ("brightness", 0.7, 9)],
    [("equalize", 0.6, None), ("equalize", 0.5, None)], [("contrast", 0.6, 7), ("sharpness", 0.6, 5)],
    [("color", 0.7, 7), ("translate_x", 0.5, 8)], [("equalize", 0.3, None), ("auto_contrast", 0.4, None)],
    [("translate_y", 0.4, 3), ("sharpness", 0.2, 6)], [("brightness", 0.9, 6), ("color", 0.2, 8)],
    [("solarize", 0.5, 2)], [("equalize", 0.2, None), ("auto_contrast", 0.6, None)],
    [("equalize", 0.2, None), ("equalize", 0.6, None)], [("color", 0.9, 9), ("equalize", 0.6, None)],
    [("auto_contrast", 0.8, None), ("solarize", 0.2, 8)], [("brightness", 0.1, 3), ("color", 0.7, 0)],
    [("solarize", 0.4, 5), ("auto_contrast", 0.9, None)], [("translate_y", 0.9, 9), ("translate_y", 0.7, 9)],
    [("auto_contrast", 0.9, None), ("solarize", 0.8, 3)], [("equalize", 0.8, None), ("invert", 0.1, None)],
    [("translate_y", 0.7, 9), ("auto_contrast", 0.9, None)],
]
_SVHN = [
    [("shear_x", 0.9, 4), ("invert", 0.2, None)], [("shear_y", 0.9, 8), ("invert", 0.7, None)],
    [("equalize", 0.6, None), ("solarize", 0.6, 6)], [("invert", 0.9, None), ("equalize", 0.6, None)],
    [("equalize", 0.6, None), ("rotate", 0.9, 3)], [("shear_x", 0.9, 4), ("auto_contrast", 0.8, None)],
    [("shear_y", 0.9, 8), ("invert", 0.4, None)], [("shear_y", 0.9, 5), ("solarize", 0.2, 6)],
    [("invert", 0.9, None), ("auto_contrast", 0.8, None)], [("equalize", 0.6, None), ("rotate", 0.9, 3)],
    [("shear_x", 0.9, 4), ("solarize", 0.3, 3)], [("shear_y", 0.8, 8), ("invert", 0.7, None)],
    [("equalize", 0.9, None), ("translate_y", 0.6, 6)], [("invert", 0.9, None), ("equalize", 0.6, None)],
    [("contrast", 0.3, 3), ("rotate", 0.8, 4)], [("invert", 0.8, None)], [("shear_y", 0.7, 6), ("solarize", 0.4, 8)],
    [("invert", 0.6, None), ("rotate", 0.8, 4)], [("shear_y", 0.3, 7), ("translate_x", 0.9, 3)],
    [("shear_x", 0.1, 6), ("invert", 0.6, None)], [("solarize", 0.7, 2), ("translate_y", 0.6, 7)],
    [("shear_y", 0.8, 4), ("invert", 0.8, None)], [("shear_x", 0.7, 9), ("translate_y", 0.8, 3)],
    [("shear_y", 0.8, 5), ("auto_contrast", 0.7, None)], [("shear_x", 0.7, 2), ("invert", 0.1, None)],
]
_REDUCED_IMAGE_NET = [
    [("posterize", 0.4, 8), ("rotate", 0.6, 9)], [("solarize", 0.6, 5), ("auto_contrast", 0.6, None)],
    [("equalize", 0.8, None), ("equalize", 0.6, None)], [("posterize", 0.6, 7), ("posterize", 0.6, 6)],
    [("equalize", 0.4, None), ("solarize", 0.2, 4)], [("equalize", 0.4, None), ("rotate", 0.8, 8)],
    [("solarize", 0.6, 3), ("equalize", 0.6, None)], [("posterize", 0.8, 5), ("equalize", 1.0, None)],
    [("rotate", 0.2, 3), ("solarize", 0.6, 8)], [("equalize", 0.6, None), ("posterize", 0.4, 6)],
    [("rotate", 0.8, 8), ("color", 0.4, 0)], [("rotate", 0.4, 9), ("equalize", 0.6, None)],
    [("equalize", 0.8, None)], [("invert", 0.6, None), ("equalize", 1.0, None)],
    [("color", 0.6, 4), ("contrast", 1.0, 8)], [("rotate", 0.8, 8), ("color", 1.0, 2)],
    [("color", 0.8, 8), ("solarize", 0.8, 7)], [("sharpness", 0.4, 7), ("invert", 0.6, None)],
    [("shear_x", 0.6, 5), ("equalize", 1.0, None)], [("color", 0.4, 0), ("equalize", 0.6, None)],
    [("equalize", 0.4, None), ("solarize", 0.2, 4)], [("solarize", 0.6, 5), ("auto_contrast", 0.6, None)],
    [("invert", 0.6, None), ("equalize", 1.0, None)], [("color", 0.6, 4), ("contrast", 1.0, 8)],
    [("equalize", 0.8, None), ("equalize", 0.6, None)],
]


def get_image_net_policy(use_shape=False, max_translate_abs=None, max_translate_rel=None):
    """The AutoAugment paper's ImageNet policy (25 sub-policies, 11 bins)."""
    return _policy("ImageNetPolicy", _IMAGE_NET, _suite(use_shape, max_translate_abs, max_translate_rel))


def get_reduced_cifar10_policy(use_shape=False, max_translate_abs=None, max_translate_rel=None):
    """The AutoAugment paper's reduced CIFAR-10 policy."""
    return _policy("ReducedCifar10Policy", _REDUCED_CIFAR10, _suite(use_shape, max_translate_abs, max_translate_rel))


def get_svhn_policy(use_shape=False, max_translate_abs=None, max_translate_rel=None):
    """The AutoAugment paper's SVHN policy."""
    return _policy("SvhnPolicy", _SVHN, _suite(use_shape, max_translate_abs, max_translate_rel))


def get_reduced_image_net_policy():
    """The AutoAugment paper's reduced ImageNet policy (no translations)."""
    return _policy("ReducedImageNetPolicy", _REDUCED_IMAGE_NET, _suite(False, None, None))
