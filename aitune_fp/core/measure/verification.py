"""Prove the pick: the winner re-measured against its runner-ups, paired, and judged.

After selection the winner and its runner-ups are timed again in interleaved rounds (the
same built runners, each at the batch size it was selected at, warmed to steady state);
this module decides, from those paired samples alone, whether the decision holds.

Rules:
- the *challengers* are the selection's other scored backends (the baseline included),
  ranked by the strategy's speedup over the winner, best first, at most ``limit``
  (:func:`challengers`); under a throughput metric the winner's own neighbouring batch
  sizes in its sweep join them (:func:`batch_neighbours`): on a throughput plateau the
  sweep's few calls per batch size cannot tell its points apart, the paired rounds can.
  A neighbour counts only when the strategy still accepts it measured on its
  verification samples alone (:func:`admits`: a latency budget, say);
- a round's *cost* is its latency in ms for a latency metric and its latency per sample
  (ms / batch size) for a throughput metric (or a metric without a kind), so backends at
  different batch sizes compare on what the strategy maximises;
- the winner's *speedup* over a challenger is the median over rounds of the per-round
  ratio ``cost_challenger / cost_winner`` (a paired estimate: drift common to a round
  cancels), with its 95 % bootstrap interval (``ratio_interval(..., paired=True)``,
  seed fixed: same samples, same interval);
- a challenger *overturns* the pick when the whole interval lies below
  ``1 / (1 + margin)``: it is faster by more than the margin with 95 % confidence; a tie
  or an overlap keeps the pick (verification never switches on noise);
- with fewer than ``min_rounds`` paired rounds nothing is judged: the pick holds and the
  reason says so;
- the decision holds when no challenger overturns it; otherwise the verified pick is the
  overturning challenger with the lowest speedup point (the one the winner loses to most);
  the reported ``challenger`` is that one, or, when the pick holds, the closest challenger
  (lowest point); a pick is a backend *at a batch size* (``selected`` and
  ``selected_batch_size``), so the winner at a neighbouring batch size can overturn it;
- :func:`verified` gives the selection that results: unchanged when it holds, else the
  challenger's (its scored result, the baseline's fallback flag when it is the baseline;
  for the winner at another batch size, the strategy's result at that batch size,
  :func:`at_batch_size`, passed in as ``alternatives``),
  with the verification's line appended to the notes either way (never a silent change).

>>> w = Paired("a", 1, (1.0, 1.02, 0.98) * 10)
>>> c = Paired("b", 1, (1.2, 1.22, 1.18) * 10)
>>> v = judge(w, (c,), "latency", seconds=2.0)
>>> v.holds, v.challenger, round(v.speedup, 2), v.selected
(True, 'b', 1.2, 'a')
>>> judge(c, (w,), "latency", seconds=2.0).selected
'a'
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from pyrsistent import pmap
from returns.result import Success

from aitune_fp.core.measure.rounds import RoundsVerdict
from aitune_fp.core.measure.rounds_plan import RoundsPlan
from aitune_fp.core.records import BackendProfilingResult, Profile, Scored, Selection
from aitune_fp.core.stats.bootstrap import ratio_interval
from aitune_fp.core.strategy import Strategy

MIN_ROUNDS = 6
MARGIN = 0.01
CONFIDENCE = 0.95
RESAMPLES = 1000
SEED = 16
CHALLENGERS = 2
MAX_ROUNDS = 1_000_000


@dataclass(frozen=True, slots=True)
class Paired:
    """One participant's verification samples: ms per call, sample ``i`` timed in round ``i``.

    ``label`` names it in ``samples_ms`` when the backend takes part at more than one batch
    size (``"onnxruntime@64"``); its :attr:`key` is the label, else the backend.
    """

    backend: str
    batch_size: int
    samples_ms: tuple[float, ...]
    label: str = ""

    @property
    def key(self) -> str:
        """The participant's name in the verification's ``samples_ms``."""
        return self.label or self.backend


@dataclass(frozen=True, slots=True)
class Comparison:
    """The winner against one challenger: its speedup, the 95 % interval, and the verdict.

    ``speedup`` > 1: the winner is faster; ``overturns``: the challenger is faster beyond
    the margin with 95 % confidence.
    """

    challenger: str
    batch_size: int
    speedup: float
    ci95: tuple[float, float]
    overturns: bool


@dataclass(frozen=True, slots=True)
class Verification:
    """Whether the pick held when re-measured; the record's top-level ``verification``.

    ``winner`` is the pick that was verified (the original selection), ``selected`` the
    pick after verification (``winner`` when ``holds``); ``challenger``, ``speedup`` and
    ``ci95`` are the deciding comparison (see the module's rules); ``selected_batch_size``
    the batch size of the pick after verification (0 at construction: the winner's when it
    holds, else the challenger's); ``seconds`` the wall
    time the verification took, ``rounds`` its paired rounds; ``comparisons`` every
    challenger's; ``reason`` the one line the run prints; ``samples_ms`` every
    participant's paired samples as judged (ms per call, aligned by round), by backend, so
    a reader can recompute each interval.
    """

    holds: bool
    winner: str
    challenger: str
    speedup: float
    ci95: tuple[float, float]
    seconds: float
    winner_batch_size: int = 1
    challenger_batch_size: int = 1
    rounds: int = 0
    selected: str = ""
    metric: str = "latency"
    comparisons: tuple[Comparison, ...] = ()
    reason: str = ""
    samples_ms: Mapping[str, tuple[float, ...]] = field(default_factory=pmap)
    selected_batch_size: int = 0

    def __post_init__(self) -> None:
        frozen = pmap({k: tuple(map(float, v)) for k, v in self.samples_ms.items()})
        object.__setattr__(self, "samples_ms", frozen)
        low, high = self.ci95
        if not (0.0 < low <= high < math.inf):
            raise ValueError(f"ci95 must be 0 < low <= high < inf, got {self.ci95!r}")
        if not (math.isfinite(self.seconds) and self.seconds >= 0.0):
            raise ValueError(f"seconds must be a finite number >= 0, got {self.seconds!r}")
        if not self.selected:
            object.__setattr__(self, "selected", self.winner)
        if self.selected_batch_size == 0:
            size = self.winner_batch_size if self.holds else self.challenger_batch_size
            object.__setattr__(self, "selected_batch_size", size)
        pick = (self.selected, self.selected_batch_size)
        if self.holds != (pick == (self.winner, self.winner_batch_size)):
            raise ValueError(
                f"holds={self.holds} but selected={self.selected!r} at batch size "
                f"{self.selected_batch_size}, winner={self.winner!r} at batch size "
                f"{self.winner_batch_size}"
            )


def challengers(strategy: Strategy, selection: Selection, limit: int) -> tuple[str, ...]:
    """The runner-ups to verify against: best speedup over the winner first, at most ``limit``.

    >>> from aitune_fp import Profile, min_latency, tune
    >>> from returns.result import Success
    >>> p = lambda n, ms: Success(Profile(n, {1: [ms]}))
    >>> s = tune(min_latency, [p("a", 1.0), p("b", 3.0), p("c", 1.5)], p("eager", 2.0))
    >>> challengers(min_latency, s.unwrap(), 2)
    ('c', 'eager')
    """
    winner = Scored(selection.backend, selection.result)
    return runner_ups(strategy, winner, _scored(selection), limit)


def runner_ups(
    strategy: Strategy, winner: Scored, scored: Sequence[Scored], limit: int
) -> tuple[str, ...]:
    """The ``limit`` backends of ``scored`` (the winner left out) closest to ``winner``:
    by the strategy's speedup over it, best first (the driver keeps their runners alive)."""
    others = [s for s in scored if s.backend != winner.backend]
    ranked = sorted(others, key=lambda s: -strategy.speedup(s.result, winner.result))
    return tuple(s.backend for s in ranked[: max(limit, 0)])


def batch_neighbours(profile: Profile, selected: int) -> tuple[int, ...]:
    """The batch sizes next to ``selected`` in ``profile``'s sweep (below, then above).

    >>> batch_neighbours(Profile("a", {1: [1.0], 2: [1.0], 4: [1.0]}), 2)
    (1, 4)
    >>> batch_neighbours(Profile("a", {1: [1.0], 2: [1.0]}), 2)
    (1,)
    >>> batch_neighbours(Profile("a", {1: [1.0]}), 8)
    ()
    """
    sizes = profile.batch_sizes
    if selected not in sizes:
        return ()
    i = sizes.index(selected)
    return tuple(sizes[j] for j in (i - 1, i + 1) if 0 <= j < len(sizes))


def at_batch_size(
    strategy: Strategy, profile: Profile, batch_size: int
) -> BackendProfilingResult | None:
    """The strategy's result for ``profile`` restricted to ``batch_size`` (``None``: the
    strategy rejects it there, or it was not measured).

    >>> from aitune_fp import max_throughput
    >>> at_batch_size(max_throughput, Profile("a", {1: [1.0], 2: [1.0]}), 1).throughput
    1000.0
    """
    if batch_size not in profile.latencies_ms:
        return None
    only = Profile(
        profile.backend,
        {batch_size: profile.latencies_ms[batch_size]},
        profile.sweep_stop,
        profile.input_mode,
        {k: v for k, v in profile.rounds_ms.items() if k == batch_size},
        profile.peak_memory_mb,
        {k: v for k, v in profile.batches.items() if k == batch_size},
    )
    measured = strategy.measure(only)
    return measured.unwrap() if isinstance(measured, Success) else None


def admits(strategy: Strategy, paired: Paired) -> bool:
    """Whether the strategy accepts ``paired`` measured on its verification samples alone.

    >>> from aitune_fp import latency_budget
    >>> budget = latency_budget(5.0)
    >>> admits(budget, Paired("a", 32, (4.0, 4.2))), admits(budget, Paired("a", 64, (8.0,)))
    (True, False)
    """
    profile = Profile(paired.backend, {paired.batch_size: paired.samples_ms})
    return isinstance(strategy.measure(profile), Success)


def timing_plan(seconds: float) -> RoundsPlan:
    """The interleaved rounds' plan for a verification of ``seconds`` (warm-up included).

    >>> timing_plan(3.0).max_seconds
    3.0
    """
    return RoundsPlan(
        contenders=1,
        min_rounds=2,
        max_rounds=MAX_ROUNDS,
        max_seconds=seconds,
        judge_every=1,
        settled_speedup=None,
        sweep_share=None,
    )


def timing_verdict(
    plan: RoundsPlan, rounds_done: int, elapsed_s: float, active: tuple[str, ...]
) -> RoundsVerdict:
    """Keep timing every participant until the plan's time or round budget is spent.

    >>> timing_verdict(timing_plan(1.0), 5, 0.5, ("a", "b")).stop
    False
    >>> timing_verdict(timing_plan(1.0), 5, 1.0, ("a", "b")).reason
    'verification budget spent: 5 rounds in 1 s'
    """
    if elapsed_s >= plan.max_seconds or rounds_done >= plan.max_rounds:
        reason = f"verification budget spent: {rounds_done} rounds in {elapsed_s:.3g} s"
        return RoundsVerdict(True, reason, active)
    return RoundsVerdict(False, "", active)


def _scored(selection: Selection) -> tuple[Scored, ...]:
    base = (selection.baseline,) if selection.baseline is not None else ()
    return (*base, *selection.ranking)


def costs(p: Paired, kind: str) -> tuple[float, ...]:
    """Per-round cost: ms per call (latency) or ms per sample (throughput).

    >>> costs(Paired("a", 4, (2.0, 4.0)), "throughput"), costs(Paired("a", 4, (2.0,)), "latency")
    ((0.5, 1.0), (2.0,))
    """
    if kind == "latency":
        return p.samples_ms
    return tuple(ms / p.batch_size for ms in p.samples_ms)


def compare(winner: Paired, other: Paired, kind: str, margin: float = MARGIN) -> Comparison:
    """The winner's paired speedup over ``other`` with its 95 % interval, and the verdict."""
    ci = ratio_interval(
        costs(other, kind),
        costs(winner, kind),
        statistic="median",
        confidence=CONFIDENCE,
        resamples=RESAMPLES,
        key=SEED,
        paired=True,
    )
    overturns = ci.high < 1.0 / (1.0 + margin)
    return Comparison(other.backend, other.batch_size, ci.point, (ci.low, ci.high), overturns)


def judge(
    winner: Paired,
    others: Sequence[Paired],
    kind: str,
    *,
    seconds: float,
    margin: float = MARGIN,
    min_rounds: int = MIN_ROUNDS,
) -> Verification:
    """Judge the pick from the paired samples (see the module's rules).

    ``others`` must be non-empty; samples are aligned by round from the first round.
    """
    if not others:
        raise ValueError("a verification needs at least one challenger")
    rounds = min(len(p.samples_ms) for p in (winner, *others))
    if rounds < 1:
        raise ValueError("a verification needs at least one paired round")
    trimmed = [replace(p, samples_ms=p.samples_ms[:rounds]) for p in (winner, *others)]
    found = tuple(compare(trimmed[0], o, kind, margin) for o in trimmed[1:])
    closest = min(found, key=lambda c: c.speedup)
    losing = [c for c in found if c.overturns] if rounds >= min_rounds else []
    decisive = min(losing, key=lambda c: c.speedup) if losing else closest
    selected = decisive.challenger if losing else winner.backend
    selected_size = decisive.batch_size if losing else winner.batch_size
    reason = _line(winner, decisive, bool(losing), rounds, seconds, min_rounds)
    return Verification(
        holds=not losing,
        winner=winner.backend,
        challenger=decisive.challenger,
        speedup=decisive.speedup,
        ci95=decisive.ci95,
        seconds=seconds,
        winner_batch_size=winner.batch_size,
        challenger_batch_size=decisive.batch_size,
        rounds=rounds,
        selected=selected,
        metric=kind,
        comparisons=found,
        reason=reason,
        samples_ms={p.key: p.samples_ms for p in trimmed},
        selected_batch_size=selected_size,
    )


def _line(
    winner: Paired, c: Comparison, overturned: bool, rounds: int, seconds: float, min_rounds: int
) -> str:
    """The one line the run prints about its verification."""
    ci = f"{c.speedup:.3f}× [{c.ci95[0]:.3f}, {c.ci95[1]:.3f}], 95 %"
    head = f"verification ({rounds} paired rounds, {seconds:.1f} s)"
    if overturned:
        return (
            f"{head}: the pick does not hold: {c.challenger} at batch size {c.batch_size} is "
            f"faster than {winner.backend} at batch size {winner.batch_size} ({winner.backend}"
            f"'s speedup over it {ci}); selected {c.challenger} instead"
        )
    if rounds < min_rounds:
        return f"{head}: too few rounds to judge (< {min_rounds}); the pick {winner.backend} stays"
    return f"{head}: {winner.backend} holds against {c.challenger}: {ci}"


def verified(
    selection: Selection,
    verification: Verification,
    alternatives: Mapping[tuple[str, int], BackendProfilingResult | None] = pmap(),
) -> Selection:
    """The selection after verification: the same when it holds, else the challenger's.

    ``alternatives`` holds the winner's results at the neighbouring batch sizes that took
    part (by backend and batch size); the verification's line is appended to the notes
    either way.
    """
    notes = (*selection.notes, verification.reason)
    if verification.holds:
        return replace(selection, notes=notes)
    if verification.selected == selection.backend:  # the winner, at another batch size
        result = alternatives.get((selection.backend, verification.selected_batch_size))
        if result is None:
            raise ValueError(
                f"no result for {selection.backend} at batch size "
                f"{verification.selected_batch_size} among the alternatives"
            )
        return replace(selection, result=result, notes=notes)
    scored = next(s for s in _scored(selection) if s.backend == verification.selected)
    is_base = selection.baseline is not None and selection.baseline.backend == scored.backend
    return replace(
        selection,
        backend=scored.backend,
        result=scored.result,
        fell_back_to_baseline=is_base,
        notes=notes,
    )
