"""A candidate job in the worker: the tune's validation around a beating runner, the hooks
that keep the heartbeat's limits and the tune's progress in step with the stages, and the
plain result sent back.

Rules (those of :mod:`.worker` for a candidate job):
- the runner and the eager reference beat the heartbeat on each call, so a hung call is
  stopped by the watchdog, not waited for;
- a stage's start is sent to the tune; the first call of ``validate`` and ``profile`` and
  each new batch size may compile, so they get the build's limit; the heap is settled
  before ``profile``;
- a kept runner's memory level (``footprint``) is taken off the job's, so its peak counts
  the runner once; the peak is the job's profile's ``peak_memory_mb``;
- the result holds plain values only: the runner is closed before it is sent.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aitune_fp.core.records import BackendFailure, Profile
from aitune_fp.effects.backends.base import Built
from aitune_fp.effects.build_request import BuildRequest, Hooks
from aitune_fp.effects.candidate import CandidateRun
from aitune_fp.effects.isolation.beating import BeatingEager, beating, beating_timer
from aitune_fp.effects.isolation.heartbeat import Heartbeat
from aitune_fp.effects.isolation.protocol import outcome_values
from aitune_fp.effects.measure.profiler import BatchReport, call_timer


@dataclass(frozen=True, slots=True)
class CandidateResult:
    """What a candidate job sends back: plain values only."""

    profile: Profile | None
    failure: BackendFailure | None
    stage_seconds: dict[str, float]
    validation: dict[str, float]
    artifact: Path | None
    info: dict[str, Any]


def settle_heap() -> None:
    """One full garbage collection, before a backend is timed.

    A worker forks from a server whose heap is frozen (:mod:`.frozen_heap`), so its
    collector counts as long-lived only what the worker itself kept: after a build (a
    compile leaves some 100k objects) the threshold for a full collection is soon met, and
    that pass (tens of ms, walking all the build left) fell in the sweep's timed calls,
    where the tune process (half a million long-lived objects, collected before its
    rounds) and a user's process never pay it (``benchmarks/sweep_gap.py``)."""
    gc.collect()


def beating_check(request: BuildRequest, name: str, beat: Heartbeat, built: Built) -> Any:
    """The tune's validation of ``built`` with the runner and eager beating ``beat``."""
    from aitune_fp.effects.checks.validate import ValidationReport, validate

    guarded = dataclasses.replace(built, runner=beating(built.runner, beat))
    eager = BeatingEager(request.module, beat)
    checked = validate(
        name,
        guarded,
        eager,
        request.samples,
        request.device,
        batch_sizes=request.validation_sizes,
        tolerance=request.tolerance,
    )
    return checked.map(ValidationReport.as_dict)


@dataclass
class StageHooks:
    """The job's hooks: its stages and batch sizes to the tune (``send``) and the
    heartbeat's limits (module rules); ``watch`` reads the job's memory."""

    send: Any
    beat: Heartbeat
    sizes: tuple[int, ...]
    watch: Any
    kept: bool

    def on_stage(self, stage: str) -> None:
        """A stage begins: settle, set the heartbeat's limit, tell the tune, read memory."""
        if stage == "profile":
            settle_heap()
        self.beat.batch_size = self.sizes[0] if stage == "profile" and self.sizes else 0
        self.beat.may_compile = stage in ("validate", "profile")
        self.send(("stage", stage))
        if stage != "build" or not self.kept:
            self.watch.on_stage(stage)

    def on_batch(self, report: BatchReport) -> None:
        """A batch size is done: the next one's first call may compile."""
        later = [b for b in self.sizes if b > report.batch_size]
        self.beat.batch_size = later[0] if later else report.batch_size
        self.beat.may_compile = True
        self.send(("batch", report))

    def hooks(self, request: BuildRequest) -> Hooks:
        """These hooks with a timer that beats before each timed call."""
        timer = beating_timer(call_timer(request.device, request.settings), self.beat)
        return Hooks(self.on_stage, self.on_batch, timer)


def result_of(run: CandidateRun, watch: Any) -> Any:
    """The plain result of ``run`` (its runner closed), a profile's peak read from
    ``watch``."""
    profile, failure = outcome_values(run.outcome)
    peak = watch.peak_mb() if profile is not None else None
    if profile is not None and peak is not None:
        profile = dataclasses.replace(profile, peak_memory_mb=peak)
    built = run.built
    info = dict(built.info) if built is not None else {}
    artifact = built.artifact if built is not None else None
    if built is not None:
        with contextlib.suppress(Exception):
            built.close()
    stages, validation = dict(run.stage_seconds), dict(run.validation)
    return CandidateResult(profile, failure, stages, validation, artifact, info)
