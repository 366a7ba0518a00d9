"""The interleaved-rounds loop: each participant timed once per round, in rotating order.

Rules (of :mod:`aitune_fp.effects.measure.rounds`; the pure decisions live in
:mod:`aitune_fp.core.rounds.round_members` and :mod:`aitune_fp.core.rounds.schedule`):
:func:`interleave` warms every participant up, then times rounds in the order of
:func:`~aitune_fp.core.rounds.rounds_plan.rotation`, so drift and noisy neighbours hit every
participant alike; after each round it asks the schedule
(:func:`~aitune_fp.core.rounds.schedule.next_move`) whether to ask the injected judge, which
says whether the decision is clear, or to go on; a participant whose call raises leaves the
rounds with its samples kept as a prefix; on a device a turn is a burst
(:func:`timed_burst`): a rest, settling calls, then timed calls whose median is the sample.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aitune_fp.core.rounds.burst import Burst, sample, settles, times
from aitune_fp.core.rounds.rounds_plan import RoundsPlan, rotation
from aitune_fp.core.rounds.schedule import Pace, Skip, after_round, before_round, judged, next_move
from aitune_fp.core.session.judges import Judging
from aitune_fp.effects.measure.timing import TimedCalls

log = logging.getLogger("aitune_fp")


@dataclass(frozen=True, slots=True)
class Interleaved:
    """What :func:`interleave` timed: each participant's round samples, and how it ended."""

    samples: Mapping[str, tuple[float, ...]]
    rounds: int
    reason: str
    seconds: float


def timed_burst(
    timed: TimedCalls,
    burst: Burst,
    start: int,
    rest: Callable[[float], None] = lambda ms: time.sleep(ms / 1000.0),
) -> tuple[float, int]:
    """One burst of ``timed`` calls (cycled from index ``start``): it rests, settles, then
    times (:mod:`aitune_fp.core.rounds.burst`); its sample in ms, and the index to start
    the next burst at. The phases' lengths count the calls' timed ms.

    >>> ms = iter([5.0, 1.0, 1.0, 2.0])
    >>> timed = TimedCalls([lambda: None] * 3, lambda c: next(ms))
    >>> timed_burst(timed, Burst(settle_calls=1, min_calls=3), 2)
    (1.0, 6)
    """
    if burst.rest_ms > 0.0:
        rest(burst.rest_ms)
    index = _settled(timed, burst, start)
    samples: list[float] = []
    spent = 0.0
    while times(burst, len(samples), spent):
        samples.append(timed.time(index + len(samples)))
        spent += samples[-1]
    return sample(burst, samples), index + len(samples)


def _settled(timed: TimedCalls, burst: Burst, start: int) -> int:
    """Untimed-for-the-sample settling calls from index ``start`` while the burst's
    settling rule asks for more; the index after them."""
    settled, spent = 0, 0.0
    while settles(burst, settled, spent):
        spent, settled = spent + timed.time(start + settled), settled + 1
    return start + settled


def burst_caller(
    calls: Mapping[str, Sequence[Callable[[], Any]]],
    timer: Callable[[Callable[[], Any]], float],
    burst: Burst,
    before: Callable[[], None] | None = None,
) -> Callable[[str, int], float]:
    """:func:`interleave`'s ``call`` on a device: one :func:`timed_burst` of the named
    participant's ``calls`` (filled in by its warm-up), each participant resuming its input
    pool where its previous burst ended."""
    position: dict[str, int] = {}

    def call(name: str, _round_index: int) -> float:
        timed = TimedCalls(calls[name], timer, before)
        ms, position[name] = timed_burst(timed, burst, position.get(name, 0))
        return ms

    return call


def interleave(
    names: Sequence[str],
    warm: Callable[[str], bool],
    call: Callable[[str, int], float],
    judge: Judging,
    plan: RoundsPlan,
    *,
    clock: Callable[[], float] = time.monotonic,
    affordable: Callable[[tuple[str, ...]], bool] = lambda _order: True,
) -> Interleaved:
    """Time ``names`` in interleaved rounds until the judge stops them.

    ``warm(name)`` primes and warms a participant up (``False``: it failed and stays out);
    ``call(name, round_index)`` times one call in ms (raising: the participant leaves);
    ``judge(samples, rounds_done, elapsed, still_timed)`` is the core's verdict; ``clock``
    reads seconds (any monotonic count will do); ``affordable(order)`` may refuse the next
    round before it starts.

    >>> from itertools import count
    >>> from aitune_fp.core.rounds.round_members import RoundsVerdict
    >>> tick = count()
    >>> def judge(samples, done, elapsed, timed):
    ...     return RoundsVerdict(done >= 3, "three rounds" if done >= 3 else "", timed)
    >>> t = interleave(["a", "b"], lambda n: True, lambda n, i: 1.0 + i, judge,
    ...                RoundsPlan(), clock=lambda: float(next(tick)))
    >>> t.samples, t.rounds, t.reason
    ({'a': (1.0, 2.0, 3.0), 'b': (1.0, 2.0, 3.0)}, 3, 'three rounds')
    """
    began = clock()
    timed: dict[str, list[float]] = {name: [] for name in names}
    active = tuple(name for name in names if warm(name))
    pace, reason, judging = Pace(), "no rounds were run", 0.0
    while len(active) >= 2:
        order = rotation(active, pace.done)
        stop = before_round(pace, affordable(order))
        if stop is not None:
            reason = stop.reason
            break
        round_began = clock()
        failed = _one_round(order, call, pace.done, timed)
        now = clock()  # the budget counts measuring (warm-up and round calls), not judging
        pace = after_round(pace, now - began - judging, now - round_began)
        if isinstance(next_move(pace, plan, bool(failed)), Skip):
            continue
        verdict = judge(
            timed, pace.done, pace.measuring, tuple(n for n in active if n not in failed)
        )
        active = tuple(n for n in verdict.active if n not in failed)
        spent = clock() - now
        judging += spent
        pace = judged(pace, plan, spent)
        if verdict.stop:
            reason = verdict.reason
            break
    else:
        reason = f"after {pace.done} rounds fewer than two participants were left"
    return _interleaved(timed, pace.done, reason, clock() - began)


def _one_round(
    order: Sequence[str],
    call: Callable[[str, int], float],
    index: int,
    timed: dict[str, list[float]],
) -> list[str]:
    """Time each of ``order`` once (round ``index``); the names whose call raised."""
    failed = []
    for name in order:
        try:
            timed[name].append(call(name, index))
        except Exception as error:  # a failing backend leaves the rounds
            log.warning("%s failed during the final rounds: %s", name, error)
            failed.append(name)
    return failed


def _interleaved(
    timed: Mapping[str, list[float]], rounds: int, reason: str, seconds: float
) -> Interleaved:
    samples = {name: tuple(values) for name, values in timed.items()}
    return Interleaved(samples, rounds, reason, seconds)
