"""One row per backend of a stored run: the table users read after tuning.

Rules:
- rows come in run order: the baseline first (when it ran), then every candidate;
- status is ``selected`` for the winner (the baseline when the run fell back to it),
  ``baseline`` for a baseline that was not selected, ``profiled`` for a candidate that was
  measured and lost, ``failed`` (with the stage) for a failure — a strategy's ``measure``
  failure included — and ``not run`` for a backend the strategy never reached;
- metric and batch size are the strategy's own, from the selection; the speedup is the
  strategy's speedup over the baseline (``1.00`` for the baseline itself);
- ``peak_memory_mb`` is the backend's measured peak memory in MiB from its profile (shown
  for a candidate a strategy refused too), ``None`` when unknown or never profiled;
- values are formatted with the stored strategy's unit; nothing here computes a new metric.
"""

from __future__ import annotations

from dataclasses import dataclass

from aitune_fp.core.record.run_record import BackendOutcome, RunRecord
from aitune_fp.core.records import BackendFailure, BackendProfilingResult


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


def value_format(record: RunRecord) -> str:
    """The format spec for the run's metric: ``.3f`` for ms, ``.2f`` otherwise.

    >>> value_format(RunRecord("m", "cpu", {"metric_unit": "ms"}, None, (), None, None,
    ...                        {}, {}, None))
    '.3f'
    """
    stored = record.strategy.get("value_fmt")
    if isinstance(stored, str):
        return stored
    return ".3f" if record.strategy.get("metric_unit") == "ms" else ".2f"


def format_metric(record: RunRecord, value: float | None) -> str:
    """``value`` with the run's unit (``12.34 samples/s``), or ``—`` for no value."""
    if value is None:
        return "—"
    unit = record.strategy.get("metric_unit", "")
    return f"{format(value, value_format(record))} {unit}".rstrip()


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


def _speedup(record: RunRecord, outcome: BackendOutcome) -> float | None:
    sel = record.selection
    if sel is None or sel.baseline is None:
        return None
    if outcome is record.baseline:
        return 1.0
    found = [p.speedup for p in sel.perf_results if p.backend_description == outcome.backend]
    return found[0] if found else None


def _status(record: RunRecord, outcome: BackendOutcome, failure: BackendFailure | None) -> str:
    if failure is not None:
        return f"failed ({failure.stage})"
    if outcome.profile is None:
        return "not run"
    sel = record.selection
    is_baseline = outcome is record.baseline
    if (
        sel is not None
        and sel.fell_back_to_baseline == is_baseline
        and (sel.backend == outcome.backend)
    ):
        return "selected"
    return "baseline" if is_baseline else "profiled"


def format_peak_mb(value: float | None) -> str:
    """A peak-memory cell: MiB with one decimal, ``—`` when unknown.

    >>> format_peak_mb(812.44), format_peak_mb(None)
    ('812.4', '—')
    """
    return "—" if value is None else f"{value:.1f}"


def backend_row(record: RunRecord, outcome: BackendOutcome) -> BackendRow:
    """The row of one of ``record``'s outcomes."""
    failure = _failure_of(record, outcome)
    scored = selected_result(record, outcome)
    return BackendRow(
        backend=outcome.backend,
        role="baseline" if outcome is record.baseline else "candidate",
        status=_status(record, outcome, failure),
        metric=None if scored is None else scored.metric,
        batch_size=None if scored is None else scored.selected_batch_size,
        speedup=_speedup(record, outcome),
        reason="" if failure is None else failure.message,
        peak_memory_mb=None if outcome.profile is None else outcome.profile.peak_memory_mb,
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


def decision_lines(record: RunRecord) -> tuple[str, ...]:
    """The decision in words: selected backend and metric, speedup, fallback, or the error.

    >>> r = RunRecord("m", "cpu", {}, None, (), None, None, {}, {}, None)
    >>> decision_lines(r)
    ('No selection was recorded.',)
    """
    sel = record.selection
    if sel is None:
        if record.error is not None:
            return (f"Tuning failed: {record.error.message}",)
        return ("No selection was recorded.",)
    label = record.strategy.get("metric_label", "metric")
    r = sel.result
    lines = [
        f"Selected {sel.backend} (batch size {r.selected_batch_size}): "
        f"{label} {format_metric(record, r.metric)}"
    ]
    if sel.baseline is not None:
        winner = _speedup_of_winner(record)
        ratio = f" ({winner:.2f}×)" if winner is not None else ""
        lines.append(
            f"Speedup: {format_metric(record, sel.baseline.result.metric)} → "
            f"{format_metric(record, r.metric)}{ratio}"
        )
    if sel.fell_back_to_baseline:
        lines.append(f"The baseline {sel.backend} was selected: no candidate was strictly better")
    return (*lines, *sel.notes, *provenance_lines(record))


def provenance_lines(record: RunRecord) -> tuple[str, ...]:
    """Where the baseline came from, when it was not measured in this run or a reuse was
    refused (never silent: ``--reuse-baseline``).

    >>> from aitune_fp.core.record.provenance import Provenance
    >>> r = RunRecord("m", "cpu", {}, None, (), None, None, {}, {}, None,
    ...               provenance=Provenance(baseline_reused_from="old/run.json"))
    >>> provenance_lines(r)
    ('The eager baseline was reused from old/run.json (same model, inputs, plan and environment).',)
    """
    origin = record.provenance
    if origin.baseline_reused_from is not None:
        return (
            f"The eager baseline was reused from {origin.baseline_reused_from} "
            "(same model, inputs, plan and environment).",
        )
    if origin.baseline_refused is not None:
        return (origin.baseline_refused,)
    return ()


def _speedup_of_winner(record: RunRecord) -> float | None:
    sel = record.selection
    if sel is None:
        return None
    if sel.fell_back_to_baseline:
        return 1.0
    found = [p.speedup for p in sel.perf_results if p.backend_description == sel.backend]
    return found[0] if found else None
