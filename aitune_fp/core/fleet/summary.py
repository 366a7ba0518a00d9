"""The fleet summary as data: one row per job, as JSON and as a Markdown page.

Rules:
- rows follow the index (plan order); a row has the job's model, target, strategy and
  status, and — when its run is readable and selected a backend — the selected backend, its
  metric and its speedup over the baseline, both from the run's decision account
  (:mod:`aitune_fp.core.report.account`: the figures its report shows);
- the speedup has an interval only when the run's strategy decides by confidence
  (``confident:…``) and that interval's point is the speedup shown (the same
  measurement and statistic): the strategy's own rule's bootstrap interval of the winner
  over the baseline; otherwise a point only;
- a failed or interrupted job shows its message; nothing here reads files or draws.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from aitune_fp.core.fleet.index import FleetIndex, JobEntry, statuses
from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.core.records import BackendProfilingResult
from aitune_fp.core.report.account import decision_account
from aitune_fp.core.report.formats import format_metric
from aitune_fp.core.stats.bootstrap import Interval
from aitune_fp.core.stats.confidence import speedup_interval
from aitune_fp.core.strategies.registry import strategy_from_config


@dataclass(frozen=True, slots=True)
class FleetRow:
    """One job in the summary."""

    job: str
    model: str
    target: str
    strategy: str
    status: str
    backend: str | None = None
    metric: str = ""
    speedup: float | None = None
    low: float | None = None
    high: float | None = None
    confidence: float | None = None
    message: str = ""

    @property
    def speedup_text(self) -> str:
        """``1.42×``, ``1.42× [1.38, 1.47] 90 %`` with an interval, ``—`` without a speedup.

        >>> FleetRow("j", "m", "cpu", "s", "complete", speedup=1.5, low=1.25, high=1.75,
        ...          confidence=0.9).speedup_text
        '1.50× [1.25, 1.75] 90 %'
        """
        if self.speedup is None:
            return "—"
        text = f"{self.speedup:.2f}×"
        if self.low is not None and self.high is not None and self.confidence is not None:
            text += f" [{self.low:.2f}, {self.high:.2f}] {self.confidence * 100:g} %"
        return text


def _interval(record: RunRecord, speedup: float | None) -> tuple[float, float, float] | None:
    """The decision's interval, when its point is the speedup shown (``None`` otherwise)."""
    sel = record.selection
    if sel is None or sel.baseline is None or sel.fell_back_to_baseline or speedup is None:
        return None
    interval = _decision_interval(record, sel.result, sel.baseline.result)
    if interval is None or not math.isclose(interval.point, speedup, rel_tol=1e-9):
        return None  # none, or measured elsewhere: the run's report has both
    return interval.low, interval.high, interval.confidence


def _decision_interval(
    record: RunRecord, result: BackendProfilingResult, baseline: BackendProfilingResult
) -> Interval | None:
    """The speedup interval of the run's strategy (``None``: it has no confidence rule,
    or the stored strategy cannot be restored)."""
    try:
        strategy = strategy_from_config(record.strategy)
        kind = strategy.metric.kind
        if strategy.confidence is None or kind is None:
            return None
        return speedup_interval(strategy.confidence, kind, result, baseline)
    except (ValueError, KeyError):
        return None


def fleet_row(entry: JobEntry, record: RunRecord | None) -> FleetRow:
    """The row of one job from its index entry and its run (``None`` when unreadable)."""
    row = FleetRow(
        entry.job, entry.model, entry.target, entry.strategy, entry.status, message=entry.message
    )
    if record is None or record.selection is None:
        if record is not None and record.error is not None and not row.message:
            return FleetRow(**{**asdict(row), "message": record.error.message})
        return row
    account = decision_account(record)
    speedup = None if account is None else account.speedup
    interval = _interval(record, speedup)
    low, high, confidence = interval if interval is not None else (None, None, None)
    return FleetRow(
        **{
            **asdict(row),
            "backend": record.selection.backend,
            "metric": format_metric(record, None if account is None else account.selected.value),
            "speedup": speedup,
            "low": low,
            "high": high,
            "confidence": confidence,
        }
    )


def fleet_rows(index: FleetIndex, records: Mapping[str, RunRecord | None]) -> tuple[FleetRow, ...]:
    """Every job's row, in index order; ``records`` maps job ids to their runs."""
    return tuple(fleet_row(e, records.get(e.job)) for e in index.entries)


def summary_json(index: FleetIndex, rows: Sequence[FleetRow]) -> dict[str, Any]:
    """The summary as a JSON-able dict: status counts and every row."""
    return {
        "executor": index.executor,
        "statuses": dict(statuses(index)),
        "jobs": [asdict(r) for r in rows],
    }


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def summary_markdown(index: FleetIndex, rows: Sequence[FleetRow], plots: Mapping[str, str]) -> str:
    """The summary page: counts, one table of every job, one plot per target (when drawn)."""
    counts = ", ".join(f"{n} {s}" for s, n in statuses(index).items())
    lines = [f"# Fleet summary ({len(rows)} jobs, {index.executor})", "", counts, ""]
    lines += [
        "| model | target | strategy | selected backend | metric | speedup | status | note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [_table_line(r) for r in rows]
    for target in dict.fromkeys(r.target for r in rows):
        plot = f"![speedups on {target}]({plots[target]})" if target in plots else "(no plot)"
        lines += ["", f"## {target}", "", plot]
    return "\n".join(lines) + "\n"


def _table_line(r: FleetRow) -> str:
    """One job's line of the summary table."""
    cells = [
        r.model,
        r.target,
        r.strategy,
        r.backend or "—",
        r.metric or "—",
        r.speedup_text,
        r.status,
        r.message,
    ]
    return "| " + " | ".join(_cell(c) for c in cells) + " |"
