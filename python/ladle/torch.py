"""ladle.torch: ladle pipelines as PyTorch iterators (DALI's ``nvidia.dali.plugin.pytorch``).

    from ladle.torch import ClassificationIterator, LastBatchPolicy

    loader = ClassificationIterator(pipe, reader_name="Reader", auto_reset=True,
                                    last_batch_policy=LastBatchPolicy.PARTIAL)
    for data in loader:                       # one epoch
        x = data[0]["data"]                   # [N, C, H, W], no copy
        y = data[0]["label"].squeeze(-1).long()

Every batch is a list with one dict per pipeline. Tensors come from ladle's
batches through DLPack without a copy and stay valid for as long as they are
referenced: ladle never writes again into memory it handed out. A GPU output
is ordered after ladle's work on torch's current CUDA stream (the stream is
passed to ``__dlpack__``, which makes it wait on ladle's event; no device-wide
synchronization).

Epochs, padding and shards (what DALI does, and where ladle differs)
---------------------------------------------------------------------
A ladle reader is an endless stream of batches (see ``fn.readers.file``).
Without ``pad_last_batch`` an epoch's shard is followed directly by the next
epoch's, so a batch can hold samples of two epochs; with it, every shard has
``ceil(ceil(N/S)/B)`` batches per epoch, the last one completed with copies of
the shard's last sample, and the next epoch starts a fresh batch. The iterator
decides, from the reader's metadata, which batches of that stream form an
epoch and what part of each it returns. N = ``epoch_size``, S =
``number_of_shards``, B = ``batch_size``; shard s holds
``floor((s+1)N/S) - floor(sN/S)`` samples and, unless ``stick_to_shard``, a
pipeline reads shard ``(shard_id + e) % S`` in epoch e. With ``reader_name``,
``last_batch_padded`` is the reader's ``pad_last_batch``.

======== ====== ====================== ============== ================================== ==========================
policy   padded ``_size`` (epoch 0)    ``len()``      last batch of an epoch             the next epoch starts
======== ====== ====================== ============== ================================== ==========================
FILL     no     ceil(ceil(N/S)/B)*B    _size / B      full: the next epoch's first       after the samples read
                                                      samples fill it                    ahead; its ``_size`` is
                                                                                         recomputed (shorter)
FILL     yes    epoch_size_padded / S  ceil(_size/B)  full: copies of the shard's last   at the first sample;
                = ceil(N/S)                           sample fill it                     same length
PARTIAL  no     ceil(ceil(N/S)/B)*B    _size / B      cut to this epoch's samples (per   after the samples read
                                                      pipeline; may be empty [0, ...] on ahead (dropped), shorter
                                                      a shard one sample shorter)        as with FILL (*)
PARTIAL  yes    ceil(N/S)              ceil(_size/B)  cut to the shard's real samples    at the first sample
DROP     no     N // S (the smallest   _size // B     dropped unless every pipeline's    after the dropped batch
                shard)                                batch is this epoch's data (*)
DROP     yes    N // S                 _size // B     the rest of the padded epoch is    at the first sample (*)
                                                      dropped
======== ====== ====================== ============== ================================== ==========================

DALI's example (7 samples, B = 2, one shard), which ladle reproduces exactly:
PARTIAL+padded: last [7], next [1, 2]; PARTIAL: last [7], next [2, 3];
FILL+padded: last [7, 7], next [1, 2]; FILL: last [7, 1], next [2, 3];
DROP+padded: last [5, 6], next [1, 2]; DROP: last [5, 6], next [2, 3].
tests/python/test_torch_iterator.py spells out two epochs of every policy x
padding x 1, 2, 3 shards of that example, sample by sample.

The epoch boundary is the same for every pipeline and every rank, because it
is computed over all S shards, not only the local ones: an epoch ends at the
first batch at which every shard has finished the epoch (that is DALI's
``_counter_per_gpu`` bookkeeping for FILL). So all ranks run the same number
of iterations and DistributedDataParallel never waits on a missing batch.
``len()`` and ``_size`` describe the current epoch and are recomputed when it
starts, as DALI does for FILL; ``_size`` is ``len() * B`` there.

(*) Where ladle differs from DALI's code (in favour of DALI's documentation):
DALI recomputes the epoch only for FILL. For PARTIAL and DROP without padding
it keeps the first epoch's count, so from the second epoch on its batches
drift over the epoch boundary: a "last batch" then holds samples of the
following epoch (7/2/1 PARTIAL: DALI's second epoch is [2,3] [4,5] [6,7] [1]
with that [1] from the third epoch). DALI's documentation says the next epoch
"will end sooner as data from it was consumed but dropped", and that DROP drops
a batch that "cannot be fully filled with data from the current epoch"; ladle
does exactly that in every epoch: PARTIAL's second epoch is [2,3] [4,5] [6,7]
(3 batches, ``len()`` 3); DROP's returns the batches lying wholly inside the
epoch on every shard (``_size`` is then the smallest count of this epoch's
samples left on any shard from the epoch's first batch on). An epoch that
would have no batch at all (possible only when B is close to the shard size)
is skipped, as DALI's FILL skips one. DROP with padding always drops the rest
of the padded epoch; DALI leaves a padded batch in the stream when N % S != 0
and (N // S) % B == 0.

``size=`` without ``reader_name`` is DALI's older mode: a counter of samples
(``num_pipelines * B`` per batch) against ``size``, with DALI's formulas. With
neither ``size`` nor ``reader_name`` DALI iterates until the pipeline raises
StopIteration; ladle's readers never do, so ladle uses the pipelines' one
reader as ``reader_name`` (and refuses a pipeline with several readers),
rather than loop forever.

Pipelines fed by ``fn.external_source(source=...)`` (and without readers) take
DALI's third mode: with neither ``size`` nor ``reader_name`` an epoch ends when a
source raises StopIteration (``cycle="raise"`` sources start again after it).
Their positions cannot be restored (fed data is not replayable), so
``load_state_dict`` refuses them.

``auto_reset``: False/None/"no": StopIteration at the end of an epoch (again
at every next() until a reset), then reset() (or iter()) starts the next; True/"yes": the same, but the iterator
resets itself; "quiet": the iterator never raises StopIteration: it starts the
next epoch by itself and goes on (for loops that count batches with
``len()``, as PyTorch Lightning does; this is the mode DALI's pull request
3923 proposed). A reset() in the middle of an epoch is ignored with a
warning, as in DALI; iter() in the middle of an epoch just goes on.

Checkpoints: ``state_dict()`` / ``load_state_dict()`` save and restore where
the iterator is (epoch, batch, position of the pipelines). Since ladle's
randomness is a function of (seed, epoch, sample), a restored iterator yields
the same bytes an uninterrupted one would. The state is the same on every
rank of a sharded run (shard_id is not part of it), so one copy restores all.
"""

import enum
import math
import warnings

import numpy as np
import torch
import torch.utils.dlpack

from . import _ladle
from . import types
from .tensors import torch_from_capsule

__all__ = ["ClassificationIterator", "GenericIterator", "LastBatchPolicy", "RaggedIterator", "feed_ndarray",
           "to_torch_type"]

_STATE_FORMAT = "ladle.torch.GenericIterator/1"
_DL_CUDA = (2, 13)  # DLPack's kDLCUDA and kDLCUDAManaged: memory a CUDA stream orders


class LastBatchPolicy(enum.Enum):
    """What to do with the last batch of an epoch when the epoch does not fill it.

    FILL: return it full (with the next epoch's first samples, or with copies
    of the shard's last sample when the reader pads). DROP: do not return it.
    PARTIAL: return only the part that belongs to the epoch.
    """

    FILL = 0
    DROP = 1
    PARTIAL = 2


# DALI's table, plus the unsigned types where this torch has them (2.3+).
to_torch_type = {t: getattr(torch, t.numpy_name) for t in types.DALIDataType if hasattr(torch, t.numpy_name)}


def _policy(value):
    if isinstance(value, LastBatchPolicy):
        return value
    # DALI's own enum (same names) or a name as a string.
    name = getattr(value, "name", value)
    if isinstance(name, str) and name.upper() in LastBatchPolicy.__members__:
        return LastBatchPolicy[name.upper()]
    raise _ladle.InvalidArgumentError(
        f"last_batch_policy must be a LastBatchPolicy (FILL, DROP or PARTIAL), got {value!r}")


def _auto_reset_mode(value):
    if value is False or value is None or value == "no":
        return "no"
    if value is True or value == "yes":
        return "yes"
    if value == "quiet":
        return "quiet"
    raise _ladle.InvalidArgumentError(
        f"auto_reset must be False/None/\"no\", True/\"yes\" or \"quiet\", got {value!r}")


def to_torch(tensor_list, name="output"):
    """A dense ladle TensorList (or Tensor) as a torch tensor, without a copy.

    A GPU batch is exported with torch's current stream on its device, so the
    tensor is ordered after ladle's work on that stream."""
    if hasattr(tensor_list, "is_dense_tensor") and not tensor_list.is_dense_tensor():
        raise _ladle.StateError(
            f"{name}: the batch is ragged (sample shapes differ); the iterator needs one [N, ...] tensor "
            "per output: resize or crop to a fixed size in the pipeline, or, for per-sample lists (boxes, "
            "labels), use RaggedIterator with SPARSE_LIST_TAG or SPARSE_COO_TAG for this output, or "
            "fn.pad(axes=(0,)) with .shape() for a padded tensor and its lengths")
    device_type, device_id = tensor_list.__dlpack_device__()
    if device_type not in _DL_CUDA:
        return torch_from_capsule(tensor_list)
    device = torch.device("cuda", device_id)
    stream = torch.cuda.current_stream(device).cuda_stream
    # DLPack: 1 names the legacy default stream; 0 is not allowed for CUDA.
    with torch.cuda.device(device):
        return torch_from_capsule(tensor_list, stream=stream if stream != 0 else 1)


def feed_ndarray(tensor_list, arr, cuda_stream=None):
    """Copies a dense ladle batch into the torch tensor `arr` (DALI's helper;
    the iterators themselves do not copy). Returns `arr`."""
    src = to_torch(tensor_list)
    if tuple(src.shape) != tuple(arr.shape):
        raise _ladle.InvalidArgumentError(f"feed_ndarray: shapes differ: {tuple(src.shape)} vs {tuple(arr.shape)}")
    if arr.is_cuda and cuda_stream is not None:
        stream = cuda_stream if isinstance(cuda_stream, torch.cuda.Stream) else \
            torch.cuda.ExternalStream(cuda_stream)
        with torch.cuda.stream(stream):
            arr.copy_(src, non_blocking=True)
    else:
        arr.copy_(src)
    return arr


def _ceil_div(a, b):
    return -(-a // b)


class _Epochs:
    """Where each epoch of a (sharded) reader lies in the stream of batches.

    Reader epoch r occupies stream batches [first(r), first(r+1)). Without
    padding, first(r) is the first batch at which every one of the S shards
    has finished epoch r-1: max over shards of ceil(start_s(r) / B), where
    start_s(r) is the stream position (in samples) where shard slot s begins
    epoch r. With padding every epoch has the same count of batches."""

    def __init__(self, meta, batch_size, policy, slots):
        self.n = int(meta["epoch_size"])
        self.s = int(meta["number_of_shards"])
        self.b = int(batch_size)
        self.padded = bool(meta["pad_last_batch"])
        self.stick = bool(meta["stick_to_shard"])
        self.policy = policy
        self.slots = list(slots)  # the shard_id of each pipeline
        bounds = (np.arange(self.s + 1, dtype=np.int64) * self.n) // self.s
        self.sizes = np.diff(bounds)
        self.padded_size = int(meta["epoch_size_padded"]) // self.s  # ceil(N/S) with padding
        self.per_epoch = _ceil_div(_ceil_div(self.n, self.s), self.b)  # the reader's batches per padded epoch
        # Prefix sums over the shard sizes repeated twice: the sum of S
        # consecutive (cyclic) shards starting anywhere is one subtraction.
        self.prefix = np.concatenate([[0], np.cumsum(np.tile(self.sizes, 2))]).astype(np.int64)

    def shard_size(self, slot, r):
        """Samples of the shard that `slot` reads in epoch r."""
        return int(self.sizes[slot if self.stick else (slot + r) % self.s])

    def starts(self, r, slots=None):
        """start_s(r) for every slot (all S shards by default), as an int64 array."""
        slots = np.arange(self.s) if slots is None else np.asarray(slots, dtype=np.int64)
        if self.stick:
            return r * self.sizes[slots]
        q, m = divmod(r, self.s)
        return q * self.n + self.prefix[slots + m] - self.prefix[slots]

    def first(self, r):
        if self.padded:
            return r * self.per_epoch
        return int(_ceil_div(self.starts(r), self.b).max())

    def span(self, r):
        """(first batch, end batch, batches returned, _size) of epoch r."""
        begin, end = self.first(r), self.first(r + 1)
        if self.padded:
            if self.policy == LastBatchPolicy.DROP:
                size = self.n // self.s
                return begin, end, size // self.b, size
            return begin, end, end - begin, self.padded_size
        if self.policy == LastBatchPolicy.DROP:
            size = int(self.starts(r + 1).min()) - begin * self.b
            count = max(0, size // self.b)
            return begin, end, count, max(0, size)
        return begin, end, end - begin, (end - begin) * self.b

    def keep(self, r, t, pipe_index):
        """PARTIAL: how many leading samples of stream batch t belong to epoch r
        for pipeline `pipe_index` (0..B)."""
        slot = self.slots[pipe_index]
        if self.padded:
            left = self.shard_size(slot, r) - (t - self.first(r)) * self.b
        else:
            left = int(self.starts(r + 1, [slot])[0]) - t * self.b
        return min(max(left, 0), self.b)

    def nonempty_from(self, r):
        """The first epoch >= r that returns at least one batch."""
        for k in range(r, r + 4 * self.s + 2 * self.b + 8):
            if self.span(k)[2] > 0:
                return k
        raise _ladle.StateError(
            f"the iterator finds no epoch with a whole batch of {self.b} samples (reader: {self.n} samples in "
            f"{self.s} shard(s), policy {self.policy.name}); use a smaller batch or another last_batch_policy")


class GenericIterator:
    """DALI's DALIGenericIterator for ladle pipelines.

    Arguments (DALI's, in DALI's order):
      pipelines: a Pipeline or a list of them (one per GPU, or the local
        shards); all must have the same batch size.
      output_map: one name per pipeline output; batches are dicts with those keys.
      size: samples per epoch (the sum over pipelines) in DALI's older,
        counter-based mode; exclusive with reader_name.
      reader_name: the name of the reader operator whose metadata sizes the
        epoch (recommended).
      auto_reset: False/"no", True/"yes" or "quiet" (see the module docs).
      fill_last_batch: deprecated DALI spelling: True is FILL, False PARTIAL.
      dynamic_shape: accepted for DALI scripts, no effect: ladle's tensors
        take each batch's shape without a copy, so shapes may change anyway.
      last_batch_padded: without reader_name, whether the reader pads
        (pad_last_batch); with reader_name it is taken from the reader.
      last_batch_policy: LastBatchPolicy.FILL, DROP or PARTIAL.
      prepare_first_batch: fetch the first batch in the constructor.

    Iterating yields a list with one dict per pipeline. ``len()``, ``size``
    and ``_size`` follow DALI (see the table in the module docstring).
    """

    def __init__(self, pipelines, output_map, size=-1, reader_name=None, auto_reset=False,
                 fill_last_batch=None, dynamic_shape=False, last_batch_padded=False,
                 last_batch_policy=LastBatchPolicy.FILL, prepare_first_batch=True):
        if pipelines is None:
            raise _ladle.InvalidArgumentError("GenericIterator: give at least one pipeline")
        if not isinstance(pipelines, (list, tuple)):
            pipelines = [pipelines]
        pipelines = list(pipelines)
        if not pipelines:
            raise _ladle.InvalidArgumentError("GenericIterator: give at least one pipeline")
        output_map = list(output_map)
        if len(set(output_map)) != len(output_map):
            raise _ladle.InvalidArgumentError(f"output_map names must be distinct: {output_map}")
        self.output_map = output_map
        self._pipes = pipelines
        self._num_gpus = len(pipelines)
        self.batch_size = pipelines[0].max_batch_size
        if any(p.max_batch_size != self.batch_size for p in pipelines):
            raise _ladle.InvalidArgumentError("all pipelines must have the same batch size")
        self._auto_reset = _auto_reset_mode(auto_reset)
        if fill_last_batch is not None:
            warnings.warn("fill_last_batch is deprecated; use last_batch_policy", DeprecationWarning, stacklevel=2)
            last_batch_policy = LastBatchPolicy.FILL if fill_last_batch else LastBatchPolicy.PARTIAL
        self._last_batch_policy = _policy(last_batch_policy)
        self._last_batch_padded = bool(last_batch_padded)
        size = int(size) if size is not None else -1
        if size == 0:
            raise _ladle.InvalidArgumentError("size cannot be 0")
        if reader_name is not None and size > 0:
            raise _ladle.InvalidArgumentError("give either reader_name or size, not both")
        if reader_name is not None and last_batch_padded:
            raise _ladle.InvalidArgumentError(
                "with reader_name, last_batch_padded comes from the reader's pad_last_batch; do not set it")

        for p in pipelines:
            p.build()
        # DALI's third mode, neither size nor reader_name: an epoch ends when the
        # pipelines raise StopIteration, which only external sources with a
        # `source` do (ladle's readers are endless).
        self._source_mode = reader_name is None and size < 0 and self._fed_by_sources()
        self._ran_out = False
        if reader_name is None and size < 0 and not self._source_mode:
            reader_name = self._only_reader()
            if last_batch_padded:
                raise _ladle.InvalidArgumentError(
                    "last_batch_padded needs size=...; or give reader_name and the reader's pad_last_batch decides")
        self._reader_name = reader_name
        positions = {p.get_position() for p in pipelines}
        if len(positions) != 1:
            raise _ladle.StateError(f"the pipelines are at different iterations {sorted(positions)}; "
                                    "an iterator needs them in step")
        self._position = positions.pop()  # stream batches consumed by the iterator (absolute)
        self._epoch = 0
        self._ever_consumed = False
        self._stash = None  # outputs fetched ahead (prepare_first_batch), not yet handed out

        if reader_name is not None:
            self._setup_reader(reader_name)
        else:
            self._epochs = None
            self._size = size
            self._counter = 0
        if self._reader_name is None and self._last_batch_policy == LastBatchPolicy.DROP \
                and 0 < size < self._num_gpus * self.batch_size:
            raise _ladle.InvalidArgumentError(
                f"DROP: size={size} is less than one batch ({self._num_gpus} x {self.batch_size}): "
                "the iterator would return nothing")

        self._prepare_first_batch = prepare_first_batch
        if prepare_first_batch and not self._source_mode:  # a source may be empty: nothing to prepare
            self._stash = self._run()

    # --- set-up ----------------------------------------------------------

    def _fed_by_sources(self):
        return all(not p._readers and any(s is not None for s in p._sources.values()) for p in self._pipes)

    def _only_reader(self):
        names = [tuple(p._readers) for p in self._pipes]
        if all(len(n) == 1 for n in names) and len(set(names)) == 1:
            return names[0][0]
        raise _ladle.InvalidArgumentError(
            "give reader_name (or size): ladle's readers are endless streams, so without one the iterator "
            f"cannot tell where an epoch ends (readers found: {sorted(set(sum(names, ())))})")

    def _setup_reader(self, name):
        metas = [p.reader_meta(name) for p in self._pipes]
        first = metas[0]
        for key in ("epoch_size", "number_of_shards", "epoch_size_padded"):
            if any(m[key] != first[key] for m in metas):
                raise _ladle.InvalidArgumentError(
                    f"reader {name!r} must have the same {key} in every pipeline: {[m[key] for m in metas]}")
        for key in ("pad_last_batch", "stick_to_shard"):
            if len({bool(m[key]) for m in metas}) != 1:
                raise _ladle.InvalidArgumentError(f"reader {name!r}: set {key} in all pipelines or in none")
        self._meta = dict(first)
        self._last_batch_padded = bool(first["pad_last_batch"])
        self._shards_num = int(first["number_of_shards"])
        self._epochs = _Epochs(first, self.batch_size, self._last_batch_policy, [m["shard_id"] for m in metas])
        self._locate(self._position)

    def _locate(self, position):
        """Sets the reader epoch and batches returned for a stream position
        (the start of an iterator, or a position the caller moved to)."""
        ep = self._epochs
        # A guess near the answer (an epoch is about N/S/B batches), then exact steps.
        r = position // ep.per_epoch if ep.padded else max(0, position * ep.b * ep.s // ep.n - 2)
        while ep.first(r + 1) <= position:
            r += 1
        while r > 0 and ep.first(r) > position:
            r -= 1
        begin, end, count, _ = ep.span(r)
        if count == 0 or position - begin >= count:  # inside dropped batches: start the next epoch
            r = ep.nonempty_from(r + 1)
            self._discard(ep.first(r) - position)
            begin = ep.first(r)
        self._set_epoch(r, self._position - begin)

    def _set_epoch(self, r, returned):
        self._reader_epoch = r
        begin, end, count, size = self._epochs.span(r)
        self._epoch_begin, self._epoch_end, self._epoch_count = begin, end, count
        self._size = size
        self._returned = returned

    # --- DALI's attributes -------------------------------------------------

    @property
    def size(self):
        return self._size

    def __len__(self):
        if self._epochs is not None:
            if self._last_batch_policy == LastBatchPolicy.DROP:
                return self._size // self.batch_size
            return math.ceil(self._size / self.batch_size)
        step = self._num_gpus * self.batch_size
        if self._last_batch_policy == LastBatchPolicy.DROP:
            return self._size // step
        return math.ceil(self._size / step)

    # --- running the pipelines ---------------------------------------------

    def _run(self):
        """The next stream batch of every pipeline (raw TensorLists)."""
        if self._stash is not None:
            outputs, self._stash = self._stash, None
            return outputs
        outputs = []
        for p in self._pipes:
            out = p.run()
            if len(out) != len(self.output_map):
                raise _ladle.InvalidArgumentError(
                    f"the pipeline has {len(out)} outputs but output_map names {len(self.output_map)}: "
                    f"{self.output_map}")
            outputs.append(out)
        return outputs

    def _discard(self, count):
        for _ in range(count):
            self._run()
            self._position += 1

    def _tensors(self, outputs):
        batches = []
        for out in outputs:
            batches.append({name: to_torch(tl, name) for name, tl in zip(self.output_map, out)})
        return batches

    # --- iteration -----------------------------------------------------------

    def __iter__(self):
        # As DALI: iter() on an iterator whose epoch is over starts the next
        # one. In the middle of an epoch DALI's reset() logs a warning and
        # does nothing; ladle just goes on (so `for data in loader` after
        # load_state_dict() or after a loop left early is quiet).
        if self._ever_consumed and self._epoch_done():
            self.reset()
        return self

    def _epoch_done(self):
        if self._epochs is not None:
            return self._returned >= self._epoch_count
        return self._ran_out or (self._size > 0 and self._counter >= self._size)

    def _end_of_epoch(self):
        if self._auto_reset == "no":
            raise StopIteration
        self.reset()
        if self._auto_reset == "yes":
            raise StopIteration

    def __next__(self):
        self._ever_consumed = True
        if self._epoch_done():
            self._end_of_epoch()  # raises, or (quiet) starts the next epoch
        if self._epochs is not None:
            return self._next_reader()
        return self._next_counted()

    next = __next__

    def _next_reader(self):
        t = self._position
        batches = self._tensors(self._run())
        self._position += 1
        self._returned += 1
        if self._last_batch_policy == LastBatchPolicy.PARTIAL:
            for i, batch in enumerate(batches):
                keep = self._epochs.keep(self._reader_epoch, t, i)
                if keep < self.batch_size:
                    batches[i] = {name: x[:keep] for name, x in batch.items()}
        return batches

    def _next_counted(self):
        step = self._num_gpus * self.batch_size
        try:
            outputs = self._run()
        except StopIteration:
            if not self._source_mode:
                raise
            if self._counter == 0 and self._auto_reset == "quiet":
                raise  # the source gives nothing at all: "quiet" would loop for ever
            self._ran_out = True
            return self.__next__()  # the end of the epoch, as auto_reset says
        batches = self._tensors(outputs)
        self._position += 1
        self._counter += step
        if self._size <= 0:
            return batches
        if self._last_batch_policy == LastBatchPolicy.DROP and self._counter > self._size:
            self._end_of_epoch()
            return self.__next__()  # "quiet": the dropped batch is gone; go on
        if self._last_batch_policy == LastBatchPolicy.PARTIAL and self._counter > self._size:
            # Return exactly `size` samples in all: whole batches from the first
            # pipelines, part of the last one used.
            wanted = step - (self._counter - self._size)
            pipes = math.ceil(wanted / self.batch_size)
            last = wanted % self.batch_size or self.batch_size
            batches = batches[:pipes]
            batches[-1] = {name: x[:last] for name, x in batches[-1].items()}
        return batches

    def reset(self):
        """Starts the next epoch once this one is over (as DALI, a reset in the
        middle of an epoch is ignored with a warning)."""
        if self._epochs is not None:
            if self._returned < self._epoch_count:
                warnings.warn("the iterator does not support resetting in the middle of an epoch; ignored",
                              stacklevel=2)
                return
            # Batches of this epoch not returned (DROP) are read and dropped.
            self._discard(self._epoch_end - self._position)
            r = self._epochs.nonempty_from(self._reader_epoch + 1)
            self._discard(self._epochs.first(r) - self._position)
            self._set_epoch(r, 0)
            self._epoch += 1
            return
        step = self._num_gpus * self.batch_size
        if self._last_batch_policy == LastBatchPolicy.DROP and self._size > 0 \
                and self._counter < self._size < self._counter + step:
            self._discard(1)  # the incomplete batch DROP does not return
            self._counter += step
        if self._size < 0 or self._counter >= self._size:
            if self._last_batch_policy == LastBatchPolicy.FILL and not self._last_batch_padded and self._size > 0:
                self._counter %= self._size
            else:
                self._counter = 0
            self._ran_out = False
            self._epoch += 1
        else:
            warnings.warn("the iterator does not support resetting in the middle of an epoch; ignored",
                          stacklevel=2)

    # --- checkpoints ---------------------------------------------------------

    def checkpoints(self):
        """DALI's iterator checkpoints: one Pipeline checkpoint string per
        pipeline, at the batch this iterator returns next (pipelines made
        with enable_checkpointing=True). Resume with
        Pipeline(checkpoint=...) and a new iterator over them."""
        return [p._checkpoint(self._position) for p in self._pipes]

    def state_dict(self):
        """Where the iterator is: a dict of plain Python values (picklable,
        torch.save-able). Restore it with load_state_dict() on an iterator
        built the same way (same pipelines' definitions, batch size, reader
        and policy); the pipelines are repositioned."""
        state = {
            "format": _STATE_FORMAT,
            "position": int(self._position),
            "epoch": int(self._epoch),
            "config": self._config(),
        }
        if self._epochs is not None:
            state["reader_epoch"] = int(self._reader_epoch)
            state["returned"] = int(self._returned)
        else:
            state["counter"] = int(self._counter)
        return state

    def _config(self):
        config = {
            "batch_size": int(self.batch_size),
            "num_pipelines": int(self._num_gpus),
            "last_batch_policy": self._last_batch_policy.name,
            "reader_name": self._reader_name,
        }
        if self._epochs is not None:
            config.update({k: int(self._meta[k]) for k in
                           ("epoch_size", "epoch_size_padded", "number_of_shards", "pad_last_batch",
                            "stick_to_shard")})
        else:
            config["last_batch_padded"] = bool(self._last_batch_padded)
        return config

    def load_state_dict(self, state):
        """Restores a state_dict(): the next batch is the one the saved
        iterator would have returned next, byte for byte. If the saved
        iterator had returned the last batch of its epoch, the restored one
        first ends that epoch (StopIteration, then the next epoch as
        auto_reset says), so a loop `for data in loader` resumed in that epoch
        runs zero times rather than over the next epoch."""
        if not isinstance(state, dict) or state.get("format") != _STATE_FORMAT:
            raise _ladle.InvalidArgumentError("load_state_dict: not a state of ladle.torch.GenericIterator")
        mine, theirs = self._config(), state.get("config", {})
        if mine != theirs:
            diff = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
            details = ", ".join(f"{k}: saved {theirs.get(k)!r}, here {mine.get(k)!r}" for k in diff)
            raise _ladle.InvalidArgumentError(f"load_state_dict: the iterator is set up differently ({details})")
        self._stash = None
        position = int(state["position"])
        for p in self._pipes:
            p.set_position(position)
        self._position = position
        self._epoch = int(state["epoch"])
        # Not "consumed": iter() must not start the next epoch by itself (see above).
        self._ever_consumed = False
        if self._epochs is not None:
            self._set_epoch(int(state["reader_epoch"]), int(state["returned"]))
        else:
            self._counter = int(state["counter"])

    def __repr__(self):
        return (f"<ladle.torch.{type(self).__name__} {self._num_gpus} pipeline(s) batch_size={self.batch_size} "
                f"policy={self._last_batch_policy.name} len={len(self)}>")


class ClassificationIterator(GenericIterator):
    """GenericIterator with output_map ["data", "label"] (DALI's
    DALIClassificationIterator). Labels of fn.readers.file are int32 [N, 1]:
    ``data[0]["label"].squeeze(-1).long()`` gives CrossEntropyLoss targets."""

    def __init__(self, pipelines, size=-1, reader_name=None, auto_reset=False, fill_last_batch=None,
                 dynamic_shape=False, last_batch_padded=False, last_batch_policy=LastBatchPolicy.FILL,
                 prepare_first_batch=True):
        super().__init__(pipelines, ["data", "label"], size=size, reader_name=reader_name, auto_reset=auto_reset,
                         fill_last_batch=fill_last_batch, dynamic_shape=dynamic_shape,
                         last_batch_padded=last_batch_padded, last_batch_policy=last_batch_policy,
                         prepare_first_batch=prepare_first_batch)


class RaggedIterator(GenericIterator):
    """DALI's DALIRaggedIterator: GenericIterator whose outputs may be ragged
    (boxes and labels per image). ``output_types`` gives one tag per output:
    DENSE_TAG ("dense": one [N, ...] tensor, the default), SPARSE_LIST_TAG
    ("sparse_list": a list of N tensors, one per sample, without a copy) or
    SPARSE_COO_TAG ("sparse_coo": a torch sparse COO tensor of shape
    [N, max_len] whose values are the samples' 1-D values, as DALI builds
    it: the samples' values concatenated, indices (sample, position)).
    A padded [N, max_len, ...] tensor with the lengths, as DALI does it, comes
    from the pipeline: ``fn.pad(boxes, axes=(0,), fill_value=-1)`` and
    ``boxes.shape()`` as two DENSE outputs (tests/python/test_torch_ragged.py).
    Epochs, policies and checkpoints are GenericIterator's."""

    DENSE_TAG = "dense"
    SPARSE_LIST_TAG = "sparse_list"
    SPARSE_COO_TAG = "sparse_coo"

    def __init__(self, pipelines, output_map, size=-1, reader_name=None, output_types=None, auto_reset=False,
                 fill_last_batch=None, dynamic_shape=False, last_batch_padded=False,
                 last_batch_policy=LastBatchPolicy.FILL, prepare_first_batch=True):
        tags = {self.DENSE_TAG, self.SPARSE_LIST_TAG, self.SPARSE_COO_TAG}
        output_map = list(output_map)
        if output_types is not None:
            output_types = list(output_types)
            if len(output_types) != len(output_map):
                raise _ladle.InvalidArgumentError(
                    f"RaggedIterator: output_types has {len(output_types)} tags for {len(output_map)} outputs")
            wrong = [t for t in output_types if t not in tags]
            if wrong:
                raise _ladle.InvalidArgumentError(
                    f"RaggedIterator: output_types {wrong} are not tags; use {sorted(tags)}")
        self._output_types = output_types or [self.DENSE_TAG] * len(output_map)
        super().__init__(pipelines, output_map, size=size, reader_name=reader_name, auto_reset=auto_reset,
                         fill_last_batch=fill_last_batch, dynamic_shape=dynamic_shape,
                         last_batch_padded=last_batch_padded, last_batch_policy=last_batch_policy,
                         prepare_first_batch=prepare_first_batch)

    def _tensors(self, outputs):
        batches = []
        for out in outputs:
            batch = {}
            for name, tag, tl in zip(self.output_map, self._output_types, out):
                if tag == self.DENSE_TAG:
                    batch[name] = to_torch(tl, name)
                    continue
                samples = _sample_tensors(tl, name)
                batch[name] = samples if tag == self.SPARSE_LIST_TAG else _SparseRows(samples)
            batches.append(batch)
        return batches

    def _next_reader(self):
        batches = super()._next_reader()
        return [{k: v.tensor() if isinstance(v, _SparseRows) else v for k, v in b.items()} for b in batches]

    def _next_counted(self):
        batches = super()._next_counted()
        return [{k: v.tensor() if isinstance(v, _SparseRows) else v for k, v in b.items()} for b in batches]


def _sample_tensors(tl, name):
    """The samples of a batch as torch tensors that view ladle's memory. Where
    they lie back to back (a reader's or a CPU operator's boxes do), one export
    of them all, split along the first axis: an export per sample costs
    microseconds each, which at 64 images and two ragged outputs is a good part
    of a fast detection pipeline's batch time."""
    rows = tl._batch.rows()
    if rows is None:
        return [to_torch(tl.sample(i), f"{name}[{i}]") for i in range(len(tl))]
    return list(to_torch(rows, name).split([shape[0] for shape in tl.shape()]))


class _SparseRows:
    """The samples of a SPARSE_COO output until the batch's final length is
    known (PARTIAL cuts it): slicing keeps the first rows."""

    def __init__(self, samples):
        self.samples = samples

    def __getitem__(self, key):
        return _SparseRows(self.samples[key])

    def tensor(self):
        if any(s.dim() != 1 for s in self.samples):
            raise _ladle.InvalidArgumentError("RaggedIterator: SPARSE_COO_TAG needs 1-D samples")
        values = torch.cat(self.samples) if self.samples else torch.zeros(0)
        rows = [torch.full((len(s),), i, dtype=torch.int64) for i, s in enumerate(self.samples)]
        cols = [torch.arange(len(s), dtype=torch.int64) for s in self.samples]
        indices = torch.stack([torch.cat(rows), torch.cat(cols)]) if self.samples else torch.zeros(2, 0, dtype=torch.int64)
        return torch.sparse_coo_tensor(indices.to(values.device), values)
