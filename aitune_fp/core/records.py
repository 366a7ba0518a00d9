"""Immutable records shared by the whole library.

Rules:
- every record is a frozen, slotted dataclass; invariants are checked once, at
  construction, and a violation raises ``ValueError`` naming the offending value;
- collections are tuples or pyrsistent maps, never lists or dicts, so records are
  hashable and safe to share;
- failures are values (:class:`BackendFailure`), never exceptions.
Longer than 260 lines: the shared record types are one vocabulary, each of them small.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from pyrsistent import PMap, pmap
from returns.result import Result

from aitune_fp.core.measure.generation_profile import GenerationProfile, check_points

STAGES: Final = frozenset({"build", "export", "validate", "profile", "measure", "baseline"})


def _freeze_latencies(latencies: Mapping[int, Sequence[float]]) -> PMap[int, tuple[float, ...]]:
    """Return ``latencies`` as a persistent map of tuples after checking every value.

    >>> _freeze_latencies({1: [1.0, 2.0]})[1]
    (1.0, 2.0)
    """
    if not latencies:
        raise ValueError("a Profile needs at least one batch size with samples, got none")
    frozen: dict[int, tuple[float, ...]] = {}
    for batch_size, samples in latencies.items():
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch size must be an integer >= 1, got {batch_size!r}")
        values = tuple(float(s) for s in samples)
        if not values:
            raise ValueError(f"batch size {batch_size} has no latency samples")
        bad = [v for v in values if not math.isfinite(v) or v <= 0.0]
        if bad:
            raise ValueError(
                f"latencies must be finite and > 0 ms, batch size {batch_size} has {bad[0]!r}"
            )
        frozen[batch_size] = values
    return pmap(frozen)


def check_peak_memory(value: float | None) -> float | None:
    """``value`` as a float when it is ``None`` or a finite number ``>= 0`` (MiB).

    >>> check_peak_memory(3), check_peak_memory(None)
    (3.0, None)
    >>> check_peak_memory(-1.0)
    Traceback (most recent call last):
    ...
    ValueError: peak_memory_mb must be None or a finite number >= 0 (MiB), got -1.0
    """
    if value is None:
        return None
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or value < 0:
        raise ValueError(f"peak_memory_mb must be None or a finite number >= 0 (MiB), got {value}")
    return float(value)


@dataclass(frozen=True, slots=True)
class MeasuredBatch:
    """How one batch size was measured, beyond its timed samples: its warm-up (calls, why it
    stopped, and its latencies in ms: marked as warm-up, never used for a metric; empty when
    not kept) and, for a batch size re-measured after the others, its first figure when the
    two differed beyond noise (``None`` otherwise; the re-measured figure counts).

    >>> MeasuredBatch(3, "fixed: 3 warm-up calls", (2.0, 1.5, 1.0)).warmup_calls
    3
    >>> MeasuredBatch(2, "fixed", (1.0,))
    Traceback (most recent call last):
    ...
    ValueError: warmup_ms must be empty or hold warmup_calls (2) samples, got 1
    """

    warmup_calls: int
    warmup_reason: str
    warmup_ms: tuple[float, ...] = ()
    first_pass_ms: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.warmup_calls, bool) or self.warmup_calls < 0:
            raise ValueError(f"warmup_calls must be an integer >= 0, got {self.warmup_calls!r}")
        warm = tuple(float(v) for v in self.warmup_ms)
        if warm and len(warm) != self.warmup_calls:
            raise ValueError(
                f"warmup_ms must be empty or hold warmup_calls ({self.warmup_calls}) "
                f"samples, got {len(warm)}"
            )
        object.__setattr__(self, "warmup_ms", _freeze_latencies({1: warm})[1] if warm else ())
        if self.first_pass_ms is not None:
            first = _freeze_latencies({1: self.first_pass_ms})[1]
            object.__setattr__(self, "first_pass_ms", first)


@dataclass(frozen=True, slots=True)
class Profile:
    """One backend's raw per-call latencies in ms, per batch size, warm-up excluded.

    ``sweep_stop`` says why the batch-size sweep ended and ``input_mode`` how inputs were
    fed; both are informative and never used by selection. ``rounds_ms`` holds, per batch
    size, the samples of the interleaved final rounds (one per round, aligned by round
    index with every other profile of the same tune; empty when there were no rounds).
    ``peak_memory_mb`` is the memory the backend added while it ran, in MiB: the peak
    during its profiled calls minus the level before it was built (see
    :mod:`aitune_fp.effects.measure.memory`); ``None`` when it was not measured. ``batches`` holds,
    per measured batch size, how it was measured (:class:`MeasuredBatch`: its warm-up and
    first-pass figure; empty for a profile not made by the profiler). ``stopped_early`` is
    the early-stop rule's one line naming the batch sizes that stopped after their probe,
    clear losers there (:mod:`aitune_fp.core.measure.early_stop`; ``None``: none did).
    ``accuracy`` holds the candidate's error figures against eager (:mod:`aitune_fp.core.accuracy`).
    ``generation`` holds a generation candidate's TTFT/ITL points (``None`` for a forward call).

    >>> p = Profile("eager", {1: [2.0, 2.0], 2: [3.0]})
    >>> p.batch_sizes
    (1, 2)
    >>> Profile("eager", {0: [1.0]})
    Traceback (most recent call last):
    ...
    ValueError: batch size must be an integer >= 1, got 0
    """

    backend: str
    latencies_ms: Mapping[int, Sequence[float]]
    sweep_stop: str = "plan exhausted"
    input_mode: str = "rotating"
    rounds_ms: Mapping[int, Sequence[float]] = field(default_factory=pmap)
    peak_memory_mb: float | None = None
    batches: Mapping[int, MeasuredBatch] = field(default_factory=pmap)
    stopped_early: str | None = None
    accuracy: Mapping[str, float] = field(default_factory=pmap)
    generation: GenerationProfile | None = None

    def __post_init__(self) -> None:
        figures = {str(k): float(v) for k, v in self.accuracy.items()}
        object.__setattr__(self, "accuracy", pmap(figures))
        if not isinstance(self.backend, str) or not self.backend:
            raise ValueError(f"a Profile needs a non-empty backend name, got {self.backend!r}")
        object.__setattr__(self, "latencies_ms", _freeze_latencies(self.latencies_ms))
        rounds = _freeze_latencies(self.rounds_ms) if self.rounds_ms else pmap()
        object.__setattr__(self, "rounds_ms", rounds)
        object.__setattr__(self, "peak_memory_mb", check_peak_memory(self.peak_memory_mb))
        object.__setattr__(self, "batches", pmap(self.batches))
        extra = sorted(set(self.batches) - set(self.latencies_ms), key=repr)
        if extra:
            raise ValueError(f"batches names batch sizes that were not measured: {extra}")
        check_points(self.generation, self.latencies_ms)

    @property
    def batch_sizes(self) -> tuple[int, ...]:
        """The measured batch sizes, ascending."""
        return tuple(sorted(self.latencies_ms))

    def samples(self, batch_size: int) -> tuple[float, ...]:
        """The raw samples at ``batch_size`` (a ``KeyError`` when it was not measured)."""
        return tuple(self.latencies_ms[batch_size])


@dataclass(frozen=True, slots=True)
class BackendFailure:
    """A backend that dropped out: which backend, at which stage (one of :data:`STAGES`;
    ``export`` when it cannot export the inputs' containers), and why.

    >>> BackendFailure("onnxruntime", "build", "onnxruntime is not installed").describe()
    'onnxruntime failed at build: onnxruntime is not installed'
    """

    backend: str
    stage: str
    message: str

    def __post_init__(self) -> None:
        if self.stage not in STAGES:
            raise ValueError(f"stage must be one of {sorted(STAGES)}, got {self.stage!r}")

    def describe(self) -> str:
        """One human line naming backend, stage and reason."""
        return f"{self.backend} failed at {self.stage}: {self.message}"


@dataclass(frozen=True, slots=True)
class BackendProfilingResult:
    """The scalar a strategy compares, with where it came from.

    ``metric`` is what ``compare`` orders; ``latency`` (mean ms per call) and
    ``throughput`` (samples/s) describe the selected batch size; ``samples_ms`` keeps the
    raw samples at that batch size so statistics can be re-derived offline; ``rounds_ms``
    the interleaved-round samples at that batch size, when the profile has them;
    ``peak_memory_mb`` the profile's peak memory in MiB (``None`` when not measured).

    >>> r = BackendProfilingResult(metric=100.0, selected_batch_size=4, latency=40.0,
    ...                            throughput=100.0)
    >>> r.to_json_dict("throughput")
    {'selected_batch_size': 4, 'throughput': 100.0, 'latency': 40.0}
    """

    metric: float
    selected_batch_size: int
    latency: float
    throughput: float
    samples_ms: tuple[float, ...] = field(default=(), compare=False)
    rounds_ms: tuple[float, ...] = field(default=(), compare=False)
    peak_memory_mb: float | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "peak_memory_mb", check_peak_memory(self.peak_memory_mb))
        if not math.isfinite(self.metric) or self.metric <= 0.0:
            raise ValueError(f"metric must be finite and > 0, got {self.metric!r}")
        if self.selected_batch_size < 1:
            raise ValueError(f"selected_batch_size must be >= 1, got {self.selected_batch_size}")
        object.__setattr__(self, "samples_ms", tuple(float(s) for s in self.samples_ms))
        object.__setattr__(self, "rounds_ms", tuple(float(s) for s in self.rounds_ms))

    def to_json_dict(self, metric_label: str) -> dict[str, int | float]:
        """Fields stored for this backend in a run's strategy results."""
        out: dict[str, int | float] = {
            "selected_batch_size": self.selected_batch_size,
            metric_label: self.metric,
        }
        out.setdefault("latency", self.latency)
        out.setdefault("throughput", self.throughput)
        return out


@dataclass(frozen=True, slots=True)
class BackendPerfResult:
    """A candidate's metric against the baseline's; ``passed`` is ``speedup >= 1``."""

    backend_description: str
    metric: float
    baseline_metric: float
    speedup: float
    passed: bool


@dataclass(frozen=True, slots=True)
class Scored:
    """A backend's name with the result its strategy measured for it.

    >>> Scored("eager", BackendProfilingResult(2.0, 1, 0.5, 2.0)).result.metric
    2.0
    """

    backend: str
    result: BackendProfilingResult


@dataclass(frozen=True, slots=True)
class Selection:
    """The outcome of a successful :func:`aitune_fp.tune`.

    ``backend`` names the winner (the baseline's backend when ``fell_back_to_baseline``);
    ``perf_results`` and ``failures`` are in candidate order; ``ranking`` lists every
    candidate that produced a metric, in candidate order; ``notes`` holds non-fatal events
    such as a baseline that failed.
    """

    backend: str
    result: BackendProfilingResult
    fell_back_to_baseline: bool
    perf_results: tuple[BackendPerfResult, ...] = ()
    failures: tuple[BackendFailure, ...] = ()
    baseline: Scored | None = None
    ranking: tuple[Scored, ...] = ()
    considered: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TuneError:
    """Why no backend could be selected, with every failure that led there."""

    message: str
    failures: tuple[BackendFailure, ...] = ()
    considered: tuple[str, ...] = ()


Candidate = Result[Profile, BackendFailure]
"""A profiled backend, or why it dropped out: what the fold consumes."""


@dataclass(frozen=True, slots=True)
class TuneState:
    """Everything the fold has learnt so far; ``best`` is the current leader."""

    baseline: Scored | None = None
    best: Scored | None = None
    ranking: tuple[Scored, ...] = ()
    perf_results: tuple[BackendPerfResult, ...] = ()
    failures: tuple[BackendFailure, ...] = ()
    considered: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
