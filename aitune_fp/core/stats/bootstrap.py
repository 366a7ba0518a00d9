"""Bootstrap confidence intervals for the ratio between two backends' latency statistics.

Rules:
- the estimand is ``stat(numerator) / stat(denominator)``: with latencies of a baseline on
  top and of a candidate below, that is the candidate's speedup;
- ``stat`` is ``"mean"``, ``"median"``, ``"trimmed"`` (the mean of the middle 60 %) or a
  percentile ``"p<q>"`` (e.g. ``"p99"``);
- unpaired samples (timed at different moments) are resampled independently, each side
  from its own stream: the key folded with a digest of that side's data (so a backend's
  resamples are the same in every pair it is in, and are computed once);
- paired samples (``numerator[i]`` and ``denominator[i]`` timed in the same interleaved
  round ``i``) are resampled jointly by round index, over their common prefix; with the
  median or the trimmed mean, the estimand is that statistic of the per-round log ratios
  (exponentiated), so drift common to a round cancels exactly; the mean and percentiles
  use the ratio of the statistic over the resampled rounds;
- the interval is the percentile interval of the resampled ratios, widened when needed so
  it always contains the point estimate; a side with a single sample is held fixed while
  the other is resampled, and with one sample on both sides (or fewer than two paired
  rounds) there is nothing to resample: the interval collapses onto the point estimate;
- the key is an argument (:mod:`aitune_fp.core.stats.prng`): same inputs, same interval.

Longer than 260 lines: the resampling scheme and the interval it gives are one computation,
with doctests.
"""

from __future__ import annotations

import hashlib
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from aitune_fp.core.stats.prng import derive, random_indices
from aitune_fp.core.stats.statistics import (
    TRIM,
    percentile_sorted,
    sorted_statistic,
    statistic_value,
)


def per_round(name: str) -> bool:
    """Whether paired data are judged by per-round ratios (robust location statistics)."""
    return name in ("median", "trimmed")


@dataclass(frozen=True, slots=True)
class Interval:
    """A ratio's point estimate and its confidence interval ``[low, high]``.

    >>> Interval(1.42, 1.38, 1.47, 0.95, 1000).describe()
    '1.42× [1.38, 1.47], 95 %'
    >>> Interval(2.0, 1.0, 4.0, 0.95, 10).inverse()
    Interval(point=0.5, low=0.25, high=1.0, confidence=0.95, resamples=10, paired=False)
    """

    point: float
    low: float
    high: float
    confidence: float
    resamples: int
    paired: bool = False

    def __post_init__(self) -> None:
        if not 0.0 < self.low <= self.point <= self.high < math.inf:
            raise ValueError(
                f"need 0 < low <= point <= high < inf, got {self.low!r}, {self.point!r}, "
                f"{self.high!r}"
            )

    def inverse(self) -> Interval:
        """The interval of the reciprocal ratio (e.g. the other backend's speedup)."""
        return Interval(
            1.0 / self.point,
            1.0 / self.high,
            1.0 / self.low,
            self.confidence,
            self.resamples,
            self.paired,
        )

    def describe(self) -> str:
        """``1.42× [1.38, 1.47], 95 %``."""
        return f"{self.point:.2f}× [{self.low:.2f}, {self.high:.2f}], {self.confidence * 100:g} %"


def _resample_stats(
    values: Sequence[float], name: str, indices: Sequence[int], resamples: int
) -> list[float]:
    """The statistic ``name`` of each of ``resamples`` resamples given by ``indices``."""
    n = len(values)
    get = values.__getitem__
    fsum = math.fsum
    if name == "mean":
        return [fsum(map(get, indices[i * n : (i + 1) * n])) / n for i in range(resamples)]
    if name == "trimmed":  # _trimmed_sorted, inlined: this loop is the bootstrap's hot spot
        cut = int(n * TRIM)
        end, kept = n - cut, n - 2 * cut
        return [
            fsum(sorted(map(get, indices[i * n : (i + 1) * n]))[cut:end]) / kept
            for i in range(resamples)
        ]
    stat = sorted_statistic(name)
    return [stat(sorted(map(get, indices[i * n : (i + 1) * n]))) for i in range(resamples)]


def _interval(
    point: float, estimates: list[float], confidence: float, resamples: int, paired: bool
) -> Interval:
    """The percentile interval of ``estimates``, widened to contain ``point``."""
    tail = (1.0 - confidence) / 2.0 * 100.0
    ordered = sorted(estimates)  # sorted once for both ends
    low = percentile_sorted(ordered, tail)
    high = percentile_sorted(ordered, 100.0 - tail)
    return Interval(point, min(low, point), max(high, point), confidence, resamples, paired)


def _check(confidence: float, resamples: int) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be within (0, 1), got {confidence!r}")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")


def stream_key(key: int, values: Sequence[float]) -> int:
    """The resampling stream of one side: ``key`` folded with a digest of its data.

    The digest is taken after dividing by the first value, so scaling a side by a power of
    two keeps its stream; equal data share a stream, different data get independent ones.
    """
    first = values[0]
    raw = struct.pack(f"<{len(values)}d", *(v / first for v in values))
    digest = hashlib.blake2b(raw, digest_size=8).digest()
    return derive(key, int.from_bytes(digest, "little"))


@lru_cache(maxsize=64)
def _paired_indices(key: int, n: int, resamples: int) -> Sequence[int]:
    """The round indices of every paired resample of ``n`` rounds (memoised: they depend
    only on the key and the number of rounds, so every pair with ``n`` rounds shares them)."""
    return random_indices(derive(key, 3), n, n * resamples)


def ratio_point(
    numerator: Sequence[float],
    denominator: Sequence[float],
    *,
    statistic: str = "median",
    paired: bool = False,
) -> float:
    """The point estimate of :func:`ratio_interval`, without resampling (bit for bit equal).

    Unpaired, ``stat(numerator) / stat(denominator)``; paired, over the common prefix,
    that ratio for the mean and percentiles, and the exponentiated statistic of the
    per-round log ratios for the median and the trimmed mean. The interval always contains
    it, so a point at or below a threshold already says the interval's lower end is too.

    >>> ratio_point([2.0, 2.2, 1.8], [1.0, 1.0, 1.0])
    2.0
    >>> ratio_point([2.0, 4.0], [1.0, 2.0, 8.0], statistic="trimmed", paired=True)
    2.0
    """
    if not paired:
        return statistic_value(statistic, numerator) / statistic_value(statistic, denominator)
    n = min(len(numerator), len(denominator))
    top, bottom = numerator[:n], denominator[:n]
    if per_round(statistic):
        logs = [math.log(a / b) for a, b in zip(top, bottom, strict=True)]
        return math.exp(statistic_value(statistic, logs))
    return statistic_value(statistic, top) / statistic_value(statistic, bottom)


def ratio_bounds(
    numerator: Sequence[float],
    denominator: Sequence[float],
    *,
    statistic: str = "median",
    paired: bool = False,
) -> tuple[float, float]:
    """Bounds ``(lo, hi)`` on every resample's ratio, hence on :func:`ratio_interval`.

    Every statistic here (mean, median, trimmed mean, percentile) lies between the smallest
    and the largest of its values, so an unpaired ratio lies within ``[min(numerator) /
    max(denominator), max(numerator) / min(denominator)]``; paired, over the common prefix,
    within the smallest and largest per-round ratio (median, trimmed mean) or the same
    min/max quotients of the two sides. The point and both ends of the interval lie within
    the bounds up to rounding (a relative 1e-12 or so), whatever the key or resample count,
    so a bound far enough past a threshold settles a verdict with no resampling.

    >>> ratio_bounds([2.0, 2.2, 1.8], [1.0, 1.1])
    (1.6363636363636362, 2.2)
    >>> ratio_bounds([2.0, 4.0, 9.0], [1.0, 2.0], statistic="trimmed", paired=True)
    (2.0, 2.0)
    """
    if not paired:
        return min(numerator) / max(denominator), max(numerator) / min(denominator)
    n = min(len(numerator), len(denominator))
    top, bottom = numerator[:n], denominator[:n]
    if per_round(statistic):
        ratios = [a / b for a, b in zip(top, bottom, strict=True)]
        return min(ratios), max(ratios)
    return min(top) / max(bottom), max(top) / min(bottom)


@lru_cache(maxsize=1024)
def _side(values: tuple[float, ...], name: str, key: int, resamples: int) -> tuple[float, ...]:
    """The statistic of each resample of one side (memoised: a backend's side is reused
    in every pair it is compared in); a single value cannot vary."""
    if len(values) < 2:
        return (statistic_value(name, values),) * resamples
    indices = random_indices(stream_key(key, values), len(values), len(values) * resamples)
    return tuple(_resample_stats(values, name, indices, resamples))


def _unpaired(
    numerator: Sequence[float],
    denominator: Sequence[float],
    statistic: str,
    confidence: float,
    resamples: int,
    key: int,
) -> Interval:
    point = ratio_point(numerator, denominator, statistic=statistic)
    if max(len(numerator), len(denominator)) < 2:
        return Interval(point, point, point, confidence, 0)
    top = _side(tuple(numerator), statistic, key, resamples)
    bottom = _side(tuple(denominator), statistic, key, resamples)
    ratios = [t / b for t, b in zip(top, bottom, strict=True)]
    return _interval(point, ratios, confidence, resamples, False)


def _paired(
    numerator: Sequence[float],
    denominator: Sequence[float],
    statistic: str,
    confidence: float,
    resamples: int,
    key: int,
) -> Interval:
    n = min(len(numerator), len(denominator))
    top, bottom = list(numerator[:n]), list(denominator[:n])
    point = ratio_point(top, bottom, statistic=statistic, paired=True)
    if n < 2:
        return Interval(point, point, point, confidence, 0, True)
    indices = _paired_indices(key, n, resamples)
    estimates = _paired_estimates(top, bottom, statistic, indices, resamples)
    return _interval(point, estimates, confidence, resamples, True)


def _paired_estimates(
    top: list[float], bottom: list[float], statistic: str, indices: Sequence[int], resamples: int
) -> list[float]:
    """The ratio's estimate in each paired resample: the statistic of the per-round log
    ratios (exponentiated) for a per-round statistic, else the ratio of the statistics."""
    if per_round(statistic):
        logs = [math.log(a / b) for a, b in zip(top, bottom, strict=True)]
        return [math.exp(v) for v in _resample_stats(logs, statistic, indices, resamples)]
    ups = _resample_stats(top, statistic, indices, resamples)
    downs = _resample_stats(bottom, statistic, indices, resamples)
    return [u / d for u, d in zip(ups, downs, strict=True)]


def ratio_interval(
    numerator: Sequence[float],
    denominator: Sequence[float],
    *,
    statistic: str = "median",
    confidence: float = 0.95,
    resamples: int = 1000,
    key: int = 0,
    paired: bool = False,
) -> Interval:
    """Bootstrap interval of ``stat(numerator) / stat(denominator)`` (positive samples).

    >>> base, cand = [2.0, 2.1, 1.9, 2.0, 2.05], [1.0, 1.05, 0.95, 1.0, 1.02]
    >>> ci = ratio_interval(base, cand, key=7)
    >>> ci.point, 1.8 < ci.low <= ci.point <= ci.high < 2.2
    (2.0, True)
    >>> ratio_interval(base, cand, key=7) == ci
    True
    """
    _check(confidence, resamples)
    sorted_statistic(statistic)
    if not numerator or not denominator:
        raise ValueError("a ratio interval needs samples on both sides, got an empty side")
    if min(min(numerator), min(denominator)) <= 0.0:
        raise ValueError("a ratio interval needs positive samples")
    run = _paired if paired else _unpaired
    return run(numerator, denominator, statistic, confidence, resamples, key)
