"""ladle.tfrecord: feature descriptions for ``fn.readers.tfrecord`` (DALI's
``nvidia.dali.tfrecord``), and the wrapper that turns a ``features`` dict
into the C operator's per-feature lists and its outputs into a dict.

    import ladle.tfrecord as tfrec
    out = fn.readers.tfrecord(
        path=["train-00000.tfrecord"], index_path=[],
        features={"image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
                  "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1)})
    images = fn.decoders.image(out["image/encoded"])

Every output is 1-D: a string feature is its bytes (uint8; several values
are concatenated), an int64 or float32 feature its values. A FixedLenFeature
must have prod(shape) values in every record that has it (checked per
record); a VarLenFeature any number. ``default_value`` is used for records
that lack the feature; ``None`` means the feature must be present (a record
without it fails naming file, record offset and feature).
"""

import inspect
import math

from . import _ladle

string = "string"
int64 = "int64"
float32 = "float32"

_TYPES = (string, int64, float32)


class _Feature:
    def __init__(self, shape, dtype, default_value):
        # Also accepted: numpy dtypes and ladle.types (INT64, FLOAT), by name.
        dtype = str(getattr(dtype, "name", dtype)).lower()
        dtype = {"float": float32, "bytes": string}.get(dtype, dtype)
        if dtype not in _TYPES:
            raise _ladle.InvalidArgumentError(
                f"ladle.tfrecord: dtype {dtype!r} is not one of tfrecord.string, tfrecord.int64, tfrecord.float32"
            )
        self.shape = shape
        self.dtype = dtype
        self.default_value = default_value

    def _size(self):
        """The value count every record must have, or -1 for any."""
        if self.shape is None:
            return -1
        dims = [self.shape] if isinstance(self.shape, int) else list(self.shape)
        if any(int(d) < 0 for d in dims):
            raise _ladle.InvalidArgumentError(f"ladle.tfrecord: shape {self.shape!r} has a negative dimension")
        return int(math.prod(int(d) for d in dims))

    def _default_text(self, name):
        """The default as the C operator's text, or None for no default."""
        v = self.default_value
        if v is None:
            return None
        if self.dtype == string:
            if isinstance(v, (bytes, bytearray)):
                try:
                    v = bytes(v).decode("utf-8")
                except UnicodeDecodeError:
                    raise _ladle.InvalidArgumentError(
                        f"fn.readers.tfrecord: feature {name!r}: a bytes default must be valid UTF-8"
                    ) from None
            if not isinstance(v, str) or "\0" in v:
                raise _ladle.InvalidArgumentError(
                    f"fn.readers.tfrecord: feature {name!r}: the default of a string feature must be a str "
                    "without NUL characters"
                )
            return v
        values = v.tolist() if hasattr(v, "tolist") else v
        values = values if isinstance(values, (list, tuple)) else [values]
        conv = int if self.dtype == int64 else float
        try:
            return " ".join(repr(conv(x)) for x in values)
        except (TypeError, ValueError):
            raise _ladle.InvalidArgumentError(
                f"fn.readers.tfrecord: feature {name!r}: default {v!r} is not a number or a list of numbers"
            ) from None

    def __repr__(self):
        return f"{type(self).__name__}(shape={self.shape!r}, dtype={self.dtype!r}, default_value={self.default_value!r})"


class FixedLenFeature(_Feature):
    """A feature with prod(shape) values in every record (shape () or []: one
    value). default_value: a scalar (repeated to fill the shape), a list of
    prod(shape) values, or for strings a str; None: no default."""

    def __init__(self, shape, dtype, default_value=None):
        super().__init__(tuple(shape) if isinstance(shape, (list, tuple)) else shape, dtype, default_value)


class VarLenFeature(_Feature):
    """A feature with any number of values per record. default_value: the
    values to output when a record lacks it; None: no default."""

    def __init__(self, dtype, default_value=None):
        super().__init__(None, dtype, default_value)


_generated = None  # the operator fn generates from the C schema


def readers_tfrecord(*inputs, device=None, name=None, path=None, index_path=None, features=None, **kwargs):
    """Reads tf.train.Example records from TFRecord files and returns a dict
    mapping each feature name to its DataNode (1-D per sample: uint8 bytes
    for string, int64 or float32 values), in the order of ``features``.
    index_path is accepted for DALI scripts and ignored: ladle indexes the
    files itself at build. The other keyword arguments are the reader's
    (random_shuffle, seed, shard_id, num_shards, stick_to_shard,
    pad_last_batch, ...), as fn.readers.file. At most 4 features.

    Instead of ``features`` the C operator's lists may be given directly
    (feature_names, feature_types, feature_sizes, feature_defaults,
    feature_has_default); the result is the same dict."""
    if _generated is None:
        raise _ladle.NotAvailableError("fn.readers.tfrecord: the C library has no readers.tfrecord operator")
    if path is None:
        raise _ladle.InvalidArgumentError("fn.readers.tfrecord: missing required argument(s): path")
    paths = [path] if isinstance(path, (str, bytes)) or hasattr(path, "__fspath__") else list(path)
    paths = [p.decode() if isinstance(p, bytes) else str(p) for p in paths]
    if index_path is not None:
        index_path = [index_path] if isinstance(index_path, str) else [str(p) for p in index_path]
    lists = ("feature_names", "feature_types", "feature_sizes", "feature_defaults", "feature_has_default")
    if features is None:
        if kwargs.get("feature_names") is None:
            raise _ladle.InvalidArgumentError(
                "fn.readers.tfrecord: give 'features', a dict {name: tfrecord.FixedLenFeature(...) or "
                "tfrecord.VarLenFeature(...)}"
            )
        names = kwargs["feature_names"]
        names = [names] if isinstance(names, str) else list(names)
    else:
        given = [k for k in lists if kwargs.get(k) is not None]
        if given:
            raise _ladle.InvalidArgumentError(
                f"fn.readers.tfrecord: give either 'features' or {', '.join(given)}, not both"
            )
        if not isinstance(features, dict) or not features:
            raise _ladle.InvalidArgumentError(
                "fn.readers.tfrecord: 'features' must be a non-empty dict {name: tfrecord.FixedLenFeature(...) "
                "or tfrecord.VarLenFeature(...)}"
            )
        names, types_, sizes, defaults, has_default = [], [], [], [], []
        for key, feat in features.items():
            if not isinstance(feat, _Feature):
                raise _ladle.InvalidArgumentError(
                    f"fn.readers.tfrecord: feature {key!r}: expected tfrecord.FixedLenFeature or "
                    f"tfrecord.VarLenFeature, got {type(feat).__name__}"
                )
            names.append(str(key))
            types_.append(feat.dtype)
            sizes.append(feat._size())
            text = feat._default_text(key)
            defaults.append(text if text is not None else "")
            has_default.append(0 if text is None else 1)
        kwargs.update(feature_names=names, feature_types=types_, feature_sizes=sizes, feature_defaults=defaults,
                      feature_has_default=has_default)
    outs = _generated(*inputs, device=device, name=name, path=paths, index_path=index_path or None, **kwargs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    return dict(zip(names, outs))


_doc = inspect.cleandoc(readers_tfrecord.__doc__)


def _install(readers):
    """Called by fn at import: puts the dict-returning wrapper in place of
    the generated fn.readers.tfrecord (kept as _generated)."""
    global _generated
    if getattr(readers, "tfrecord", None) is None or readers.tfrecord is readers_tfrecord:
        return
    _generated = readers.tfrecord
    readers_tfrecord.schema = _generated.schema
    readers_tfrecord.__name__ = _generated.__name__
    readers_tfrecord.__qualname__ = _generated.__qualname__
    readers_tfrecord.__module__ = _generated.__module__
    # The generated text (every C argument) follows the dict form's.
    head = "fn.readers.tfrecord(*, path, index_path=None, features, **reader_args) -> dict of DataNodes"
    readers_tfrecord.__doc__ = head + "\n\n" + _doc + "\n\n" + _generated.__doc__
    params = list(inspect.signature(_generated).parameters.values())
    params.insert(3, inspect.Parameter("features", inspect.Parameter.KEYWORD_ONLY, default=None))
    readers_tfrecord.__signature__ = inspect.Signature(params)
    readers.tfrecord = readers_tfrecord
