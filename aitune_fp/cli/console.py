"""What the command line shows: live progress while tuning, then the final table.

Rules:
- progress goes to stderr, tables and decisions to stdout, so ``aitune-fp … > out.txt``
  keeps the results;
- on a terminal, progress is a rich display (a bar over backends and a line for the
  current backend's stage and batch size); elsewhere (pipes, CI logs) it is one plain line
  per event worth keeping (plan, each backend's result, the selection);
- the final table has one row per backend, with the columns of
  :data:`~aitune_fp.core.report.columns.COLUMNS` (backend, status, metric, batch size,
  speedup, where the figures were measured, peak memory in MiB, accuracy: precision and
  error figures against eager, whether it is on the speed/accuracy front, why it
  failed), then the decision lines, the winner's precision line and the front's line;
  every figure shown for the selection comes from the decision account.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from aitune_fp.core.accuracy.reach import left_out_line
from aitune_fp.core.record.max_batch import max_batch_line
from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.core.report.accuracy import precision_line
from aitune_fp.core.report.columns import COLUMNS, headers, table_cells
from aitune_fp.core.report.decision import decision_lines
from aitune_fp.core.report.pareto import front_line
from aitune_fp.core.report.stages import wall_summary
from aitune_fp.shell.progress import ProgressEvent

STATUS_STYLES = {"selected": "bold green", "baseline": "cyan", "profiled": "", "not run": "dim"}


def results_table(record: RunRecord) -> Table:
    """The final table of ``record``: one row per backend, baseline first."""
    title = record.strategy.get("title", record.strategy.get("strategy", ""))
    table = Table(title=f"{record.model} on {record.device} — {title}", title_justify="left")
    for column in COLUMNS:
        table.add_column(column.header, justify=column.justify)
    status_at = headers().index("status")
    for row, cells in table_cells(record):
        style = "red" if row.status.startswith("failed") else STATUS_STYLES.get(row.status, "")
        shown = [escape(cell) for cell in cells]
        shown[status_at] = f"[{style}]{row.status}[/]" if style else row.status
        table.add_row(*shown)
    return table


def show_run(console: Console, record: RunRecord) -> None:
    """Print the table, the decision lines of ``record``, why its max batch size is what
    it is, and what the plan left out as not native on the machine."""
    console.print(results_table(record))
    why = max_batch_line(record.max_batch_size, record.max_batch_search)
    left = left_out_line(record.left_out)
    precision, front = precision_line(record), front_line(record)
    wall = wall_summary(record)
    for line in (*decision_lines(record), *(x for x in (why, left, precision, front, wall) if x)):
        console.print(line, markup=False, highlight=False, soft_wrap=True)


class ProgressView:
    """A progress sink for one tuning run; use it as a context manager around the run."""

    def __init__(self, console: Console, title: str) -> None:
        self.console = console
        self.title = title
        self.live = console.is_terminal
        self.progress: Progress | None = None
        self.overall: TaskID | None = None
        self.current: TaskID | None = None

    def __enter__(self) -> ProgressView:
        if self.live:
            self.progress = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self.progress.start()
            self.overall = self.progress.add_task(self.title, total=None)
            self.current = self.progress.add_task("", total=None)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self.progress is not None:
            self.progress.stop()

    def __call__(self, event: ProgressEvent) -> None:
        """Show one event."""
        if self.progress is not None:
            self._update(self.progress, event)
        else:
            self._line(event)

    def _update(self, progress: Progress, event: ProgressEvent) -> None:
        assert self.overall is not None and self.current is not None
        if event.total:
            progress.update(self.overall, total=event.total, completed=event.done)
        text = _describe(event)
        if event.kind == "backend_done":
            progress.update(self.overall, completed=event.done)
            progress.console.print(f"  {text}", markup=False, highlight=False, soft_wrap=True)
        elif event.kind == "plan":
            progress.console.print(f"{self.title}: {event.message}", markup=False)
        elif event.kind != "selected":
            progress.update(self.current, description=text)

    def _line(self, event: ProgressEvent) -> None:
        if event.kind == "plan":
            self.console.print(
                f"{self.title}: {event.message}", markup=False, highlight=False, soft_wrap=True
            )
        elif event.kind == "backend_done":
            self.console.print(
                f"  {_describe(event)}", markup=False, highlight=False, soft_wrap=True
            )


def _describe(event: ProgressEvent) -> str:
    """One short line for an event."""
    parts: list[Any] = [event.backend or ""]
    if event.kind == "backend_start":
        parts.append("starting")
    if event.stage:
        parts.append(event.stage)
    if event.batch_size is not None:
        parts.append(f"batch size {event.batch_size}")
    if event.message:
        parts.append(event.message)
    return " · ".join(str(p) for p in parts if p)
