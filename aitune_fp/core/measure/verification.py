"""Prove the pick: the winner re-measured against its runner-ups, paired, and judged.

After selection the winner and its runner-ups are timed again in interleaved rounds (the
same built runners, each at the batch size it was selected at, warmed to steady state);
this module decides, from those paired samples alone, whether the decision holds.

Rules:
- the *challengers* are the selection's closest other scored backends and, under a
  throughput metric, the winner at its sweep's neighbouring batch sizes (who takes part,
  and for how long: :mod:`aitune_fp.core.measure.verification_plan`);
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
- the winner at another batch size (same backend, same artifact) *moves* the pick when,
  with enough rounds and no overturn, its speedup point lies below ``1 / (1 + margin)``:
  no runtime changes, so no significance is asked of it. The sweep's choice among batch
  sizes was itself made on a few calls each; the paired rounds of settled bursts are the
  better estimate, and the margin keeps exact ties;
- the decision holds when no challenger overturns or moves it; otherwise the verified pick
  is the overturning (else moving) challenger with the lowest speedup point;
  the reported ``challenger`` is that one, or, when the pick holds, the closest challenger
  (lowest point); a pick is a backend *at a batch size* (``selected`` and
  ``selected_batch_size``), so the winner at a neighbouring batch size can overturn it;
- :func:`verified` gives the selection that results: unchanged when it holds, else the
  challenger's (its scored result, the baseline's fallback flag when it is the baseline;
  for the winner at another batch size, the strategy's result at that batch size,
  :func:`~aitune_fp.core.measure.verification_plan.at_batch_size`, passed in as ``alternatives``),
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

from aitune_fp.core.records import BackendProfilingResult, Scored, Selection
from aitune_fp.core.stats.bootstrap import ratio_interval

MIN_ROUNDS = 6
MARGIN = 0.01
CONFIDENCE = 0.95
RESAMPLES = 1000
SEED = 16


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


def scored(selection: Selection) -> tuple[Scored, ...]:
    """Every scored backend of the selection: the baseline (when any), then the ranking."""
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
    enough = rounds >= min_rounds
    losing = [c for c in found if c.overturns] if enough else []
    own = [c for c in found if c.challenger == winner.backend]
    moving = [c for c in own if c.speedup < 1.0 / (1.0 + margin)] if enough else []
    changed = losing or moving
    decisive = min(changed, key=lambda c: c.speedup) if changed else closest
    selected = decisive.challenger if changed else winner.backend
    selected_size = decisive.batch_size if changed else winner.batch_size
    how = "overturned" if losing else "moved" if moving else ""
    reason = _line(winner, decisive, how, rounds, seconds, min_rounds)
    return Verification(
        holds=not changed,
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
    winner: Paired, c: Comparison, how: str, rounds: int, seconds: float, min_rounds: int
) -> str:
    """The one line the run prints about its verification (``how``: ``overturned``,
    ``moved`` or ``""``)."""
    ci = f"{c.speedup:.3f}× [{c.ci95[0]:.3f}, {c.ci95[1]:.3f}], 95 %"
    head = f"verification ({rounds} paired rounds, {seconds:.1f} s)"
    same = c.challenger == winner.backend
    instead = f"batch size {c.batch_size}" if same else c.challenger
    if how == "overturned":
        return (
            f"{head}: the pick does not hold: {c.challenger} at batch size {c.batch_size} is "
            f"faster than {winner.backend} at batch size {winner.batch_size} ({winner.backend}"
            f"'s speedup over it {ci}); selected {instead} instead"
        )
    if how == "moved":
        return (
            f"{head}: the pick moves to batch size {c.batch_size}: {c.challenger} measured "
            f"faster there than at batch size {winner.batch_size} (speedup of the pick over "
            f"it {ci}; a paired estimate beyond the margin, the backend stays)"
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
    chosen = next(s for s in scored(selection) if s.backend == verification.selected)
    is_base = selection.baseline is not None and selection.baseline.backend == chosen.backend
    return replace(
        selection,
        backend=chosen.backend,
        result=chosen.result,
        fell_back_to_baseline=is_base,
        notes=notes,
    )
