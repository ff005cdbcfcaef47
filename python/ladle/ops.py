"""DALI's object API (``nvidia.dali.ops``): every operator as a class.

An instance holds the arguments it was made with; calling it inside a
pipeline definition (``define_graph``, ``with pipe:`` or ``@pipeline_def``)
adds the operator through ``ladle.fn`` with those arguments and the call's,
so both APIs share every check and error. Class names are DALI's:
``fn.readers.file`` is ``ops.readers.File``, ``fn.random_bbox_crop`` is
``ops.RandomBBoxCrop``; DALI's old names (``ops.FileReader``,
``ops.ImageDecoder``, ``ops.CoinFlip``, ...) stand for fn's deprecated
aliases and warn as they do.

Where DALI is silent, ladle decides: an argument given both when the
operator is made and when it is called is an error (DALI's call arguments
are its tensor arguments, so a clash has no meaning there), and an instance
without ``device`` follows its inputs onto the GPU, as fn does.
"""

import functools
import sys

from . import _ladle, fn
from .pipeline import op_schemas

# DALI's spelling of these words in class names (the rest: each word capitalized).
_ACRONYMS = {"bbox": "BBox", "coco": "COCO", "dl": "DL", "rms": "RMS", "tfrecord": "TFRecord"}


def class_name(name):
    """DALI's class name of a snake_case operator name: "random_bbox_crop" -> "RandomBBoxCrop"."""
    return "".join(_ACRONYMS.get(word, word[:1].upper() + word[1:]) for word in name.split("_"))


class Operator:
    """The base of every ladle.ops class: made with arguments, called with inputs."""

    _fn = None  # the fn function, as staticmethod
    _public = ""

    def __init__(self, *, device=None, **kwargs):
        self.device = device
        self._kwargs = kwargs

    def __call__(self, *inputs, **kwargs):
        twice = sorted(set(kwargs) & set(self._kwargs))
        if twice:
            raise _ladle.InvalidArgumentError(
                f"{self._public}: {', '.join(repr(k) for k in twice)} given both when the operator was made and "
                "when it was called")
        device = {} if self.device is None else {"device": self.device}
        return self._fn(*inputs, **device, **self._kwargs, **kwargs)

    def __repr__(self):
        return f"{self._public}({', '.join(f'{k}={v!r}' for k, v in self._kwargs.items())})"


def _make_class(public, function):
    return type(public.rsplit(".", 1)[-1], (Operator,), {
        "_fn": staticmethod(function), "_public": public, "__module__": __name__,
        "__doc__": f"{public}: DALI's object form of {function.__module__}.{function.__name__} (see its help).\n\n"
                   + (function.__doc__ or "")})


def _populate():
    root = sys.modules[__name__]
    names = [name for name in op_schemas() if not name.startswith("_")] + list(_ladle.op_aliases())
    for name in sorted(names):
        function = functools.reduce(getattr, name.split("."), fn)  # fn has every schema and alias name
        *path, short = name.split(".")
        public = ".".join(["ops", *path, class_name(short)])
        setattr(fn.namespace(root, path), class_name(short), _make_class(public, function))


_populate()
