"""No order penalty: whether a sweep's re-measured first point differs from its first figure.

Whatever a backend suffers at its first measured batch size (allocator growth, thread pools
spinning up, lazy kernels) must not decide the pick, so the profiler re-measures the sweep's
first batch size after the others and keeps the re-measured figure. The record also keeps
the first figure when the two *differ beyond noise*:

Rule: the first and the re-measured latencies differ beyond noise when the interval of
``stat(first) / stat(again)``, computed as the confident comparison computes a speedup
(:func:`aitune_fp.core.stats.bootstrap.ratio_interval` with a ``ConfidenceRule``'s
statistic, confidence, resamples and seed; unpaired), lies entirely above
``1 + min_speedup`` or entirely below its inverse. Pure: same samples, same verdict.

>>> differs_beyond_noise((1.4, 1.42, 1.38, 1.41, 1.39), (1.0, 1.01, 0.99, 1.0, 1.02))
True
>>> differs_beyond_noise((1.0, 1.02, 0.98, 1.01), (1.01, 0.99, 1.0, 1.0))
False
"""

from __future__ import annotations

from collections.abc import Sequence

from aitune_fp.core.stats.bootstrap import ratio_interval
from aitune_fp.core.stats.confidence import ConfidenceRule
from aitune_fp.core.stats.prng import derive

NOISE = ConfidenceRule()
"""The default noise model: the confident comparison's default rule."""


def differs_beyond_noise(
    first: Sequence[float], again: Sequence[float], rule: ConfidenceRule = NOISE
) -> bool:
    """Whether ``first`` and ``again`` (latencies, ms) differ beyond noise (module rule)."""
    interval = ratio_interval(
        first,
        again,
        statistic=rule.statistic,
        confidence=rule.confidence,
        resamples=rule.resamples,
        key=derive(rule.seed),
    )
    return interval.low > rule.threshold or interval.high < 1.0 / rule.threshold
