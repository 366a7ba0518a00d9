"""Pure statistics over raw samples: bounds, order invariance, scale behaviour."""

from __future__ import annotations

import math
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.stats.statistics import (
    coefficient_of_variation,
    iqr,
    mad,
    mean,
    median,
    percentile,
    stdev,
)
from aitune_fp.testing import latencies

samples = st.lists(latencies(), min_size=1, max_size=50)
quantiles = st.floats(min_value=0.0, max_value=100.0)


@given(values=samples)
def test_mean_lies_between_min_and_max(values: list[float]) -> None:
    """The mean of samples lies within their minimum and maximum, up to float rounding."""
    slack = 4 * sys.float_info.epsilon
    assert min(values) * (1 - slack) <= mean(values) <= max(values) * (1 + slack)


@given(values=samples, data=st.data())
def test_statistics_ignore_sample_order(values: list[float], data: st.DataObject) -> None:
    """Median, percentiles, IQR and MAD do not depend on the order of the samples."""
    shuffled = data.draw(st.permutations(values))
    for f in (median, iqr, mad, lambda v: percentile(v, 90.0)):
        assert f(shuffled) == f(values)
    assert math.isclose(mean(shuffled), mean(values), rel_tol=1e-12)


@given(values=samples, q1=quantiles, q2=quantiles)
def test_percentile_is_monotone_in_q(values: list[float], q1: float, q2: float) -> None:
    """A higher percentile is never below a lower one."""
    lo, hi = sorted((q1, q2))
    assert percentile(values, lo) <= percentile(values, hi)


@given(values=samples)
def test_percentile_ends_are_min_and_max(values: list[float]) -> None:
    """The 0th percentile is the minimum and the 100th the maximum."""
    assert (percentile(values, 0.0), percentile(values, 100.0)) == (min(values), max(values))


@given(value=latencies(), n=st.integers(1, 30))
def test_constant_samples_have_no_spread(value: float, n: int) -> None:
    """Constant samples have that value as mean and median, and zero spread."""
    values = [value] * n
    assert median(values) == value
    assert math.isclose(mean(values), value, rel_tol=1e-12)
    assert (iqr(values), mad(values)) == (0.0, 0.0)
    assert stdev(values) <= 1e-12 * value


@given(values=samples)
def test_spreads_are_never_negative(values: list[float]) -> None:
    """Standard deviation, CV, IQR and MAD are never negative."""
    assert min(stdev(values), coefficient_of_variation(values), iqr(values), mad(values)) >= 0.0


@given(values=samples, scale=st.floats(min_value=1e-3, max_value=1e3))
def test_cv_does_not_depend_on_the_unit(values: list[float], scale: float) -> None:
    """Scaling every sample (a change of unit) leaves the coefficient of variation alone."""
    scaled = [v * scale for v in values]
    assert math.isclose(
        coefficient_of_variation(scaled), coefficient_of_variation(values), abs_tol=1e-9
    )


@pytest.mark.parametrize("f", [mean, stdev, median, iqr, mad, coefficient_of_variation])
def test_empty_samples_are_refused(f: object) -> None:
    """Every statistic refuses an empty sample with a clear ValueError."""
    with pytest.raises(ValueError, match="at least one sample"):
        f([])  # type: ignore[operator]


@pytest.mark.parametrize("q", [-0.1, 100.1, math.nan])
def test_percentile_refuses_out_of_range(q: float) -> None:
    """A percentile outside [0, 100] is refused."""
    with pytest.raises(ValueError, match="percentile must be within"):
        percentile([1.0], q)
