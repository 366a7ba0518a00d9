"""Where and how one backend of a run is built: its folder in the run's workspace, in a
worker (isolated) or in this process (both with the early stop the session gives
them), and a finished backend shown from its record row
(see :mod:`aitune_fp.shell.drive` for the rules)."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from pathlib import Path

from returns.io import IOSuccess

from aitune_fp.core.measure.early_stop import EarlyStop
from aitune_fp.core.record.run_record import BackendOutcome
from aitune_fp.core.records import BackendFailure
from aitune_fp.core.stats.statistics import mean
from aitune_fp.effects.backends.base import Backend
from aitune_fp.effects.build_request import Candidate, Hooks, validation_check
from aitune_fp.effects.candidate import CandidateRun, run_candidate
from aitune_fp.effects.isolation import isolated_candidate
from aitune_fp.effects.measure.memory import MemoryWatch
from aitune_fp.effects.measure.profiler import BatchReport
from aitune_fp.shell.setup import Setup

log = logging.getLogger("aitune_fp")


def work_dir(setup: Setup, backend: Backend, name: str) -> Path:
    """The backend's folder in the run's workspace (without one: under the cache folder)."""
    if setup.workspace is not None:
        folder: Path = setup.workspace.backend_dir(name)
        return folder
    if setup.request.cache_dir is None:
        raise ValueError("a run without a workspace needs a cache folder for its builds")
    return setup.request.cache_dir / f"{backend.name}-{backend.key()}"


def _batch_events(setup: Setup, done: int, name: str) -> Callable[[BatchReport], None]:
    """One ``batch_size`` progress event per measured batch size."""

    def on_batch(report: BatchReport) -> None:
        text = f"{mean(report.samples):.3f} ms/call over {len(report.samples)} calls"
        if report.stopped_early:
            text += " (stopped early: a clear loser there)"
        setup.emit(
            "batch_size", name, done, stage="profile", batch_size=report.batch_size, message=text
        )

    return on_batch


def _candidate(setup: Setup, backend: Backend, name: str, early: EarlyStop | None) -> Candidate:
    return Candidate(backend, name, work_dir(setup, backend, name), early)


def in_process(
    setup: Setup, done: int, backend: Backend, name: str, early: EarlyStop | None = None
) -> CandidateRun:
    """The candidate in this process, its peak memory attached."""
    request = setup.request
    watch = MemoryWatch(setup.request.device)
    check = validation_check(request, name)

    def on_stage(stage: str) -> None:
        setup.emit("stage", name, done, stage=stage)
        watch.on_stage(stage)

    hooks = Hooks(on_stage, _batch_events(setup, done, name))
    run = run_candidate(request, _candidate(setup, backend, name, early), check, hooks)
    return with_peak_memory(run, watch.peak_mb())


def isolated(
    setup: Setup, done: int, backend: Backend, name: str, early: EarlyStop | None = None
) -> CandidateRun:
    """The candidate in a worker (its peak memory is measured there)."""
    hooks = Hooks(
        lambda stage: setup.emit("stage", name, done, stage=stage), _batch_events(setup, done, name)
    )
    return isolated_candidate(
        setup.request, _candidate(setup, backend, name, early), hooks, setup.timeouts
    )


def with_peak_memory(run: CandidateRun, peak_mb: float | None) -> CandidateRun:
    """``run`` with ``peak_mb`` attached to its profile (unchanged when it has none)."""
    if peak_mb is None or not isinstance(run.outcome, IOSuccess):
        return run
    log.info("%s peak memory: %.1f MiB", run.name, peak_mb)
    profile = run.outcome.map(lambda p: dataclasses.replace(p, peak_memory_mb=peak_mb))
    return dataclasses.replace(run, outcome=profile)


def log_outcome(setup: Setup, done: int, row: BackendOutcome) -> None:
    """One log line and one ``backend_done`` event for a finished backend, from its row
    of the record (its figure named as the sweep's: the report may rest on a later
    measurement)."""
    if row.profile is None:
        failure = row.failure or BackendFailure(row.backend, "build", "no profile")
        log.warning("%s", failure.describe())
        setup.emit("backend_done", row.backend, done, message=f"failed: {failure.describe()}")
        return
    measured = setup.strategy.measure(row.profile)
    text = measured.map(lambda r: setup.strategy.fmt(r.metric)).value_or("no metric")
    log.info("%s validated %s; profiled: %s", row.backend, dict(row.validation), text)
    setup.emit("backend_done", row.backend, done, message=f"ok: {text} (sweep)")
