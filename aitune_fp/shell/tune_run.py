"""The steps of :func:`~aitune_fp.shell.tune_module.run_tuning` around the session.

Rules (see :mod:`aitune_fp.shell.tune_module` for the whole run's):
- :func:`prepare` checks the inputs and resolves the device before anything is built (a
  bad sample or an absent device is a ``TuneError``), plans the candidates this machine
  runs natively (:func:`~aitune_fp.shell.variants.planned`: :func:`announce` names those
  left out in one plan line, the record in ``left_out``), starts the workers' server (which
  imports the admitted candidates' libraries before its first worker), finds the max
  batch size and fixes the ``Setup``;
- with isolation this process imports no backend library up front: it runs backends only
  after the sweeps (final rounds, the tuned module), and imports each one's libraries just
  before it makes that runner (:mod:`aitune_fp.effects.isolation.isolated`), so its
  imports never compete with the server's for the cores while the tune waits on them;
- :func:`prepare` waits for the workers' server to be able to fork (``worker_pool_start``)
  before the max-batch search: nothing is timed while it still imports;
- :func:`phase_clock` laps the wall account as the interpreter leaves each phase;
- :func:`finish_run` makes the winner here, writes the final record (by the run's
  :class:`~aitune_fp.shell.journal.Recorder`, which wrote it ``interrupted`` after each
  step) and says the summary.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import torch
from returns.result import Failure, Result, Success

from aitune_fp.core.accuracy.reach import left_out_line
from aitune_fp.core.engine_batch import engine_opt_batch
from aitune_fp.core.record.max_batch import MaxBatchSearch, max_batch_line
from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.core.records import TuneError
from aitune_fp.core.report.stages import wall_summary
from aitune_fp.core.session import SessionPlan
from aitune_fp.core.strategy import Strategy
from aitune_fp.effects.backends.base import Backend
from aitune_fp.effects.backends.registry import with_max_batch_size
from aitune_fp.effects.build_request import BuildRequest
from aitune_fp.effects.inputs.samples import Samples, normalise_samples
from aitune_fp.effects.isolation.ready import wait_ready
from aitune_fp.effects.isolation.server import start as start_workers
from aitune_fp.effects.machine.preload import libraries_of, preload
from aitune_fp.effects.measure.profiler import ProfileSettings
from aitune_fp.shell.batch_search import inside, search_max_batch
from aitune_fp.shell.drive import shown
from aitune_fp.shell.journal import Recorder
from aitune_fp.shell.progress import silent
from aitune_fp.shell.resolve import _unique_names, default_cache_dir, resolve_device
from aitune_fp.shell.run_end import make_winner, summary, tuned_of
from aitune_fp.shell.setup import RunState, Setup
from aitune_fp.shell.tune_options import TuneOptions
from aitune_fp.shell.tuned_module import TunedModule
from aitune_fp.shell.variants import planned, with_policy
from aitune_fp.shell.wall_clock import Stopwatch
from aitune_fp.shell.workspace import Workspace, open_workspace

log = logging.getLogger("aitune_fp")


@dataclass(frozen=True, slots=True)
class Prepared:
    """A run ready to start: its setup and the candidates (``admitted``: those the strategy
    admits, whose libraries are imported before anything is timed)."""

    setup: Setup
    candidates: tuple[Backend, ...]
    admitted: tuple[Backend, ...]


@dataclass(frozen=True, slots=True)
class TuningRun:
    """A finished run: the record (always) and the tuned module (when one was selected)."""

    record: RunRecord
    tuned: TunedModule | None


@dataclass(frozen=True, slots=True)
class OnDevice:
    """The module (in eval mode) and its checked samples, both on the resolved device."""

    module: torch.nn.Module
    samples: Samples
    device: torch.device


def prepare(
    module: torch.nn.Module,
    samples: object,
    strategy: Strategy,
    backends: Sequence[Backend | str] | None,
    options: TuneOptions,
    clock: Stopwatch,
) -> Result[Prepared, TuneError]:
    """The run's setup and candidates, or why it cannot start (see the module's rules)."""
    found = resolve_device(options.device)
    if isinstance(found, Failure):
        return Failure(found.failure())
    dev: torch.device = found.unwrap()
    try:
        normalised = normalise_samples(
            samples,
            batch_axis=options.batch_axis,
            batched=options.batched,
            dynamic_axes=options.dynamic_axes,
        )
        candidates, left_out = planned(backends, options.search, dev, options.capabilities)
    except (ValueError, KeyError) as error:
        return Failure(TuneError(str(error)))
    admitted = _admitted(strategy, candidates)
    if options.isolation:  # the workers' server imports them; this process, as it needs them
        start_workers((n for c in admitted for n in libraries_of(c)), cuda=dev.type == "cuda")
    placed = OnDevice(module.eval().to(dev), normalised.to(dev), dev)
    total = len(candidates) + (1 if strategy.validate_performance else 0)
    return _searched(placed, strategy, options, total, clock).map(
        lambda setup: Prepared(
            replace(setup, left_out=left_out),
            _sized(candidates, setup.max_batch_size, strategy),
            admitted,
        )
    )


def _admitted(strategy: Strategy, candidates: Sequence[Backend]) -> tuple[Backend, ...]:
    """The candidates the session will build (the strategy admits them)."""
    names = _unique_names(candidates)
    chosen = set(SessionPlan(strategy, names).admitted)
    return tuple(c for c, n in zip(candidates, names, strict=True) if n in chosen)


def _searched(
    placed: OnDevice,
    strategy: Strategy,
    options: TuneOptions,
    total: int,
    clock: Stopwatch,
) -> Result[Setup, TuneError]:
    """The max batch size found (a ``TuneError`` when eager cannot run one row), then the
    setup fixed with it (``total``: the backends it will show, the baseline included)."""
    workspace = open_workspace(Path(options.cache_dir or default_cache_dir()))
    clock.lap("setup")
    _wait_for_server(options, clock)
    found = search_max_batch(
        placed.module,
        placed.samples,
        placed.device,
        strategy.plan,
        options.max_batch_size,
        isolation=options.isolation,
        timeouts=options.limits,
        cache=workspace.cache_dir,
    )
    if isinstance(found, Failure):
        return Failure(found.failure())
    largest, batch_search = found.unwrap()
    clock.lap("max_batch_search")
    fitted = replace(placed, samples=inside(placed.samples, largest, batch_search))
    return Success(_fixed(fitted, strategy, options, total, (largest, batch_search), workspace))


def _sized(candidates: Sequence[Backend], largest: int, strategy: Strategy) -> tuple[Backend, ...]:
    """The candidates, each told the run's max batch size and the batch its engines are
    tuned for (:func:`~aitune_fp.core.engine_batch.engine_opt_batch`)."""
    opt = engine_opt_batch(strategy.metric_label, largest)
    return tuple(with_max_batch_size(b, largest, opt) for b in candidates)


def _wait_for_server(options: TuneOptions, clock: Stopwatch) -> None:
    """Wait for the workers' server to be able to fork, as its own stage: nothing is timed
    (the max batch included) while it still imports."""
    if options.isolation:  # the server's preload, as its own stage (not the first worker's)
        wait_ready(options.limits.build)
        clock.lap("worker_pool_start")


def _fixed(
    placed: OnDevice,
    strategy: Strategy,
    options: TuneOptions,
    total: int,
    found: tuple[int, MaxBatchSearch],
    workspace: Workspace,
) -> Setup:
    """The run's ``Setup``, fixed once the max batch size is ``found`` (no sample over a
    faulty size)."""
    largest, search = found
    request = BuildRequest(
        placed.module,
        placed.samples,
        placed.device,
        strategy.plan,
        batch_sizes=strategy.plan.batch_sizes(largest),
        validation_sizes=tuple(sorted({1, largest})),  # 1 and the largest
        cache_dir=workspace.cache_dir,
        settings=options.settings or ProfileSettings(),
        tolerance=with_policy(options.tolerance, options.accuracy),
    )
    return Setup(
        request,
        strategy,
        options.progress or silent,
        total,
        max_batch_size=largest,
        outside=options.outside,
        workspace=workspace,
        isolation=options.isolation,
        timeouts=options.limits,
        max_batch_search=search,
    )


def announce(setup: Setup, plan: SessionPlan, prepared: Prepared, clock: Stopwatch) -> None:
    """The plan's lines, then the admitted libraries imported here (without isolation)."""
    names = plan.candidates
    setup.emit("plan", message=f"{plan.strategy.title}: {', '.join(names) or 'no candidates'}")
    setup.emit("plan", message=max_batch_line(setup.max_batch_size, setup.max_batch_search) or "")
    left = left_out_line(setup.left_out)
    if left is not None:
        setup.emit("plan", message=left)
    log.info("batch sizes to profile: %s", setup.request.batch_sizes)
    setup.emit("stage", stage="preload")
    if not setup.isolation:
        preload(prepared.admitted, setup.request.device)
    clock.lap("plan")


def phase_clock(clock: Stopwatch) -> Callable[[str], None]:
    """Lap ``clock`` at each phase the interpreter leaves."""
    return clock.lap


def finish_run(recorder: Recorder, run: RunState) -> TuningRun:
    """The winner made here, the final record written, the summary said."""
    if run.done is None:
        raise ValueError("the run's session has not ended")
    setup, selected = recorder.setup, run.done.selection
    winner, outcome = make_winner(setup, run, selected)
    recorder.clock.lap("winner")
    unmade = outcome.failure() if isinstance(outcome, Failure) and outcome is not selected else None
    record = recorder.record(run, "complete", unmade)
    tuned = tuned_of(setup, winner, outcome, record)
    lines = summary(record, outcome)
    log.info("%s", wall_summary(record) or "")
    for line in lines:
        log.info("%s", line)
    chosen = outcome.map(lambda s: s.backend).value_or("")
    setup.emit("selected", chosen, done=shown(run), message=" | ".join(lines))
    return TuningRun(record, tuned)
