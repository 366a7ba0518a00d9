"""Stop clear losers early: a pure rule that ends a batch size's measurement after a probe.

Successive halving stops clear losers after a short first measurement instead of measuring
every candidate fully. Here, at each batch size of a candidate's sweep, the profiler first
times a short *probe* (``probe_calls`` timed calls after the warm-up); the rule, stepped
like the stop rules (``rule.step(state, probe) -> (state, Decision)``), then says whether
the rest of that batch size's timed calls can be skipped.

Rules:
- the probe's result is the strategy's own ``measure`` of a profile holding the probe
  alone; the candidate is *clearly beaten* at that batch size when the current best (the
  fold's leader so far, or the baseline; given to :meth:`EarlyStopRule.start`) beats it
  under the strategy's own ``compare`` **and** the interval of the best's speedup over it
  lies entirely above ``1 + margin``, computed as the confident comparison computes it
  (:func:`aitune_fp.core.stats.confidence.beats`: the strategy's ``ConfidenceRule`` when it has
  one, else the default rule with the strategy's statistic); close candidates keep going;
- a clearly beaten batch size stops after the probe, its probe samples kept (they are its
  samples); the sweep goes on to the next batch size, so a candidate that scales better
  at larger batches is never lost, only its hopeless batch sizes are cut short;
- it never stops the baseline, never stops without a current best, never stops on a probe
  of fewer than 2 samples or one the strategy cannot measure, and never stops a probe
  whose samples are all at least as good as the best's (it cannot be clearly beaten);
- a strategy whose metric is neither a latency nor a throughput has no speedup interval:
  :func:`early_stop_for` gives ``None`` (no early stops);
- each stop says why in one line, and :meth:`EarlyStopRule.stopped_early` sums up a
  candidate's stops in one line (the run record's ``stopped_early``; ``None`` when it
  never stopped early).

Rate on the synthetic noise model (``python benchmarks/early_stop.py``, 2000 trials, seed
1, probe 5 of 20 timed calls, margin 10 %): the true best was stopped in 0.15 % of the
trials (stated bound :data:`WINNER_STOP_RATE`: 1 %), a backend within 5 % of it in 0.5 %,
for 0.77× the timed calls; the wrong-pick rate went 7.2 % -> 6.5 % with ``min_latency``
and 3.8 % -> 4.0 % with ``confident(min_latency)`` (mean regret 1.00 % -> 0.89 % and
0.65 % -> 0.66 %). See ``docs/decision-quality.md``.

>>> from aitune_fp.core.strategies import min_latency
>>> rule = early_stop_for(min_latency)
>>> best = min_latency.measure(Profile("ort", {1: [1.0, 1.02, 0.98, 1.01, 0.99]})).unwrap()
>>> state = rule.start("ort", best, baseline=False)
>>> state, decision = rule.step(state, Probe(1, (2.0, 2.04, 1.96, 2.02, 1.98)))
>>> decision.reason
'clearly beaten at batch size 1 after 5 calls: ort is 2.00× as fast (90 % interval above 1.1×)'
>>> rule.stopped_early(state)
'batch size 1: ort 2.00× as fast after 5 calls (90 % interval above 1.1×)'
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from aitune_fp.core.measure.stop_rules import CONTINUE, Decision
from aitune_fp.core.records import BackendProfilingResult, Profile
from aitune_fp.core.stats.confidence import ConfidenceRule, MetricKind, beats, speedup_point
from aitune_fp.core.strategies.confident import default_statistic, metric_kind
from aitune_fp.core.strategy import Strategy

WINNER_STOP_RATE = 0.01
"""The most often, on the synthetic noise model, that the default rule stops the true
best backend at its selected batch size (the benchmark measures it and prints it)."""


@dataclass(frozen=True, slots=True)
class Probe:
    """The short first measurement of a candidate at one batch size: its latencies (ms)."""

    batch_size: int
    samples_ms: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class EarlyStopState:
    """The current best a candidate is judged against, and its batch sizes stopped so far.

    ``stops`` holds ``(batch_size, best's speedup, probe calls)`` for each early stop.
    """

    best_name: str | None
    best: BackendProfilingResult | None
    baseline: bool
    stops: tuple[tuple[int, float, int], ...] = ()


@dataclass(frozen=True, slots=True)
class EarlyStopRule:
    """Stop a batch size after its probe when the candidate is clearly beaten there.

    >>> from aitune_fp.core.strategies import max_throughput
    >>> EarlyStopRule(max_throughput, ConfidenceRule(), "throughput", margin=-0.5)
    Traceback (most recent call last):
    ...
    ValueError: margin must be a finite number >= 0, got -0.5
    """

    strategy: Strategy
    confidence: ConfidenceRule
    kind: MetricKind
    margin: float = 0.10
    probe_calls: int = 5

    def __post_init__(self) -> None:
        if not math.isfinite(self.margin) or self.margin < 0.0:
            raise ValueError(f"margin must be a finite number >= 0, got {self.margin!r}")
        if self.probe_calls < 2:
            raise ValueError(f"probe_calls must be >= 2, got {self.probe_calls}")

    @property
    def wide(self) -> ConfidenceRule:
        """The confidence rule with the margin as its minimum speedup (never below its own)."""
        return replace(self.confidence, min_speedup=max(self.margin, self.confidence.min_speedup))

    def start(
        self, best_name: str | None, best: BackendProfilingResult | None, *, baseline: bool
    ) -> EarlyStopState:
        """The state for one backend's sweep: the current best (if any), and whether this
        backend is the baseline."""
        return EarlyStopState(best_name, best, baseline)

    def beaten_by(self, state: EarlyStopState, probe: Probe) -> float | None:
        """The best's speedup over the probe when the probe is clearly beaten, else ``None``."""
        if state.baseline or state.best is None or len(probe.samples_ms) < 2:
            return None
        name = state.best_name or "best"
        measured = self.strategy.measure(Profile(name, {probe.batch_size: probe.samples_ms}))
        result = measured.value_or(None)
        if result is None or not self.strategy.compare(state.best, result):
            return None
        if not beats(self.wide, self.kind, state.best, result):
            return None
        return speedup_point(self.wide, self.kind, state.best, result)

    def step(self, state: EarlyStopState, probe: Probe) -> tuple[EarlyStopState, Decision]:
        """Judge one batch size's probe: stop there when clearly beaten, else go on."""
        speedup = self.beaten_by(state, probe)
        if speedup is None:
            return state, CONTINUE
        calls = len(probe.samples_ms)
        new = replace(state, stops=(*state.stops, (probe.batch_size, speedup, calls)))
        return new, Decision(
            True,
            f"clearly beaten at batch size {probe.batch_size} after {calls} calls: "
            f"{state.best_name or 'the best'} is {speedup:.2f}× as fast "
            f"({self._interval_text()})",
        )

    def stopped_early(self, state: EarlyStopState) -> str | None:
        """One line naming every batch size stopped early and why; ``None`` when none was."""
        if not state.stops:
            return None
        name = state.best_name or "the best"
        parts = [
            f"batch size {bs}: {name} {s:.2f}× as fast after {n} calls" for bs, s, n in state.stops
        ]
        return "; ".join(parts) + f" ({self._interval_text()})"

    def _interval_text(self) -> str:
        rule = self.wide
        return f"{rule.confidence * 100:g} % interval above {rule.threshold:g}×"


def early_stop_for(
    strategy: Strategy, *, margin: float = 0.10, probe_calls: int = 5
) -> EarlyStopRule | None:
    """The early-stop rule for ``strategy``, or ``None`` when its metric has no interval.

    The noise model is the strategy's own ``ConfidenceRule`` when it has one (a
    ``confident`` strategy), else the default rule with the strategy's statistic.

    >>> from aitune_fp.core.strategies import confident, max_throughput
    >>> early_stop_for(confident(max_throughput)).confidence.statistic
    'trimmed'
    """
    try:
        kind = metric_kind(strategy)
    except ValueError:
        return None
    rule = strategy.confidence or ConfidenceRule(statistic=default_statistic(strategy))
    return EarlyStopRule(strategy, rule, kind, margin=margin, probe_calls=probe_calls)


@dataclass(frozen=True, slots=True)
class EarlyStop:
    """The early-stop rule and the state a backend's sweep starts it from (the current best
    it is judged against): a plain value the session hands to a build."""

    rule: EarlyStopRule
    state: EarlyStopState
