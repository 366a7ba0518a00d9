"""The point-first shortcuts of the confidence compare give exactly the interval's verdicts."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.records import BackendProfilingResult
from aitune_fp.core.stats import confidence
from aitune_fp.core.stats.bootstrap import ratio_bounds, ratio_interval, ratio_point
from aitune_fp.core.stats.confidence import (
    ConfidenceRule,
    MetricKind,
    beats,
    clearly_not_faster,
    speedup_bounds,
    speedup_interval,
    speedup_point,
)
from tests.core.test_confidence_laws import R, kinds, results, rules

positive = st.lists(st.floats(0.01, 100.0), min_size=1, max_size=12)
statistics = st.sampled_from(("mean", "median", "trimmed", "p90", "p0", "p100"))


@given(top=positive, bottom=positive, statistic=statistics, paired=st.booleans())
def test_ratio_point_is_the_interval_point(
    top: list[float], bottom: list[float], statistic: str, paired: bool
) -> None:
    """``ratio_point`` equals ``ratio_interval(...).point`` bit for bit, paired or not."""
    interval = ratio_interval(top, bottom, statistic=statistic, resamples=20, paired=paired)
    assert ratio_point(top, bottom, statistic=statistic, paired=paired) == interval.point


@given(rule=rules(), kind=kinds, a=results(), b=results())
def test_speedup_point_is_the_interval_point(
    rule: ConfidenceRule, kind: MetricKind, a: R, b: R
) -> None:
    """``speedup_point`` equals the point of ``speedup_interval`` in either orientation."""
    assert speedup_point(rule, kind, a, b) == speedup_interval(rule, kind, a, b).point
    assert speedup_point(rule, kind, b, a) == speedup_interval(rule, kind, b, a).point


@given(rule=rules(), kind=kinds, a=results(), b=results())
def test_shortcut_verdicts_match_the_interval(
    rule: ConfidenceRule, kind: MetricKind, a: R, b: R
) -> None:
    """``beats`` and ``clearly_not_faster`` agree with the full interval on every input."""
    interval = speedup_interval(rule, kind, a, b)
    assert beats(rule, kind, a, b) == (interval.low > rule.threshold)
    assert clearly_not_faster(rule, kind, a, b) == (interval.high <= rule.threshold)


def test_shortcut_skips_resampling_for_a_slower_candidate() -> None:
    """A candidate slower than the baseline is judged without computing its interval."""
    rule = ConfidenceRule(seed=12345)
    slow = BackendProfilingResult(2.0, 1, 2.0, 500.0, samples_ms=(2.0, 2.1, 1.9, 2.05, 1.97))
    fast = BackendProfilingResult(1.0, 1, 1.0, 1000.0, samples_ms=(1.0, 1.1, 0.9, 1.05, 0.97))
    confidence._memo.cache_clear()
    assert not beats(rule, "latency", slow, fast)
    assert not clearly_not_faster(rule, "latency", fast, slow)
    assert confidence._memo.cache_info().misses == 0
    assert beats(rule, "latency", fast, slow)  # dominating samples: settled by the bounds
    assert confidence._memo.cache_info().misses == 0
    near = BackendProfilingResult(1.2, 1, 1.2, 833.0, samples_ms=(1.2, 0.95, 1.3, 1.0, 1.25))
    assert beats(rule, "latency", fast, near) == (
        speedup_interval(rule, "latency", fast, near).low > rule.threshold
    )
    assert confidence._memo.cache_info().misses == 1  # overlapping samples need the bootstrap


@given(top=positive, bottom=positive, statistic=statistics, paired=st.booleans())
def test_ratio_bounds_contain_the_interval(
    top: list[float], bottom: list[float], statistic: str, paired: bool
) -> None:
    """The point and both ends of the interval lie within ``ratio_bounds`` (up to slack)."""
    lo, hi = ratio_bounds(top, bottom, statistic=statistic, paired=paired)
    ci = ratio_interval(top, bottom, statistic=statistic, resamples=30, paired=paired)
    slack = 1.0 + confidence.BOUND_SLACK
    assert lo / slack <= ci.low <= ci.point <= ci.high <= hi * slack


@given(rule=rules(), kind=kinds, a=results(), b=results())
def test_speedup_bounds_contain_the_interval(
    rule: ConfidenceRule, kind: MetricKind, a: R, b: R
) -> None:
    """``speedup_bounds`` contains ``speedup_interval`` in either orientation (up to slack)."""
    slack = 1.0 + confidence.BOUND_SLACK
    for x, y in ((a, b), (b, a)):
        lo, hi = speedup_bounds(rule, kind, x, y)
        ci = speedup_interval(rule, kind, x, y)
        assert lo / slack <= ci.low <= ci.high <= hi * slack
