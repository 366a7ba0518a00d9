"""The backends table's columns, shared by the console and the Markdown report (pure).

Rules:
- :data:`COLUMNS` lists every column in order, each a header, an alignment and a cell
  function of the run and the row; the console and the Markdown report draw exactly
  these, so a new column (an accuracy figure, say) is one entry here;
- the accuracy cell of a row on the Pareto front of speed against accuracy drop
  (:mod:`.pareto`) ends with ``· front`` (a dominated row, or one that is not a point,
  has no marker: the line under the decision names who dominates it); a baseline
  without figures, the reference, reads ``reference``;
- a cell is text; a missing value is ``—`` (the reason column leaves a blank instead);
- ``measured in`` names where the row's figures come from (``sweep``, ``final rounds``,
  ``verification``): the metric and the speedup of a row always come from the same one;
  when that is not where the baseline's row was measured, the cell adds the baseline's
  figure there, so the row's speedup can be checked against it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal

from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.core.report.accuracy import ACCURACY_HEADER, accuracy_cell
from aitune_fp.core.report.formats import format_metric, format_peak_mb, format_speedup
from aitune_fp.core.report.pareto import front_cell
from aitune_fp.core.report.tables import BackendRow, backend_rows


@dataclass(frozen=True, slots=True)
class Column:
    """One column: its header, how it is aligned, and how a row's cell is written."""

    header: str
    justify: Literal["left", "right"]
    cell: Callable[[RunRecord, BackendRow], str]


def _backend(_: RunRecord, row: BackendRow) -> str:
    return row.backend + (" (baseline)" if row.role == "baseline" else "")


def _count(value: int | None) -> str:
    return "—" if value is None else str(value)


def _measured_in(record: RunRecord, row: BackendRow) -> str:
    """Where the row was measured, with the baseline's figure there when the baseline's
    row shows another (``sweep, eager@32: 98.66 samples/s``)."""
    ref = row.reference
    if ref is None:
        return row.source or "—"
    return f"{row.source}, {ref.at}: {format_metric(record, ref.value)}"


def _accuracy(record: RunRecord, row: BackendRow) -> str:
    """The row's precision and headline error figures (:mod:`.accuracy`) and its place
    on the speed/accuracy front (:mod:`.pareto`)."""
    outcomes = {o.backend: o for o in record.outcomes}
    cell = accuracy_cell(outcomes.get(row.backend))
    if row.role == "baseline" and cell == "—":
        cell = "reference"
    return f"{cell} · front" if front_cell(record, row) == "front" else cell


COLUMNS: Final = (
    Column("backend", "left", _backend),
    Column("status", "left", lambda _, row: row.status),
    Column("metric", "right", lambda record, row: format_metric(record, row.metric)),
    Column("batch size", "right", lambda _, row: _count(row.batch_size)),
    Column("speedup", "right", lambda _, row: format_speedup(row.speedup)),
    Column("measured in", "left", _measured_in),
    Column("peak MiB", "right", lambda _, row: format_peak_mb(row.peak_memory_mb)),
    Column(ACCURACY_HEADER, "left", _accuracy),
    Column("why it failed", "left", lambda _, row: row.reason),
)


def headers() -> tuple[str, ...]:
    """Every column's header, in order.

    >>> headers()[:3]
    ('backend', 'status', 'metric')
    """
    return tuple(c.header for c in COLUMNS)


def table_cells(record: RunRecord) -> tuple[tuple[BackendRow, tuple[str, ...]], ...]:
    """Every row of the run with its cells, in column order.

    >>> r = RunRecord("m", "cpu", {}, None, (), None, None, {}, {}, None)
    >>> table_cells(r)
    ()
    """
    return tuple((row, tuple(c.cell(record, row) for c in COLUMNS)) for row in backend_rows(record))
