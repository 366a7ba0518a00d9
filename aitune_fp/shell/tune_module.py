"""The entry points: tune a real PyTorch module end to end.

:func:`tune_module` gives back a :class:`TunedModule` running the winner;
:func:`run_tuning` gives the whole run (its ``RunRecord`` too), its options one
:class:`~aitune_fp.shell.tune_options.TuneOptions` value. They check the inputs and
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
  (:mod:`aitune_fp.effects.machine.preload`), so their one-time memory and import time are charged
  to no backend; with isolation the workers' server imports them before the first worker,
  and this process in a background thread, joined once that server can fork (the
  ``worker_pool_start`` stage) and before anything is timed, the max-batch search included;
- every backend (the baseline too) gets its peak memory (:mod:`aitune_fp.effects.measure.memory`):
  the level before its build and the peak over its profiled calls, attached to its
  profile as ``peak_memory_mb`` (``None`` when it cannot be measured);
- every step is one ``logging`` line on the ``aitune_fp`` logger and one progress event;
- the whole run (profiles, failures, stage times, selection) is returned as a
  ``RunRecord``; the ``TunedModule`` is built with it and never changed afterwards.

>>> import tempfile, torch
>>> from aitune_fp import min_latency
>>> from aitune_fp.shell.io import perform
>>> model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
>>> options = TuneOptions(cache_dir=tempfile.mkdtemp())
>>> run = perform(run_tuning(model, torch.randn(2, 4), min_latency, ["eager"], options)).unwrap()
>>> run.tuned.record is run.record, [o.backend for o in run.record.outcomes]
(True, ['eager', 'eager'])
>>> run.tuned(torch.ones(1, 4)).shape
torch.Size([1, 4])
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from returns.io import IOFailure, IOResult, IOSuccess
from returns.result import Failure

from aitune_fp.core.records import TuneError
from aitune_fp.core.strategies import max_throughput
from aitune_fp.core.strategy import Strategy
from aitune_fp.effects.backends.base import Backend
from aitune_fp.shell.decided import decided
from aitune_fp.shell.tune_options import TuneOptions
from aitune_fp.shell.tune_run import TuningRun, prepare
from aitune_fp.shell.tuned_module import TunedModule
from aitune_fp.shell.wall_clock import Stopwatch

__all__ = ["TuneOptions", "TuningRun", "run_tuning", "tune_module"]


def run_tuning(
    module: torch.nn.Module,
    samples: Any,
    strategy: Strategy = max_throughput,
    backends: Sequence[Backend | str] | None = None,
    options: TuneOptions = TuneOptions(),
) -> IOResult[TuningRun, TuneError]:
    """Tune ``module`` and return the whole run; see :func:`tune_module` for the rules and
    :class:`~aitune_fp.shell.tune_options.TuneOptions` for the options.

    ``options.isolation`` (default on) runs the max-batch search and every backend's build,
    validation and profile in worker processes with ``options.timeouts``
    (:mod:`aitune_fp.effects.isolation`); ``options.record_path`` gets the record after
    every finished backend (``status="interrupted"``) and at the end (``"complete"``).
    ``options.reuse_baseline`` (a ``run.json`` path or a record): take the eager baseline's
    profile from that run when its model, inputs, plan and environment all match (else a
    warning naming what differs, and eager is profiled: :mod:`aitune_fp.shell.baseline_reuse`).
    ``options.search``, ``options.accuracy``: candidates and accuracy policy
    (:mod:`aitune_fp.shell.variants`). An unchanged re-tune loads the stored decision and
    re-verifies its pick against the runner-up (:mod:`aitune_fp.shell.decided`);
    ``options.fresh`` always tunes in full.
    """
    clock = Stopwatch()  # the record's wall account (aitune_fp.shell.wall_clock)
    prepared = prepare(module, samples, strategy, backends, options, clock)
    if isinstance(prepared, Failure):
        return IOFailure(prepared.failure())
    try:
        return IOSuccess(decided(prepared.unwrap(), options, clock))
    finally:  # the warm runners kept from builds ahead that no sweep job claimed
        if options.isolation:
            from aitune_fp.effects.isolation.client import release_kept

            release_kept()


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
    :func:`run_tuning` as the fields of its
    :class:`~aitune_fp.shell.tune_options.TuneOptions` (``max_batch_size``, ``batch_axis``,
    ``batched``, ``dynamic_axes``, ``outside``, ``tolerance``, ``settings``, ``progress``,
    ``search``, ``accuracy``, …).

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
    chosen = TuneOptions(device=device, cache_dir=cache_dir, **options)
    return run_tuning(module, samples, strategy, backends, chosen).bind(_tuned_or_error)


def _tuned_or_error(run: TuningRun) -> IOResult[TunedModule, TuneError]:
    if run.tuned is not None:
        return IOSuccess(run.tuned)
    error = run.record.error or TuneError("no backend was selected")
    return IOFailure(error)
