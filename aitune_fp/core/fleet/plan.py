"""A fleet plan as an immutable value: models × targets × strategies, and its jobs.

Rules:
- a :class:`Plan` holds its settings (plan-wide backends, max batch size, retries, plot,
  saving the tuned module),
  its strategies (CLI strategy specs, as typed), its models and its targets, in file order;
- a model is an embedded demo model (``factory`` is ``None`` and the name is one of
  :data:`DEMO_NAMES`) or a factory as ``aitune-fp tune`` takes it, with optional input
  shapes and dtypes;
- a target is a device (``cpu``, ``cuda``, ``cuda:N``), optionally an accelerator type, and
  its own backends / max batch size / CPUs, which override the plan's; its name defaults to
  the device (``cuda-A10G`` with an accelerator type);
- the plan, a target and a model may each state a precision search and accuracy bounds
  (:class:`~aitune_fp.core.fleet.plan_tuning.TuneChoices`); a job takes each from its
  model, else its target, else the plan;
- a :class:`Job` is one model on one target with one strategy: exactly one ``tune`` run;
  its id is ``<model>/<target>/<strategy>`` with each part made filesystem-safe by
  :func:`safe_name`, and it is also the job's folder under the output folder;
- a job's :func:`entry_key` hashes everything that decides its tune's result (model, device,
  accelerator type, strategy, effective backends, max batch size and the precision
  choices it states), so a stored run is
  reused only for the same plan entry.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Final

from aitune_fp.core.fleet.plan_tuning import TuneChoices

DEMO_NAMES: Final = ("mlp", "cnn", "transformer")
STATUSES: Final = ("complete", "failed", "interrupted", "skipped")
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9._-]")


def safe_name(name: str) -> str:
    """``name`` with every character outside ``[A-Za-z0-9._-]`` replaced by ``_``.

    A leading dot becomes ``_.`` so no name is hidden or means ``.``/``..``.

    >>> safe_name("latency-budget=5ms"), safe_name("confident:min-latency"), safe_name("..")
    ('latency-budget_5ms', 'confident_min-latency', '_..')
    """
    safe = _UNSAFE.sub("_", name)
    return "_" + safe if safe.startswith(".") else safe


@dataclass(frozen=True, slots=True)
class Settings:
    """Plan-wide settings: default backends (``None``: every backend of the target), the
    largest batch size to profile (``None``: found by sweeping), retries of a crashed job,
    whether each run draws its plot, and whether it also saves the tuned module."""

    backends: tuple[str, ...] | None = None
    max_batch_size: int | None = None
    retries: int = 2
    plot: bool = True
    save: bool = False
    tuning: TuneChoices = field(default_factory=TuneChoices)


@dataclass(frozen=True, slots=True)
class ModelEntry:
    """One model of the zoo: a demo model by name, or a factory with its input spec."""

    name: str
    factory: str | None = None
    input_shapes: tuple[tuple[int, ...], ...] = ()
    dtypes: tuple[str, ...] = ()
    tuning: TuneChoices = field(default_factory=TuneChoices)

    @property
    def is_demo(self) -> bool:
        """Whether this is an embedded demo model."""
        return self.factory is None


@dataclass(frozen=True, slots=True)
class TargetEntry:
    """One target: a device, an optional accelerator type and its own overrides."""

    device: str
    accelerator_type: str | None = None
    name: str | None = None
    backends: tuple[str, ...] | None = None
    max_batch_size: int | None = None
    num_cpus: float | None = None
    tuning: TuneChoices = field(default_factory=TuneChoices)

    @property
    def label(self) -> str:
        """The target's name: given, else the device (with ``-<accelerator>``).

        >>> TargetEntry("cuda", "A10G").label, TargetEntry("cpu").label
        ('cuda-A10G', 'cpu')
        """
        if self.name is not None:
            return self.name
        return self.device + (f"-{self.accelerator_type}" if self.accelerator_type else "")

    @property
    def is_cuda(self) -> bool:
        """Whether the target's device is a CUDA device."""
        return self.device.startswith("cuda")


@dataclass(frozen=True, slots=True)
class Plan:
    """A whole plan: settings, strategies, models and targets, each in file order."""

    strategies: tuple[str, ...]
    models: tuple[ModelEntry, ...]
    targets: tuple[TargetEntry, ...]
    settings: Settings = Settings()


@dataclass(frozen=True, slots=True)
class Job:
    """One tune: a model on a target with a strategy, under the plan's settings."""

    model: ModelEntry
    target: TargetEntry
    strategy: str
    settings: Settings = Settings()

    @property
    def parts(self) -> tuple[str, str, str]:
        """The filesystem-safe ``(model, target, strategy)`` names."""
        return safe_name(self.model.name), safe_name(self.target.label), safe_name(self.strategy)

    @property
    def job_id(self) -> str:
        """``<model>/<target>/<strategy>``, also the job's folder.

        >>> Job(ModelEntry("mlp"), TargetEntry("cpu"), "latency-budget=5ms").job_id
        'mlp/cpu/latency-budget_5ms'
        """
        return "/".join(self.parts)

    @property
    def backends(self) -> tuple[str, ...] | None:
        """The backends this job tries: the target's, else the plan's (``None``: all)."""
        return self.target.backends if self.target.backends is not None else self.settings.backends

    @property
    def max_batch_size(self) -> int | None:
        """The largest batch size: the target's, else the plan's."""
        if self.target.max_batch_size is not None:
            return self.target.max_batch_size
        return self.settings.max_batch_size

    @property
    def tuning(self) -> TuneChoices:
        """Each precision choice from the model, else the target, else the plan.

        >>> model = ModelEntry("mlp", tuning=TuneChoices(min_top1=0.97))
        >>> target = TargetEntry("cpu", tuning=TuneChoices(search="wide", min_top1=0.9))
        >>> Job(model, target, "min-latency").tuning.argv()
        ('--search', 'wide', '--min-top1', '0.97')
        """
        return self.model.tuning.over(self.target.tuning).over(self.settings.tuning)


def entry_key(job: Job) -> str:
    """A stable hash of what decides the job's result (not retries, plot or CPUs).

    >>> a = Job(ModelEntry("mlp"), TargetEntry("cpu"), "min-latency")
    >>> entry_key(a) == entry_key(Job(ModelEntry("mlp"), TargetEntry("cpu", num_cpus=4),
    ...                                "min-latency"))
    True
    >>> entry_key(a) == entry_key(Job(ModelEntry("mlp"), TargetEntry("cpu"), "max-throughput"))
    False
    """
    text = json.dumps(_job_facts(job), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _job_facts(job: Job) -> dict[str, Any]:
    """What decides a job's result, as JSON-able values."""
    stated = job.tuning.facts()  # absent when none: keys of plans without them are unchanged
    return {
        **({"tuning": stated} if stated else {}),
        "model": job.model.name,
        "factory": job.model.factory,
        "input_shapes": [list(s) for s in job.model.input_shapes],
        "dtypes": list(job.model.dtypes),
        "device": job.target.device,
        "accelerator_type": job.target.accelerator_type,
        "strategy": job.strategy,
        "backends": None if job.backends is None else list(job.backends),
        "max_batch_size": job.max_batch_size,
    }
