"""Pure statistics over raw latency samples, and the named statistics rules refer to.

Rules: every function takes a non-empty sequence of finite floats and returns a float;
nothing here keeps state, reads a clock or draws random numbers. Percentiles use linear
interpolation between closest ranks (numpy's default), so results match common tools;
one function (:func:`percentile_sorted`) computes every percentile in the library. A
named statistic (``mean``, ``median``, ``trimmed``, ``p<q>``) is what a confidence rule
or a bootstrap refers to by name (:func:`sorted_statistic`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence


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
    return percentile_sorted(sorted(values), q)


def percentile_sorted(ordered: Sequence[float], q: float) -> float:
    """The ``q``-th percentile of already sorted, non-empty ``ordered`` values.

    >>> percentile_sorted([1.0, 2.0, 3.0, 4.0], 25)
    1.75
    """
    pos = (len(ordered) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


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


SortedStatistic = Callable[[list[float]], float]


TRIM = 0.2


def _percentile_of(q: float) -> SortedStatistic:
    """The ``q``-th percentile as a function of an already sorted list."""
    return lambda ordered: percentile_sorted(ordered, q)


def _mean_sorted(ordered: list[float]) -> float:
    """The plain ``fsum`` mean (unclamped: the bootstrap's resampled means use it)."""
    return math.fsum(ordered) / len(ordered)


def _trimmed_sorted(ordered: list[float]) -> float:
    """Mean of the middle of a sorted list, ``TRIM`` of the values cut off at each end."""
    cut = int(len(ordered) * TRIM)
    middle = ordered[cut : len(ordered) - cut]
    return math.fsum(middle) / len(middle)


def sorted_statistic(name: str) -> SortedStatistic:
    """The statistic called ``name`` as a function of an already sorted list.

    Names: ``mean``, ``median``, ``trimmed`` (20 % cut at each end) and ``p<q>`` for a
    percentile ``0 <= q <= 100``.

    >>> sorted_statistic("trimmed")([1.0, 2.0, 3.0, 4.0, 100.0])
    3.0
    >>> sorted_statistic("p1000")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: statistic must be 'mean', 'median', 'trimmed' or 'p<q>' ... got 'p1000'
    """
    if name == "mean":
        return _mean_sorted
    if name == "trimmed":
        return _trimmed_sorted
    if name == "median":
        return _percentile_of(50.0)
    q = math.nan
    if name.startswith("p"):
        try:
            q = float(name[1:])
        except ValueError:
            q = math.nan
    if not 0.0 <= q <= 100.0:
        raise ValueError(
            "statistic must be 'mean', 'median', 'trimmed' or 'p<q>' with 0 <= q <= 100, "
            f"got {name!r}"
        )
    return _percentile_of(q)


def statistic_value(name: str, values: Sequence[float]) -> float:
    """The statistic ``name`` of non-empty ``values``.

    >>> statistic_value("median", [3.0, 1.0, 2.0]), statistic_value("p100", [3.0, 1.0])
    (2.0, 3.0)
    """
    if not values:
        raise ValueError("statistics need at least one sample, got none")
    return sorted_statistic(name)(sorted(values))
