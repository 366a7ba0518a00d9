"""Prove the pick: the winner re-measured against its runner-ups, paired, and judged.

After selection the winner and its runner-ups are timed again in interleaved rounds (the
same built runners, each at the batch size it was selected at, warmed to steady state);
this module decides, from those paired samples alone, whether the decision holds.

Rules:
- the *challengers* are the selection's closest other scored backends and, under a
  throughput metric, the winner at its sweep's neighbouring batch sizes (who takes part,
  and for how long: :mod:`aitune_fp.core.verification.verification_plan`);
- a round's *cost* is its latency in ms for a latency metric and its latency per sample
  (ms / batch size) for a throughput metric (or a metric without a kind), so backends at
  different batch sizes compare on what the strategy maximises;
- the winner's *speedup* over a challenger is the median over rounds of the per-round
  ratio ``cost_challenger / cost_winner`` (a paired estimate: drift common to a round
  cancels), with its exact, distribution-free 95 % interval (order statistics of the
  per-round ratios: :mod:`aitune_fp.core.stats.order_interval`; a bootstrap's is far too
  narrow on a few rounds and called false equivalences);
- each comparison's verdict is the interval's against the margin
  (:func:`~aitune_fp.core.stats.evidence.verdict`): a *win* for the pick (whole interval
  above ``1 + margin``), a *loss* (whole interval below ``1 / (1 + margin)``: the
  challenger is faster beyond the margin with 95 % confidence), *equivalent* (wholly within
  ± the margin) or *undecided*. The same rule holds for another backend and for the winner
  at another batch size: no move on a point estimate;
- with fewer than ``min_rounds`` paired rounds nothing is judged: the pick holds and the
  reason says so;
- the pick *moves* to a challenger that beats it (a loss for the pick), and is then judged
  again against every other participant from the same interleaved rounds, moving again
  while one beats it and the original pick (:func:`tournament`: the strongest beater
  first, each participant picked at most once; the challengers are taken in name order,
  so the verification does not depend on the order they are listed in);
  an equivalence or an undecided comparison never moves it: the earlier pick keeps it;
- the verified pick's standing (:func:`outcome_of`) is ``clear`` when every comparison is
  a win or an equivalence, ``settled`` when no challenger can still beat it beyond the
  margin (every interval's lower end at or above ``1 / (1 + margin)``), ``leaning`` when a
  challenger's point already lies beyond the margin but its interval does not (more rounds
  may move the pick: the timing's budget is extended for it), else ``undecided``; "clear"
  is never said of an interval that straddles a margin;
- the reported ``challenger`` is the one the pick moved to, or, when it holds, the one
  still open with the lowest interval end, else the closest (lowest point); a pick is a
  backend *at a batch size* (``selected`` and ``selected_batch_size``);
- :func:`verified` gives the selection that results: unchanged when it holds, else the
  challenger's (its scored result, the baseline's fallback flag when it is the baseline;
  for the winner at another batch size, the strategy's result at that batch size,
  :func:`~aitune_fp.core.verification.verification_plan.at_batch_size`, passed in as
  ``alternatives``),
  with the verification's line appended to the notes either way (never a silent change).

>>> w = Paired("a", 1, (1.0, 1.02, 0.98) * 10)
>>> c = Paired("b", 1, (1.2, 1.22, 1.18) * 10)
>>> v = judge(w, (c,), "latency", seconds=2.0)
>>> v.holds, v.challenger, round(v.speedup, 2), v.selected, v.outcome
(True, 'b', 1.2, 'a', 'clear')
>>> judge(c, (w,), "latency", seconds=2.0).selected
'a'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from pyrsistent import pmap

from aitune_fp.core.records import BackendProfilingResult, Scored, Selection
from aitune_fp.core.stats.evidence import verdict
from aitune_fp.core.stats.order_interval import median_ratio_interval
from aitune_fp.core.verification.verification_lines import Said, line
from aitune_fp.core.verification.verification_records import (
    Comparison,
    Found,
    Paired,
    Verification,
    costs,
)

__all__ = [
    "Comparison",
    "Paired",
    "Verification",
    "compare",
    "costs",
    "judge",
    "outcome_of",
    "scored",
    "tournament",
    "verified",
]

MIN_ROUNDS = 6
MARGIN = 0.01
CONFIDENCE = 0.95


def scored(selection: Selection) -> tuple[Scored, ...]:
    """Every scored backend of the selection: the baseline (when any), then the ranking."""
    base = (selection.baseline,) if selection.baseline is not None else ()
    return (*base, *selection.ranking)


def compare(winner: Paired, other: Paired, kind: str, margin: float = MARGIN) -> Comparison:
    """The winner's paired speedup over ``other`` with its 95 % interval, and the verdict."""
    ci = median_ratio_interval(costs(other, kind), costs(winner, kind), CONFIDENCE)
    said = verdict(ci.low, ci.high, margin)
    return Comparison(
        other.backend, other.batch_size, ci.point, (ci.low, ci.high), said == "loss", said
    )


def _standing(pick: Paired, everyone: Sequence[Paired], kind: str, margin: float) -> Found:
    """The pick's comparisons with every other participant."""
    return tuple(compare(pick, o, kind, margin) for o in everyone if o.key != pick.key)


def tournament(everyone: Sequence[Paired], kind: str, margin: float = MARGIN) -> Paired:
    """The pick after the moves: from ``everyone[0]`` (the original pick), move to the
    participant that beats the current pick beyond the margin with 95 % confidence, and
    the original pick too (the strongest such, by speedup point then name), until none
    does; a participant is picked at most once. The result does not depend on the order of
    ``everyone[1:]``."""
    first = everyone[0]
    pick, seen = first, {first.key}
    for _ in everyone:
        beaters = [
            (c.speedup, o.key, o)
            for o in everyone
            if o.key not in seen
            for c in (compare(pick, o, kind, margin),)
            if c.verdict == "loss"
            and (pick is first or compare(first, o, kind, margin).verdict == "loss")
        ]
        if not beaters:
            break
        pick = min(beaters, key=lambda t: (t[0], t[1]))[2]
        seen.add(pick.key)
    return pick


def outcome_of(standing: Found, margin: float = MARGIN) -> str:
    """How the pick stands (see the module's rules): ``clear``, ``settled``, ``leaning``
    (a challenger's point is beyond the margin, its interval not yet) or ``undecided``.

    >>> c = lambda p, lo, hi: Comparison("b", 1, p, (lo, hi), False, verdict(lo, hi, 0.01))
    >>> outcome_of((c(1.08, 1.05, 1.11),)), outcome_of((c(1.04, 0.995, 1.1),))
    ('clear', 'settled')
    >>> outcome_of((c(0.97, 0.92, 1.01),)), outcome_of((c(1.0, 0.97, 1.03),))
    ('leaning', 'undecided')
    """
    if all(c.verdict in ("win", "equivalent") for c in standing):
        return "clear"
    floor = 1.0 / (1.0 + margin)
    if all(c.ci95[0] >= floor for c in standing):
        return "settled"
    if any(c.speedup < floor for c in standing if c.verdict != "win"):
        return "leaning"
    return "undecided"


def judge(
    winner: Paired,
    others: Sequence[Paired],
    kind: str,
    *,
    seconds: float,
    margin: float = MARGIN,
    min_rounds: int = MIN_ROUNDS,
    budget: tuple[float, float] | None = None,
) -> Verification:
    """Judge the pick from the paired samples (see the module's rules).

    ``others`` must be non-empty; samples are aligned by round from the first round;
    ``budget``, the seconds asked and the most the timing could extend to, is named when
    the budget ran out.
    """
    if not others:
        raise ValueError("a verification needs at least one challenger")
    rounds = min(len(p.samples_ms) for p in (winner, *others))
    if rounds < 1:
        raise ValueError("a verification needs at least one paired round")
    ordered = (winner, *sorted(others, key=lambda p: (p.key, p.batch_size)))
    everyone = [replace(p, samples_ms=p.samples_ms[:rounds]) for p in ordered]
    w = everyone[0]
    found = tuple(compare(w, o, kind, margin) for o in everyone[1:])
    enough = rounds >= min_rounds
    pick = tournament(everyone, kind, margin) if enough else w
    moved = pick.key != w.key
    standing = _standing(pick, everyone, kind, margin) if moved else found
    outcome = outcome_of(standing, margin) if enough else "too few rounds"
    if moved:
        decisive = next(c for c in found if (c.challenger, c.batch_size) == _at(pick))
    else:
        decisive = min(found, key=_deciding)
    said = Said(w, pick, decisive, standing, outcome, rounds, seconds, margin, min_rounds, budget)
    return Verification(
        holds=not moved,
        winner=w.backend,
        challenger=decisive.challenger,
        speedup=decisive.speedup,
        ci95=decisive.ci95,
        seconds=seconds,
        winner_batch_size=w.batch_size,
        challenger_batch_size=decisive.batch_size,
        rounds=rounds,
        selected=pick.backend,
        metric=kind,
        comparisons=found,
        reason=line(said),
        samples_ms={p.key: p.samples_ms for p in everyone},
        selected_batch_size=pick.batch_size,
        outcome=outcome,
        standing=standing if moved else (),
    )


def _at(p: Paired) -> tuple[str, int]:
    return p.backend, p.batch_size


def _deciding(c: Comparison) -> tuple[int, float, str, int]:
    """The comparison a held pick is reported by: one still open (lowest interval end)
    first, else the closest (lowest point); ties by name, never by list order."""
    still = c.verdict not in ("win", "equivalent")
    return (0 if still else 1, c.ci95[0] if still else c.speedup, c.challenger, c.batch_size)


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
