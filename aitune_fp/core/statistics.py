"""Pure statistics over raw latency samples.

Rules: every function takes a non-empty sequence of finite floats and returns a float;
nothing here keeps state, reads a clock or draws random numbers. Percentiles use linear
interpolation between closest ranks (numpy's default), so results match common tools.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def _require(values: Sequence[float]) -> None:
    if len(values) == 0:
        raise ValueError("statistics need at least one sample, got none")


def mean(values: Sequence[float]) -> float:
    """Arithmetic mean (``math.fsum`` based), clamped into ``[min, max]`` against rounding.

    >>> mean([1.0, 2.0, 3.0])
    2.0
    >>> x = 0.1 + 0.2
    >>> mean([x, x, x]) == x
    True
    """
    _require(values)
    m = math.fsum(values) / len(values)
    return min(max(m, min(values)), max(values))


def stdev(values: Sequence[float]) -> float:
    """Population standard deviation (0 for one sample).

    >>> stdev([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0])
    2.0
    """
    m = mean(values)
    return math.sqrt(math.fsum((v - m) ** 2 for v in values) / len(values))


def coefficient_of_variation(values: Sequence[float]) -> float:
    """Standard deviation over mean (0 when the mean is 0).

    >>> coefficient_of_variation([1.0, 1.0])
    0.0
    """
    m = mean(values)
    return stdev(values) / m if m else 0.0


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100), linear interpolation between closest ranks.

    >>> percentile([1.0, 2.0, 3.0, 4.0], 50)
    2.5
    >>> percentile([5.0], 99)
    5.0
    """
    _require(values)
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile must be within [0, 100], got {q!r}")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    frac = pos - lo
    return ordered[lo] + (ordered[hi] - ordered[lo]) * frac


def median(values: Sequence[float]) -> float:
    """The 50th percentile.

    >>> median([3.0, 1.0, 2.0])
    2.0
    """
    return percentile(values, 50.0)


def iqr(values: Sequence[float]) -> float:
    """Inter-quartile range: p75 - p25.

    >>> iqr([1.0, 2.0, 3.0, 4.0, 5.0])
    2.0
    """
    return percentile(values, 75.0) - percentile(values, 25.0)


def mad(values: Sequence[float]) -> float:
    """Median absolute deviation from the median (unscaled).

    >>> mad([1.0, 2.0, 3.0, 4.0, 100.0])
    1.0
    """
    m = median(values)
    return median([abs(v - m) for v in values])
