"""Readers of ladle.dynamic: stateful objects that hand out one epoch at a
time, each built on a Pipeline holding only the reader."""

import inspect

from .. import _ladle
from ..pipeline import Pipeline, arg_specs
from . import _exec
from ._data import Batch

_NAME = "Reader"


class Reader:
    """Base of the reader classes (``ladle.dynamic.readers.File``, ...).

    ``reader = readers.File(file_root=..., random_shuffle=True)`` takes the
    arguments of the pipeline API's reader (``fn.readers.file``).
    ``reader.next_epoch(batch_size=32)`` iterates over one epoch, yielding a
    tuple of Batches per step (the reader's outputs, e.g. (encoded, labels));
    the last batch of an epoch holds what is left (it may be smaller), unless
    the reader was made with ``pad_last_batch=True``, which keeps it full with
    copies of the shard's last sample, as in a pipeline. Calling next_epoch
    again goes on with the next epoch (an epoch left unfinished is skipped).
    ``next_epoch()`` without a batch size yields samples (tuples of Tensors).
    The batch size is fixed by the first call.

    Shuffling: ``seed`` if given, else the ladle.dynamic seed when the reader
    is made (``ladle.dynamic.random.set_seed``): the same order as
    ``fn.readers.file`` in a ``Pipeline(seed=...)`` with that seed.
    ``close()`` frees the reader's pipeline (also done when it is collected).

    Bad data: ``on_error="skip"`` and ``max_skipped_samples=N`` (ladle's
    arguments, not DALI's: a dynamic reader owns its pipeline, so they are
    reader arguments here and Pipeline arguments in pipeline mode) skip a
    record whose reading fails on bad data (an unreadable or vanished file, a
    corrupt tar or TFRecord record) as ``Pipeline(on_error="skip")`` does:
    its slot takes the next good sample of the batch, each skip is logged
    (logger "ladle") and ``skipped_samples()`` lists them. Decoding happens in
    a later call (``ladle.dynamic.decoders.image``), outside the reader.

    Checkpoints: ``get_state()`` is where the reader is (a dict of plain
    values: the epoch, the batches or samples of it handed out, the batch
    size and the seed); after ``set_state(state)`` (on this reader or a new
    one made with the same arguments) the next ``next_epoch()`` goes on from
    exactly there, giving the same bytes the original would have given.
    ``ladle.dynamic.checkpoint.Checkpoint`` collects and saves the states."""

    _op_name = None
    _schema = None

    def __init__(self, on_error="raise", max_skipped_samples=None, **kwargs):
        public = f"ladle.dynamic.{self._public_name()}"
        # The arguments fn's function takes: the schema's, plus any its Python
        # wrapper adds (fn.readers.tfrecord's features).
        specs = set(arg_specs(self._schema))
        specs |= {p for p in inspect.signature(_exec._fn_op(self._op_name)).parameters if p not in ("inputs",
                                                                                                   "device", "name")}
        for key in kwargs:
            if key not in specs:
                raise _ladle.InvalidArgumentError(
                    f"{public}: unknown argument {key!r}; valid arguments: {', '.join(sorted(specs))}")
        if on_error not in ("raise", "skip"):
            raise _ladle.InvalidArgumentError(f"{public}: on_error={on_error!r}: use 'raise' or 'skip'")
        self._errors = {"on_error": on_error, "max_skipped_samples": max_skipped_samples}
        self._public = public
        self._kwargs = {k: v for k, v in kwargs.items() if v is not None}
        self._pad = bool(self._kwargs.get("pad_last_batch", False))
        self._seed = _exec.get_seed()
        self._pipe = None
        self._batch_size = None
        self._sample_mode = None
        self._epoch = 0
        self._meta = None
        self._keys = None  # output names, for readers whose fn function returns a dict
        self._current = None  # the epoch being handed out, or None between epochs
        self._given = 0  # items (batches, or samples in sample mode) of it handed out
        self._resume = None  # (epoch, items) that the next next_epoch() starts from (set_state)
        self._capture = None  # the capture=True loop (_capture.CaptureLoop), made by the first such epoch
        self._ahead = 0  # batches a capture=True loop took from the epoch ahead of the body

    @classmethod
    def _public_name(cls):
        return f"readers.{cls.__name__}"

    def _open(self, batch_size):
        pipe = Pipeline(batch_size=batch_size, device_id=None, seed=self._seed, prefetch_queue_depth=2,
                        thread_pool=_exec.thread_pool(), **self._errors)
        try:
            with pipe:
                # pad_last_batch makes every epoch end on a batch boundary; the
                # padding is cut off below unless the user asked for it.
                op = _exec._fn_op(self._op_name)
                outs = op(name=_NAME, **dict(self._kwargs, pad_last_batch=True))
                if isinstance(outs, dict):  # outputs by name (readers.tfrecord): batches come as dicts too
                    self._keys = list(outs)
                    outs = tuple(outs.values())
                pipe.set_outputs(*(outs if isinstance(outs, tuple) else (outs,)))
            pipe.build()
            self._meta = pipe.reader_meta(_NAME)
        except _ladle.Error as e:
            pipe.close()
            raise _exec._renamed(e, _exec.OpInfo(self._schema, self._public)) from None
        except BaseException:
            pipe.close()
            raise
        self._pipe = pipe
        self._batch_size = batch_size

    def _shard_samples(self, epoch):
        """Real samples of this pipeline's shard in `epoch`, and batches in an epoch."""
        m = self._meta
        n, shards = m["epoch_size"], m["number_of_shards"]
        shard = m["shard_id"] if m["stick_to_shard"] else (m["shard_id"] + epoch) % shards
        real = (shard + 1) * n // shards - shard * n // shards
        per_shard = -(-n // shards)
        return real, -(-per_shard // self._batch_size)

    @property
    def epoch_size(self):
        """Samples in one epoch of the whole data set (all shards); needs a
        first next_epoch() or builds with a batch of 1."""
        if self._meta is None:
            self._open(1)
        return self._meta["epoch_size"]

    def meta(self):
        """The reader's metadata (as Pipeline.reader_meta)."""
        self.epoch_size
        return dict(self._meta)

    def get_metadata(self):
        """DALI's name of meta()."""
        return self.meta()

    def get_state(self):
        """The reader's position (a JSON-serialisable dict); see set_state."""
        epoch, given = (self._current, self._given - self._ahead) if self._current is not None else (self._epoch, 0)
        if self._resume is not None and self._current is None:
            epoch, given = self._resume
        return {"reader": self._op_name, "epoch": epoch, "given": given, "batch_size": self._batch_size,
                "sample_mode": self._sample_mode, "seed": self._seed}

    def set_state(self, state):
        """Makes the next next_epoch() continue from `state` (get_state's
        dict, or its JSON text). The epoch in progress, if any, is left."""
        if isinstance(state, str):
            import json

            state = json.loads(state)
        try:
            reader, epoch, given = state["reader"], int(state["epoch"]), int(state["given"])
            size, sample_mode, seed = state["batch_size"], state["sample_mode"], int(state["seed"])
        except (KeyError, TypeError, ValueError):
            raise _ladle.InvalidArgumentError(f"{self._public}: set_state: not a reader state: {state!r}") from None
        if reader != self._op_name:
            raise _ladle.InvalidArgumentError(f"{self._public}: set_state: the state is of {reader}, "
                                              f"not {self._op_name}")
        if seed != self._seed or (size is not None and size != self._batch_size):
            self.close()
            self._seed, self._meta = seed, None
            if size is not None:
                self._open(int(size))
        self._sample_mode = sample_mode
        self._epoch, self._current, self._given = epoch, None, 0
        self._resume = (epoch, given)

    def next_epoch(self, batch_size=None, ctx=None, capture=False):
        """An iterator over the next epoch: tuples of Batches (or of Tensors
        without batch_size). `ctx`: the EvalContext whose thread pool a new
        reader pipeline uses (DALI's argument).

        ``capture=True`` (DALI's capture mode; batches only): the loop body's
        first step runs eagerly and its operator calls are recorded; from the
        second step on they run as one pipeline fed with this reader's
        batches, working ahead of the loop, and each call of the body gets
        that pipeline's result -- the same bytes as without capture. Calls
        that differ from the traced step run eagerly; random calls that
        differ raise ladle.dynamic.CaptureError. The captured graph is kept
        for later epochs (same batch size and EvalContext). See
        ladle.dynamic._capture."""
        if ctx is not None:
            with ctx:
                return self.next_epoch(batch_size, capture=capture)
        sample_mode = batch_size is None
        if self._sample_mode is not None and sample_mode != self._sample_mode:
            raise _ladle.InvalidArgumentError(
                f"{self._public}: next_epoch: this reader gives {'samples' if self._sample_mode else 'batches'}; "
                "it cannot switch")
        size = 32 if sample_mode else int(batch_size)
        if size < 1:
            raise _ladle.InvalidArgumentError(f"{self._public}: batch_size must be >= 1, got {size}")
        if self._pipe is None or (self._batch_size != size and self._pipe.get_position() == 0
                                  and self._epoch == 0 and self._sample_mode is None):
            if self._pipe is not None:
                self._pipe.close()
            self._open(size)
        elif self._batch_size != size and not sample_mode:
            raise _ladle.InvalidArgumentError(
                f"{self._public}: next_epoch: the batch size is {self._batch_size} since the first epoch; "
                f"got {size}")
        self._sample_mode = sample_mode
        epoch, skip = self._epoch, 0
        if self._resume is not None:
            epoch, skip = self._resume
            self._resume = None
        self._epoch = epoch + 1
        self._current, self._given = epoch, skip
        if not capture:
            return self._iterate(epoch, skip)
        from . import _capture
        from ._context import EvalContext

        if sample_mode:
            raise _ladle.InvalidArgumentError(f"{self._public}: next_epoch(capture=True) needs a batch_size")
        current = EvalContext.current()
        if self._capture is None:
            self._capture = _capture.CaptureLoop(self, size, current)
        elif self._capture.ctx is not current:
            raise _ladle.InvalidArgumentError(f"{self._public}: next_epoch(capture=True): the captured loop runs "
                                              "in the EvalContext it was traced in; it cannot change")
        return self._captured(self._capture, self._iterate(epoch, skip), current)

    @staticmethod
    def _captured(loop, batches, ctx):
        from . import _capture

        with ctx:
            yield from _capture.captured_epoch(loop, batches)

    def _iterate(self, epoch, skip):
        """Epoch `epoch` from its item `skip` on (items: batches, or samples in sample mode)."""
        real, batches = self._shard_samples(epoch)
        per = self._batch_size if self._sample_mode else 1
        first = skip // per
        start = epoch * batches + first
        if self._pipe.get_position() != start:
            self._pipe.set_position(start)
        left = real - first * self._batch_size
        drop = skip - first * per  # samples of the first batch handed out before (sample mode)
        for step in range(first, batches):
            outs = [Batch._wrap(tl) for tl in self._pipe.run()]
            take = len(outs[0]) if self._pad else min(left, len(outs[0]))
            left -= take
            if take <= 0:
                continue
            outs = tuple(b._take(take) for b in outs)
            for b in outs:
                b._origins = self._origin_function(epoch, step)
            if self._sample_mode:
                for i in range(drop, take):
                    self._given += 1
                    yield self._shaped(tuple(b.tensors[i] for b in outs))
                drop = 0
            else:
                self._given += 1
                yield self._shaped(outs)
        if self._current == epoch:
            self._current = None

    def _origin_function(self, epoch, step):
        """i -> the file sample i of batch `step` of `epoch` was read from (None when unknown)."""
        records = self._pipe._handle().last_records() if hasattr(self._pipe._handle(), "last_records") else None
        if not records:
            return None
        handle = self._pipe._handle()

        def origin(i):
            return handle.record_name("Reader", records[i]) if i < len(records) else None

        return origin

    def _shaped(self, outs):
        """A tuple of outputs, or a dict when the reader names its outputs."""
        return dict(zip(self._keys, outs)) if self._keys else outs

    def skipped_samples(self):
        """The bad records skipped so far (on_error="skip"), as
        Pipeline.skipped_samples gives them."""
        return self._pipe.skipped_samples() if self._pipe is not None else []

    def close(self):
        if self._capture is not None:
            self._capture.close()
            self._capture = None
        if self._pipe is not None:
            self._pipe.close()
            self._pipe = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        return f"ladle.dynamic.{self._public_name()}({args})"


def make_reader_class(schema):
    """The class for reader schema "readers.file": ``File``."""
    short = schema["name"].split(".", 1)[1]
    cls_name = "".join(part.capitalize() for part in short.split("_"))
    cls = type(cls_name, (Reader,), {"_op_name": schema["name"], "_schema": schema,
                                     "__doc__": f"Reader {schema['name']} (ladle.fn.{schema['name']}); "
                                                f"see ladle.dynamic.Reader.\n\n{schema['doc'] or ''}"})
    cls.__module__ = "ladle.dynamic.readers"
    return cls
