"""Counter-based pseudo-random numbers as pure functions of an explicit key.

Rules:
- there is no hidden state: a key (an ``int``) and a counter fix every bit, so the same key
  gives the same numbers on every platform and Python version;
- :func:`splitmix64` is the step function ``next(state) -> (value, state)``; it mixes seeds
  and derives independent sub-keys (:func:`derive`), as JAX's ``fold_in`` does;
- bulk draws are counter-based: block ``i`` of a stream is SHAKE-128 of ``(key, i)``, so a
  block can be recomputed on its own; :func:`random_indices` turns those bytes into indices
  that are exactly uniform over ``range(n)`` (rejection sampling, no modulo bias).
"""

from __future__ import annotations

import hashlib
import sys
from array import array
from collections.abc import Sequence

MASK64 = (1 << 64) - 1
GOLDEN_GAMMA = 0x9E3779B97F4A7C15
_WORD = 4  # bytes per word for n > 256


def splitmix64(state: int) -> tuple[int, int]:
    """One step of SplitMix64: the next 64-bit value and the new state.

    >>> value, state = splitmix64(0)
    >>> hex(value), state == 0x9E3779B97F4A7C15
    ('0xe220a8397b1dcdaf', True)
    """
    state = (state + GOLDEN_GAMMA) & MASK64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31), state


def derive(key: int, *path: int) -> int:
    """A 64-bit sub-key of ``key`` for ``path`` (e.g. a stream number); siblings differ.

    >>> derive(7, 1) != derive(7, 2) and derive(7, 1) == derive(7, 1)
    True
    """
    k = key & MASK64
    for step in path:
        mixed, _ = splitmix64(step & MASK64)
        k, _ = splitmix64(k ^ mixed)
    return k


def _block(key: int, counter: int, size: int) -> bytes:
    """``size`` pseudo-random bytes of block ``counter`` of ``key``'s stream."""
    seed = (key & MASK64).to_bytes(8, "little") + counter.to_bytes(8, "little")
    return hashlib.shake_128(seed).digest(size)


def _small_indices(key: int, n: int, count: int) -> bytes:
    """``count`` uniform indices below ``n <= 256``, one byte each."""
    limit = (256 // n) * n
    table = bytes(b % n if b < limit else 0 for b in range(256))
    rejected = bytes(range(limit, 256))
    out = bytearray()
    counter = 0
    while len(out) < count:
        missing = count - len(out)
        raw = _block(key, counter, missing * 256 // limit + 64)
        out += raw.translate(table, rejected)
        counter += 1
    return bytes(out[:count])


def _words(raw: bytes) -> array[int]:
    """Little-endian unsigned 32-bit words of ``raw`` (whose length is a multiple of 4)."""
    words = array("I")
    if words.itemsize != _WORD:  # pragma: no cover - exotic platforms
        words = array("L")
    words.frombytes(raw)
    if sys.byteorder == "big":  # pragma: no cover - big-endian platforms
        words.byteswap()
    return words


def _large_indices(key: int, n: int, count: int) -> list[int]:
    """``count`` uniform indices below ``n`` (up to 2**32), from 32-bit words."""
    limit = (2**32 // n) * n
    out: list[int] = []
    counter = 0
    while len(out) < count:
        missing = count - len(out)
        words = _words(_block(key, counter, _WORD * (missing + missing // 8 + 16)))
        out.extend(w % n for w in words if w < limit)
        counter += 1
    return out[:count]


def random_indices(key: int, n: int, count: int) -> Sequence[int]:
    """``count`` indices drawn uniformly and independently from ``range(n)``, from ``key``.

    >>> list(random_indices(42, 10, 8)) == list(random_indices(42, 10, 8))
    True
    >>> all(0 <= i < 3 for i in random_indices(1, 3, 100))
    True
    """
    if not 1 <= n <= 2**32:
        raise ValueError(f"n must be within [1, 2**32], got {n}")
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    if n <= 256:
        return _small_indices(key, n, count)
    return _large_indices(key, n, count)
