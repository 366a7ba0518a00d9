"""Why a candidate shown faster than the pick was not picked, when the verification moved
the pick (pure).

Rules:
- the line speaks of a rival the sweep (or the final rounds) showed faster than the pick,
  when the verification moved the pick and the moved pick was compared with that rival in
  the verification's paired rounds (its ``standing``); the verification's figure is the
  one the decision rests on, so the line gives it with its 95 % interval;
- the two measurements *disagree beyond noise* when the shown ratio (the pick's speedup
  over the rival's, same measurement) lies outside the verification's interval of the
  pick over the rival; the line says so, or that the shown ratio is within the interval;
- a rival the moved pick was not compared with keeps the generic line
  (:func:`~aitune_fp.core.report.decision.rival_lines`).
"""

from __future__ import annotations

from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.core.report.formats import format_speedup
from aitune_fp.core.report.sources import Figure
from aitune_fp.core.stats.evidence import described
from aitune_fp.core.verification.verification_records import Comparison


def standing_against(record: RunRecord, rival: Figure) -> Comparison | None:
    """The moved pick's paired comparison with ``rival`` (``None``: the verification did
    not move the pick, or did not compare the two)."""
    v = record.verification
    if v is None or v.holds:
        return None
    for c in v.standing:
        if c.challenger == rival.backend and c.batch_size == rival.batch_size:
            return c
    return None


def moved_rival_line(
    record: RunRecord, rival: Figure, mine: Figure, speedups: tuple[float, float]
) -> str | None:
    """``Why not A: the sweep showed it faster …, but the verification …`` (see the
    module's rules), or ``None`` when the rule does not apply.

    ``speedups`` are the rival's and the pick's speedups over the baseline, both from
    ``mine.source``.
    """
    c = standing_against(record, rival)
    v = record.verification
    if c is None or v is None:
        return None
    return (
        f"Why not {rival.at}: the {mine.source} showed it faster than the pick {mine.at} "
        f"({format_speedup(speedups[0])} against {format_speedup(speedups[1])}), but in the "
        f"verification's {v.rounds} paired rounds {mine.at} was "
        f"{described(c.speedup, *c.ci95)} as fast as {rival.at}; "
        f"{noise(mine.source, speedups[1] / speedups[0], c.ci95)}, and the pick "
        "rests on the verification."
    )


def noise(source: str, shown: float, ci95: tuple[float, float]) -> str:
    """Whether ``shown`` (a ratio from ``source``) lies within the verification's interval.

    >>> noise("sweep", 0.875, (1.03, 1.06))[-42:]
    'the two measurements disagree beyond noise'
    """
    if ci95[0] <= shown <= ci95[1]:
        return f"the {source}'s ratio {shown:.3f}× lies within that interval (noise)"
    return (
        f"the {source}'s ratio {shown:.3f}× lies outside that interval: the two "
        "measurements disagree beyond noise"
    )


def verified_speeds(record: RunRecord, speeds: dict[str, float]) -> dict[str, float]:
    """``speeds`` (backend → speedup over the baseline) with every rival the moved pick was
    compared with re-expressed through the verification: the pick's speed divided by the
    pick's paired speedup over the rival, so the front never ranks the two by the sweep
    when the verification measured them against each other (unchanged when the
    verification held or the pick has no speed); the pick's own other batch sizes are not
    rivals (one speed per backend: the pick's is its own)."""
    v, sel = record.verification, record.selection
    if v is None or v.holds or sel is None or sel.backend not in speeds:
        return speeds
    sizes = {s.backend: s.result.selected_batch_size for s in sel.ranking}
    out = dict(speeds)
    for c in v.standing:
        if c.challenger == sel.backend:  # the pick at another batch size: not a rival
            continue
        if c.challenger in out and sizes.get(c.challenger) == c.batch_size and c.speedup > 0:
            out[c.challenger] = speeds[sel.backend] / c.speedup
    return out
