"""The tuning driver as state in, state out: build candidates as the fold pulls them.

Rules:
- :class:`Setup` is what a run works with (fixed before the first build);
  :class:`RunState` is what it has done so far (the runs, the runners kept alive, what
  the fold consumed and the fold's state); every function here takes a state and returns
  a new one, and nothing is shared or changed in place;
- candidates are built lazily, one at a time, as :func:`~aitune_fp.core.fold.fold_states`
  pulls them; a strategy that settles early never builds the later backends, and a
  backend the strategy does not admit is never built; each is built with the early stop
  against the best so far (:mod:`aitune_fp.shell.early_stop`; the baseline with none);
- runners are released by one function, :func:`close_all_but`: after each step the
  leader's runner is kept (with final rounds planned: every contender's), after the fold
  only the winner's;
- every build is one ``logging`` line on the ``aitune_fp`` logger and progress events;
- ``Setup.isolation``: backends run in workers (:mod:`aitune_fp.shell.workers`), rounds and
  winner are made here (``materialized``); ``Setup.journal`` hears of each finished one;
- a finished backend is on disk before it is shown: the journal writes the record holding
  it, then its log line and ``backend_done`` event go out (:func:`finished`), so a row the
  user saw is always in the partial ``run.json`` an interrupt leaves.
"""

from __future__ import annotations

import dataclasses
import gc
import itertools
import logging
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from pyrsistent import PMap, pmap
from returns.io import IOSuccess
from returns.result import Failure, Result

from aitune_fp.core.fold import fold_states, settled, start, step
from aitune_fp.core.measure.rounds import contenders
from aitune_fp.core.measure.verification_plan import CHALLENGERS, runner_ups
from aitune_fp.core.record.max_batch import MaxBatchSearch
from aitune_fp.core.records import (
    BackendFailure,
    Candidate,
    Profile,
    Selection,
    TuneError,
    TuneState,
)
from aitune_fp.core.strategy import Strategy
from aitune_fp.effects.backends.base import Backend, Built
from aitune_fp.effects.backends.eager import TorchEager
from aitune_fp.effects.candidate import CandidateRun
from aitune_fp.effects.inputs import Samples
from aitune_fp.effects.isolation import Timeouts, materialized
from aitune_fp.effects.profiler import EarlyStop, ProfileSettings
from aitune_fp.effects.validate import Tolerance
from aitune_fp.shell import workers
from aitune_fp.shell.early_stop import early_stop
from aitune_fp.shell.io import perform
from aitune_fp.shell.progress import ProgressEvent, ProgressSink
from aitune_fp.shell.rounds import final_rounds
from aitune_fp.shell.workspace import Workspace

log = logging.getLogger("aitune_fp")


@dataclass(frozen=True, slots=True)
class Setup:
    """What a run works with: the module and samples on the device, the strategy, the
    sweep's batch sizes, and where its files and progress go."""

    module: torch.nn.Module
    samples: Samples
    strategy: Strategy
    device: torch.device
    cache_dir: Path
    progress: ProgressSink
    settings: ProfileSettings
    tolerance: Tolerance
    total: int
    max_batch_size: int = 1
    batch_sizes: tuple[int, ...] = (1,)
    outside: str = "warn"
    verify_seconds: float | None = None
    workspace: Workspace | None = None
    isolation: bool = False
    timeouts: Timeouts = field(default_factory=Timeouts)
    journal: Callable[[Setup, RunState], None] | None = None
    max_batch_search: MaxBatchSearch | None = None

    def emit(self, kind: str, backend: str = "", done: int = 0, **fields: Any) -> None:
        """Send one progress event (``done`` backends so far)."""
        self.progress(ProgressEvent(kind, backend, done=done, total=self.total, **fields))


@dataclass(frozen=True, slots=True)
class RunState:
    """What a run has done: its runs (baseline first), live runners, the fold's input
    and state."""

    runs: tuple[CandidateRun, ...] = ()
    live: PMap[str, Built] = field(default_factory=pmap)
    fed: tuple[Candidate, ...] = ()
    fold: TuneState = field(default_factory=TuneState)


def as_result(run: CandidateRun) -> Result[Profile, BackendFailure]:
    """A run's outcome as the fold reads it."""
    return perform(run.outcome)


def build(
    setup: Setup, done: int, backend: Backend, name: str, early: EarlyStop | None = None
) -> CandidateRun:
    """Build, validate and profile one backend (its peak memory attached); not shown yet
    (see :func:`finished`)."""
    log.info("building %s", name)
    setup.emit("backend_start", name, done)
    make = workers.isolated if setup.isolation else workers.in_process
    return make(setup, done, backend, name, early)


def finished(setup: Setup, run: RunState) -> RunState:
    """``run``'s newest backend journaled (the record on disk), then shown as done."""
    workers.journal(setup, run)
    workers.log_outcome(setup, len(run.runs), run.runs[-1])
    return run


def with_baseline(setup: Setup, run: RunState) -> RunState:
    """The eager baseline profiled first, when the strategy validates performance."""
    if not setup.strategy.validate_performance:
        return run
    baseline = build(setup, 0, TorchEager(), "eager")
    return finished(setup, dataclasses.replace(run, runs=(*run.runs, baseline)))


def close_all_but(live: Mapping[str, Built], keep: Collection[str]) -> PMap[str, Built]:
    """Close every live runner not named in ``keep``; the ones kept, as a new map."""
    for name, built in live.items():
        if name not in keep:
            built.close()
    return pmap({name: built for name, built in live.items() if name in keep})


def _kept(setup: Setup, state: TuneState) -> set[str]:
    """Whose runners stay alive after a step: the contenders with rounds, else the leader;
    with a verification planned, the leader's closest runner-ups too."""
    strategy, plan = setup.strategy, setup.strategy.plan.rounds
    kept = set(contenders(strategy, state, plan.contenders)) if plan is not None else set()
    if state.best is not None:
        kept |= {state.best.backend, *runner_ups(strategy, state.best, state.ranking,
                                                 CHALLENGERS if setup.verify_seconds else 0)}
    return kept


def _pulled(
    setup: Setup, first: int, backends: Sequence[Backend], names: Sequence[str],
    state: TuneState,
) -> Iterator[tuple[CandidateRun | None, Candidate]]:
    """Each candidate as it is pulled: built (clear losers stopped early against the best
    so far, ``state`` folded along), or refused unbuilt when not admitted."""
    admits, done = setup.strategy.admits, first
    for backend, name in zip(backends, names, strict=True):
        run: CandidateRun | None = None
        result: Candidate = Failure(BackendFailure(name, "measure", "not admitted"))
        if admits is not None and not admits(name):
            log.info("skipping %s: not admitted by %s", name, setup.strategy.name)
        else:
            early = early_stop(setup.strategy, setup.settings, state)
            run = build(setup, done, backend, name, early)
            done, result = done + 1, as_result(run)
        state = step(setup.strategy, state, result)
        yield run, result


def drive_fold(
    setup: Setup, run: RunState, backends: Sequence[Backend], names: Sequence[str]
) -> RunState:
    """Feed candidates to the fold one at a time, releasing each loser as it loses."""
    strategy = setup.strategy
    baseline = as_result(run.runs[0]) if run.runs else None
    pulled = _pulled(setup, len(run.runs), backends, names, start(strategy, baseline))
    for_fold, for_us = itertools.tee(pulled)
    states = fold_states(strategy, (result for _, result in for_fold), baseline)
    run = dataclasses.replace(run, fold=next(states))
    for state, (cand, result) in zip(states, for_us):  # noqa: B905 - the fold may stop early
        previous = run.fold.best
        live = run.live
        if cand is not None and cand.built is not None:
            if state.best is not None and state.best.backend == cand.name != getattr(
                previous, "backend", None
            ):
                log.info("new best: %s (%s)", cand.name, strategy.fmt(state.best.result.metric))
            live = close_all_but(live.set(cand.name, cand.built), _kept(setup, state))
        runs = run.runs if cand is None else (*run.runs, cand)
        run = RunState(runs, live, (*run.fed, result), state)
        if cand is not None:
            run = finished(setup, run)
    if settled(strategy, run.fold):
        log.info("%s settled: later candidates are not built", strategy.name)
    gc.collect()
    return run


def with_final_rounds(setup: Setup, run: RunState) -> RunState:
    """Time the baseline and the contenders in interleaved rounds; re-fold with them.

    Each one timed gets an even share of the rounds' wall time as its ``rounds`` stage
    (the rounds interleave them, so no finer split is measured)."""
    strategy = setup.strategy
    if strategy.plan.rounds is None or strategy.confidence is None:
        return run
    baseline = run.runs[0] if strategy.validate_performance and run.runs else None
    base_profile = as_result(baseline).value_or(None) if baseline else None
    runners = {}
    for name, built in [
        *run.live.items(),
        *([(baseline.name, baseline.built)] if baseline and baseline.built else []),
    ]:
        try:  # made here from its worker's artifact, or built again (see the rules)
            runners[name] = materialized(built).runner
        except RuntimeError as error:
            log.warning("%s leaves the final rounds: %s", name, error)
    setup.emit("stage", stage="final rounds", done=len(run.runs))
    state, outcome = final_rounds(
        strategy,
        run.fold,
        base_profile,
        run.fed,
        runners,
        setup.samples,
        setup.device,
        setup.settings,
        sweep_seconds=sum(r.stage_seconds.get("profile", 0.0) for r in run.runs),
    )
    if outcome is None:
        return dataclasses.replace(run, fold=state)
    updated = {p.backend: p for p in outcome.profiles}
    share = outcome.seconds / len(updated) if updated else 0.0
    runs = tuple(
        dataclasses.replace(
            r,
            outcome=IOSuccess(updated[r.name]),
            stage_seconds={**r.stage_seconds, "rounds": share},
        )
        if r.name in updated
        else r
        for r in run.runs
    )
    return dataclasses.replace(run, runs=runs, fold=state)


def winner_built(
    setup: Setup, run: RunState, outcome: Result[Selection, TuneError]
) -> tuple[Built, Backend] | None:
    """The winner's runner and config; every other live runner is closed."""
    if not isinstance(outcome, Failure) and not outcome.unwrap().fell_back_to_baseline:
        name = outcome.unwrap().backend
        close_all_but(run.live, {name})
        winner = next(r for r in run.runs if r.name == name)
        assert winner.built is not None
        return materialized(winner.built), winner.backend
    close_all_but(run.live, ())
    if isinstance(outcome, Failure):
        return None
    eager = TorchEager()
    first, folder = run.runs[0].built, workers.work_dir(setup, eager, "eager")
    built = materialized(first) if first is not None else perform(
        eager.build(setup.module, setup.samples, setup.device, folder)
    ).unwrap()
    return built, eager
