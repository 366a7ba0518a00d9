"""The composition root: tune a real PyTorch module end to end.

``tune_module`` wires the effect layer (inputs, max-batch search, build → validate →
profile per backend) to the pure core (``start``/``step``/``finish`` of the fold) and
hands back a :class:`TunedModule` running the winner.

Rules:
- samples are checked and the device resolved before anything is built; a bad sample or
  an absent device is a ``TuneError``, not an exception;
- the eager baseline is profiled first, only when the strategy validates performance;
- candidates are built lazily, one at a time, as the fold consumes them; a loser's
  resources are released as soon as it is no longer the leader;
- the libraries of the admitted candidates are imported before anything is built
  (:mod:`aitune_fp.effects.preload`), so their one-time memory and import time are charged
  to no backend;
- every backend (the baseline too) gets its peak memory (:mod:`aitune_fp.effects.memory`):
  the level before its build and the peak over its profiled calls, attached to its
  profile as ``peak_memory_mb`` (``None`` when it cannot be measured);
- every step is one ``logging`` line on the ``aitune_fp`` logger and one progress event;
- the whole run (profiles, failures, stage times, selection) is returned as a
  ``RunRecord``; the only place effects are unwrapped is :func:`tune_module`'s caller
  boundary in :func:`run_tuning`.
"""

from __future__ import annotations

import dataclasses
import gc
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import torch
from pyrsistent import freeze, pmap
from returns.io import IOFailure, IOResult, IOSuccess
from returns.result import Failure, Result, Success
from returns.unsafe import unsafe_perform_io

from aitune_fp.core.fold import Scored, TuneState, finish, fold_states, settled
from aitune_fp.core.measure.rounds import contenders
from aitune_fp.core.record.run_record import BackendOutcome, RunRecord
from aitune_fp.core.records import BackendFailure, Profile, Selection, TuneError
from aitune_fp.core.report.lines import summary_lines
from aitune_fp.core.stats.statistics import mean
from aitune_fp.core.strategies import max_throughput
from aitune_fp.core.strategies.registry import strategy_config
from aitune_fp.core.strategy import Strategy
from aitune_fp.effects.backends.base import Backend, Built
from aitune_fp.effects.backends.eager import TorchEager
from aitune_fp.effects.backends.registry import (
    backend_by_name,
    default_backends,
    with_max_batch_size,
)
from aitune_fp.effects.candidate import CandidateRun, run_candidate
from aitune_fp.effects.dynamic import dynamic_to_json
from aitune_fp.effects.environment import environment_fingerprint
from aitune_fp.effects.inputs import Samples, normalise_samples
from aitune_fp.effects.max_batch import find_max_batch_size
from aitune_fp.effects.memory import MemoryWatch
from aitune_fp.effects.preload import preload
from aitune_fp.effects.profiler import BatchReport, ProfileSettings
from aitune_fp.effects.rounds import final_rounds
from aitune_fp.effects.validate import Tolerance, ValidationReport, validate
from aitune_fp.shell.precheck import eager_check
from aitune_fp.shell.progress import ProgressEvent, ProgressSink, silent
from aitune_fp.shell.tuned_module import TunedModule

log = logging.getLogger("aitune_fp")
_V = TypeVar("_V")
_E = TypeVar("_E")


@dataclass(frozen=True, slots=True)
class TuningRun:
    """A finished run: the record (always) and the tuned module (when one was selected)."""

    record: RunRecord
    tuned: TunedModule | None


def default_cache_dir() -> Path:
    """``$AITUNE_FP_CACHE``, else ``$XDG_CACHE_HOME/aitune_fp``, else ``~/.cache/aitune_fp``."""
    if env := os.environ.get("AITUNE_FP_CACHE"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "aitune_fp"


def resolve_device(device: str | torch.device) -> Result[torch.device, TuneError]:
    """The torch device, or an error when it is not present on this machine."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as error:
        return Failure(TuneError(f"unknown device {device!r}: {error}"))
    if dev.type == "cuda" and not torch.cuda.is_available():
        return Failure(TuneError(f"device {device!r} needs CUDA, which is not available here"))
    if dev.type not in {"cpu", "cuda"}:
        return Failure(TuneError(f"device {device!r} is not supported (use cpu or cuda)"))
    return Success(dev)


def resolve_backends(
    backends: Sequence[Backend | str] | None, device: torch.device
) -> tuple[Backend, ...]:
    """The candidate configs: the user's (names resolved) or every backend for the device."""
    if backends is None:
        return tuple(default_backends(device))
    return tuple(backend_by_name(b) if isinstance(b, str) else b for b in backends)


def _unique_names(backends: Sequence[Backend]) -> tuple[str, ...]:
    """Each backend's description, suffixed ``#2``, ``#3`` … when repeated."""
    seen: dict[str, int] = {}
    names = []
    for b in backends:
        base = b.describe()
        seen[base] = seen.get(base, 0) + 1
        names.append(base if seen[base] == 1 else f"{base}#{seen[base]}")
    return tuple(names)


class _Run:
    """The mutable bookkeeping of one run (kept inside the shell, never shared)."""

    def __init__(
        self,
        module: torch.nn.Module,
        samples: Samples,
        strategy: Strategy,
        device: torch.device,
        cache_dir: Path,
        progress: ProgressSink,
        settings: ProfileSettings,
        tolerance: Tolerance,
        total: int,
    ) -> None:
        self.module = module
        self.samples = samples
        self.strategy = strategy
        self.device = device
        self.cache_dir = cache_dir
        self.progress = progress
        self.settings = settings
        self.tolerance = tolerance
        self.total = total
        self.done = 0
        self.max_batch_size = 1
        self.batch_sizes: tuple[int, ...] = (1,)
        self.runs: list[CandidateRun] = []
        self.live: dict[str, Built] = {}
        self.fed: list[Result[Profile, BackendFailure]] = []
        self.outside = "warn"

    def emit(self, kind: str, backend: str = "", **fields: Any) -> None:
        self.progress(ProgressEvent(kind, backend, done=self.done, total=self.total, **fields))

    def candidate(self, backend: Backend, name: str) -> CandidateRun:
        log.info("building %s", name)
        self.emit("backend_start", name)
        work_dir = self.cache_dir / f"{backend.name}-{backend.key()}"

        def check(built: Built) -> IOResult[dict[str, float], BackendFailure]:
            sizes = tuple(sorted({1, self.max_batch_size}))
            return validate(
                name,
                built,
                self.module,
                self.samples,
                self.device,
                batch_sizes=sizes,
                tolerance=self.tolerance,
            ).map(ValidationReport.as_dict)

        def on_batch(report: BatchReport) -> None:
            mean_ms = mean(report.samples)
            self.emit(
                "batch_size",
                name,
                stage="profile",
                batch_size=report.batch_size,
                message=f"{mean_ms:.3f} ms/call over {len(report.samples)} calls",
            )

        watch = MemoryWatch(self.device)

        def on_stage(stage: str) -> None:
            self.emit("stage", name, stage=stage)
            watch.on_stage(stage)

        run = run_candidate(
            backend,
            name,
            self.module,
            self.samples,
            self.device,
            work_dir,
            self.strategy.plan,
            self.batch_sizes,
            check,
            self.settings,
            on_stage=on_stage,
            on_batch=on_batch,
            cache_dir=self.cache_dir,
        )
        run = _with_peak_memory(run, watch.peak_mb())
        self.runs.append(run)
        self.done += 1
        self._log_outcome(run)
        return run

    def _log_outcome(self, run: CandidateRun) -> None:
        match run.outcome:
            case IOSuccess():
                profile = _profile_of(run)
                measured = self.strategy.measure(profile)
                text = measured.map(lambda r: self.strategy.fmt(r.metric)).value_or("no metric")
                log.info("%s validated %s; profiled: %s", run.name, run.validation, text)
                self.emit("backend_done", run.name, message=f"ok: {text}")
            case _:
                failure = _failure_of(run)
                log.warning("%s", failure.describe())
                self.emit("backend_done", run.name, message=f"failed: {failure.describe()}")


def _with_peak_memory(run: CandidateRun, peak_mb: float | None) -> CandidateRun:
    """``run`` with ``peak_mb`` attached to its profile (unchanged when it has none)."""
    if peak_mb is None or not isinstance(run.outcome, IOSuccess):
        return run
    log.info("%s peak memory: %.1f MiB", run.name, peak_mb)
    profile = run.outcome.map(lambda p: dataclasses.replace(p, peak_memory_mb=peak_mb))
    return dataclasses.replace(run, outcome=profile)


def perform(io: IOResult[_V, _E]) -> Result[_V, _E]:
    """The pure view of an effect's result: the one place the shell unwraps IO."""
    if isinstance(io, IOSuccess):
        return Success(unsafe_perform_io(io.unwrap()))
    return Failure(unsafe_perform_io(io.failure()))


def _as_result(run: CandidateRun) -> Result[Profile, BackendFailure]:
    return perform(run.outcome)


def _profile_of(run: CandidateRun) -> Profile:
    return _as_result(run).unwrap()


def _failure_of(run: CandidateRun) -> BackendFailure:
    return _as_result(run).failure()


def _outcome(run: CandidateRun) -> BackendOutcome:
    profile = _profile_of(run) if isinstance(run.outcome, IOSuccess) else None
    failure = None if profile is not None else _failure_of(run)
    return BackendOutcome(
        backend=run.name,
        kind=run.backend.name,
        key=run.backend.key(),
        config=freeze(_config_dict(run.backend)),
        profile=profile,
        failure=failure,
        stage_seconds=pmap(run.stage_seconds),
        validation=pmap(run.validation),
        artifact=str(run.built.artifact) if run.built and run.built.artifact else None,
    )


def _config_dict(backend: Backend) -> dict[str, Any]:
    if dataclasses.is_dataclass(backend) and not isinstance(backend, type):
        return dataclasses.asdict(backend)
    return {"name": backend.name}


def _drive_fold(run: _Run, backends: Sequence[Backend], names: Sequence[str]) -> TuneState:
    """Feed candidates to the fold one at a time, releasing each loser as it loses."""
    strategy = run.strategy
    baseline_run = run.runs[0] if run.runs else None
    pulled: list[tuple[CandidateRun | None, Result[Profile, BackendFailure]]] = []

    def candidates() -> Iterator[Result[Profile, BackendFailure]]:
        for backend, name in zip(backends, names, strict=True):
            if strategy.admits is not None and not strategy.admits(name):
                log.info("skipping %s: not admitted by %s", name, strategy.name)
                pulled.append((None, Failure(BackendFailure(name, "measure", "not admitted"))))
            else:
                c = run.candidate(backend, name)
                pulled.append((c, _as_result(c)))
            yield pulled[-1][1]

    states = fold_states(strategy, candidates(), _as_result(baseline_run) if baseline_run else None)
    state = next(states)
    for new in states:
        previous, state = state.best, new
        cand, result = pulled[-1]
        run.fed.append(result)
        if cand is not None and cand.built is not None:
            _keep_or_release(run, state, previous, cand)
    if settled(strategy, state):
        log.info("%s settled: later candidates are not built", strategy.name)
    gc.collect()
    return state


def _keep_or_release(
    run: _Run, state: TuneState, previous: Scored | None, cand: CandidateRun
) -> None:
    """Keep the new leader's runner alive; close the old leader's or the loser's."""
    assert cand.built is not None
    if run.strategy.plan.rounds is not None:
        _keep_contenders(run, state, cand)
        return
    if state.best is not None and state.best.backend == cand.name and state.best != previous:
        log.info("new best: %s (%s)", cand.name, run.strategy.fmt(state.best.result.metric))
        if previous is not None and previous.backend in run.live:
            run.live.pop(previous.backend).close()
        run.live[cand.name] = cand.built
    else:
        cand.built.close()


def _keep_contenders(run: _Run, state: TuneState, cand: CandidateRun) -> None:
    """With final rounds planned, keep every current contender alive, close the rest."""
    assert cand.built is not None
    plan = run.strategy.plan.rounds
    keep = set(contenders(run.strategy, state, plan.contenders)) if plan else set()
    run.live[cand.name] = cand.built
    for name in [n for n in run.live if n not in keep]:
        run.live.pop(name).close()


def _final_rounds(run: _Run, state: TuneState) -> TuneState:
    """Time the baseline and the contenders in interleaved rounds; re-fold with them."""
    if run.strategy.plan.rounds is None or run.strategy.confidence is None:
        return state
    baseline = run.runs[0] if run.strategy.validate_performance and run.runs else None
    base_profile = _as_result(baseline).value_or(None) if baseline else None
    runners = {name: built.runner for name, built in run.live.items()}
    if baseline is not None and baseline.built is not None:
        runners[baseline.name] = baseline.built.runner
    run.emit("stage", stage="final rounds")
    sweep_seconds = sum(r.stage_seconds.get("profile", 0.0) for r in run.runs)
    new_state, outcome = final_rounds(
        run.strategy,
        state,
        base_profile,
        run.fed,
        runners,
        run.samples,
        run.device,
        run.settings,
        sweep_seconds=sweep_seconds,
    )
    if outcome is not None:
        updated = {p.backend: p for p in outcome.profiles}
        run.runs = [
            dataclasses.replace(r, outcome=IOSuccess(updated[r.name])) if r.name in updated else r
            for r in run.runs
        ]
    return new_state


def run_tuning(
    module: torch.nn.Module,
    samples: Any,
    strategy: Strategy = max_throughput,
    backends: Sequence[Backend | str] | None = None,
    device: str | torch.device = "cpu",
    cache_dir: str | Path | None = None,
    *,
    max_batch_size: int | None = None,
    batch_axis: int = 0,
    batched: bool = True,
    dynamic_axes: Mapping[str | int, Mapping[int, tuple[int, int]]] | None = None,
    outside: str = "warn",
    tolerance: Tolerance | None = None,
    settings: ProfileSettings | None = None,
    model_name: str = "model",
    progress: ProgressSink | None = None,
) -> IOResult[TuningRun, TuneError]:
    """Tune ``module`` and return the whole run; see :func:`tune_module` for the rules."""
    dev_result = resolve_device(device)
    if isinstance(dev_result, Failure):
        return IOFailure(dev_result.failure())
    dev: torch.device = dev_result.unwrap()
    try:
        normalised = normalise_samples(
            samples, batch_axis=batch_axis, batched=batched, dynamic_axes=dynamic_axes
        )
        candidates = resolve_backends(backends, dev)
    except (ValueError, KeyError) as error:
        return IOFailure(TuneError(str(error)))
    module = module.eval().to(dev)
    normalised = normalised.to(dev)
    problem = eager_check(module, normalised)
    if problem is not None:
        return IOFailure(problem)
    total = len(candidates) + (1 if strategy.validate_performance else 0)
    run = _Run(
        module,
        normalised,
        strategy,
        dev,
        Path(cache_dir or default_cache_dir()),
        progress or silent,
        settings or ProfileSettings(),
        tolerance or Tolerance(),
        total,
    )
    run.outside = outside
    run.max_batch_size = _max_batch_size(run, max_batch_size)
    run.batch_sizes = strategy.plan.batch_sizes(run.max_batch_size)
    candidates = tuple(with_max_batch_size(b, run.max_batch_size) for b in candidates)
    names = _unique_names(candidates)
    run.emit("plan", message=f"{strategy.title}: {', '.join(names) or 'no candidates'}")
    log.info("batch sizes to profile: %s", run.batch_sizes)
    admits = strategy.admits
    admitted = [c for c, n in zip(candidates, names, strict=True) if not admits or admits(n)]
    run.emit("stage", stage="preload")
    preload(admitted, dev)
    if strategy.validate_performance:
        run.candidate(TorchEager(), "eager")
    state = _drive_fold(run, candidates, names)
    state = _final_rounds(run, state)
    outcome = finish(strategy, state)
    tuned = _tuned(run, outcome, names)
    record = _record(run, outcome, names, model_name)
    if tuned is not None:
        tuned.record = record
    for line in _summary(strategy, outcome):
        log.info("%s", line)
    run.emit(
        "selected",
        outcome.map(lambda s: s.backend).value_or(""),
        message=" | ".join(_summary(strategy, outcome)),
    )
    return IOSuccess(TuningRun(record, tuned))


def _max_batch_size(run: _Run, cap: int | None) -> int:
    plan = run.strategy.plan
    if not plan.batching:
        return 1
    limit = (
        min(x for x in (cap, plan.max_batch_size) if x is not None)
        if (cap is not None or plan.max_batch_size is not None)
        else None
    )
    return find_max_batch_size(run.module, run.samples, run.device, cap=limit).max_batch_size


def _summary(strategy: Strategy, outcome: Result[Selection, TuneError]) -> tuple[str, ...]:
    match outcome:
        case Success(selection):
            return summary_lines(strategy, selection)
        case Failure(error):
            return (f"tuning failed: {error.message}",)
    return ()  # pragma: no cover


def _tuned(
    run: _Run, outcome: Result[Selection, TuneError], names: Sequence[str]
) -> TunedModule | None:
    if not isinstance(outcome, Success):
        for built in run.live.values():
            built.close()
        return None
    selection: Selection = outcome.unwrap()
    if selection.fell_back_to_baseline:
        for built in run.live.values():
            built.close()
        baseline = run.runs[0]
        eager = TorchEager()
        built = baseline.built or _build_eager(run, eager)
        return TunedModule(
            built,
            eager,
            selection,
            run.samples,
            source=run.module,
            max_batch_size=run.max_batch_size,
            outside=run.outside,
        )
    winner = next(r for r in run.runs if r.name == selection.backend)
    for name, built in list(run.live.items()):
        if name != selection.backend:
            built.close()
    assert winner.built is not None
    return TunedModule(
        winner.built,
        winner.backend,
        selection,
        run.samples,
        source=run.module,
        max_batch_size=run.max_batch_size,
        outside=run.outside,
    )


def _build_eager(run: _Run, eager: TorchEager) -> Built:
    built = eager.build(run.module, run.samples, run.device, run.cache_dir / "eager")
    return perform(built).unwrap()


def _record(
    run: _Run, outcome: Result[Selection, TuneError], names: Sequence[str], model_name: str
) -> RunRecord:
    outcomes = [_outcome(r) for r in run.runs]
    has_baseline = run.strategy.validate_performance
    spec = run.samples.spec
    return RunRecord(
        model=model_name,
        device=str(run.device),
        strategy=freeze(strategy_config(run.strategy, list(names))),
        baseline=outcomes[0] if has_baseline and outcomes else None,
        candidates=tuple(outcomes[1:] if has_baseline else outcomes),
        selection=outcome.value_or(None),
        error=outcome.failure() if isinstance(outcome, Failure) else None,
        environment=freeze(environment_fingerprint(run.device)),
        input_spec=freeze(
            {
                "names": list(spec.names),
                "row_shapes": [list(t.row_shape) for t in spec.tensors],
                "dtypes": [t.dtype for t in spec.tensors],
                "batch_axis": spec.batch_axis,
                "batched": run.samples.batched,
                "dynamic": dynamic_to_json(spec),
            }
        ),
        max_batch_size=run.max_batch_size,
    )


def tune_module(
    module: torch.nn.Module,
    samples: Any,
    strategy: Strategy = max_throughput,
    backends: Sequence[Backend | str] | None = None,
    device: str | torch.device = "cpu",
    cache_dir: str | Path | None = None,
    **options: Any,
) -> IOResult[TunedModule, TuneError]:
    """Find the best backend for ``module`` by ``strategy`` and return it as a module.

    ``samples``: a tensor, a tuple/list of tensors, a dict of tensors, or a sequence of
    such samples, each with the batch axis (or, with ``batched=False``, un-batched items
    that are collated). ``dynamic_axes`` declares dimensions besides the batch that may
    vary: ``{"input_ids": {1: (8, 64)}, 0: {2: (16, 64)}}`` (keyword-input names or
    positional indices → axis → inclusive ``(min, max)``); axes along which the samples
    differ are dynamic too. ``outside`` (``"warn"`` or ``"raise"``) is what the tuned module
    does with a call outside the shapes it was tuned for. ``backends``: configs or names
    (default: every backend that can run on ``device``). ``options`` go to
    :func:`run_tuning` (``max_batch_size``, ``batch_axis``, ``batched``, ``dynamic_axes``,
    ``outside``, ``tolerance``, ``settings``, ``progress``, …).
    """
    return run_tuning(module, samples, strategy, backends, device, cache_dir, **options).bind(
        _tuned_or_error
    )


def _tuned_or_error(run: TuningRun) -> IOResult[TunedModule, TuneError]:
    if run.tuned is not None:
        return IOSuccess(run.tuned)
    error = run.record.error or TuneError("no backend was selected")
    return IOFailure(error)
