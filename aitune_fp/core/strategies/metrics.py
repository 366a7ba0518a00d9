"""Shared pure helpers that strategies build their ``measure``/``compare``/``speedup`` from.

Rules (the reference's definitions, so results stay comparable with AITune):
- latency is the mean per-call time in ms at a batch size;
- throughput is ``batch_size * 1000 / mean latency`` samples/s;
- a result carries its profile's peak memory (``peak_memory_mb``) unchanged, so every
  strategy built on :func:`result_at` reports it;
- a speedup is a ratio nudged by one ulp when float rounding would hide a strict
  difference, so ``speedup(a, b) > 1`` holds exactly when ``a`` is strictly better.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

from aitune_fp.core.records import BackendProfilingResult, Profile
from aitune_fp.core.stats.statistics import mean, statistic_value


def result_at(
    profile: Profile,
    batch_size: int,
    metric: Callable[[int, float], float],
    statistic: str = "mean",
) -> BackendProfilingResult:
    """The result for ``batch_size`` of ``profile``, its metric given ``(bs, latency_ms)``,
    the latency by ``statistic`` (the reference's mean unless named).

    >>> p = Profile("x", {2: [4.0, 4.0]}, peak_memory_mb=12.5)
    >>> r = result_at(p, 2, lambda bs, ms: ms)
    >>> r.throughput, r.peak_memory_mb
    (500.0, 12.5)
    """
    samples = profile.samples(batch_size)
    latency = mean(samples) if statistic == "mean" else statistic_value(statistic, samples)
    throughput = batch_size * 1000.0 / latency
    return BackendProfilingResult(
        metric=metric(batch_size, latency),
        selected_batch_size=batch_size,
        latency=latency,
        throughput=throughput,
        samples_ms=samples,
        peak_memory_mb=profile.peak_memory_mb,
    )


def throughput_of(batch_size: int, mean_ms: float) -> float:
    """Samples per second of a batch size at a mean latency in ms.

    >>> throughput_of(8, 4.0)
    2000.0
    """
    return batch_size * 1000.0 / mean_ms


def latency_of(_batch_size: int, mean_ms: float) -> float:
    """The latency metric: the mean latency itself, in ms."""
    return mean_ms


def best_throughput(
    profile: Profile, batch_sizes: Iterable[int], statistic: str = "mean"
) -> BackendProfilingResult | None:
    """The highest-throughput result among ``batch_sizes`` (latency by ``statistic``);
    ties go to the smaller batch.

    >>> p = Profile("x", {1: [1.0], 2: [2.0], 4: [3.0]})
    >>> best_throughput(p, p.batch_sizes).selected_batch_size
    4
    """
    best: BackendProfilingResult | None = None
    for bs in sorted(batch_sizes):
        candidate = result_at(profile, bs, throughput_of, statistic)
        if best is None or candidate.metric > best.metric:
            best = candidate
    return best


def ordered_ratio(numerator: float, denominator: float) -> float:
    """``numerator / denominator``, nudged one ulp off 1.0 when rounding hid an inequality.

    >>> ordered_ratio(3.0, 2.0)
    1.5
    >>> ordered_ratio(1.0 + 2**-52, 1.0) > 1.0
    True
    >>> ordered_ratio(2.0, 2.0)
    1.0
    """
    ratio = numerator / denominator
    if numerator > denominator and ratio <= 1.0:
        return math.nextafter(1.0, math.inf)
    if numerator < denominator and ratio >= 1.0:
        return math.nextafter(1.0, 0.0)
    return ratio


def higher_is_better(a: BackendProfilingResult, b: BackendProfilingResult) -> bool:
    """``a`` is strictly better than ``b`` when its metric is strictly higher."""
    return a.metric > b.metric


def lower_is_better(a: BackendProfilingResult, b: BackendProfilingResult) -> bool:
    """``a`` is strictly better than ``b`` when its metric is strictly lower."""
    return a.metric < b.metric


def higher_speedup(result: BackendProfilingResult, baseline: BackendProfilingResult) -> float:
    """Speedup for a higher-is-better metric: ``result / baseline``."""
    return ordered_ratio(result.metric, baseline.metric)


def lower_speedup(result: BackendProfilingResult, baseline: BackendProfilingResult) -> float:
    """Speedup for a lower-is-better metric: ``baseline / result``."""
    return ordered_ratio(baseline.metric, result.metric)
