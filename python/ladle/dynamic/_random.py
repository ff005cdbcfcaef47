"""Random generators of ladle.dynamic (DALI's ``ndd.random.RNG``).

An RNG is (seed, draws): its k-th draw is mix(seed, k), a 62-bit number.
A call of a random operator takes one draw as the seed of its iteration;
sample i of the call then draws from (that seed, operator, epoch 0, i), as
sample i of the first iteration of a pipeline made with that seed would. The
built graph is kept and is fed the seed per call (ladle_pipeline_feed_seed),
so a random call costs what any other call costs."""

import threading

from .. import _ladle

_MASK = 0xFFFFFFFFFFFFFFFF


def _mix(seed, k):
    """A 62-bit seed from (seed, k): splitmix64's finalizer over both."""
    x = (seed * 0x9E3779B97F4A7C15 + (k + 1) * 0xBF58476D1CE4E5B9) & _MASK
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & _MASK
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & _MASK
    x ^= x >> 31
    return x >> 2


_STATE_PREFIX = "ladle.rng:"


class RNG:
    """A reproducible random generator: ``RNG(seed=None, state=None)``.

    ``rng()`` draws a number (a uint32); random operators take ``rng=`` and
    draw their call's seed from it (without it, from ``get_default_rng()``).
    ``get_state()`` / ``set_state(state)`` (also the ``state`` property) save
    and restore the position: a state is a short string. ``clone()`` goes on
    with the same sequence independently; ``advance(n)`` skips n draws.
    Without a seed, one is taken from the operating system."""

    def __init__(self, seed=None, state=None):
        self._lock = threading.Lock()
        if state is not None:
            if seed is not None:
                raise _ladle.InvalidArgumentError("RNG: give seed or state, not both")
            self.set_state(state)
            return
        if seed is None:
            import secrets

            seed = secrets.randbits(64)
        self.seed = seed

    @property
    def seed(self):
        raise AttributeError("RNG.seed is write-only (it resets the sequence); use get_state()")

    @seed.setter
    def seed(self, value):
        value = int(value)
        if value < 0:
            raise _ladle.InvalidArgumentError(f"RNG: the seed must be >= 0, got {value}")
        with self._lock:
            self._seed, self._draws = value & _MASK, 0

    def _next_seed(self):
        """The next draw (62 bits): the seed of one operator call."""
        with self._lock:
            k = self._draws
            self._draws += 1
            return _mix(self._seed, k)

    def __call__(self):
        return self._next_seed() & 0xFFFFFFFF

    def advance(self, n):
        n = int(n)
        if n < 0:
            raise _ladle.InvalidArgumentError("RNG.advance: n must be >= 0")
        with self._lock:
            self._draws += n

    def clone(self):
        return RNG(state=self.get_state())

    def get_state(self, *, cuda_stream=None):
        """The position, as a string ("ladle.rng:<seed>:<draws>"); cuda_stream
        is accepted for DALI's signature (the state lives on the host)."""
        with self._lock:
            return f"{_STATE_PREFIX}{self._seed}:{self._draws}"

    def set_state(self, value):
        text = str(value)
        try:
            if not text.startswith(_STATE_PREFIX):
                raise ValueError
            seed, draws = (int(x) for x in text[len(_STATE_PREFIX):].split(":"))
            if seed < 0 or draws < 0:
                raise ValueError
        except ValueError:
            raise _ladle.InvalidArgumentError(f"RNG.set_state: not a ladle RNG state: {text[:60]!r}") from None
        with self._lock:
            self._seed, self._draws = seed, draws

    state = property(get_state, set_state)

    def __repr__(self):
        return f"RNG(state={self.get_state()!r})"


_default = RNG(seed=0)


def get_default_rng():
    """The generator random operators use without ``rng=`` (seed 0 at import)."""
    return _default


def set_seed(seed):
    """Restarts the default generator from `seed`: the k-th random call
    after it (counted from here) gets the same numbers in every run, whatever
    the thread count or caching. Readers made later shuffle with `seed` too
    (as a Pipeline(seed=seed) would)."""
    seed = int(seed)
    if seed < 0:
        raise _ladle.InvalidArgumentError(f"set_seed: the seed must be >= 0, got {seed}")
    _default.seed = seed


def get_seed():
    """The seed the default generator was last set to."""
    return _default._seed


def resolve(rng, public):
    if rng is None:
        return _default
    if not isinstance(rng, RNG):
        raise _ladle.InvalidArgumentError(f"{public}: argument 'rng' must be a ladle.dynamic.random.RNG, "
                                          f"not {type(rng).__name__}")
    return rng


def _after_fork_in_child():
    _default._lock = threading.Lock()


import os as _os  # noqa: E402

if hasattr(_os, "register_at_fork"):
    _os.register_at_fork(after_in_child=_after_fork_in_child)
