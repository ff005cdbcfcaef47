"""``nvidia.dali.plugin.pytorch.experimental.proxy`` under ladle: a ladle
pipeline, in the main process (on the GPU), finishing the samples of an
ordinary torch ``Dataset`` / ``DataLoader`` (its workers, samplers,
``DistributedSampler`` included)::

    @pipeline_def(batch_size=64, num_threads=8, device_id=0)
    def pipe():
        paths = fn.external_source(name="images", no_copy=True)
        images = fn.decoders.image(fn.io.file.read(paths), device="mixed")
        return fn.resize(images, resize_x=224, resize_y=224)

    with proxy.DALIServer(pipe()) as server:
        dataset = torchvision.datasets.ImageFolder(root, transform=server.proxy,
                                                   loader=lambda p: np.frombuffer(p.encode(), np.int8))
        loader = proxy.DataLoader(server, dataset, batch_size=64, num_workers=4)
        for images, labels in loader:   # images: the pipeline's output, a torch tensor
            ...

How it works here: ``server.proxy(*inputs)``, called in a worker, returns a
reference that carries the inputs (NumPy arrays, one per external source of
the pipeline, positionally in the order the sources were defined, or by
name); the DataLoader's collation turns a batch of references into one batch
reference, which travels to the main process with the rest of the batch.
There the server feeds it to the pipeline's external sources, runs the
pipeline and puts its outputs (torch tensors) where the reference was.
Batches come back in the DataLoader's order, each matched to its own
targets, with up to the pipeline's ``prefetch_queue_depth`` batches fed
ahead so that the pipeline works while the next batch is collected.
``deterministic`` is accepted for DALI scripts and has no effect: ladle
always returns batches in order. Leaving the loop early (``break``) or a
worker dying runs off what was already fed, so the pipeline holds no stale
data for the next epoch. Differences from DALI: the inputs travel with the
batch through the DataLoader's own worker queues instead of a separate
queue; a ``collate_fn`` of the user's own is not supported (DALI replaces it
as well).
"""

import collections

import numpy as np
from torch.utils import data as _torchdata
from torch.utils.data._utils.collate import collate as _collate
from torch.utils.data._utils.collate import default_collate_fn_map as _default_collate_fn_map

from ...._ladle import InvalidArgumentError, StateError
from ....torch import to_torch

__all__ = ["DALIServer", "DataLoader"]


class _SampleRef:
    """What proxy(...) returns in a worker: one sample's pipeline inputs."""

    __slots__ = ("inputs",)

    def __init__(self, inputs):
        self.inputs = inputs

    def __repr__(self):
        return f"DALIOutputSampleRef({len(self.inputs)} inputs)"


class _BatchRef:
    """A collated batch of _SampleRefs: per pipeline input, the samples."""

    __slots__ = ("inputs",)

    def __init__(self, inputs):
        self.inputs = inputs

    def __repr__(self):
        return f"DALIOutputBatchRef({len(self.inputs)} inputs x {len(self.inputs[0]) if self.inputs else 0})"


def _collate_refs(samples, *, collate_fn_map=None):
    width = {len(s.inputs) for s in samples}
    if len(width) != 1:
        raise InvalidArgumentError("proxy: the samples of a batch passed different numbers of inputs to the proxy")
    return _BatchRef([[s.inputs[k] for s in samples] for k in range(width.pop())])


_COLLATE_MAP = {**_default_collate_fn_map, _SampleRef: _collate_refs}


class _Proxy:
    """Picklable: the pipeline's input names, nothing else."""

    def __init__(self, names):
        self._names = names

    def __call__(self, *args, **kwargs):
        if len(args) > len(self._names):
            raise InvalidArgumentError(f"proxy: the pipeline has {len(self._names)} input(s) ({self._names}), "
                                       f"got {len(args)} positional")
        given = dict(zip(self._names, args))
        for key, value in kwargs.items():
            if key not in self._names:
                raise InvalidArgumentError(f"proxy: the pipeline has no input named {key!r} (inputs: {self._names})")
            if key in given:
                raise InvalidArgumentError(f"proxy: input {key!r} given twice")
            given[key] = value
        missing = [n for n in self._names if n not in given]
        if missing:
            raise InvalidArgumentError(f"proxy: missing pipeline input(s): {missing}")
        return _SampleRef(tuple(np.asarray(given[n]) for n in self._names))


class DALIServer:
    """Runs `pipeline` on the batches of proxy references a DataLoader
    collects (see the module docs). Use it as a context manager, or call
    start_thread()/stop_thread() (kept for DALI scripts: ladle needs no
    thread of its own; the calls only mark the server open or closed)."""

    def __init__(self, pipeline, deterministic=False):
        names = [name for name, src in pipeline._sources.items() if src is None]
        if not names:
            raise InvalidArgumentError("DALIServer: the pipeline needs external sources without `source=` "
                                       "(fn.external_source(name=...)): the proxy feeds them")
        if len(names) != len(pipeline._sources):
            raise InvalidArgumentError("DALIServer: every external source of the pipeline is fed by the proxy; "
                                       "remove `source=` from them")
        if pipeline._readers:
            raise InvalidArgumentError("DALIServer: the pipeline reads its own data (readers: "
                                       f"{pipeline._readers}); the proxy feeds it instead")
        self._pipe = pipeline
        self._names = names
        self._open = False
        pipeline.build()
        self._ahead = max(1, pipeline._prefetch_queue_depth)

    @property
    def proxy(self):
        """The callable to use as the Dataset's transform (picklable)."""
        return _Proxy(list(self._names))

    def start_thread(self):
        self._open = True

    def stop_thread(self):
        self._open = False

    def __enter__(self):
        self.start_thread()
        return self

    def __exit__(self, exc_type, exc_value, tb):
        self.stop_thread()
        return False

    # --- the main process's side ---------------------------------------------

    def _feed(self, ref):
        for name, samples in zip(self._names, ref.inputs):
            self._pipe.feed_input(name, [np.ascontiguousarray(x) for x in samples])

    def _outputs(self):
        outs = self._pipe.run()
        tensors = tuple(to_torch(tl, f"pipeline output {k}") for k, tl in enumerate(outs))
        return tensors[0] if len(tensors) == 1 else tensors

    def produce_data(self, obj):
        """`obj` (a collated batch) with each batch reference replaced by the
        pipeline's outputs for it (runs the pipeline on the spot)."""
        refs = _refs_in(obj)
        for ref in refs:
            self._feed(ref)
        return _replace(obj, {id(r): self._outputs() for r in refs})

    def _run_through(self, batches):
        """Yields the DataLoader's batches with their references replaced, in
        order, keeping up to `_ahead` batches fed ahead."""
        if not self._open:
            raise StateError("DALIServer: use it as a context manager (with DALIServer(pipe) as server:) or call "
                             "start_thread() before iterating the DataLoader")
        pending = collections.deque()  # (batch, its refs), fed but not run
        try:
            for batch in batches:
                refs = _refs_in(batch)
                for ref in refs:
                    self._feed(ref)
                pending.append((batch, refs))
                if len(pending) > self._ahead:
                    yield self._finish(*pending.popleft())
            while pending:
                yield self._finish(*pending.popleft())
        finally:
            # A loop left early or a failed worker: run off what was fed, so the
            # pipeline starts the next epoch clean.
            while pending:
                for _ in pending.popleft()[1]:
                    self._pipe.run()

    def _finish(self, batch, refs):
        return _replace(batch, {id(r): self._outputs() for r in refs})


def _refs_in(obj):
    if isinstance(obj, _BatchRef):
        return [obj]
    if isinstance(obj, dict):
        return [r for v in obj.values() for r in _refs_in(v)]
    if isinstance(obj, (list, tuple)):
        return [r for v in obj for r in _refs_in(v)]
    return []


def _replace(obj, outputs):
    if isinstance(obj, _BatchRef):
        return outputs[id(obj)]
    if isinstance(obj, dict):
        return type(obj)((k, _replace(v, outputs)) for k, v in obj.items())
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_replace(v, outputs) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_replace(v, outputs) for v in obj)
    return obj


class DataLoader(_torchdata.DataLoader):
    """torch's DataLoader whose batches pass through `dali_server`'s
    pipeline: arguments as torch.utils.data.DataLoader's after the server
    (collate_fn excepted: the proxy's collation is used)."""

    def __init__(self, dali_server, *args, **kwargs):
        if kwargs.get("collate_fn") is not None:
            raise InvalidArgumentError("proxy.DataLoader: a collate_fn of your own is not supported; the proxy "
                                       "collates its references with torch's default collation")
        kwargs["collate_fn"] = _collate_batch
        super().__init__(*args, **kwargs)
        self.dali_server = dali_server

    def __iter__(self):
        return self.dali_server._run_through(super().__iter__())


def _collate_batch(batch):
    return _collate(batch, collate_fn_map=_COLLATE_MAP)
