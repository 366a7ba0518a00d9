"""How one tune is run, besides what it tunes: :class:`TuneOptions`.

Rules: the options are :func:`~aitune_fp.shell.tune_module.tune_module`'s keyword options
as one frozen value, field for field (same names, same defaults), so
``tune_module(m, s, strategy, backends, device, cache_dir, **options)`` runs exactly
``run_tuning(m, s, strategy, backends, TuneOptions(device=device, cache_dir=cache_dir,
**options))``; an unknown option is a ``TypeError`` at once. Each option is read from here
only: the strategy is ``run_tuning``'s own argument and the verification's seconds are
this value's, from which the session's plan takes them.

>>> TuneOptions(cache_dir="/tmp/c", fresh=True).fresh, TuneOptions().device
(True, 'cpu')
>>> TuneOptions(record_path="runs/run.json").target
PosixPath('runs/run.json')
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import torch

from aitune_fp.core.accuracy import AccuracyPolicy, Search
from aitune_fp.core.accuracy.reach import Capabilities
from aitune_fp.effects.backends.base import Backend
from aitune_fp.effects.backends.eager import TorchEager
from aitune_fp.effects.checks.validate import Tolerance
from aitune_fp.effects.isolation import Timeouts
from aitune_fp.effects.measure.profiler import ProfileSettings
from aitune_fp.shell.baseline_reuse import BaselineSource
from aitune_fp.shell.progress import ProgressSink

RACE_ENV: Final = "AITUNE_FP_RACE"
"""``AITUNE_FP_RACE=0``: the candidates do not race (each sweeps the whole ladder)."""
DynamicAxes = Mapping[str | int, Mapping[int, tuple[int, int]]]
"""Declared dynamic dimensions: input name or position → axis → inclusive ``(min, max)``."""


@dataclass(frozen=True, slots=True)
class TuneOptions:
    """The options of one tune (see :func:`~aitune_fp.shell.tune_module.run_tuning`).

    Where: ``device``, ``cache_dir`` (``None``: the default folder). Inputs:
    ``max_batch_size`` (``None``: searched), ``batch_axis``, ``batched`` (``False``:
    un-batched items, collated), ``dynamic_axes``, ``outside`` (``"warn"`` or ``"raise"``:
    a tuned module's call outside the tuned shapes). Judging: ``tolerance``, ``search``,
    ``accuracy`` (:mod:`aitune_fp.shell.variants`), ``settings`` (the profiler's),
    ``verify_seconds`` (``None`` or ``0``: no verification). Running: ``isolation`` and its
    ``timeouts`` (``None``: the defaults), ``progress``. The record: ``model_name``,
    ``record_path``, ``reuse_baseline`` (:mod:`aitune_fp.shell.baseline_reuse`), ``fresh``
    (``True``: never the stored decision, :mod:`aitune_fp.shell.decided`). The session:
    ``race`` (``None``: on unless ``AITUNE_FP_RACE=0``; ``False``: every candidate sweeps
    the whole ladder), ``baseline`` (the config every candidate is compared with;
    ``None``: eager). The machine: ``capabilities`` (``None``: read from the device once,
    :mod:`aitune_fp.effects.machine.capabilities`).
    """

    device: str | torch.device = "cpu"
    cache_dir: str | Path | None = None
    max_batch_size: int | None = None
    batch_axis: int = 0
    batched: bool = True
    dynamic_axes: DynamicAxes | None = None
    outside: str = "warn"
    tolerance: Tolerance | None = None
    settings: ProfileSettings | None = None
    model_name: str = "model"
    progress: ProgressSink | None = None
    verify_seconds: float | None = None
    isolation: bool = True
    timeouts: Timeouts | None = None
    record_path: str | Path | None = None
    reuse_baseline: BaselineSource | None = None
    search: Search | str | None = None
    accuracy: AccuracyPolicy | None = None
    fresh: bool = False
    race: bool | None = None
    baseline: Backend | None = None
    capabilities: Capabilities | None = None

    @property
    def target(self) -> Path | None:
        """Where the run's record goes (``None``: nowhere)."""
        return Path(self.record_path) if self.record_path is not None else None

    @property
    def racing(self) -> bool:
        """Whether the candidates race: ``race``, else the environment's ``AITUNE_FP_RACE``
        (on unless ``0``)."""
        return self.race if self.race is not None else os.environ.get(RACE_ENV, "1") != "0"

    @property
    def baseline_config(self) -> Backend:
        """The baseline's config: ``baseline``, else eager."""
        return self.baseline if self.baseline is not None else TorchEager()

    @property
    def limits(self) -> Timeouts:
        """The isolation's timeouts (the defaults when none were given)."""
        return self.timeouts or Timeouts()
