"""CUDA streams for ladle.dynamic (DALI's ndd.Stream and its functions): a
thin holder of a stream handle that an EvalContext orders GPU results for.
ladle creates no stream here; a new one comes from PyTorch."""

import threading

from .. import _ladle


class Stream:
    """A CUDA stream: ``handle`` (the cudaStream_t as an int) and ``device_id``.
    Made by ``stream(stream=...)`` from a Stream, a torch.cuda.Stream, an
    object with ``__cuda_stream__`` or a raw handle; ``stream()`` alone makes
    a new one (through PyTorch)."""

    def __init__(self, *, stream=None, device_id=None):
        self._keep = None
        if stream is None:
            try:
                import torch
            except ImportError:
                torch = None
            if torch is None or not torch.cuda.is_available():
                raise _ladle.NotAvailableError("Stream: making a CUDA stream needs a GPU (and PyTorch with CUDA)")
            self._keep = torch.cuda.Stream(device=device_id)
            handle = self._keep.cuda_stream
        elif isinstance(stream, Stream):
            handle, device_id = stream.handle, stream.device_id if device_id is None else device_id
            self._keep = stream
        elif hasattr(stream, "__cuda_stream__"):
            handle = int(stream.__cuda_stream__()[1])
            self._keep = stream
        elif hasattr(stream, "cuda_stream"):  # torch.cuda.Stream
            handle = int(stream.cuda_stream)
            device_id = getattr(getattr(stream, "device", None), "index", device_id) if device_id is None else device_id
            self._keep = stream
        else:
            handle = int(stream)
        self._handle = handle
        self._device_id = device_id

    @property
    def handle(self):
        return self._handle

    @property
    def device_id(self):
        return self._device_id

    def __cuda_stream__(self):
        return (0, self._handle)

    def synchronize(self):
        if self._keep is not None and hasattr(self._keep, "synchronize"):
            self._keep.synchronize()
            return
        import torch

        torch.cuda.ExternalStream(self._handle).synchronize()

    def __eq__(self, other):
        return isinstance(other, Stream) and other.handle == self.handle

    def __hash__(self):
        return hash(self._handle)

    def __repr__(self):
        return f"ladle.dynamic.Stream(handle={self._handle:#x}, device_id={self._device_id})"


def stream(*, stream=None, device_id=None):
    return stream if isinstance(stream, Stream) and device_id is None else Stream(stream=stream,
                                                                                 device_id=device_id)


_default: dict = {}
_local = threading.local()


def set_default_stream(cuda_stream, /, device_id=None):
    _default[device_id] = None if cuda_stream is None else globals()["stream"](stream=cuda_stream)


def get_default_stream(device_id=None):
    return _default.get(device_id)


def set_current_stream(cuda_stream, /):
    _local.stream = None if cuda_stream is None else globals()["stream"](stream=cuda_stream)


def get_current_stream():
    """This thread's stream (set_current_stream), else the default one, else None."""
    return getattr(_local, "stream", None) or _default.get(None)
