"""Burst laws: a burst ends within its bounds, its sample is one of its settled calls' range,
a settling phase of any height does not move it, and ``Burst()`` is one call.

Every law takes ``(burst, times_ms)``: a burst and the per-call times of a stream it is fed
(:func:`burst_calls` replays :func:`~aitune_fp.core.measure.burst.more` over the stream,
cycling it, to give the calls the burst makes).
"""

from __future__ import annotations

from collections.abc import Sequence

from aitune_fp.core.laws.law import Law, implies
from aitune_fp.core.measure.burst import Burst, more, sample, settling


def burst_calls(burst: Burst, times_ms: Sequence[float]) -> tuple[float, ...]:
    """The calls a burst makes on the stream ``times_ms`` (cycled), as :func:`more` decides.

    >>> burst_calls(Burst(min_ms=2.5, min_calls=1), (1.0,))
    (1.0, 1.0, 1.0)
    """
    if not times_ms:
        raise ValueError("burst_calls needs at least one time to cycle")
    made: list[float] = []
    while more(burst, len(made), sum(made)):
        made.append(times_ms[len(made) % len(times_ms)])
    return tuple(made)


def _bounds(burst: Burst, times_ms: Sequence[float]) -> bool:
    """At least ``min_calls`` and at most ``max_calls`` calls; the time floor is met unless
    ``max_calls`` ended it; one call fewer would have been too short."""
    made = burst_calls(burst, times_ms)
    n = len(made)
    long_enough = sum(made) >= burst.min_ms or n == burst.max_calls
    shorter = made[:-1]
    needed = more(burst, len(shorter), sum(shorter))
    return burst.min_calls <= n <= burst.max_calls and long_enough and needed


def _within_settled(burst: Burst, times_ms: Sequence[float]) -> bool:
    """The sample lies between the smallest and largest settled call."""
    made = burst_calls(burst, times_ms)
    settled = made[settling(burst, len(made)) :]
    return min(settled) <= sample(burst, made) <= max(settled)


def _settling_is_ignored(burst: Burst, times_ms: Sequence[float]) -> bool:
    """Making the settling calls slower (any factor) leaves the sample as it was."""
    made = burst_calls(burst, times_ms)
    k = settling(burst, len(made))
    slowed = tuple(t * 1000.0 if i < k else t for i, t in enumerate(made))
    return sample(burst, slowed) == sample(burst, made)


def _one_call(_burst: Burst, times_ms: Sequence[float]) -> bool:
    """``Burst()`` makes exactly one call, and that call is its sample."""
    made = burst_calls(Burst(), times_ms)
    return made == (times_ms[0],) and sample(Burst(), made) == times_ms[0]


def _scales(burst: Burst, times_ms: Sequence[float]) -> bool:
    """Twice as slow calls (the same burst length) give twice the sample."""
    made = burst_calls(burst, times_ms)
    doubled = tuple(2.0 * t for t in made)
    return implies(len(made) > 0, sample(burst, doubled) == 2.0 * sample(burst, made))


BURST_LAWS: tuple[Law[[Burst, Sequence[float]]], ...] = (
    Law("burst_bounds", "a burst makes min..max calls and stops as soon as it may", _bounds),
    Law("burst_within_settled", "the sample lies within the settled calls' range", _within_settled),
    Law(
        "burst_settling_ignored",
        "slower settling calls do not move the sample",
        _settling_is_ignored,
    ),
    Law("burst_one_call", "Burst() is one call, whose time is the sample", _one_call),
    Law("burst_scales", "twice as slow calls give twice the sample", _scales),
)
