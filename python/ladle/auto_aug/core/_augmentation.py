"""The Augmentation wrapper and signed magnitude bins (DALI's
nvidia.dali.auto_aug.core), written for ladle's DataNodes."""

import inspect
import warnings

import numpy as np

from ... import fn, types
from ...pipeline import DataNode

_UNSET = object()


def _positional(function):
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p for p in inspect.signature(function).parameters.values() if p.kind in kinds]


def _extra_params(function):
    """The parameters after the first two (samples, parameter) that can be
    passed by keyword: {name: has_default}."""
    params = list(inspect.signature(function).parameters.values())
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    out, seen_positional = {}, 0
    for p in params:
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD) and seen_positional < 2:
            seen_positional += 1
            continue
        if p.kind in named:
            out[p.name] = p.default is not inspect.Parameter.empty
    return out


class MissingArgException(Exception):
    """An augmentation needs a keyword argument the call did not give."""

    def __init__(self, message, augmentation, missing_args):
        super().__init__(message)
        self.augmentation = augmentation
        self.missing_args = missing_args


class UnusedArgException(Exception):
    """A keyword argument no augmentation of the suite takes."""

    def __init__(self, message, unused_args):
        super().__init__(message)
        self.unused_args = unused_args


def forbid_unused_kwargs(augmentations, kwargs, call_name):
    used = set()
    for aug in augmentations:
        used.update(_extra_params(aug.op))
    unused = [k for k in kwargs if k not in used]
    if unused:
        raise UnusedArgException(f"The {call_name} got argument(s) {', '.join(unused)} that none of the "
                                 "augmentations accepts.", unused_args=unused)


class _SignedMagnitudeBin:
    """A magnitude bin (int or per-sample DataNode) with a per-sample random
    sign (0: keep, 1: negate), and 2 * bin + sign computed once."""

    def __init__(self, magnitude_bin, random_sign, signed_magnitude_idx):
        self._bin = magnitude_bin
        self._sign = random_sign
        self._signed = signed_magnitude_idx

    @classmethod
    def create_from_bin(cls, magnitude_bin, random_sign=None, seed=None, shape=None):
        if not isinstance(magnitude_bin, (int, DataNode)) or isinstance(magnitude_bin, bool):
            raise Exception(f"signed_bin: `magnitude_bin` must be an int or a DataNode of ints, got {magnitude_bin!r}")
        if random_sign is not None and (seed is not None or shape is not None):
            raise Exception("signed_bin: give `random_sign` or `seed`/`shape`, not both")
        if random_sign is None:
            kw = dict(values=[0, 1], dtype=types.INT32, seed=seed)
            if shape is not None:
                kw["shape"] = list(shape)
            random_sign = fn.random.uniform(**kw)
        return cls(magnitude_bin, random_sign, 2 * magnitude_bin + random_sign)

    def __getitem__(self, idx):
        b = self._bin if isinstance(self._bin, int) else self._bin[idx]
        return type(self)(b, self._sign[idx], self._signed[idx])

    @property
    def bin(self):
        return self._bin

    @property
    def random_sign(self):
        return self._sign

    @property
    def signed_magnitude_idx(self):
        return self._signed


def signed_bin(magnitude_bin, random_sign=None, seed=None, shape=None):
    """`magnitude_bin` with a random sign per sample (DALI's signed_bin):
    draw the sign once, before selecting among augmentations."""
    return _SignedMagnitudeBin.create_from_bin(magnitude_bin, random_sign, seed, shape)


def _as_param_array(value, name):
    if isinstance(value, (list, tuple)) and any(isinstance(v, DataNode) for v in value) or isinstance(value, DataNode):
        raise Exception(f"The `mag_to_param` of augmentation `{name}` returned a DataNode; it must return NumPy data "
                        "(the parameters of every magnitude are computed once, when the graph is defined)")
    return np.array(value)


class Augmentation:
    """An operation on a batch with a parameter derived from a magnitude bin
    (made by the @augmentation decorator)."""

    def __init__(self, op, mag_range=None, randomly_negate=None, mag_to_param=None, param_device=None, name=None):
        self._op = op
        self._mag_range = mag_range
        self._randomly_negate = randomly_negate
        self._mag_to_param = mag_to_param
        self._param_device = param_device
        self._name = name
        if len(_positional(op)) < 2:
            raise Exception(f"{op} must take at least two positional arguments (the samples and the parameter) to be "
                            "an augmentation")

    op = property(lambda self: self._op)
    mag_range = property(lambda self: self._mag_range)
    randomly_negate = property(lambda self: bool(self._randomly_negate))
    mag_to_param = property(lambda self: self._mag_to_param or np.array)
    param_device = property(lambda self: self._param_device or "cpu")
    name = property(lambda self: self._name or self._op.__name__)

    def _config(self):
        return dict(mag_range=self._mag_range, randomly_negate=self._randomly_negate, mag_to_param=self._mag_to_param,
                    param_device=self._param_device, name=self._name)

    def __repr__(self):
        extra = "".join(f", {k}={v!r}" for k, v in self._config().items() if v is not None)
        return f"Augmentation({self._op!r}{extra})"

    def augmentation(self, mag_range=_UNSET, randomly_negate=_UNSET, mag_to_param=_UNSET, param_device=_UNSET,
                     name=_UNSET, augmentation_cls=None):
        """A copy with the given settings changed."""
        config = self._config()
        for key, value in (("mag_range", mag_range), ("randomly_negate", randomly_negate),
                           ("mag_to_param", mag_to_param), ("param_device", param_device), ("name", name)):
            if value is not _UNSET:
                config[key] = value
        return (augmentation_cls or type(self))(self._op, **config)

    def _magnitudes(self, num_magnitude_bins):
        r = self._mag_range
        if r is None:
            return None
        if isinstance(r, np.ndarray):
            if num_magnitude_bins is not None and len(r) != num_magnitude_bins:
                raise Exception(f"The augmentation `{self.name}` has {len(r)} magnitudes, but num_magnitude_bins is "
                                f"{num_magnitude_bins}")
            return r
        if num_magnitude_bins is None:
            raise Exception(f"The augmentation `{self.name}` needs `num_magnitude_bins` with `magnitude_bin`")
        if not hasattr(r, "__len__") or len(r) != 2:
            raise Exception(f"The `mag_range` of augmentation `{self.name}` must be (low, high) or an np.ndarray, "
                            f"got {r!r}")
        return np.linspace(r[0], r[1], num_magnitude_bins, dtype=np.float32)

    def _params(self, magnitudes):
        params = [_as_param_array(self.mag_to_param(m), self.name) for m in magnitudes]
        for p, m in zip(params, magnitudes):
            if p.shape != params[0].shape or p.dtype != params[0].dtype:
                raise Exception(f"The `mag_to_param` of augmentation `{self.name}` must give one shape and type for "
                                f"every magnitude: {params[0].shape} {params[0].dtype} for {magnitudes[0]}, "
                                f"{p.shape} {p.dtype} for {m}")
        return np.array(params)

    def _param_node(self, table, device):
        return types.Constant(table, device="gpu" if device == "gpu" else None)

    def _param(self, magnitude_bin, num_magnitude_bins, device):
        magnitudes = self._magnitudes(num_magnitude_bins)
        if magnitudes is None:
            return None
        if magnitude_bin is None:
            raise Exception(f"The augmentation `{self.name}` has a `mag_range`: its call needs `magnitude_bin`")
        if self.randomly_negate and not isinstance(magnitude_bin, _SignedMagnitudeBin):
            warnings.warn(f"The augmentation `{self.name}` negates magnitudes at random, but got an unsigned "
                          "magnitude_bin: drawing the signs here. Pass signed_bin(magnitude_bin) to draw them once "
                          "for several augmentations.", Warning)
            magnitude_bin = signed_bin(magnitude_bin)
        if self.randomly_negate:
            if isinstance(magnitude_bin.bin, int):
                m = magnitudes[magnitude_bin.bin]
                table, index = self._params([m, -m]), magnitude_bin.random_sign
            else:
                signed = np.stack([magnitudes, -magnitudes], axis=1).reshape(-1)  # bin b: 2b (+), 2b + 1 (-)
                table, index = self._params(signed), magnitude_bin.signed_magnitude_idx
            return self._param_node(table, device)[index]
        b = magnitude_bin.bin if isinstance(magnitude_bin, _SignedMagnitudeBin) else magnitude_bin
        if isinstance(b, int):
            return self._param_node(self._params([magnitudes[b]])[0], device)
        return self._param_node(self._params(magnitudes), device)[b]

    def __call__(self, data, *, magnitude_bin=None, num_magnitude_bins=None, **kwargs):
        """self.op(data, parameter, **the kwargs it takes), the parameter being
        mag_to_param(magnitudes[magnitude_bin] * (-1) ** random_sign)."""
        device = self.param_device
        if device == "auto":
            device = data.device
        param = self._param(magnitude_bin, num_magnitude_bins, device)
        extra = _extra_params(self._op)
        missing = [k for k, has_default in extra.items() if not has_default and k not in kwargs]
        if missing:
            raise MissingArgException(f"The augmentation `{self.name}` needs the argument(s) {', '.join(missing)}",
                                      augmentation=self, missing_args=missing)
        return self._op(data, param, **{k: v for k, v in kwargs.items() if k in extra})


def augmentation(function=None, *, mag_range=None, randomly_negate=None, mag_to_param=None, param_device=None,
                 name=None, augmentation_cls=None):
    """Decorator making `function(data, parameter, ...)` an Augmentation
    called with magnitude_bin and num_magnitude_bins (DALI's @augmentation).

    mag_range: (low, high), split into num_magnitude_bins magnitudes, or an
    np.ndarray of the magnitudes; randomly_negate: negate the magnitude per
    sample at random; mag_to_param: magnitude -> NumPy parameter (computed
    for every magnitude when the graph is defined); param_device: "cpu"
    (default), "gpu" or "auto" (the samples' device) for the parameter table;
    name: defaults to the function's."""

    def wrap(f):
        return (augmentation_cls or Augmentation)(f, mag_range=mag_range, randomly_negate=randomly_negate,
                                                   mag_to_param=mag_to_param, param_device=param_device, name=name)

    if function is None:
        return wrap
    if isinstance(function, Augmentation):
        raise Exception(f"@augmentation applied to the augmentation `{function.name}`: use its .augmentation(...) "
                        "method to change its settings")
    if not callable(function):
        raise Exception(f"@augmentation needs a callable, got {function!r}")
    return wrap(function)
