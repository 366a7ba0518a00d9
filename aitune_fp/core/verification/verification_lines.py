"""The verification's one line (pure): how the pick stands, and on which intervals.

Rules: the line starts with the rounds and seconds, then says which way it ended:
- ``clear:`` every comparison of the verified pick is decided (a win or an equivalence);
- ``settled:`` no challenger can beat the pick beyond the margin, some comparison is not
  decided (an interval reaching above the margin band: the pick stays either way);
- ``budget spent:`` some challenger could still win: ``undecided between`` the pick and
  it, with its speedup over the pick; the pick stays;
- a move names the old and the new pick and the new pick's speedup over the old one
  (``the pick eager@16 does not hold: aot@32 is faster, 1.042× [...] over eager@16``),
  then its standing against every other participant;
- each participant is named with its batch size (``eager@16 holds against
  aot_inductor@32: 1.080× [1.050, 1.110]``); each interval is the pick's 95 % paired
  interval over the other, unless said otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

from aitune_fp.core.stats.evidence import described
from aitune_fp.core.verification.verification_records import Comparison, Found, Paired


@dataclass(frozen=True, slots=True)
class Said:
    """What the line is made from: the original and verified picks, the deciding
    comparison (the original winner's), the verified pick's standing and outcome."""

    winner: Paired
    pick: Paired
    decisive: Comparison
    standing: Found
    outcome: str
    rounds: int
    seconds: float
    margin: float
    min_rounds: int
    budget: tuple[float, float] | None = None


def at(c: Comparison) -> str:
    """``backend@batch`` of a comparison's challenger."""
    return f"{c.challenger}@{c.batch_size}"


def of(p: Paired) -> str:
    """``backend@batch`` of a participant."""
    return f"{p.backend}@{p.batch_size}"


def _word(c: Comparison, margin: float) -> str:
    pct = f"{margin * 100:g} %"
    return {
        "win": f"faster beyond the {pct} margin",
        "equivalent": f"equivalent within ±{pct}",
        "loss": f"slower beyond the {pct} margin",
    }.get(c.verdict, "undecided")


def _over(c: Comparison, margin: float) -> str:
    return f"against {at(c)}: {described(c.speedup, *c.ci95)} ({_word(c, margin)})"


def _undecided(pick: str, standing: Found, margin: float) -> str:
    floor = 1.0 / (1.0 + margin)
    still = sorted((c for c in standing if c.ci95[0] < floor), key=lambda c: c.ci95[0])
    return "; ".join(
        f"undecided between {pick} and {at(c)}, {at(c)} "
        f"{described(1.0 / c.speedup, 1.0 / c.ci95[1], 1.0 / c.ci95[0])} over {pick}"
        for c in still
    )


def line(s: Said) -> str:
    """The verification's line (see the module's rules).

    >>> from aitune_fp.core.stats.evidence import verdict
    >>> w, b = Paired("eager", 16, (1.0,)), Paired("aot", 32, (1.0,))
    >>> c = Comparison("aot", 32, 1.08, (1.05, 1.11), False, verdict(1.05, 1.11, 0.01))
    >>> line(Said(w, w, c, (c,), "clear", 12, 1.5, 0.01, 6))
    'verification (12 paired rounds, 1.5 s): clear: eager@16 holds against aot@32: 1.080× [1.050, 1.110] (faster beyond the 1 % margin)'
    >>> u = Comparison("aot", 32, 0.96, (0.91, 1.03), False, "undecided")
    >>> line(Said(w, w, u, (u,), "leaning", 30, 9.0, 0.01, 6, (3.0, 9.0)))
    'verification (30 paired rounds, 9.0 s): budget spent (3.0 s asked, up to 9.0 s while a challenger leans beyond it): undecided between eager@16 and aot@32, aot@32 1.042× [0.971, 1.099] over eager@16; eager@16 stays'
    """  # noqa: E501
    head = f"verification ({s.rounds} paired rounds, {s.seconds:.1f} s)"
    pick, old = of(s.pick), of(s.winner)
    if s.outcome == "too few rounds":
        return f"{head}: too few rounds to judge (< {s.min_rounds}); the pick {old} stays"
    moved = s.pick.key != s.winner.key
    if moved:
        d = s.decisive
        gain = described(1.0 / d.speedup, 1.0 / d.ci95[1], 1.0 / d.ci95[0])
        others = "; ".join(_over(c, s.margin) for c in s.standing if at(c) != old)
        body = (
            f"the pick {old} does not hold: {pick} is faster, {gain} over {old} (beyond the "
            f"{s.margin * 100:g} % margin); selected {pick} instead"
            + (f"; {others}" if others else "")
        )
    else:
        body = "; ".join(_over(c, s.margin) for c in s.standing)
    if s.outcome == "clear":
        return f"{head}: clear: {body}" if moved else f"{head}: clear: {pick} holds {body}"
    if s.outcome == "settled":
        body = body if moved else f"{pick} stays; {body}"
        return f"{head}: settled (no challenger can beat the pick beyond the margin): {body}"
    limit = ""
    if s.budget is not None:
        asked, bound = s.budget
        limit = f" ({asked:.1f} s asked, up to {bound:.1f} s while a challenger leans beyond it)"
    still = _undecided(pick, s.standing, s.margin)
    body = f"{body}; {still}" if moved else f"{still}; {pick} stays"
    return f"{head}: budget spent{limit}: {body}"
