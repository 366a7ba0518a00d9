"""A distribution-free interval for the median of paired per-round ratios (pure).

Rules:
- ``n`` independent paired rounds give ``n`` per-round ratios; the number of them below the
  true median is Binomial(n, 1/2), so the order statistics ``[r_(k), r_(n+1-k)]`` cover the
  median with probability ``1 - 2 P(Binomial(n, 1/2) <= k - 1)``, whatever the ratios'
  distribution (no resampling, no seed);
- ``k`` is the largest rank whose coverage is at least ``confidence`` (:func:`median_rank`,
  in exact integers); with too few rounds for any rank to reach it, ``k = 1``: the whole
  range of the ratios, the widest interval the data allow;
- why: the percentile bootstrap of a median is far too narrow on a few rounds (13 rounds
  with 4 % spread per round gave ``[0.990, 1.008]`` around a true 0.980: a false
  equivalence). This interval is exact at any ``n``; a verdict from 6 rounds asks all 6
  to agree;
- :func:`median_ratio_interval`'s point is the paired median of
  :func:`~aitune_fp.core.stats.bootstrap.ratio_point` (the exponentiated median of the log
  ratios), which lies between the two ends.

>>> median_rank(6, 0.95), median_rank(13, 0.95), median_rank(20, 0.95), median_rank(3, 0.95)
(1, 3, 6, 1)
>>> ci = median_ratio_interval([1.1, 1.2, 1.0, 1.3, 1.15, 1.05], [1.0] * 6, 0.95)
>>> (ci.low, ci.high), ci.low <= ci.point <= ci.high, ci.resamples
((1.0, 1.3), True, 0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

from aitune_fp.core.stats.bootstrap import Interval, ratio_point


@lru_cache(maxsize=4096)
def median_rank(n: int, confidence: float) -> int:
    """The largest ``k`` (at least 1) with ``P(r_(k) <= median <= r_(n+1-k)) >= confidence``.

    >>> [median_rank(n, 0.90) for n in (5, 10, 40)]
    [1, 2, 15]
    """
    if n < 1:
        raise ValueError(f"need at least one round, got {n}")
    num, den = (1.0 - confidence).as_integer_ratio()
    total = 1 << n
    below, k = 0, 0  # below: the sum of C(n, i) for i < k
    while k < (n + 1) // 2:
        more = below + math.comb(n, k)
        if 2 * more * den > num * total:
            break
        below, k = more, k + 1
    return max(k, 1)


def median_ratio_interval(
    top: Sequence[float], bottom: Sequence[float], confidence: float
) -> Interval:
    """The exact interval of the median of ``top[i] / bottom[i]`` over the common prefix."""
    n = min(len(top), len(bottom))
    if n < 1 or min(*top[:n], *bottom[:n]) <= 0.0:
        raise ValueError("a paired interval needs at least one round of positive samples")
    ordered = sorted(a / b for a, b in zip(top[:n], bottom[:n], strict=True))
    point = ratio_point(top[:n], bottom[:n], statistic="median", paired=True)
    k = median_rank(n, confidence)
    low, high = ordered[k - 1], ordered[n - k]
    return Interval(point, min(low, point), max(high, point), confidence, 0, True)
