"""The progress of a fleet run: done / running / failed per target.

Rules:
- the counts are the pure fold of :mod:`aitune_fp.core.fleet.progress` over job events;
- on a terminal a live table (one row per target) is redrawn on every event and each
  finished job is printed above it; elsewhere one line per finished job
  (``[3/8] mlp/cpu/min-latency: complete (5.1 s) · cpu: 3/4 done, 0 running, 0 failed``);
- it writes to the console it is given (stderr at the command line);
- "running" is what the executor has started: with Ray, submitted to the cluster (Ray
  queues a task until a node has its resources free).
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table

from aitune_fp.core.fleet.expand import expand
from aitune_fp.core.fleet.index import FleetIndex
from aitune_fp.core.fleet.plan import Plan
from aitune_fp.core.fleet.progress import (
    JobEvent,
    Progress,
    progress_line,
    start_progress,
    step_progress,
)


class FleetProgressView:
    """An event sink for :func:`~aitune_fp.shell.fleet.run_plan.run_plan`; a context manager."""

    def __init__(self, console: Console, plan: Plan) -> None:
        self.console = console
        jobs = expand(plan)
        self.total = len(jobs)
        self.finished = 0
        self.progress: Progress = start_progress(jobs)
        self.live: Live | None = None

    def _table(self) -> Table:
        table = Table(title="fleet", title_justify="left")
        for header in ("target", "done", "running", "failed", "waiting"):
            table.add_column(header, justify="left" if header == "target" else "right")
        for c in self.progress:
            table.add_row(
                c.target, f"{c.done}/{c.total}", str(c.running), str(c.failed), str(c.waiting)
            )
        return table

    def __enter__(self) -> FleetProgressView:
        self.console.print(
            f"fleet: {self.total} jobs on {len(self.progress)} target(s)",
            markup=False,
            highlight=False,
        )
        if self.console.is_terminal:
            self.live = Live(self._table(), console=self.console, transient=True)
            self.live.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self.live is not None:
            self.live.stop()

    def __call__(self, event: JobEvent, index: FleetIndex) -> None:
        """Count ``event`` and show it."""
        self.progress = step_progress(self.progress, event)
        if event.kind == "finished":
            self.finished += 1
            self._print_finished(event, index)
        if self.live is not None:
            self.live.update(self._table())

    def _print_finished(self, event: JobEvent, index: FleetIndex) -> None:
        entry = index.entry(event.job_id)
        seconds = f" ({entry.seconds:.1f} s)" if entry and entry.seconds is not None else ""
        note = f": {entry.message}" if entry and entry.message and event.status == "failed" else ""
        counts = next(c for c in self.progress if c.target == event.target)
        line: Any = (
            f"[{self.finished}/{self.total}] {event.job_id}: {event.status}{seconds}{note}"
            f" · {progress_line(counts)}"
        )
        self.console.print(line, markup=False, highlight=False, soft_wrap=True)
