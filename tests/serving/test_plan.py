"""The serving plan derived from a tune: maximum batch, batch wait and their rule."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.serving.plan import MAX_WAIT_MS, MIN_WAIT_MS, plan_from_tune, wait_rule

batch_sizes = st.sampled_from([1, 2, 4, 8, 16, 32, 64])
latencies = st.floats(min_value=0.01, max_value=1000.0, allow_nan=False)


@given(batch_sizes, latencies)
def test_without_a_budget_the_tuned_batch_is_the_maximum_and_the_wait_is_half_a_call(
    batch: int, latency: float
) -> None:
    """Without a budget the maximum batch is the tuned one and the wait is half the
    call's latency, clamped to [MIN_WAIT_MS, MAX_WAIT_MS]."""
    plan = plan_from_tune("ort", batch, latency)
    assert plan.max_batch_size == batch and plan.batch_size == batch
    assert MIN_WAIT_MS <= plan.batch_wait_ms <= MAX_WAIT_MS
    assert abs(plan.batch_wait_ms - min(max(latency / 2, MIN_WAIT_MS), MAX_WAIT_MS)) < 1e-3
    assert plan.preferred_batch_sizes == (batch,)


@given(
    st.lists(st.floats(min_value=0.05, max_value=20.0), min_size=2, max_size=7),
    st.floats(min_value=0.1, max_value=40.0),
)
def test_under_a_budget_the_maximum_is_the_largest_batch_within_it_and_waiting_fits(
    steps: list[float], budget: float
) -> None:
    """Under a latency budget (latency growing with the batch), the maximum batch is the
    largest measured batch within the budget (never below the tuned one), and waiting plus
    running a full batch stays within the budget whenever that batch fits."""
    sizes = [2**i for i in range(len(steps))]
    latency, measured = 0.0, {}
    for size, step in zip(sizes, steps, strict=True):
        latency += step
        measured[size] = latency
    tuned = sizes[0]
    strategy = {"strategy": "latency_budget", "parameters": {"budget_ms": budget}}
    plan = plan_from_tune("ort", tuned, measured[tuned], strategy=strategy, latencies_ms=measured)
    fitting = [s for s in sizes if measured[s] <= budget]
    assert plan.max_batch_size == max(fitting, default=tuned)
    assert plan.latency_ms == measured[plan.max_batch_size]
    if plan.latency_ms <= budget:
        assert plan.batch_wait_ms + plan.latency_ms <= budget + 1e-3
    assert plan.budget_ms == budget and "budget" in plan.rule


def test_overrides_win_and_the_rule_says_so() -> None:
    """An explicit maximum batch and wait replace the derived ones and are named as given."""
    plan = plan_from_tune("ort", 8, 4.0, max_batch_size=32, batch_wait_ms=7.5)
    assert (plan.max_batch_size, plan.batch_wait_ms, plan.batch_wait_us) == (32, 7.5, 7500)
    assert plan.preferred_batch_sizes == (8, 32)
    assert plan.rule.count("given") == 2


def test_a_budget_without_slack_means_no_wait() -> None:
    """A full batch already at the budget waits for nothing more."""
    assert wait_rule(5.0, 5.0) == 0.0
