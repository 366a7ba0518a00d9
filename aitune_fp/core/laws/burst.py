"""Burst laws: a burst's phases end within their bounds and as soon as they may, its
sample lies within its timed calls, settling calls of any height do not move it, and
``Burst()`` is one timed call.

Every law takes ``(burst, times_ms)``: a burst and the per-call times of a stream it is fed
(:func:`burst_phases` replays :func:`~aitune_fp.core.rounds.burst.settles` and
:func:`~aitune_fp.core.rounds.burst.times` over the stream, cycling it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from aitune_fp.core.laws.law import Law
from aitune_fp.core.rounds.burst import Burst, sample, settles, times


def burst_phases(
    burst: Burst, times_ms: Sequence[float]
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The settling and the timed calls a burst makes on the stream ``times_ms`` (cycled).

    >>> burst_phases(Burst(settle_calls=1, min_ms=2.5), (1.0,))
    ((1.0,), (1.0, 1.0, 1.0))
    """
    if not times_ms:
        raise ValueError("burst_phases needs at least one time to cycle")
    made: list[float] = []
    settled: list[float] = []
    while settles(burst, len(settled), sum(settled)):
        settled.append(times_ms[len(made) % len(times_ms)])
        made.append(settled[-1])
    timed: list[float] = []
    while times(burst, len(timed), sum(timed)):
        timed.append(times_ms[len(made) % len(times_ms)])
        made.append(timed[-1])
    return tuple(settled), tuple(timed)


def _bounds(burst: Burst, times_ms: Sequence[float]) -> bool:
    """Each phase makes its minimum calls, at most ``max_calls``, meets its time floor unless
    ``max_calls`` ended it, and one call fewer would have been too short."""
    settled, timed = burst_phases(burst, times_ms)
    ok = True
    for made, least, floor, more in (
        (settled, burst.settle_calls, burst.settle_ms, settles),
        (timed, burst.min_calls, burst.min_ms, times),
    ):
        n = len(made)
        long_enough = sum(made) >= floor or n == burst.max_calls
        needed = n == 0 or more(burst, n - 1, sum(made[:-1]))
        ok = ok and least <= n <= burst.max_calls and long_enough and needed
    return ok


def _within_timed(burst: Burst, times_ms: Sequence[float]) -> bool:
    """The sample lies between the smallest and largest timed call."""
    _, timed = burst_phases(burst, times_ms)
    return min(timed) <= sample(burst, timed) <= max(timed)


def _settling_is_ignored(burst: Burst, times_ms: Sequence[float]) -> bool:
    """With settling bounded by calls alone, settling calls a thousand times slower leave
    the sample as it was (the same calls are timed)."""
    by_calls = replace(burst, settle_ms=0.0)
    settled, timed = burst_phases(by_calls, times_ms)
    slowed = (*(1000.0 * t for t in settled), *timed)
    return sample(by_calls, burst_phases(by_calls, slowed)[1]) == sample(by_calls, timed)


def _one_call(_burst: Burst, times_ms: Sequence[float]) -> bool:
    """``Burst()`` makes no settling call and one timed call, which is its sample."""
    settled, timed = burst_phases(Burst(), times_ms)
    return settled == () and timed == (times_ms[0],) and sample(Burst(), timed) == times_ms[0]


def _scales(burst: Burst, times_ms: Sequence[float]) -> bool:
    """Twice as slow timed calls give twice the sample."""
    _, timed = burst_phases(burst, times_ms)
    return sample(burst, tuple(2.0 * t for t in timed)) == 2.0 * sample(burst, timed)


BURST_LAWS: tuple[Law[[Burst, Sequence[float]]], ...] = (
    Law("burst_bounds", "each phase makes min..max calls and stops once it may", _bounds),
    Law("burst_within_timed", "the sample lies within the timed calls' range", _within_timed),
    Law(
        "burst_settling_ignored",
        "slower settling calls do not move the sample",
        _settling_is_ignored,
    ),
    Law("burst_one_call", "Burst() is one timed call, whose time is the sample", _one_call),
    Law("burst_scales", "twice as slow timed calls give twice the sample", _scales),
)
