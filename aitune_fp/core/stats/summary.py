"""A backend's raw samples summarised: location, tail and spread, with the sample count.

Rules: a summary is a pure reduction of the samples (no clock, no randomness); it reuses
:mod:`aitune_fp.core.stats.statistics` so the numbers match the rest of the library
(percentiles interpolate linearly between closest ranks).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aitune_fp.core.stats.statistics import coefficient_of_variation, iqr, mad, mean, percentile


@dataclass(frozen=True, slots=True)
class SampleSummary:
    """Count, mean, median, p90, p99, IQR, MAD, CV, min and max of some samples (ms)."""

    count: int
    mean: float
    median: float
    p90: float
    p99: float
    iqr: float
    mad: float
    cv: float
    minimum: float
    maximum: float

    @property
    def relative_iqr(self) -> float:
        """IQR over median: a unit-free spread that one outlier cannot inflate."""
        return self.iqr / self.median if self.median else 0.0


def summarize(samples: Sequence[float]) -> SampleSummary:
    """The summary of non-empty ``samples`` (a ``ValueError`` when there are none).

    >>> s = summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    >>> s.count, s.median, s.mean, s.mad, s.maximum
    (5, 3.0, 22.0, 1.0, 100.0)
    """
    return SampleSummary(
        count=len(samples),
        mean=mean(samples),
        median=percentile(samples, 50.0),
        p90=percentile(samples, 90.0),
        p99=percentile(samples, 99.0),
        iqr=iqr(samples),
        mad=mad(samples),
        cv=coefficient_of_variation(samples),
        minimum=min(samples),
        maximum=max(samples),
    )
