"""Robust variants of the reference strategies (``core/strategies/robust.py``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.records import Profile
from aitune_fp.core.strategies import confident, latency_budget, max_throughput, min_latency
from aitune_fp.core.strategies.robust import robust


def test_one_stalled_call_does_not_move_a_confident_throughput_pick() -> None:
    """A stall in a 5-call sweep sends the reference pick to a smaller batch, not the robust one."""
    p = Profile("x", {8: [2.0] * 5, 16: [3.0, 3.0, 3.0, 3.0, 30.0]})
    assert max_throughput.measure(p).unwrap().selected_batch_size == 8
    assert confident(max_throughput).measure(p).unwrap().selected_batch_size == 16


def test_one_stalled_call_does_not_push_a_batch_size_over_a_confident_budget() -> None:
    """The mean budget applies to the confident statistic: a single stall does not break it."""
    p = Profile("x", {1: [1.0] * 5, 8: [4.0, 4.0, 4.0, 4.0, 40.0]})
    assert latency_budget(5.0).measure(p).unwrap().selected_batch_size == 1
    assert confident(latency_budget(5.0)).measure(p).unwrap().selected_batch_size == 8


def test_confident_sweeps_make_their_points_with_the_confident_statistic() -> None:
    """The sweep rule of a confident strategy carries its statistic; the reference's the mean."""
    assert max_throughput.plan.sweep_rule.statistic == "mean"
    assert confident(max_throughput).plan.sweep_rule.statistic == "trimmed"
    assert confident(latency_budget(5.0)).plan.sweep_rule.statistic == "trimmed"


def test_a_percentile_budget_and_other_strategies_keep_their_measure() -> None:
    """Only max throughput and a mean budget change their measure; the others keep theirs."""
    budget = latency_budget(5.0, percentile=99)
    assert robust(budget, "median").measure is budget.measure
    assert robust(min_latency, "median").measure is min_latency.measure


@given(
    rows=st.dictionaries(
        st.sampled_from([1, 2, 4, 8, 16]),
        st.lists(st.floats(0.1, 50.0), min_size=1, max_size=8),
        min_size=1,
    )
)
def test_the_mean_variant_is_the_reference(rows: dict[int, list[float]]) -> None:
    """``robust(s, "mean")`` decides exactly as the reference ``s`` on any profile."""
    p = Profile("x", rows)
    for reference in (max_throughput, latency_budget(5.0)):
        ours = robust(reference, "mean").measure(p)
        theirs = reference.measure(p)
        assert ours.map(lambda r: r.selected_batch_size).value_or(None) == theirs.map(
            lambda r: r.selected_batch_size
        ).value_or(None)


def test_robust_batches_off_judges_batch_sizes_by_the_mean() -> None:
    """``confident(..., robust_batches=False)`` picks the batch size the mean picks."""
    p = Profile("x", {8: [2.0] * 5, 16: [3.0, 3.0, 3.0, 3.0, 30.0]})
    plain = confident(max_throughput, robust_batches=False)
    assert plain.measure(p).unwrap().selected_batch_size == 8
    assert plain.plan.sweep_rule.statistic == "mean"
