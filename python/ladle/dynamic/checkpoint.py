"""Checkpoints of ladle.dynamic (DALI's ``ndd.checkpoint``): the states of
readers and random generators, collected under names, saved as JSON and
restored, so that a run resumed from a checkpoint continues with the bytes
the uninterrupted run would have produced.

    ckpt = ldd.checkpoint.Checkpoint()
    ckpt.register(reader, "reader")
    ckpt.register(ldd.random.get_default_rng(), "rng")
    ...                                  # train for a while
    ckpt.collect(); path = ckpt.save("ckpt_{seq:04d}.json")

    # later, in a new process, with the objects made the same way:
    ckpt = ldd.checkpoint.Checkpoint(); ckpt.load(path)
    ckpt.register(reader, "reader")      # the loaded state is applied here
    ckpt.register(ldd.random.get_default_rng(), "rng")
"""

import glob
import json
import os
import re

from .. import _ladle

__all__ = ["Checkpoint", "current"]

_FORMAT = "ladle.dynamic.checkpoint/1"


def _kind(op):
    return f"{type(op).__module__}.{type(op).__qualname__}"


class Checkpoint:
    """States of stateful objects (anything with get_state/set_state: the
    readers, ladle.dynamic.random.RNG) under names.

    ``register(op, name=None)`` adds an object (a loaded state for that name
    is applied at once); ``collect()`` takes every registered object's state;
    ``restore()`` gives the stored states back to the objects;
    ``serialize()`` / ``deserialize(text)`` and ``save(filename)`` /
    ``load(filename)`` write and read them as JSON. A file name may hold
    ``{seq}`` (a sequence number, e.g. "ckpt_{seq:04d}.json"): save picks the
    next free number, load the highest one present."""

    def __init__(self):
        self._ops = {}
        self._states = {}  # name -> (kind, state)
        self._dirty = set()  # loaded states not yet applied to an object
        self._complete = False
        self._loaded = False

    def clear(self):
        self.__init__()

    @property
    def is_complete(self):
        return self._complete

    @property
    def is_loaded(self):
        return self._loaded

    @property
    def names(self):
        return tuple(self._ops)

    def __len__(self):
        return len(self._ops)

    def __contains__(self, name):
        return str(name) in self._ops

    def register(self, op, name=None):
        """Adds `op` under `name` (default "__op_<k>", k its position among the
        registered ones); returns the name."""
        if not (callable(getattr(op, "get_state", None)) and callable(getattr(op, "set_state", None))):
            raise TypeError(f"Checkpoint.register: {type(op).__name__} has no get_state/set_state")
        for key, known in self._ops.items():
            if known is op:
                if name is not None and name != key:
                    raise _ladle.InvalidArgumentError(f"Checkpoint.register: the object is registered as {key!r}")
                self._apply(key)
                return key
        if name is None:
            name = f"__op_{len(self._ops)}"
        elif not name or name.startswith("__op_"):
            raise _ladle.InvalidArgumentError("Checkpoint.register: a name must be non-empty and not start "
                                              "with '__op_'")
        if self._loaded and name not in self._states:
            raise KeyError(f"Checkpoint.register: the loaded checkpoint has no state for {name!r}")
        self._ops[name] = op
        self._apply(name)
        return name

    def _apply(self, name):
        if name in self._dirty:
            kind, state = self._states[name]
            op = self._ops[name]
            if kind is not None and kind != _kind(op):
                raise TypeError(f"Checkpoint: the state of {name!r} is of a {kind}, not a {_kind(op)}")
            op.set_state(state)
            self._dirty.discard(name)

    def get_state(self, name):
        return self._states[name][1]

    def set_state(self, name, value, op_type=None):
        kind = op_type if isinstance(op_type, str) or op_type is None else f"{op_type.__module__}.{op_type.__qualname__}"
        self._states[name] = (kind, value)
        self._dirty.add(name)
        if name in self._ops:
            self._apply(name)

    def collect(self):
        """Takes the state of every registered object now."""
        self._states = {name: (_kind(op), op.get_state()) for name, op in self._ops.items()}
        self._dirty.clear()
        self._complete, self._loaded = True, False

    def restore(self):
        """Gives every stored state back to its registered object."""
        for name in self._states:
            if name in self._ops:
                self._dirty.add(name)
                self._apply(name)

    def serialize(self):
        return json.dumps({"format": _FORMAT, "states": {name: {"type": kind, "state": state}
                                                         for name, (kind, state) in self._states.items()}},
                          sort_keys=True)

    def deserialize(self, data):
        try:
            doc = json.loads(data)
            if doc.get("format") != _FORMAT:
                raise ValueError(f"format {doc.get('format')!r}")
            states = {name: (e["type"], e["state"]) for name, e in doc["states"].items()}
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise _ladle.InvalidArgumentError(f"Checkpoint: not a ladle.dynamic checkpoint ({e})") from None
        self._states, self._dirty = states, set(states)
        self._complete, self._loaded = False, True
        for name in list(self._ops):
            if name in self._states:
                self._apply(name)

    def save(self, filename):
        """Writes the states as JSON (atomically: a temporary file renamed);
        returns the path written."""
        if "{seq" in filename:
            path = filename.format(seq=_sequence(filename)[0] + 1)
        else:
            path = filename
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(self.serialize())
        os.replace(tmp, path)
        return path

    def load(self, filename):
        """Reads states written by save; returns the path read."""
        path = filename
        if "{seq" in filename:
            seq, path = _sequence(filename)
            if path is None:
                raise FileNotFoundError(f"Checkpoint.load: no file matches {filename!r}")
        with open(path, encoding="utf-8") as f:
            self.deserialize(f.read())
        return path


def _sequence(pattern):
    """(highest sequence number, its file) among files matching a "{seq...}" pattern; (-1, None) for none."""
    m = re.search(r"\{seq(:[^}]*)?\}", pattern)
    head, tail = pattern[:m.start()], pattern[m.end():]
    best, best_path = -1, None
    for path in glob.glob(glob.escape(head) + "*" + glob.escape(tail)):
        middle = path[len(head):len(path) - len(tail) if tail else None]
        if middle.isdigit() and int(middle) > best:
            best, best_path = int(middle), path
    return best, best_path


def current():
    """The current EvalContext's Checkpoint."""
    from ._context import EvalContext

    return EvalContext.current().checkpoint
