"""The entry points: tune a real PyTorch module end to end.

:func:`tune_module` gives back a :class:`TunedModule` running the winner;
:func:`run_tuning` gives the whole run (its ``RunRecord`` too). They check the inputs and
find the batch sizes, then hand over to the driver (:mod:`aitune_fp.shell.drive`): the
baseline, the fold over lazily built candidates, the final rounds, the winner.

Rules:
- samples are checked and the device resolved before anything is built; a bad sample or
  an absent device is a ``TuneError``, not an exception; so is an eager module that cannot
  run one row (raising, crashing or hanging: :mod:`aitune_fp.shell.batch_search`, which
  also finds the max batch size and says why it is what it is);
- with a record path, ``run.json`` is written (``interrupted``, no backend yet) as soon as
  the max batch size is known, then after each finished backend before it is shown;
- the eager baseline is profiled first, only when the strategy validates performance;
- candidates are built lazily, one at a time, as the fold consumes them; a loser's
  resources are released as soon as it is no longer the leader;
- the libraries of the admitted candidates are imported before anything is built
  (:mod:`aitune_fp.effects.preload`), so their one-time memory and import time are charged
  to no backend; with isolation the workers' server imports them before the first worker,
  and this process in a background thread, joined before it runs anything itself;
- every backend (the baseline too) gets its peak memory (:mod:`aitune_fp.effects.memory`):
  the level before its build and the peak over its profiled calls, attached to its
  profile as ``peak_memory_mb`` (``None`` when it cannot be measured);
- every step is one ``logging`` line on the ``aitune_fp`` logger and one progress event;
- the whole run (profiles, failures, stage times, selection) is returned as a
  ``RunRecord``; the ``TunedModule`` is built with it and never changed afterwards.

>>> import tempfile, torch
>>> from aitune_fp import min_latency
>>> from aitune_fp.shell.io import perform
>>> model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
>>> run = perform(run_tuning(model, torch.randn(2, 4), min_latency, ["eager"],
...                          cache_dir=tempfile.mkdtemp())).unwrap()
>>> run.tuned.record is run.record, [o.backend for o in run.record.outcomes]
(True, ['eager', 'eager'])
>>> run.tuned(torch.ones(1, 4)).shape
torch.Size([1, 4])
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch
from returns.io import IOFailure, IOResult, IOSuccess
from returns.result import Failure

from aitune_fp.core.accuracy import AccuracyPolicy, Search
from aitune_fp.core.fold import finish
from aitune_fp.core.record.max_batch import max_batch_line
from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.core.records import TuneError
from aitune_fp.core.report.stages import wall_summary
from aitune_fp.core.strategies import max_throughput
from aitune_fp.core.strategy import Strategy
from aitune_fp.effects.backends.base import Backend
from aitune_fp.effects.backends.registry import with_max_batch_size
from aitune_fp.effects.call_guard import call_deadline
from aitune_fp.effects.inputs import normalise_samples
from aitune_fp.effects.isolation import Timeouts
from aitune_fp.effects.isolation.server import start as start_workers
from aitune_fp.effects.preload import libraries_of, preload, preload_in_background
from aitune_fp.effects.profiler import ProfileSettings
from aitune_fp.effects.validate import Tolerance
from aitune_fp.shell.baseline_reuse import BaselineSource, plan_baseline, start
from aitune_fp.shell.batch_search import inside, search_max_batch
from aitune_fp.shell.drive import RunState, Setup, drive_fold, with_final_rounds
from aitune_fp.shell.journal import write_record
from aitune_fp.shell.progress import ProgressSink, silent
from aitune_fp.shell.recording import run_record
from aitune_fp.shell.resolve import _unique_names, default_cache_dir, resolve_device
from aitune_fp.shell.run_end import interrupted, make_winner, summary, tuned_of
from aitune_fp.shell.tuned_module import TunedModule
from aitune_fp.shell.variants import resolve_candidates, with_policy
from aitune_fp.shell.verify import with_verification
from aitune_fp.shell.wall_clock import Stopwatch
from aitune_fp.shell.workspace import open_workspace

log = logging.getLogger("aitune_fp")


@dataclass(frozen=True, slots=True)
class TuningRun:
    """A finished run: the record (always) and the tuned module (when one was selected)."""

    record: RunRecord
    tuned: TunedModule | None


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
    verify_seconds: float | None = None,
    isolation: bool = True,
    timeouts: Timeouts | None = None,
    record_path: str | Path | None = None,
    reuse_baseline: BaselineSource | None = None,
    search: Search | str | None = None,
    accuracy: AccuracyPolicy | None = None,
) -> IOResult[TuningRun, TuneError]:
    """Tune ``module`` and return the whole run; see :func:`tune_module` for the rules.

    ``isolation`` (default on) runs the max-batch search and every backend's build,
    validation and profile in worker processes with ``timeouts``
    (:mod:`aitune_fp.effects.isolation`); ``record_path`` gets the record after every
    finished backend (``status="interrupted"``) and at the end (``"complete"``).
    ``reuse_baseline`` (a ``run.json`` path or a record): take the eager baseline's profile
    from that run when its model, inputs, plan and environment all match (else a warning
    naming what differs, and eager is profiled: :mod:`aitune_fp.shell.baseline_reuse`).
    ``search``, ``accuracy``: candidates and accuracy policy (:mod:`aitune_fp.shell.variants`).
    """
    clock = Stopwatch()  # the record's wall account (aitune_fp.shell.wall_clock)
    dev_result = resolve_device(device)
    if isinstance(dev_result, Failure):
        return IOFailure(dev_result.failure())
    dev: torch.device = dev_result.unwrap()
    try:
        normalised = normalise_samples(
            samples, batch_axis=batch_axis, batched=batched, dynamic_axes=dynamic_axes
        )
        candidates = resolve_candidates(backends, search, dev)
    except (ValueError, KeyError) as error:
        return IOFailure(TuneError(str(error)))
    admits = strategy.admits
    admitted = [
        c for c, n in zip(candidates, _unique_names(candidates), strict=True)
        if not admits or admits(n)
    ]  # fmt: skip
    if isolation:  # the workers' server imports them; this process, while it waits
        start_workers(n for c in admitted for n in libraries_of(c))
        loading = preload_in_background(admitted, dev)
    module = module.eval().to(dev)
    normalised = normalised.to(dev)
    timeouts = timeouts or Timeouts()
    workspace = open_workspace(Path(cache_dir or default_cache_dir()))
    clock.lap("setup")
    found = search_max_batch(module, normalised, dev, strategy.plan, max_batch_size,
                             isolation=isolation, timeouts=timeouts,
                             cache=workspace.cache_dir)  # fmt: skip
    if isinstance(found, Failure):
        return IOFailure(found.failure())
    largest, batch_search = found.unwrap()
    clock.lap("max_batch_search")
    normalised = inside(normalised, largest, batch_search)  # no sample over a faulty size
    setup = Setup(
        module,
        normalised,
        strategy,
        dev,
        Path(cache_dir or default_cache_dir()),
        progress or silent,
        settings or ProfileSettings(),
        with_policy(tolerance, accuracy),
        total=len(candidates) + (1 if strategy.validate_performance else 0),
        outside=outside,
        verify_seconds=verify_seconds,
        workspace=workspace,
        max_batch_size=largest,
        batch_sizes=strategy.plan.batch_sizes(largest),
        isolation=isolation,
        timeouts=timeouts,
        max_batch_search=batch_search,
    )
    candidates = tuple(with_max_batch_size(b, largest) for b in candidates)
    names = _unique_names(candidates)
    baseline = plan_baseline(setup, reuse_baseline)
    origin = baseline.provenance
    if record_path is not None:
        target = Path(record_path)

        def journal(now: Setup, run: RunState) -> None:
            partial = run_record(now, run, interrupted(), names, model_name, "interrupted",
                                 provenance=origin, wall=clock.account())  # fmt: skip
            write_record(partial, target)

        setup = replace(setup, journal=journal)
        journal(setup, RunState())  # this run's record from now on, before any backend
    setup.emit("plan", message=f"{strategy.title}: {', '.join(names) or 'no candidates'}")
    setup.emit("plan", message=max_batch_line(largest, batch_search) or "")
    log.info("batch sizes to profile: %s", setup.batch_sizes)
    setup.emit("stage", stage="preload")
    if not isolation:
        preload(admitted, dev)
    clock.lap("plan")
    run = drive_fold(setup, start(setup, baseline), candidates, names)
    clock.lap("candidates")
    if isolation:
        loading.join()  # before anything runs here: final rounds, verification, the winner
        clock.lap("preload_join")
    with call_deadline(setup.timeouts.call):  # these calls run here: same call timeout
        run = with_final_rounds(setup, run)
        clock.lap("final_rounds")
        selected, verified = with_verification(setup, run, finish(strategy, run.fold))
        clock.lap("verification")
    winner, outcome = make_winner(setup, run, selected)
    clock.lap("winner")
    record = run_record(setup, run, outcome, names, model_name, provenance=origin,
                        verification=verified if outcome is selected else None,
                        wall=clock.account())  # fmt: skip
    tuned = tuned_of(setup, winner, outcome, record)
    if record_path is not None:
        write_record(record, Path(record_path))
    lines = summary(record, outcome)
    log.info("%s", wall_summary(record) or "")
    for line in lines:
        log.info("%s", line)
    setup.emit(
        "selected",
        outcome.map(lambda s: s.backend).value_or(""),
        done=len(run.runs),
        message=" | ".join(lines),
    )
    return IOSuccess(TuningRun(record, tuned))


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
    ``outside``, ``tolerance``, ``settings``, ``progress``, ``search``, ``accuracy``, …).

    >>> import tempfile, torch
    >>> from aitune_fp import min_latency
    >>> from aitune_fp.shell.io import perform
    >>> model = torch.nn.Linear(3, 2)
    >>> tuned = perform(tune_module(model, torch.randn(2, 3), min_latency, ["eager"],
    ...                             cache_dir=tempfile.mkdtemp())).unwrap()
    >>> torch.allclose(tuned(torch.ones(1, 3)), model(torch.ones(1, 3)))
    True
    >>> perform(tune_module(model, [], cache_dir=tempfile.mkdtemp())).failure().message[:16]
    'no samples given'
    """
    return run_tuning(module, samples, strategy, backends, device, cache_dir, **options).bind(
        _tuned_or_error
    )


def _tuned_or_error(run: TuningRun) -> IOResult[TunedModule, TuneError]:
    if run.tuned is not None:
        return IOSuccess(run.tuned)
    error = run.record.error or TuneError("no backend was selected")
    return IOFailure(error)
