"""How the final rounds ended, in one line (pure): on evidence, or on their budget.

Rules: the winner ``W`` is compared with every other participant ``x`` of the judgement
(the strategy's interval of ``W``'s speedup over ``x``, at its confidence, with its
``min_speedup`` as the margin; :func:`~aitune_fp.core.stats.evidence.verdict`):
- ``clear after N rounds: W ...``: no contender is open and every comparison is decided
  (a win beyond the margin or an equivalence within ± the margin);
- ``settled after N rounds: W ...``: no contender is open (none can beat ``W`` beyond the
  margin), but some interval still straddles a margin: ``W`` stays either way, and the
  line does not call that clear;
- ``budget spent (...): undecided between W and x, x s× [low, high] over W``: the round
  or time budget ended the rounds with ``x`` still open; the fold's preference decides.
"""

from __future__ import annotations

from collections.abc import Sequence

from aitune_fp.core.records import BackendProfilingResult
from aitune_fp.core.rounds.rounds_plan import RoundsPlan
from aitune_fp.core.stats.confidence import speedup_interval
from aitune_fp.core.stats.evidence import Verdict, described, verdict
from aitune_fp.core.strategies.confident import metric_kind
from aitune_fp.core.strategy import Strategy

Standing = tuple[tuple[str, float, float, float, Verdict], ...]


def standing(
    strategy: Strategy,
    winner: BackendProfilingResult,
    others: Sequence[tuple[str, BackendProfilingResult]],
) -> Standing:
    """``(x, point, low, high, verdict)`` of the winner's speedup over each other ``x``."""
    rule = strategy.confidence
    if rule is None:
        return ()
    kind = metric_kind(strategy)
    found = []
    for name, result in others:
        ci = speedup_interval(rule, kind, winner, result)
        found.append((name, ci.point, ci.low, ci.high, verdict(ci.low, ci.high, rule.min_speedup)))
    return tuple(found)


def _word(v: Verdict) -> str:
    return {"win": "beyond the margin", "equivalent": "equivalent within it"}.get(v, "undecided")


def settled_line(winner: str, rounds_done: int, found: Standing, margin: float) -> str:
    """The line when no contender is open: ``clear`` only when every comparison is decided.

    >>> settled_line("a", 6, (("eager", 1.08, 1.05, 1.11, "win"),), 0.01)
    'clear after 6 rounds: a 1.080× [1.050, 1.110] over eager (beyond the margin)'
    >>> settled_line("a", 6, (("b", 1.0, 0.995, 1.03, "undecided"),), 0.01)
    'settled after 6 rounds: a; no contender can beat it beyond the 1 % margin: 1.000× [0.995, 1.030] over b (undecided)'
    """  # noqa: E501
    said = ", ".join(f"{described(p, lo, hi)} over {x} ({_word(v)})" for x, p, lo, hi, v in found)
    if all(v in ("win", "equivalent") for *_, v in found):
        return f"clear after {rounds_done} rounds: {winner}" + (f" {said}" if said else "")
    return (
        f"settled after {rounds_done} rounds: {winner}; no contender can beat it beyond the "
        f"{margin * 100:g} % margin: {said}"
    )


def budget_line(
    winner: str,
    still_open: Sequence[str],
    rounds_done: int,
    elapsed_s: float,
    plan: RoundsPlan,
    found: Standing,
) -> str:
    """The line when the budget ends the rounds with contenders still open.

    >>> plan = RoundsPlan(max_rounds=40)
    >>> budget_line("eager", ["a"], 40, 0.5, plan, (("a", 0.96, 0.91, 1.03, "undecided"),))
    'budget spent (40 of 40 rounds, 0.5 s): undecided between eager and a, a 1.042× [0.971, 1.099] over eager'
    """  # noqa: E501
    which = (
        f"{rounds_done} of {plan.max_rounds} rounds, {elapsed_s:.3g} s"
        if rounds_done >= plan.max_rounds
        else f"{elapsed_s:.3g} s of {plan.max_seconds:.3g} s, {rounds_done} rounds"
    )
    by_name = {x: (p, lo, hi) for x, p, lo, hi, _ in found}
    parts = []
    for x in still_open:
        if x in by_name:
            p, lo, hi = by_name[x]
            gain = described(1 / p, 1 / hi, 1 / lo)
            parts.append(f"undecided between {winner} and {x}, {x} {gain} over {winner}")
        else:
            parts.append(f"undecided between {winner} and {x}")
    return f"budget spent ({which}): " + "; ".join(parts)
