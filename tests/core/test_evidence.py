"""Evidence verdicts (aitune_fp.core.stats.evidence) and the exact median interval
(aitune_fp.core.stats.order_interval)."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from aitune_fp.core.stats.evidence import flipped, verdict
from aitune_fp.core.stats.order_interval import median_rank, median_ratio_interval

ends = st.floats(0.5, 2.0, allow_nan=False)
margins = st.floats(0.001, 0.1)


def _coverage(n: int, k: int) -> float:
    return 1.0 - 2.0 * sum(math.comb(n, i) for i in range(k)) / 2.0**n


@given(a=ends, b=ends, margin=margins)
def test_verdicts_are_symmetric(a: float, b: float, margin: float) -> None:
    """Seen from the other side (the inverse interval) a win is a loss and an equivalence
    or an undecided comparison stays what it is."""
    low, high = min(a, b), max(a, b)
    limits = (1.0 + margin, 1.0 / (1.0 + margin))
    assume(all(abs(x / t - 1.0) > 1e-9 for x in (low, high) for t in limits))
    assert verdict(1.0 / high, 1.0 / low, margin) == flipped(verdict(low, high, margin))


@given(n=st.integers(1, 300), confidence=st.sampled_from((0.8, 0.9, 0.95, 0.99)))
def test_the_median_rank_is_the_largest_that_covers(n: int, confidence: float) -> None:
    """Ranks ``[k, n + 1 - k]`` cover the median with at least the confidence, and ``k + 1``
    would not (unless ``k`` is 1 and nothing covers, or the ranks meet in the middle)."""
    k = median_rank(n, confidence)
    assert 1 <= k <= (n + 1) // 2
    if _coverage(n, 1) >= confidence:
        assert _coverage(n, k) >= confidence - 1e-12
    if k < (n + 1) // 2:
        assert _coverage(n, k + 1) < confidence + 1e-12


@given(
    st.lists(st.floats(0.1, 10.0), min_size=1, max_size=60),
    st.lists(st.floats(0.1, 10.0), min_size=1, max_size=60),
)
def test_the_exact_interval_contains_its_point_and_inverts(
    top: list[float], bottom: list[float]
) -> None:
    """The interval holds the paired median and, sides swapped, is its inverse."""
    ci = median_ratio_interval(top, bottom, 0.95)
    back = median_ratio_interval(bottom, top, 0.95)
    assert ci.low <= ci.point <= ci.high
    assert back.low == pytest.approx(1.0 / ci.high) and back.high == pytest.approx(1.0 / ci.low)


def test_the_exact_interval_refuses_empty_or_non_positive_rounds() -> None:
    """No rounds, or a non-positive sample, is a ValueError, not an interval."""
    with pytest.raises(ValueError, match="at least one round"):
        median_ratio_interval([], [1.0], 0.95)
    with pytest.raises(ValueError, match="positive"):
        median_ratio_interval([1.0, 0.0], [1.0, 1.0], 0.95)
