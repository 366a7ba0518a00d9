"""One account of a run's decision: the figures every report shows for the selection (pure).

The table, the decision lines, the Markdown report and the plot take every figure they
show for the selection from :func:`decision_account`, and every other backend's from
:func:`pair_of`, so they cannot disagree.

Rules:
- the *selected* participant is the selection's backend at the selection's batch size
  (after the final rounds and the verification: where the decision ended), the
  *baseline* the baseline at the batch size the strategy selected for it;
- a candidate and the baseline are shown from one measurement: the newest of the
  verification, the final rounds and the sweep (:mod:`.sources`) in which both took part,
  so the speedup is the ratio of the two figures shown, in the strategy's direction
  (``metric / baseline`` for a throughput, ``baseline / metric`` for a latency); a metric
  of another kind is shown from the sweep with the strategy's own recorded speedup;
- the baseline selected at its own batch size is its own reference: one figure, 1.00×;
- a speedup below 1 for a selected candidate comes with ``why``: either the measurement
  that moved the pick did not time the baseline (both figures are then an older
  measurement's; the line gives the chain of paired ratios the pick rests on), or the
  strategy judged the pair by another statistic than this ratio;
- no selection, no account (``None``).
"""

from __future__ import annotations

from dataclasses import dataclass

from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.core.report.formats import format_speedup
from aitune_fp.core.report.sources import SOURCES, SWEEP, VERIFICATION, Figure, figure, metric_kind

Participant = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Pair:
    """A backend's figure and the baseline's from the same measurement, and the speedup
    (``None`` without a baseline or a way to compute it)."""

    figure: Figure
    baseline: Figure | None = None
    speedup: float | None = None


@dataclass(frozen=True, slots=True)
class DecisionAccount:
    """What the decision rests on: the selected figure, the baseline's, the speedup, the
    fallback flag, and ``why`` a speedup below 1 is shown (``None``: nothing to explain).

    >>> f = Figure("ort", 8, 120.0, "final rounds", 6)
    >>> DecisionAccount(f, Figure("eager", 4, 100.0, "final rounds", 6), 1.2, False).source
    'final rounds'
    """

    selected: Figure
    baseline: Figure | None
    speedup: float | None
    fell_back: bool
    why: str | None = None

    @property
    def source(self) -> str:
        """Where the selected figure (and the baseline's, when any) was measured."""
        return self.selected.source


def latest(record: RunRecord, who: Participant) -> Figure | None:
    """The newest figure of ``who`` in any source."""
    found = (figure(record, *who, source) for source in reversed(SOURCES))
    return next((f for f in found if f is not None), None)


def _recorded_speedup(record: RunRecord, backend: str) -> float | None:
    sel = record.selection
    found = (
        []
        if sel is None
        else [p.speedup for p in sel.perf_results if p.backend_description == backend]
    )
    return found[0] if found else None


def speedup_of(record: RunRecord, shown: Figure, base: Figure) -> float | None:
    """``shown``'s speedup over ``base`` in the strategy's direction (see the rules).

    >>> r = RunRecord("m", "cpu", {"metric_label": "latency", "metric_unit": "ms"}, None,
    ...               (), None, None, {}, {}, None)
    >>> speedup_of(r, Figure("a", 1, 2.0, "sweep"), Figure("eager", 1, 3.0, "sweep"))
    1.5
    """
    if (shown.backend, shown.batch_size) == (base.backend, base.batch_size):
        return 1.0
    kind = metric_kind(record)
    if kind == "throughput":
        return shown.value / base.value
    if kind == "latency":
        return base.value / shown.value
    return _recorded_speedup(record, shown.backend) if shown.source == SWEEP else None


def pair_of(record: RunRecord, who: Participant, base: Participant | None) -> Pair | None:
    """``who``'s figure and the baseline's from the newest measurement holding both (or
    ``who``'s newest alone without a baseline); ``None`` when ``who`` has no figure."""
    if base is None or base == who:
        alone = latest(record, who)
        if alone is None:
            return None
        return Pair(alone) if base is None else Pair(alone, alone, 1.0)
    for source in reversed(SOURCES):
        mine, theirs = figure(record, *who, source), figure(record, *base, source)
        if mine is not None and theirs is not None:
            return Pair(mine, theirs, speedup_of(record, mine, theirs))
    alone = latest(record, who)
    return None if alone is None else Pair(alone)


def participants(record: RunRecord) -> tuple[Participant, Participant | None] | None:
    """The selected participant and the baseline's (``None`` without a selection)."""
    sel = record.selection
    if sel is None:
        return None
    base = sel.baseline
    return (
        (sel.backend, sel.result.selected_batch_size),
        None if base is None else (base.backend, base.result.selected_batch_size),
    )


def _moved_by_verification(record: RunRecord, mine: Figure, base: Figure) -> str:
    """Why below 1.00× when the verification moved the pick without timing the baseline."""
    return (
        f"Why below 1.00×: {base.at} was not timed in the verification that moved the pick "
        f"to {mine.at}, so both figures are the {mine.source}'s; the pick rests on the "
        f"verification's paired rounds{_chain(record, mine, base)} (its line below)."
    )


def _why(record: RunRecord, pair: Pair) -> str | None:
    """Why a selected candidate is shown slower than the baseline (``None``: it is not)."""
    base, speedup = pair.baseline, pair.speedup
    if base is None or speedup is None or speedup >= 1.0:
        return None
    mine = pair.figure
    v = record.verification
    if v is not None and not v.holds and mine.source != VERIFICATION:
        return _moved_by_verification(record, mine, base)
    return (
        f"Why below 1.00×: {mine.at} measured slower than {base.at} in the {mine.source} by "
        f"the ratio of these two figures; the strategy {record.strategy.get('strategy', '')} "
        "judged the pair by its own rule, not by this ratio (a confident strategy by the "
        "paired per-round ratios of the final rounds; see its rule and the notes)."
    )


def _chain(record: RunRecord, mine: Figure, base: Figure) -> str:
    """``, which chain to …``: the pick's speedup over the baseline through the pick before
    the verification (its figures against the baseline's, then the verification's of the
    new pick against it), or ``""`` when a link is missing."""
    v = record.verification
    if v is None:
        return ""
    before = (v.winner, v.winner_batch_size)
    first = pair_of(record, before, (base.backend, base.batch_size))
    now, then = (
        figure(record, mine.backend, mine.batch_size, VERIFICATION),
        figure(record, *before, VERIFICATION),
    )
    if first is None or first.speedup is None or now is None or then is None:
        return ""
    second = speedup_of(record, now, then)
    if second is None:
        return ""
    return (
        f", which chain to {format_speedup(first.speedup * second)} over {base.at} "
        f"({format_speedup(first.speedup)} for {then.at} over it in the {first.figure.source}, "
        f"then {format_speedup(second)} for {now.at} over {then.at} in the verification)"
    )


def decision_account(record: RunRecord) -> DecisionAccount | None:
    """The account of ``record``'s decision, or ``None`` when nothing was selected.

    >>> from aitune_fp.core.records import BackendProfilingResult, Scored, Selection
    >>> res = BackendProfilingResult(200.0, 8, 40.0, 200.0)
    >>> base = Scored("eager", BackendProfilingResult(100.0, 4, 40.0, 100.0))
    >>> r = RunRecord("m", "cpu", {"metric_label": "throughput", "metric_unit": "samples/s"},
    ...               None, (), Selection("ort", res, False, baseline=base), None, {}, {}, None)
    >>> a = decision_account(r)
    >>> a.selected.at, a.baseline.at, a.speedup, a.source
    ('ort@8', 'eager@4', 2.0, 'sweep')
    """
    found = participants(record)
    sel = record.selection
    if found is None or sel is None:
        return None
    who, base = found
    pair = pair_of(record, who, base)
    if pair is None:
        return None
    return DecisionAccount(
        pair.figure, pair.baseline, pair.speedup, sel.fell_back_to_baseline, _why(record, pair)
    )
