"""Metric helpers and the shipped strategies' ``measure`` functions, property-tested."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st
from returns.pipeline import is_successful

from aitune_fp import Profile, latency_budget, max_throughput, min_latency
from aitune_fp.core.stats.statistics import mean
from aitune_fp.core.strategies.metrics import best_throughput, ordered_ratio, throughput_of
from aitune_fp.core.strategy import power_of_two_batch_sizes
from aitune_fp.testing import batch_sizes, budgets, latencies, profiles

positive = st.floats(min_value=1e-300, max_value=1e300)


@given(batch_size=batch_sizes(), mean_ms=latencies())
def test_throughput_is_batch_over_mean_seconds(batch_size: int, mean_ms: float) -> None:
    """Throughput times the mean latency in seconds gives back the batch size."""
    assert math.isclose(throughput_of(batch_size, mean_ms) * mean_ms / 1000.0, batch_size)


@given(n=positive, d=positive)
def test_ordered_ratio_keeps_the_order(n: float, d: float) -> None:
    """ordered_ratio(n, d) is > 1, == 1 or < 1 exactly as n is >, == or < d."""
    r = ordered_ratio(n, d)
    assert (r > 1.0, r == 1.0, r < 1.0) == (n > d, n == d, n < d)


@given(profile=profiles())
def test_max_throughput_is_the_best_batch_size(profile: Profile) -> None:
    """max_throughput picks the highest throughput, the smallest batch size among ties."""
    result = max_throughput.measure(profile).unwrap()
    rates = {bs: throughput_of(bs, mean(profile.samples(bs))) for bs in profile.batch_sizes}
    assert result.metric == max(rates.values())
    assert result.selected_batch_size == min(bs for bs, r in rates.items() if r == result.metric)
    assert result.samples_ms == profile.samples(result.selected_batch_size)


@given(profile=profiles())
def test_min_latency_is_the_mean_at_batch_size_one(profile: Profile) -> None:
    """min_latency's metric is the mean at batch size 1, or a failure without batch size 1."""
    measured = min_latency.measure(profile)
    if 1 in profile.batch_sizes:
        result = measured.unwrap()
        assert (result.metric, result.selected_batch_size) == (mean(profile.samples(1)), 1)
    else:
        assert "batch size 1" in measured.failure().message


@given(profile=profiles(), budget=budgets())
def test_latency_budget_picks_the_best_batch_within_budget(profile: Profile, budget: float) -> None:
    """latency_budget picks the best throughput among batch sizes whose mean fits the budget."""
    fitting = [bs for bs in profile.batch_sizes if mean(profile.samples(bs)) <= budget]
    measured = latency_budget(budget).measure(profile)
    assert is_successful(measured) == bool(fitting)
    if fitting:
        result = measured.unwrap()
        assert result.selected_batch_size in fitting
        assert result == best_throughput(profile, fitting)
    else:
        assert f"{budget:g} ms" in measured.failure().message


@given(profile=profiles(), budget=budgets())
def test_a_bigger_budget_never_lowers_the_metric(profile: Profile, budget: float) -> None:
    """Doubling the budget never lowers a backend's measured throughput."""
    tight = latency_budget(budget).measure(profile)
    loose = latency_budget(2 * budget).measure(profile)
    assert not is_successful(tight) or loose.unwrap().metric >= tight.unwrap().metric


@given(max_batch_size=st.integers(1, 2**22))
def test_sweep_batch_sizes(max_batch_size: int) -> None:
    """The sweep is sorted, unique, capped by the max batch size and includes it."""
    sizes = power_of_two_batch_sizes(max_batch_size)
    assert list(sizes) == sorted(set(sizes))
    assert sizes[-1] == max_batch_size and sizes[0] == 1
    assert all(bs & (bs - 1) == 0 and bs <= 2**20 for bs in sizes[:-1])
