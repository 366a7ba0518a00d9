"""One row per backend of a stored run: the table users read after tuning.

Rules:
- rows come in run order: the baseline first (when it ran), then every candidate;
- status is ``selected`` for the winner (the baseline when the run fell back to it),
  ``baseline`` for a baseline that was not selected, ``profiled`` for a candidate that was
  measured and lost, ``failed`` (with the stage) for a failure — a strategy's ``measure``
  failure included — and ``not run`` for a backend the strategy never reached;
- figures come from the decision account (:mod:`.account`): the selected row and the
  baseline's row show the account's two figures (the figures the decision used: after
  the final rounds and the verification, at the batch size the decision ended on); any
  other scored candidate shows its own figure and the baseline's from the newest
  measurement holding both; ``source`` says which (sweep, final rounds, verification), and
  the speedup is always the ratio of the row's figure to the baseline's in that measurement
  (``1.00`` for the baseline itself); ``reference`` is that baseline figure when the
  baseline's own row shows another one (a row measured elsewhere than the decision);
- ``peak_memory_mb`` is the backend's measured peak memory in MiB from its profile (shown
  for a candidate a strategy refused too), ``None`` when unknown or never profiled;
- values are formatted with the stored strategy's unit (:mod:`.formats`).
"""

from __future__ import annotations

from dataclasses import dataclass

from aitune_fp.core.record.run_record import BackendOutcome, RunRecord
from aitune_fp.core.records import BackendFailure, BackendProfilingResult, Selection
from aitune_fp.core.report.account import Pair, decision_account, pair_of, participants
from aitune_fp.core.report.decision import decision_lines, provenance_lines
from aitune_fp.core.report.formats import format_metric, format_peak_mb, value_format
from aitune_fp.core.report.sources import Figure

__all__ = [
    "BackendRow",
    "backend_row",
    "backend_rows",
    "decision_lines",
    "format_metric",
    "format_peak_mb",
    "provenance_lines",
    "selected_result",
    "value_format",
]


@dataclass(frozen=True, slots=True)
class BackendRow:
    """One backend as the final table shows it."""

    backend: str
    role: str
    status: str
    metric: float | None
    batch_size: int | None
    speedup: float | None
    reason: str
    peak_memory_mb: float | None = None
    source: str = ""
    reference: Figure | None = None


def _all_failures(record: RunRecord) -> tuple[BackendFailure, ...]:
    if record.selection is not None:
        return record.selection.failures
    return record.error.failures if record.error is not None else ()


def _failure_of(record: RunRecord, outcome: BackendOutcome) -> BackendFailure | None:
    if outcome.failure is not None:
        return outcome.failure
    if outcome is record.baseline:
        return None
    found = [f for f in _all_failures(record) if f.backend == outcome.backend]
    return found[0] if found else None


def selected_result(record: RunRecord, outcome: BackendOutcome) -> BackendProfilingResult | None:
    """The strategy's result for ``outcome`` as the selection recorded it (the baseline's
    own for the baseline); ``None`` when the run selected nothing or never scored it."""
    sel = record.selection
    if sel is None:
        return None
    if outcome is record.baseline:
        return sel.baseline.result if sel.baseline is not None else None
    found = [s.result for s in sel.ranking if s.backend == outcome.backend]
    return found[0] if found else None


def _status(record: RunRecord, outcome: BackendOutcome, failure: BackendFailure | None) -> str:
    if failure is not None:
        return f"failed ({failure.stage})"
    if outcome.profile is None:
        return "not run"
    is_baseline = outcome is record.baseline
    if _is_selected(record.selection, outcome.backend, is_baseline):
        return "selected"
    return "baseline" if is_baseline else "profiled"


def _is_selected(sel: Selection | None, backend: str, is_baseline: bool) -> bool:
    """Whether the selection picked ``backend`` (the baseline only when it fell back)."""
    return sel is not None and sel.fell_back_to_baseline == is_baseline and sel.backend == backend


def shown_pair(record: RunRecord, outcome: BackendOutcome, status: str) -> Pair | None:
    """The figures ``outcome``'s row shows (see the module's rules); ``None`` for none."""
    account, found = decision_account(record), participants(record)
    if account is None or found is None:
        return None
    if status == "selected":
        return Pair(account.selected, account.baseline, account.speedup)
    if outcome is record.baseline:
        base = account.baseline
        return None if base is None else Pair(base, base, 1.0)
    scored = selected_result(record, outcome)
    if scored is None:
        return None
    return pair_of(record, (outcome.backend, scored.selected_batch_size), found[1])


def _reference(record: RunRecord, shown: Pair | None) -> Figure | None:
    """The baseline's figure behind ``shown``'s speedup when the baseline's row shows
    another one (``None`` otherwise)."""
    account = decision_account(record)
    if shown is None or shown.baseline is None or account is None:
        return None
    own = account.selected if account.fell_back else account.baseline  # the baseline's row
    return None if shown.baseline == own else shown.baseline


def backend_row(record: RunRecord, outcome: BackendOutcome) -> BackendRow:
    """The row of one of ``record``'s outcomes."""
    failure = _failure_of(record, outcome)
    status = _status(record, outcome, failure)
    shown = shown_pair(record, outcome, status)
    return BackendRow(
        backend=outcome.backend,
        role="baseline" if outcome is record.baseline else "candidate",
        status=status,
        metric=None if shown is None else shown.figure.value,
        batch_size=None if shown is None else shown.figure.batch_size,
        speedup=None if shown is None else shown.speedup,
        reason="" if failure is None else failure.message,
        peak_memory_mb=None if outcome.profile is None else outcome.profile.peak_memory_mb,
        source="" if shown is None else shown.figure.source,
        reference=_reference(record, shown),
    )


def backend_rows(record: RunRecord) -> tuple[BackendRow, ...]:
    """Every backend of the run as a row, baseline first, then candidates in order.

    >>> from aitune_fp.core.record.run_record import BackendOutcome
    >>> from aitune_fp.core.records import BackendFailure
    >>> bad = BackendOutcome("trt", "tensorrt", "k", {},
    ...                      failure=BackendFailure("trt", "build", "tensorrt is not installed"))
    >>> r = RunRecord("m", "cpu", {}, None, (bad,), None, None, {}, {}, None)
    >>> backend_rows(r)[0].status, backend_rows(r)[0].reason
    ('failed (build)', 'tensorrt is not installed')
    """
    return tuple(backend_row(record, o) for o in record.outcomes)
