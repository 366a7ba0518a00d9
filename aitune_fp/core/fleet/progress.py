"""Progress over a plan's jobs as a pure fold: per target, how many are done, running, failed.

Rules:
- the state starts with every target's job count and nothing started;
- ``started`` moves one job of its target to running; ``finished`` moves it out of running
  into its status: ``complete`` and ``skipped`` count as done, ``failed`` as failed,
  ``interrupted`` as interrupted; a job skipped without starting is simply done;
- counts never go below zero and done + failed + interrupted never exceeds the total.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from aitune_fp.core.fleet.plan import Job


@dataclass(frozen=True, slots=True)
class TargetCounts:
    """One target's jobs: total, done (complete or skipped), running, failed, interrupted."""

    target: str
    total: int
    done: int = 0
    running: int = 0
    failed: int = 0
    interrupted: int = 0

    @property
    def waiting(self) -> int:
        """Jobs not started yet."""
        return self.total - self.done - self.running - self.failed - self.interrupted


@dataclass(frozen=True, slots=True)
class JobEvent:
    """A job started, or finished with a status."""

    kind: Literal["started", "finished"]
    job_id: str
    target: str
    status: str = ""


Progress = tuple[TargetCounts, ...]


def start_progress(jobs: Sequence[Job]) -> Progress:
    """Every target of ``jobs`` with its job count, in first-seen order.

    >>> from aitune_fp.core.fleet.plan import ModelEntry, TargetEntry
    >>> jobs = [Job(ModelEntry(m), TargetEntry("cpu"), "min-latency") for m in ("mlp", "cnn")]
    >>> p = step_progress(start_progress(jobs), JobEvent("started", "mlp/cpu/min-latency", "cpu"))
    >>> p = step_progress(p, JobEvent("finished", "mlp/cpu/min-latency", "cpu", "complete"))
    >>> p[0].done, p[0].running, p[0].waiting
    (1, 0, 1)
    """
    totals: dict[str, int] = {}
    for job in jobs:
        totals[job.target.label] = totals.get(job.target.label, 0) + 1
    return tuple(TargetCounts(t, n) for t, n in totals.items())


def _finish(counts: TargetCounts, status: str) -> TargetCounts:
    running = max(counts.running - 1, 0)
    if counts.running == 0 and counts.waiting == 0:
        return counts
    if status in ("complete", "skipped"):
        return replace(counts, running=running, done=counts.done + 1)
    if status == "failed":
        return replace(counts, running=running, failed=counts.failed + 1)
    return replace(counts, running=running, interrupted=counts.interrupted + 1)


def step_progress(progress: Progress, event: JobEvent) -> Progress:
    """The progress after ``event``."""

    def one(counts: TargetCounts) -> TargetCounts:
        if counts.target != event.target:
            return counts
        if event.kind == "started":
            return replace(counts, running=counts.running + 1) if counts.waiting else counts
        return _finish(counts, event.status)

    return tuple(one(c) for c in progress)


def progress_line(counts: TargetCounts) -> str:
    """``cpu: 3/8 done, 1 running, 0 failed`` (interrupted shown when any).

    >>> progress_line(TargetCounts("cpu", 8, 3, 1, 0))
    'cpu: 3/8 done, 1 running, 0 failed'
    """
    line = f"{counts.target}: {counts.done}/{counts.total} done, {counts.running} running, "
    line += f"{counts.failed} failed"
    return line + (f", {counts.interrupted} interrupted" if counts.interrupted else "")
