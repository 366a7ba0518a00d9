"""Confidence-based comparison of two profiled backends: a win must be significant.

Rules:
- a backend's per-sample *cost* is its latency per call in ms for a latency metric and its
  latency per sample (ms / batch size) for a throughput metric; lower cost is better, and
  ``a``'s speedup over ``b`` is ``stat(cost_b) / stat(cost_a)``;
- the interval is paired when both results carry interleaved-round samples
  (``rounds_ms``, aligned by round index from the first round); otherwise it is unpaired
  over the raw samples ``samples_ms``; a result without samples counts as one sample of its
  metric, and an interval with a single sample on a side collapses onto its point;
- ``a`` beats ``b`` only when the whole interval of its speedup lies above
  ``1 + min_speedup``; anything else is a tie, which the fold gives to the preferred one
  (the baseline, then the earlier candidate);
- the computation is canonical: the interval for ``(b, a)`` is the inverse of the one for
  ``(a, b)``, so "a beats b" and "b beats a" never both hold, and a result never beats
  itself (identical data give the point interval at exactly 1);
- intervals are memoised on the data they depend on (a pure function's cache: the fold
  and the rounds' judge ask for the same pair's interval repeatedly);
- the point estimate needs no resampling, and the interval always contains it: a point at
  or below ``1 + min_speedup`` already means "does not beat", and a point above it "not
  clearly slower", so those verdicts skip the bootstrap and are exactly the ones the
  interval would give;
- likewise every resample's ratio, hence the whole interval, lies within bounds read off
  the samples' extremes (:func:`aitune_fp.core.stats.bootstrap.ratio_bounds`): when even the
  lowest possible ratio is past the threshold (by more than rounding, ``BOUND_SLACK``),
  ``a`` beats ``b`` whatever the resamples, and when even the highest is at or below it,
  ``a`` is clearly not faster; a clear gap (dominating samples) is decided without
  resampling, and the verdict is still exactly the interval's.

Longer than 260 lines: the confident comparison's rule and the lines explaining it share its
figures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from aitune_fp.core.records import BackendProfilingResult
from aitune_fp.core.stats.bootstrap import (
    Interval,
    ratio_bounds,
    ratio_interval,
    ratio_point,
)
from aitune_fp.core.stats.prng import derive
from aitune_fp.core.stats.statistics import sorted_statistic

MetricKind = Literal["throughput", "latency"]
Costs = tuple[float, ...]
Key = tuple[Costs, Costs]
METRIC_KINDS: tuple[MetricKind, ...] = ("throughput", "latency")


@dataclass(frozen=True, slots=True)
class ConfidenceRule:
    """How sure a win must be: confidence level, margin, resamples, seed and statistic.

    The defaults: 90 % intervals (so the lower end is a one-sided 95 % bound) from 1000
    resamples of the 20 %-trimmed mean, seed 0, and a 1 % margin: a candidate wins when
    it is at least 1.01× as fast with 95 % one-sided confidence. ``paired_statistic``, when
    set, replaces ``statistic`` for paired interleaved rounds (``confident`` sets the
    median). They were chosen with ``benchmarks/decision_quality.py`` (see
    ``docs/decision-quality.md``).

    >>> ConfidenceRule(min_speedup=-0.1)
    Traceback (most recent call last):
    ...
    ValueError: min_speedup must be a finite number >= 0, got -0.1
    """

    confidence: float = 0.90
    min_speedup: float = 0.01
    resamples: int = 1000
    seed: int = 0
    statistic: str = "trimmed"
    paired_statistic: str | None = None

    def __post_init__(self) -> None:
        if not 0.0 < self.confidence < 1.0:
            raise ValueError(f"confidence must be within (0, 1), got {self.confidence!r}")
        if not math.isfinite(self.min_speedup) or self.min_speedup < 0.0:
            raise ValueError(f"min_speedup must be a finite number >= 0, got {self.min_speedup!r}")
        if isinstance(self.resamples, bool) or self.resamples < 10:
            raise ValueError(f"resamples must be an integer >= 10, got {self.resamples!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be an integer >= 0, got {self.seed!r}")
        sorted_statistic(self.statistic)
        if self.paired_statistic is not None:
            sorted_statistic(self.paired_statistic)

    @property
    def round_statistic(self) -> str:
        """The statistic of paired interleaved rounds: ``paired_statistic`` or ``statistic``.

        >>> ConfidenceRule().round_statistic
        'trimmed'
        >>> ConfidenceRule(paired_statistic="median").round_statistic
        'median'
        """
        return self.paired_statistic or self.statistic

    @property
    def threshold(self) -> float:
        """The speedup an interval must lie strictly above: ``1 + min_speedup``."""
        return 1.0 + self.min_speedup


def check_kind(kind: str) -> MetricKind:
    """``kind`` when it is ``throughput`` or ``latency``, else a ``ValueError``."""
    for known in METRIC_KINDS:
        if kind == known:
            return known
    raise ValueError(f"metric kind must be 'throughput' or 'latency', got {kind!r}")


def costs(kind: MetricKind, result: BackendProfilingResult) -> tuple[float, ...]:
    """Per-sample costs of the raw samples: ms per call (latency), ms per sample (throughput).

    Without raw samples the metric stands in as one sample (``1000 / metric`` ms per
    sample for a throughput), so every result has a cost and comparisons stay consistent.

    >>> r = BackendProfilingResult(1.0, 4, 2.0, 2000.0, samples_ms=(2.0, 4.0))
    >>> costs("throughput", r), costs("latency", r)
    ((0.5, 1.0), (2.0, 4.0))
    >>> costs("throughput", BackendProfilingResult(500.0, 4, 8.0, 500.0))
    (2.0,)
    """
    if not result.samples_ms:
        return (1000.0 / result.metric,) if kind == "throughput" else (result.metric,)
    return _per_sample(kind, result, result.samples_ms)


def round_costs(kind: MetricKind, result: BackendProfilingResult) -> tuple[float, ...]:
    """Per-sample costs of the interleaved-round samples (empty when there were none)."""
    return _per_sample(kind, result, result.rounds_ms)


def _per_sample(
    kind: MetricKind, result: BackendProfilingResult, samples: tuple[float, ...]
) -> tuple[float, ...]:
    if kind == "latency":
        return samples
    bs = result.selected_batch_size
    return tuple(s / bs for s in samples)


def _canonical_key(kind: MetricKind, r: BackendProfilingResult) -> Key:
    """Everything the interval depends on: round costs, then sample costs."""
    return (round_costs(kind, r), costs(kind, r))


def _oriented(
    rule: ConfidenceRule, kind: MetricKind, a: BackendProfilingResult, b: BackendProfilingResult
) -> Interval:
    """``a``'s speedup over ``b``, computed in the given orientation."""
    return _memo(rule, kind, _canonical_key(kind, a), _canonical_key(kind, b))


def _data(rule: ConfidenceRule, ka: Key, kb: Key) -> tuple[Costs, Costs, str, bool]:
    """What the speedup of ``a`` over ``b`` is computed from: ``(numerator, denominator,
    statistic, paired)``; the round costs, paired, when both sides have at least two
    rounds, else the sweep costs, unpaired."""
    (ra, ca), (rb, cb) = ka, kb
    if min(len(ra), len(rb)) >= 2:
        return rb, ra, rule.round_statistic, True
    return cb, ca, rule.statistic, False


@lru_cache(maxsize=512)
def _memo(rule: ConfidenceRule, kind: MetricKind, ka: Key, kb: Key) -> Interval:
    """The interval for two results' data; memoised, as the fold asks for it repeatedly."""
    top, bottom, statistic, paired = _data(rule, ka, kb)
    return ratio_interval(
        top,
        bottom,
        statistic=statistic,
        confidence=rule.confidence,
        resamples=rule.resamples,
        key=derive(rule.seed),
        paired=paired,
    )


def speedup_interval(
    rule: ConfidenceRule, kind: MetricKind, a: BackendProfilingResult, b: BackendProfilingResult
) -> Interval:
    """The interval of ``a``'s speedup over ``b`` (> 1: ``a`` is faster).

    >>> fast = BackendProfilingResult(1.0, 1, 1.0, 1000.0, samples_ms=(1.0, 1.01, 0.99, 1.0))
    >>> slow = BackendProfilingResult(2.0, 1, 2.0, 500.0, samples_ms=(2.0, 2.02, 1.98, 2.0))
    >>> ci = speedup_interval(ConfidenceRule(), "latency", fast, slow)
    >>> ci.point, ci.low > 1.9
    (2.0, True)
    >>> speedup_interval(ConfidenceRule(), "latency", slow, fast) == ci.inverse()
    True
    """
    ka, kb = _canonical_key(kind, a), _canonical_key(kind, b)
    if ka == kb:
        return Interval(1.0, 1.0, 1.0, rule.confidence, 0)
    if ka < kb:
        return _oriented(rule, kind, a, b)
    return _oriented(rule, kind, b, a).inverse()


def _point(rule: ConfidenceRule, ka: Key, kb: Key) -> float:
    """The point estimate of :func:`_memo`'s interval, without resampling."""
    top, bottom, statistic, paired = _data(rule, ka, kb)
    return ratio_point(top, bottom, statistic=statistic, paired=paired)


BOUND_SLACK = 1e-9
"""Relative slack on :func:`speedup_bounds` covering the rounding of the statistics."""


def _bounds(rule: ConfidenceRule, ka: Key, kb: Key) -> tuple[float, float]:
    """The bounds on :func:`_memo`'s interval, from the samples' extremes."""
    top, bottom, statistic, paired = _data(rule, ka, kb)
    return ratio_bounds(top, bottom, statistic=statistic, paired=paired)


def speedup_bounds(
    rule: ConfidenceRule, kind: MetricKind, a: BackendProfilingResult, b: BackendProfilingResult
) -> tuple[float, float]:
    """Bounds ``(lo, hi)`` that contain ``speedup_interval(rule, kind, a, b)`` (up to rounding).

    >>> fast = BackendProfilingResult(1.0, 1, 1.0, 1000.0, samples_ms=(1.0, 1.1, 0.9))
    >>> slow = BackendProfilingResult(2.0, 1, 2.0, 500.0, samples_ms=(2.0, 2.2, 1.8))
    >>> lo, hi = speedup_bounds(ConfidenceRule(), "latency", fast, slow)
    >>> ci = speedup_interval(ConfidenceRule(), "latency", fast, slow)
    >>> round(lo, 3), lo <= ci.low <= ci.high <= hi, round(hi, 3)
    (1.636, True, 2.444)
    """
    ka, kb = _canonical_key(kind, a), _canonical_key(kind, b)
    if ka == kb:
        return 1.0, 1.0
    if ka < kb:
        return _bounds(rule, ka, kb)
    lo, hi = _bounds(rule, kb, ka)
    return 1.0 / hi, 1.0 / lo


def speedup_point(
    rule: ConfidenceRule, kind: MetricKind, a: BackendProfilingResult, b: BackendProfilingResult
) -> float:
    """``speedup_interval(rule, kind, a, b).point``, computed without any resampling.

    >>> fast = BackendProfilingResult(1.0, 1, 1.0, 1000.0, samples_ms=(1.0, 1.01, 0.99, 1.0))
    >>> slow = BackendProfilingResult(2.0, 1, 2.0, 500.0, samples_ms=(2.0, 2.02, 1.98, 2.0))
    >>> rule = ConfidenceRule()
    >>> [speedup_point(rule, "latency", x, y) == speedup_interval(rule, "latency", x, y).point
    ...  for x, y in ((fast, slow), (slow, fast), (fast, fast))]
    [True, True, True]
    """
    ka, kb = _canonical_key(kind, a), _canonical_key(kind, b)
    if ka == kb:
        return 1.0
    if ka < kb:
        return _point(rule, ka, kb)
    return 1.0 / _point(rule, kb, ka)


def beats(
    rule: ConfidenceRule, kind: MetricKind, a: BackendProfilingResult, b: BackendProfilingResult
) -> bool:
    """``a`` is significantly faster than ``b``: its interval lies above ``1 + min_speedup``.

    The interval contains the point estimate, so a point at or below the threshold settles
    it without resampling.
    """
    if speedup_point(rule, kind, a, b) <= rule.threshold:
        return False
    if speedup_bounds(rule, kind, a, b)[0] > rule.threshold * (1.0 + BOUND_SLACK):
        return True
    return speedup_interval(rule, kind, a, b).low > rule.threshold


def clearly_not_faster(
    rule: ConfidenceRule, kind: MetricKind, a: BackendProfilingResult, b: BackendProfilingResult
) -> bool:
    """No plausible speedup of ``a`` over ``b`` reaches the margin: interval high <= threshold.

    When this holds, more measurement cannot make ``a`` beat ``b`` at this confidence in
    expectation, so a tie (or a loss) for ``a`` is a settled decision. A point estimate
    above the threshold rules it out without resampling.
    """
    if speedup_point(rule, kind, a, b) > rule.threshold:
        return False
    if speedup_bounds(rule, kind, a, b)[1] * (1.0 + BOUND_SLACK) <= rule.threshold:
        return True
    return speedup_interval(rule, kind, a, b).high <= rule.threshold
