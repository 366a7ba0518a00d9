"""The :class:`Strategy` record: a selection rule as a value made of pure functions.

Rules:
- a strategy is never subclassed; variants come from ``dataclasses.replace`` or from
  factories using partial application (``latency_budget(5.0)``);
- ``measure`` turns a :class:`~aitune_fp.core.records.Profile` into the scalar result the
  strategy compares, or a ``BackendFailure`` at stage ``measure``;
- ``compare(a, b)`` is "a is strictly better than b" and must be a strict weak order;
- ``speedup(result, baseline)`` is > 1 exactly when ``compare(result, baseline)``;
- ``plan`` says what to measure (batch sizes, warm-up and timed calls, stop rules);
- ``no_winner_message``, when set, makes "no candidate succeeded" a failure even when a
  baseline exists (the latency budget's rule);
- ``confidence``, when set, is the rule of a statistical ``compare`` (see
  :mod:`aitune_fp.core.stats.confidence`): then ``compare(a, b)`` only implies
  ``speedup(a, b) > 1``, and ties need not be transitive;
- ``settled``, when set, lets the fold stop consuming candidates once it holds for the
  state (``first_wins``): later candidates are never built;
- ``admits``, when set, says which backend names may compete (``one_backend``); a driver
  should not build the others, and the fold records them as failures (not admitted).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from pyrsistent import PMap, pmap
from returns.result import Result

from aitune_fp.core.measure.stop_rules import (
    CallRule,
    SweepRule,
    fixed_steps,
    throughput_saturation,
)
from aitune_fp.core.records import BackendFailure, BackendProfilingResult, Profile, TuneState
from aitune_fp.core.rounds.rounds_plan import RoundsPlan
from aitune_fp.core.stats.confidence import ConfidenceRule, MetricKind, check_kind

Measure = Callable[[Profile], Result[BackendProfilingResult, BackendFailure]]
Compare = Callable[[BackendProfilingResult, BackendProfilingResult], bool]
Speedup = Callable[[BackendProfilingResult, BackendProfilingResult], float]
ParamValue = float | int | str | bool
Settled = Callable[[TuneState], bool]
Admits = Callable[[str], bool]

MAX_POWER_OF_TWO = 20


def power_of_two_batch_sizes(max_batch_size: int) -> tuple[int, ...]:
    """Powers of two ``1 … 2**20`` up to ``max_batch_size``, plus ``max_batch_size`` itself.

    >>> power_of_two_batch_sizes(12)
    (1, 2, 4, 8, 12)
    >>> power_of_two_batch_sizes(1)
    (1,)
    """
    if max_batch_size < 1:
        raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
    sizes = {2**k for k in range(MAX_POWER_OF_TWO + 1) if 2**k <= max_batch_size}
    sizes.add(max_batch_size)
    return tuple(sorted(sizes))


@dataclass(frozen=True, slots=True)
class ProfilingPlan:
    """What to measure: batch sizes, per-call rule and sweep rule.

    ``batching=False`` measures batch size 1 only (no max-batch search). ``max_batch_size``
    caps the sweep (``None``: found by sweeping the baseline). ``rounds``, when set, asks
    for interleaved final rounds of the baseline and the leading candidates after the
    sweeps (see :mod:`aitune_fp.core.rounds.rounds_plan`); they need a strategy with a
    ``confidence`` rule.

    >>> ProfilingPlan().batch_sizes(5)
    (1, 2, 4, 5)
    >>> ProfilingPlan(batching=False).batch_sizes(64)
    (1,)
    """

    batching: bool = True
    call_rule: CallRule = field(default_factory=fixed_steps)
    sweep_rule: SweepRule = field(default_factory=throughput_saturation)
    max_batch_size: int | None = None
    rounds: RoundsPlan | None = None

    def __post_init__(self) -> None:
        if self.max_batch_size is not None and self.max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1 or None, got {self.max_batch_size}")

    def batch_sizes(self, max_batch_size: int) -> tuple[int, ...]:
        """The batch sizes to sweep given the largest one that fits."""
        if not self.batching:
            return (1,)
        cap = (
            max_batch_size
            if self.max_batch_size is None
            else min(max_batch_size, self.max_batch_size)
        )
        return power_of_two_batch_sizes(max(cap, 1))


@dataclass(frozen=True, slots=True)
class Metric:
    """What a strategy's metric is: its label and unit, how to format it, and its kind.

    ``kind`` says how the metric relates to the raw samples (``throughput``: samples/s
    from ms per call and batch size; ``latency``: ms per call), which a statistical
    compare needs; ``None`` for a custom metric that cannot be compared statistically.

    >>> THROUGHPUT.kind, format(1.0, LATENCY.fmt)
    ('throughput', '1.000')
    >>> Metric("memory", "MB", ".1%x")
    Traceback (most recent call last):
    ...
    ValueError: Invalid format specifier '.1%x' for object of type 'float'
    """

    label: str
    unit: str
    fmt: str
    kind: MetricKind | None = None

    def __post_init__(self) -> None:
        format(1.0, self.fmt)  # fail early on a bad format spec
        if self.kind is not None:
            check_kind(self.kind)


THROUGHPUT: Final = Metric("throughput", "samples/s", ".2f", "throughput")
LATENCY: Final = Metric("latency", "ms", ".3f", "latency")


@dataclass(frozen=True, slots=True)
class Strategy:
    """A selection rule: how to measure, how to compare, how to state a speedup.

    >>> import dataclasses
    >>> from aitune_fp import max_throughput
    >>> dataclasses.replace(max_throughput, validate_performance=False).validate_performance
    False
    """

    name: str
    title: str
    description: str
    metric: Metric
    measure: Measure
    compare: Compare
    speedup: Speedup
    plan: ProfilingPlan = field(default_factory=ProfilingPlan)
    validate_performance: bool = True
    params: PMap[str, ParamValue] = field(default_factory=pmap)
    no_winner_message: str | None = None
    confidence: ConfidenceRule | None = None
    settled: Settled | None = None
    admits: Admits | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", pmap(self.params))

    @property
    def metric_label(self) -> str:
        """The metric's label (``throughput``, ``latency``, …), as reports show it."""
        return self.metric.label

    @property
    def metric_unit(self) -> str:
        """The metric's unit (``samples/s``, ``ms``, …)."""
        return self.metric.unit

    @property
    def value_fmt(self) -> str:
        """The format spec of a metric value (``.2f``)."""
        return self.metric.fmt

    def fmt(self, value: float) -> str:
        """Format a metric value with its unit, e.g. ``12.34 samples/s``.

        >>> from aitune_fp import max_throughput
        >>> max_throughput.fmt(12.345)
        '12.35 samples/s'
        """
        return f"{format(value, self.metric.fmt)} {self.metric.unit}"
