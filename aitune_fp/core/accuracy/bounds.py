"""One-sided confidence bounds on accuracy figures (pure; no scipy, no randomness).

Rules:
- top-1 agreement of ``agree`` rows out of ``rows`` is bounded exactly (Clopper–Pearson):
  the lower bound at confidence ``c`` is the ``1 − c`` quantile of ``Beta(agree, rows −
  agree + 1)`` (``0`` when no row agrees, ``(1 − c)^(1/rows)`` when every row does), the
  upper bound the ``c`` quantile of ``Beta(agree + 1, rows − agree)`` (``1`` when every
  row agrees); the lower bound is never above ``agree / rows``, the upper never below it,
  and an agreeing row more (added, or turned from a disagreeing one) never lowers either;
- the beta quantile is a bisection on the regularized incomplete beta function (Lentz's
  continued fraction, ``math.lgamma``), run until the bracket stops shrinking in floats;
- :func:`rows_needed` is the fewest rows on which ``disagree`` disagreeing rows (and every
  other row agreeing) give a lower bound of at least ``floor``: what a candidate undecided
  at the cap would need; ``None`` when no count of rows can (``floor`` of 1);
- a figure computed from per-row sums (RMS relative error, cosine) is bounded by a
  percentile bootstrap over rows (:func:`row_bootstrap`): ``resamples`` resamples of the
  rows with replacement, drawn from a fixed key (:mod:`aitune_fp.core.stats.prng`), so
  the same rows always give the same bound; the one-sided ``c`` bounds are the ``1 − c``
  and ``c`` percentiles of the resampled figures, widened to contain the point estimate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Final

from aitune_fp.core.stats.prng import random_indices
from aitune_fp.core.stats.statistics import percentile_sorted

CONFIDENCE: Final = 0.95
"""The confidence of every accuracy bound the verdict reads."""

RESAMPLES: Final = 400
"""Bootstrap resamples of a row figure's bound."""

KEY: Final = 49
"""The bootstrap's key: fixed, so a bound is a function of the rows alone."""


def _check(agree: int, rows: int, confidence: float) -> None:
    if rows < 1 or not 0 <= agree <= rows:
        raise ValueError(f"need 0 <= agree <= rows and rows >= 1, got {agree}/{rows}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be within (0, 1), got {confidence!r}")


def _continued_fraction(x: float, a: float, b: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        for num in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def beta_cdf(x: float, a: float, b: float) -> float:
    """The regularized incomplete beta function ``I_x(a, b)`` (``a, b > 0``).

    >>> round(beta_cdf(0.5, 2.0, 2.0), 12), beta_cdf(0.0, 3.0, 1.0), beta_cdf(1.0, 3.0, 1.0)
    (0.5, 0.0, 1.0)
    >>> round(beta_cdf(0.9, 5.0, 1.0), 12) == round(0.9**5, 12)
    True
    """
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _continued_fraction(x, a, b) / a
    return 1.0 - math.exp(log_front) * _continued_fraction(1.0 - x, b, a) / b


def beta_quantile(q: float, a: float, b: float) -> float:
    """The ``q`` quantile of ``Beta(a, b)``: bisection on :func:`beta_cdf`.

    >>> round(beta_quantile(0.5, 2.0, 2.0), 12), round(beta_quantile(0.05, 1.0, 1.0), 12)
    (0.5, 0.05)
    """
    lo, hi = 0.0, 1.0
    while True:
        mid = (lo + hi) / 2.0
        if mid in (lo, hi):
            return lo
        if beta_cdf(mid, a, b) < q:
            lo = mid
        else:
            hi = mid


def agreement_lower(agree: int, rows: int, confidence: float = CONFIDENCE) -> float:
    """The one-sided Clopper–Pearson lower bound on the agreement rate (module rules).

    >>> round(agreement_lower(600, 600), 4), agreement_lower(0, 10)
    (0.995, 0.0)
    >>> round(agreement_lower(8, 8), 3), round(agreement_lower(597, 600), 4)
    (0.688, 0.9871)
    """
    _check(agree, rows, confidence)
    if agree == 0:
        return 0.0
    if agree == rows:
        return float((1.0 - confidence) ** (1.0 / rows))
    return min(beta_quantile(1.0 - confidence, agree, rows - agree + 1.0), agree / rows)


def agreement_upper(agree: int, rows: int, confidence: float = CONFIDENCE) -> float:
    """The one-sided Clopper–Pearson upper bound on the agreement rate (module rules).

    >>> agreement_upper(8, 8), round(agreement_upper(0, 10), 4)
    (1.0, 0.2589)
    """
    _check(agree, rows, confidence)
    if agree == rows:
        return 1.0
    if agree == 0:
        return float(1.0 - (1.0 - confidence) ** (1.0 / rows))
    return max(beta_quantile(confidence, agree + 1.0, rows - agree), agree / rows)


def rows_needed(disagree: int, floor: float, confidence: float = CONFIDENCE) -> int | None:
    """The fewest rows whose lower bound reaches ``floor`` with ``disagree`` rows
    disagreeing and the rest agreeing (``None``: no count can).

    >>> rows_needed(0, 0.99), rows_needed(2, 0.99), rows_needed(0, 1.0)
    (299, 628, None)
    """
    if floor >= 1.0:
        return None
    if floor <= 0.0:
        return max(disagree, 1)

    def enough(n: int) -> bool:
        return agreement_lower(n - disagree, n, confidence) >= floor

    lo, hi = max(disagree, 1), max(2 * disagree, 2)
    while not enough(hi):
        lo, hi = hi, hi * 2
        if hi > 1 << 40:
            return None
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if not enough(mid) else (lo, mid)
    return lo


RowFigure = Callable[[Sequence[float]], float]
"""A figure of column sums over rows (``sums[j]`` is column ``j`` summed over the rows)."""


def rms_of(sums: Sequence[float]) -> float:
    """The RMS relative error of summed ``(‖diff‖², ‖ref‖², …)``.

    >>> rms_of([0.04, 1.0]), rms_of([0.04, 0.0])
    (0.2, 0.2)
    """
    return math.sqrt(sums[0] / sums[1]) if sums[1] > 0 else math.sqrt(sums[0])


def cosine_of(sums: Sequence[float]) -> float:
    """The cosine of summed ``(‖diff‖², ‖ref‖², ‖got‖², got·ref)``.

    >>> cosine_of([0.0, 4.0, 4.0, 4.0]), cosine_of([1.0, 0.0, 0.0, 0.0])
    (1.0, 0.0)
    """
    norm = math.sqrt(sums[2] * sums[1])
    return sums[3] / norm if norm > 0 else (1.0 if sums[0] == 0 else 0.0)


def _column_sums(columns: Sequence[Sequence[float]], picks: Sequence[int]) -> list[float]:
    return [math.fsum(map(column.__getitem__, picks)) for column in columns]


def row_bootstrap(
    figure: RowFigure,
    rows: Sequence[Sequence[float]],
    confidence: float = CONFIDENCE,
    resamples: int = RESAMPLES,
) -> tuple[float, float]:
    """The one-sided lower and upper ``confidence`` bounds of ``figure`` over ``rows``
    (each row a tuple of per-row sums) by a percentile bootstrap (module rules).

    >>> rms = lambda s: math.sqrt(s[0] / s[1])
    >>> lo, hi = row_bootstrap(rms, [(0.01, 1.0), (0.04, 1.0), (0.0, 1.0), (0.01, 1.0)])
    >>> lo <= rms([0.06, 4.0]) <= hi
    True
    >>> row_bootstrap(rms, [(0.04, 1.0)])
    (0.2, 0.2)
    """
    if not rows:
        raise ValueError("a bootstrap needs at least one row")
    n, columns = len(rows), list(zip(*rows, strict=True))
    point = figure(_column_sums(columns, range(n)))
    if n == 1:
        return point, point
    picks = random_indices(KEY, n, n * resamples)
    ordered = sorted(
        figure(_column_sums(columns, picks[r * n : (r + 1) * n])) for r in range(resamples)
    )
    tail = (1.0 - confidence) * 100.0
    low, high = percentile_sorted(ordered, tail), percentile_sorted(ordered, 100.0 - tail)
    return min(low, point), max(high, point)
