"""When the sweep and the verification disagree: the line that says so (pure).

The sweep times each backend alone (in its own worker), the verification times the pick
against its rivals in paired rounds in the tune process; on a busy machine the two can
disagree about the same pair. A report then says so once, and which measurement the pick
rests on.

Rules:
- the *pairs* are the verified pick (``selected`` at ``selected_batch_size``) against
  every participant it was compared with (its ``standing`` when the verification moved
  it, else the ``comparisons``), the baseline included when it took part; a
  verification with too few rounds to judge has none (nothing rests on it);
- a pair's *earlier ratio* is the pick's speedup over the other in the newest earlier
  measurement holding both (the final rounds, else the sweep), in the strategy's
  direction (:func:`~aitune_fp.core.report.account.speedup_of`); a metric that round
  samples cannot give (no kind) has none, nor has a pair missing there;
- a pair *disagrees beyond noise* when its earlier ratio lies outside the verification's
  95 % interval of the pick over the other (the rule of :func:`~aitune_fp.core.report.
  rival.noise`);
- :func:`gap_line` names every such pair (``skip``: those a ``Why not`` line already
  explains) with both figures, and ends with what the pick rests on: the verification
  (it moved the pick, or it held it: either way its paired rounds are the last word);
  ``None`` when no pair disagrees beyond noise or nothing was verified.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.core.report.account import Participant, speedup_of
from aitune_fp.core.report.sources import ROUNDS, SWEEP, figure, judged, metric_kind
from aitune_fp.core.verification.verification_records import Comparison


@dataclass(frozen=True, slots=True)
class Gap:
    """One pair's earlier ratio (from ``source``) against the verification's comparison."""

    pick: Participant
    other: Participant
    source: str
    earlier: float
    verified: Comparison

    @property
    def beyond_noise(self) -> bool:
        """The earlier ratio lies outside the verification's 95 % interval."""
        low, high = self.verified.ci95
        return not low <= self.earlier <= high


def _earlier(record: RunRecord, pick: Participant, other: Participant) -> tuple[str, float] | None:
    """The newest earlier measurement holding both, and the pick's ratio over the other."""
    for source in (ROUNDS, SWEEP):
        mine, theirs = figure(record, *pick, source), figure(record, *other, source)
        if mine is not None and theirs is not None:
            ratio = speedup_of(record, mine, theirs)
            return None if ratio is None else (source, ratio)
    return None


def gaps(record: RunRecord) -> tuple[Gap, ...]:
    """Every pair of the verified pick with its earlier ratio (see the module's rules).

    >>> gaps(RunRecord("m", "cpu", {}, None, (), None, None, {}, {}, None))
    ()
    """
    v = record.verification
    if v is None or not judged(v) or metric_kind(record) is None:
        return ()
    pick = (v.selected, v.selected_batch_size)
    found = []
    for c in v.standing or v.comparisons:
        other = (c.challenger, c.batch_size)
        earlier = _earlier(record, pick, other)
        if earlier is not None and other != pick:
            found.append(Gap(pick, other, earlier[0], earlier[1], c))
    return tuple(found)


def _at(who: Participant) -> str:
    return f"{who[0]}@{who[1]}"


def _pair_text(gap: Gap) -> str:
    c = gap.verified
    return (
        f"{_at(gap.pick)} over {_at(gap.other)}: {gap.earlier:.3f}× in the {gap.source}, "
        f"{c.speedup:.3f}× [{c.ci95[0]:.3f}, {c.ci95[1]:.3f}] in the verification"
    )


def gap_line(record: RunRecord, skip: Collection[Participant] = ()) -> str | None:
    """``The sweep and the verification disagree beyond noise on …; the pick rests on the
    verification …`` (see the module's rules), or ``None``."""
    shown = [g for g in gaps(record) if g.beyond_noise and g.other not in skip]
    v = record.verification
    if not shown or v is None:
        return None
    sources = ", ".join(f"the {s}" for s in sorted({g.source for g in shown}, reverse=True))
    how = "moved it" if not v.holds else "held it"
    return (
        f"{sources.capitalize()} and the verification disagree beyond noise on "
        f"{'; '.join(_pair_text(g) for g in shown)}. The pick rests on the verification "
        f"({v.rounds} paired rounds in the tune process, which {how}); figures measured "
        "in the verification are the ones shown where both took part."
    )
