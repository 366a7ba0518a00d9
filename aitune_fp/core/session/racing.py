"""Racing: measure every candidate briefly, drop the clearly beaten, widen the contenders.

A pure rule in the style of :mod:`aitune_fp.core.measure.stop_rules`:
``step(state, observation) -> (state, Decision)``.

Rules:
- an observation is one candidate's timed calls at one batch size; a candidate's cost is
  its per-row cost (milliseconds per row, lower is better) at its best batch size so far,
  each batch size's cost the median of its calls;
- the *leader* is the candidate with the lowest cost (ties: the first name in order);
- every other contender is compared with the leader by the rule every move uses
  (:func:`~aitune_fp.core.stats.evidence.verdict`): the interval of its speedup over the
  leader at their best batch sizes, from the order-statistic intervals of the two medians
  (:func:`~aitune_fp.core.stats.order_interval.median_rank`, each at ``sqrt(confidence)``
  so both hold together at ``confidence``: ``[leader low / its high, leader high / its
  low]``); a ``loss`` beyond ``margin`` drops it, with its evidence kept in ``dropped``
  (a :class:`RaceLoss`: the speedup, its interval, the leader and its batch size, the
  margin);
- a candidate is compared only once it was measured at every batch size the leader was
  (a size it has not reached yet may be where it wins), and one with fewer than
  ``min_calls`` calls at a batch size is never dropped on it;
  a dropped candidate never comes back; the decision stops the race (``stop``) once one
  contender is left;
- :func:`widen`: the ladder's sizes a contender was not measured at (``()``: none; always
  ``()`` for a dropped one or one in ``widened``: a contender is widened once): a
  contender ends measured where the full sweep would have measured it, so the race can
  only cost what its drops cost.

>>> s = RaceState(margin=0.01)
>>> s, d = step(s, Observed("a", 1, (1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0, 1.0)))
>>> s, d = step(s, Observed("b", 1, (2.0, 2.02, 1.98, 2.0, 2.01, 1.99, 2.0, 2.0)))
>>> d.stop, s.leader, s.dropped["b"].reason[:40]
(True, 'a', 'dropped in the race: 0.500× [0.485, 0.51')
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from statistics import median

from pyrsistent import PMap, pmap

from aitune_fp.core.measure.stop_rules import CONTINUE, Decision
from aitune_fp.core.stats.evidence import described, verdict
from aitune_fp.core.stats.order_interval import median_rank

Calls = tuple[float, ...]


@dataclass(frozen=True, slots=True)
class Observed:
    """One candidate's timed calls (milliseconds per call) at one batch size."""

    name: str
    batch_size: int
    calls_ms: Calls


@dataclass(frozen=True, slots=True)
class RaceLoss:
    """Why the race dropped a candidate: its speedup over ``against`` (the leader, at
    ``batch_size``) is ``point`` with the interval ``[low, high]``, a loss beyond
    ``margin``."""

    point: float
    low: float
    high: float
    against: str
    batch_size: int
    margin: float

    @property
    def reason(self) -> str:
        """The reason as the log and the record say it.

        >>> RaceLoss(0.5, 0.4, 0.6, "a", 8, 0.01).reason
        'dropped in the race: 0.500× [0.400, 0.600] against a@8 (beyond the 1% margin)'
        """
        shown = described(self.point, self.low, self.high)
        return (
            f"dropped in the race: {shown} against {self.against}@{self.batch_size} "
            f"(beyond the {self.margin:.0%} margin)"
        )


@dataclass(frozen=True, slots=True)
class RaceState:
    """The calls seen per candidate and batch size, and who was dropped and why."""

    margin: float = 0.01
    confidence: float = 0.95
    min_calls: int = 5
    seen: PMap[str, PMap[int, Calls]] = field(default_factory=pmap)
    dropped: PMap[str, RaceLoss] = field(default_factory=pmap)
    order: tuple[str, ...] = ()
    widened: frozenset[str] = frozenset()

    @property
    def contenders(self) -> tuple[str, ...]:
        """The candidates seen and not dropped, in the order they were first seen."""
        return tuple(n for n in self.order if n not in self.dropped)

    @property
    def leader(self) -> str | None:
        """The contender with the lowest per-row cost (``None``: none yet)."""
        costs = [(best_cost(self, n)[0], i, n) for i, n in enumerate(self.contenders)]
        return min(costs)[2] if costs else None


def best_cost(state: RaceState, name: str) -> tuple[float, int]:
    """``name``'s lowest per-row cost (median of the calls / batch size) and its batch size."""
    sizes = state.seen[name]
    return min((median(sizes[b]) / b, b) for b in sizes)


def _bounds(calls: Calls, batch_size: int, confidence: float) -> tuple[float, float]:
    """The order-statistic interval of the median call, per row."""
    ordered = sorted(calls)
    k = median_rank(len(ordered), confidence)
    return ordered[k - 1] / batch_size, ordered[len(ordered) - k] / batch_size


def _interval(state: RaceState, name: str, leader: str) -> tuple[float, float, int] | None:
    """``name``'s speedup interval over ``leader`` and the leader's batch size (``None``:
    not comparable yet: a size of the leader's it lacks, or too few calls)."""
    if not set(state.seen[leader]) <= set(state.seen[name]):
        return None
    (_, bn), (_, bl) = best_cost(state, name), best_cost(state, leader)
    mine, theirs = state.seen[name][bn], state.seen[leader][bl]
    if min(len(mine), len(theirs)) < state.min_calls:
        return None
    low_n, high_n = _bounds(mine, bn, math.sqrt(state.confidence))
    low_l, high_l = _bounds(theirs, bl, math.sqrt(state.confidence))
    return low_l / high_n, high_l / low_n, bl


def _loss(state: RaceState, name: str, leader: str) -> RaceLoss | None:
    """Why ``name`` is clearly beaten by ``leader`` (``None``: it is not)."""
    found = _interval(state, name, leader)
    if found is None or verdict(found[0], found[1], state.margin) != "loss":
        return None
    low, high, bl = found
    point = best_cost(state, leader)[0] / best_cost(state, name)[0]
    return RaceLoss(point, low, high, leader, bl, state.margin)


def _seen(state: RaceState, x: Observed) -> RaceState:
    """``state`` with ``x``'s calls (replacing any earlier ones at that batch size)."""
    sizes = state.seen.get(x.name, pmap())
    order = state.order if x.name in state.seen else (*state.order, x.name)
    return replace(
        state, seen=state.seen.set(x.name, sizes.set(x.batch_size, x.calls_ms)), order=order
    )


def step(state: RaceState, x: Observed) -> tuple[RaceState, Decision]:
    """Take one observation; drop who is clearly beaten; stop once one contender is left."""
    if x.name in state.dropped:
        return state, CONTINUE
    state = _seen(state, x)
    leader = state.leader
    losses = {
        n: why for n in state.contenders if n != leader and (why := _loss(state, n, str(leader)))
    }
    state = replace(state, dropped=state.dropped.update(losses))
    if len(state.contenders) == 1 and len(state.seen) > 1:
        return state, Decision(True, f"{leader} is the only contender left")
    return state, CONTINUE


def widen(state: RaceState, name: str, ladder: Sequence[int]) -> tuple[int, ...]:
    """The batch sizes on ``ladder`` to measure ``name`` at next: every one it lacks.

    >>> s = RaceState(seen=pmap({"a": pmap({1: (4.0,), 4: (6.0,), 16: (8.0,)})}), order=("a",))
    >>> widen(s, "a", (1, 2, 4, 8, 16)), widen(replace(s, widened=frozenset("a")), "a", (2,))
    ((2, 8), ())
    """
    sizes = state.seen.get(name, pmap())
    if name in state.dropped or name in state.widened or not sizes:
        return ()
    return tuple(b for b in sorted(ladder) if b not in sizes)
