"""``aitune-fp check``: a saved pick (or a run.json's pick rebuilt on its module) timed again
on this machine and judged against its recorded figures.

Rules (the judging is :mod:`aitune_fp.core.verification.gate`'s):
- the target is a save folder (:func:`~aitune_fp.shell.persist.load`; its ``run.json``
  holds the figures; a recipe needs the module) or a ``run.json`` with the module, whose
  pick is built again from its recorded config on that module;
- the reference is the target's own record, or ``baseline`` (another run's ``run.json``:
  a new build of the model against the last release's figures); the pick is timed at the
  reference's batch size;
- a save folder as ``baseline`` is loaded too (with ``baseline_module`` for a recipe,
  default ``module``), and both picks are timed now in interleaved rounds for
  ``seconds`` (:func:`~aitune_fp.effects.measure.rounds.time_paired`, the verification's
  timing and budget rule), judged paired: no recorded figure is needed, and drift common
  to a round cancels;
- the pick is timed by the profiler (:func:`~aitune_fp.effects.measure.profiler.profile_runner`:
  priming, warm-up to steady state, a rotating input pool) for ``calls`` timed calls on
  the module's samples (or the saved input spec's zeros);
- with the module given the pick is also checked for correctness
  (:func:`~aitune_fp.effects.checks.validate.validate`, its tolerance's accuracy policy):
  a refusal is the result's ``wrong``;
- an unusable target (no record, no pick, a recipe without its module) is a
  :class:`CheckError`, never a verdict.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import torch
from returns.result import Failure

from aitune_fp.core.measure.stop_rules import fixed_steps, never_stop
from aitune_fp.core.record.run_record import RunRecord, loads
from aitune_fp.core.rounds.round_members import RoundsVerdict
from aitune_fp.core.verification.gate import (
    MARGIN,
    CheckResult,
    Figures,
    judge_check,
    recorded_figures,
)
from aitune_fp.core.verification.verification_plan import timing_plan, timing_verdict
from aitune_fp.effects.backends.base import Built
from aitune_fp.effects.cache.artifacts import backend_from_config
from aitune_fp.effects.checks.validate import validate
from aitune_fp.effects.inputs.samples import Samples, normalise_samples
from aitune_fp.effects.measure.profiler import SweepPlan, profile_runner
from aitune_fp.effects.measure.rounds import time_paired
from aitune_fp.shell.io import perform
from aitune_fp.shell.persist import RECORD, load


class CheckError(ValueError):
    """A check that cannot be made (see the module's rules)."""


@dataclass(frozen=True, slots=True)
class CheckRequest:
    """What to check: ``target`` (a save folder or a run.json), the ``module`` and its
    ``samples`` (a factory's), the ``baseline`` run, the ``margin``, ``calls`` timed calls."""

    target: Path
    module: torch.nn.Module | None = None
    samples: object = None
    baseline: Path | None = None
    margin: float = MARGIN
    calls: int = 100
    baseline_module: torch.nn.Module | None = None
    seconds: float = 5.0


@dataclass(frozen=True, slots=True)
class _Pick:
    """The pick ready to time: its runner, its record, the samples to time it on, and
    what frees it."""

    built: Built
    record: RunRecord
    samples: Samples
    device: torch.device
    close: Callable[[], None]


def _record_at(path: Path) -> RunRecord:
    """The run record at ``path`` (a run.json, or a save folder holding one)."""
    file = path / RECORD if path.is_dir() else path
    try:
        return loads(file.read_text())
    except (OSError, ValueError) as error:
        raise CheckError(f"{file}: {error}") from None


def _samples(request: CheckRequest, fallback: Samples | None) -> Samples:
    if request.samples is not None:
        return normalise_samples(request.samples)
    if fallback is None:
        raise CheckError("a run.json's pick is timed on the module's samples: give them")
    return fallback


def _saved(request: CheckRequest) -> _Pick:
    """The saved pick, loaded (and sealed-checked) from the target folder."""
    try:
        tuned = load(request.target, request.module)
    except (OSError, ValueError) as error:
        raise CheckError(str(error)) from None
    if tuned.record is None:
        tuned.close()
        raise CheckError(f"{request.target} holds no {RECORD}: there are no figures to check")
    samples = _samples(request, tuned.samples)
    device = torch.device(tuned.record.device)
    return _Pick(tuned.built, tuned.record, samples.to(device), device, tuned.close)


def _rebuilt(request: CheckRequest) -> _Pick:
    """A run.json's pick built again on the module from its recorded config."""
    record = _record_at(request.target)
    if record.selection is None:
        raise CheckError(f"{request.target}: the run has no pick to check (it selected nothing)")
    if request.module is None:
        raise CheckError("a run.json's pick is rebuilt on its module: give the module")
    row = next((o for o in record.outcomes if o.backend == record.selection.backend), None)
    if row is None:
        raise CheckError(f"the run has no row for its pick {record.selection.backend}")
    device = torch.device(record.device)
    samples = _samples(request, None).to(device)
    config = backend_from_config(row.kind, row.config)
    work = Path(tempfile.mkdtemp(prefix="aitune_fp-check-"))
    built = perform(config.build(request.module.eval().to(device), samples, device, work))
    if isinstance(built, Failure):
        shutil.rmtree(work, ignore_errors=True)
        raise CheckError(f"the pick {row.backend} did not build: {built.failure().message}")
    made: Built = built.unwrap()

    def close() -> None:
        made.close()
        shutil.rmtree(work, ignore_errors=True)

    return _Pick(made, record, samples, device, close)


def _timed(pick: _Pick, name: str, batch_size: int, calls: int) -> tuple[float, ...]:
    """``calls`` timed calls of the pick at ``batch_size`` (the profiler's rules)."""
    plan = SweepPlan((batch_size,), fixed_steps(warmup=10, steps=calls), never_stop())
    found = perform(profile_runner(name, pick.built.runner, pick.samples, pick.device, plan))
    if isinstance(found, Failure):
        raise CheckError(f"the pick {name} failed when timed: {found.failure().message}")
    return tuple(found.unwrap().latencies_ms[batch_size])


def _wrong(request: CheckRequest, pick: _Pick, name: str, batch_size: int) -> str | None:
    """Why the pick's outputs no longer pass the accuracy check, or ``None``."""
    if request.module is None:
        return None
    module = request.module.eval().to(pick.device)
    checked = perform(
        validate(name, pick.built, module, pick.samples, pick.device, batch_sizes=(1, batch_size))
    )
    return checked.failure().message if isinstance(checked, Failure) else None


def _interleaved(pick: _Pick, other: _Pick, name: str, request: CheckRequest) -> CheckResult:
    """Both picks timed now in interleaved rounds at the other's batch size, judged paired:
    the other's round samples as the figures, the pick's as now."""
    figures = recorded_figures(other.record)
    plan = timing_plan(request.seconds)

    def judge(_: object, done: int, elapsed: float, still: tuple[str, ...]) -> RoundsVerdict:
        return timing_verdict(plan, done, elapsed, still)

    size, base = figures.batch_size, f"baseline {figures.pick}"
    entrants = [(name, pick.built.runner, size), (base, other.built.runner, size)]
    found = time_paired(entrants, pick.samples, pick.device, plan, judge)
    rounds = min(len(found.samples.get(name, ())), len(found.samples.get(base, ())))
    if rounds < 2:
        raise CheckError(f"the interleaved rounds timed {rounds} round(s): nothing to judge")
    wrong = _wrong(request, pick, name, size)
    return judge_check(
        Figures(name, size, found.samples[base][:rounds]),
        found.samples[name][:rounds],
        margin=request.margin,
        wrong=wrong,
        paired=True,
    )


def _against_save(request: CheckRequest, pick: _Pick, name: str) -> CheckResult:
    """The pick against the baseline save, both timed now (see the module's rules)."""
    folder = request.baseline or request.target
    module = request.baseline_module or request.module
    other = _saved(replace(request, target=folder, module=module))
    try:
        return _interleaved(pick, other, name, request)
    finally:
        other.close()


def check(request: CheckRequest) -> CheckResult:
    """The pick timed again and judged against the reference's figures (module rules)."""
    pick = _saved(request) if request.target.is_dir() else _rebuilt(request)
    try:
        if request.baseline is not None and request.baseline.is_dir():
            chosen = pick.record.selection
            return _against_save(request, pick, chosen.backend if chosen else "pick")
        reference = _record_at(request.baseline) if request.baseline else pick.record
        try:
            figures = recorded_figures(reference)
        except ValueError as error:
            raise CheckError(str(error)) from None
        name = pick.record.selection.backend if pick.record.selection else figures.pick
        now = _timed(pick, name, figures.batch_size, request.calls)
        wrong = _wrong(request, pick, name, figures.batch_size)
        return judge_check(replace(figures, pick=name), now, margin=request.margin, wrong=wrong)
    finally:
        pick.close()
