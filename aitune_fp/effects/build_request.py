"""What every candidate of one tune is built, checked and profiled with, as one value.

Rules: a :class:`BuildRequest` is fixed once per tune (the module, its samples, the device,
the batch sizes swept and validated, the artifact cache, the profiling plan and settings,
the tolerances); a :class:`Candidate` is what differs per candidate (its backend, name,
folder and the early-stop rule with the best so far). A job sent to a worker is the pair
of them, so the same inputs never travel as a list of positional parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from returns.io import IOResult

from aitune_fp.core.measure.early_stop import EarlyStop
from aitune_fp.core.records import BackendFailure
from aitune_fp.core.strategy import ProfilingPlan
from aitune_fp.effects.backends.base import Backend, Built
from aitune_fp.effects.checks.validate import Tolerance, ValidationReport, validate
from aitune_fp.effects.inputs.samples import Samples
from aitune_fp.effects.measure.batch_timing import BatchReport
from aitune_fp.effects.measure.timing import ProfileSettings, Timer


@dataclass(frozen=True, slots=True)
class BuildRequest:
    """The tune's fixed inputs to every candidate's build → validate → profile.

    ``validation_sizes`` are the batch sizes validation checks (and the artifact cache's
    entries keep eager's outputs at); ``cache_dir`` ``None`` builds without the cache.
    """

    module: torch.nn.Module
    samples: Samples
    device: torch.device
    plan: ProfilingPlan
    batch_sizes: tuple[int, ...]
    validation_sizes: tuple[int, ...] = ()
    cache_dir: Path | None = None
    settings: ProfileSettings = field(default_factory=ProfileSettings)
    tolerance: Tolerance = field(default_factory=Tolerance)


@dataclass(frozen=True, slots=True)
class Candidate:
    """What differs per candidate: its backend, its name in the run, its folder, and the
    early-stop rule with the best seen so far (``None``: every batch size in full)."""

    backend: Backend
    name: str
    work_dir: Path
    early_stop: EarlyStop | None = None


def _nothing(_: object) -> None:
    return None


@dataclass(frozen=True, slots=True)
class Hooks:
    """Who hears a candidate's progress: each stage as it starts, each batch size's report,
    and the timer of profiled calls (``None``: the profiler's own)."""

    on_stage: Callable[[str], None] = _nothing
    on_batch: Callable[[BatchReport], None] = _nothing
    timer: Timer | None = None


def validation_check(
    request: BuildRequest, name: str
) -> Callable[[Built], IOResult[dict[str, float], BackendFailure]]:
    """Candidate ``name``'s validation as one function of its runner: :func:`~aitune_fp.
    effects.checks.validate.validate` against ``request``'s module and samples, at its
    validation sizes with its tolerance, the report as a dict (the one check every way of
    running a candidate uses: in this process, isolated, or isolated's fallback here)."""

    def check(built: Built) -> IOResult[dict[str, float], BackendFailure]:
        return validate(
            name,
            built,
            request.module,
            request.samples,
            request.device,
            batch_sizes=request.validation_sizes,
            tolerance=request.tolerance,
        ).map(ValidationReport.as_dict)

    return check
