"""torchdata.nodes nodes over ladle.dynamic (DALI's ``ndd.pytorch.nodes``):

    import torchdata.nodes as tn
    from ladle.dynamic.pytorch import nodes

    node = nodes.Reader(ldd.readers.File, batch_size=64, file_root=root, random_shuffle=True)
    node = nodes.DictMapper(node, lambda jpegs: ldd.decoders.image(jpegs, device="gpu"))
    node = nodes.ToTorch(node)                     # (images, labels) as torch tensors
    loader = tn.Loader(node)                       # state_dict() / load_state_dict() resume mid-epoch
    for images, labels in loader: ...

Each node implements BaseNode's next / reset / get_state. The reader node's
state is its reader's (Reader.get_state), so a torchdata Loader's state
dict resumes exactly where it was taken."""

try:
    import torchdata.nodes as tn
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("ladle.dynamic.pytorch.nodes needs the torchdata package (pip install torchdata)") from e

from .. import _context
from .._data import Batch, Tensor


class Reader(tn.BaseNode):
    """A ladle.dynamic reader as a node yielding dicts of its outputs.

    ``Reader(reader_type, *, batch_size, output_names=None, **kwargs)``:
    `reader_type` is a reader class (``ldd.readers.File``) made with
    `kwargs`; batch_size=None yields samples. `output_names` are the dict's
    keys, ("data", "label") by default for a reader of two outputs (a reader
    whose outputs have names, e.g. readers.TFRecord, keeps them)."""

    def __init__(self, reader_type, *, batch_size, output_names=None, **kwargs):
        super().__init__()
        self._reader = reader_type(**kwargs)
        self._batch_size = batch_size
        self._names = tuple(output_names) if output_names is not None else None
        self._epoch = None

    def _as_dict(self, outputs):
        if isinstance(outputs, dict):
            return dict(outputs)
        names = self._names
        if names is None:
            if len(outputs) != 2:
                raise ValueError(f"{self._reader!r} has {len(outputs)} outputs: give output_names")
            names = ("data", "label")
        if len(names) != len(outputs):
            raise ValueError(f"output_names has {len(names)} names for {len(outputs)} outputs")
        return dict(zip(names, outputs))

    def reset(self, initial_state=None):
        super().reset(initial_state)
        if initial_state is not None and initial_state.get("reader") is not None:
            self._reader.set_state(initial_state["reader"])
        self._epoch = iter(self._reader.next_epoch(batch_size=self._batch_size))

    def next(self):
        return self._as_dict(next(self._epoch))

    def get_state(self):
        return {"reader": self._reader.get_state()}

    def get_metadata(self):
        return self._reader.get_metadata()


class DictMapper(tn.BaseNode):
    """Applies ``map_fn`` to one key (default "data") of the dicts of `source`."""

    def __init__(self, source, map_fn, key="data"):
        super().__init__()
        self._source, self._map_fn, self._key = source, map_fn, key

    def reset(self, initial_state=None):
        super().reset(initial_state)
        self._source.reset(None if initial_state is None else initial_state.get("source"))

    def next(self):
        item = dict(self._source.next())
        item[self._key] = self._map_fn(item[self._key])
        return item

    def get_state(self):
        return {"source": self._source.state_dict()}


class ToTorch(tn.BaseNode):
    """Turns the dicts of `source` into tuples of torch tensors (Batches as
    [N, ...] tensors, ragged ones padded), in the dicts' order. When any item
    is on the GPU, CPU items are copied there too. GPU tensors are ordered
    for `output_stream` (a torch.cuda.Stream, a Stream or a handle; default:
    torch's current stream) through DLPack's stream protocol."""

    def __init__(self, source, output_stream=None):
        super().__init__()
        self._source = source
        self._stream = output_stream

    def reset(self, initial_state=None):
        super().reset(initial_state)
        self._source.reset(None if initial_state is None else initial_state.get("source"))

    def next(self):
        item = self._source.next()
        on_gpu = any(getattr(v, "device", "cpu") == "gpu" for v in item.values())
        out = []
        with _context.EvalContext(cuda_stream=self._stream) if self._stream is not None else _nothing():
            for value in item.values():
                if isinstance(value, (Batch, Tensor)):
                    if on_gpu:
                        value = value.gpu()
                    value = value.torch(pad=True) if isinstance(value, Batch) else value.torch()
                out.append(value)
        return tuple(out)

    def get_state(self):
        return {"source": self._source.state_dict()}


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
