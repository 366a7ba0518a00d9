"""Stop-rule laws (aitune_fp.core.laws) for generated rules and every shipped plan."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.laws import (
    BUDGET_SWEEP_LAWS,
    CALL_RULE_LAWS,
    SATURATION_LAWS,
    SWEEP_RULE_LAWS,
    drive_call_rule,
)
from aitune_fp.core.measure.stop_rules import (
    SweepPoint,
    fixed_steps,
    never_stop,
    stable_window,
    throughput_saturation,
)
from aitune_fp.testing import (
    SHIPPED,
    backoffs,
    budgets,
    call_latencies,
    call_rules,
    saturation_ratios,
    shipped_strategies,
    sweep_paths,
    sweep_points,
    sweep_rules,
)

# A call rule or sweep rule: a generated one, or the one a shipped strategy plans with.
RULE_SOURCES = ("generated", *SHIPPED)


def _call_law(name: str, source: str, data: st.DataObject) -> bool:
    """Evaluate the named call-rule law on a rule from ``source`` and generated latencies."""
    law = next(law for law in CALL_RULE_LAWS if law.name == name)
    if source == "generated":
        rule = data.draw(call_rules(), label="rule")
    else:
        rule = data.draw(shipped_strategies(only=source), label="strategy").plan.call_rule
    return law.holds(rule, data.draw(call_latencies(), label="latencies"))


def _sweep_law(name: str, source: str, data: st.DataObject) -> bool:
    """Evaluate the named sweep-rule law on a rule from ``source`` and generated points."""
    law = next(law for law in SWEEP_RULE_LAWS if law.name == name)
    if source == "generated":
        rule = data.draw(sweep_rules(), label="rule")
    else:
        rule = data.draw(shipped_strategies(only=source), label="strategy").plan.sweep_rule
    return law.holds(rule, data.draw(sweep_paths(), "points"), data.draw(sweep_points(), "point"))


@pytest.mark.parametrize("source", RULE_SOURCES)
@given(data=st.data())
def test_call_rule_not_before_minimum(source: str, data: st.DataObject) -> None:
    """A call rule never stops before its warm-up plus min_samples calls."""
    assert _call_law("call_rule_not_before_minimum", source, data)


@pytest.mark.parametrize("source", RULE_SOURCES)
@given(data=st.data())
def test_call_rule_stops_by_maximum(source: str, data: st.DataObject) -> None:
    """A call rule always stops by its warm-up plus max_samples calls."""
    assert _call_law("call_rule_stops_by_maximum", source, data)


@pytest.mark.parametrize("source", RULE_SOURCES)
@given(data=st.data())
def test_call_rule_discards_warmup(source: str, data: st.DataObject) -> None:
    """A call rule keeps exactly the latencies fed after its warm-up."""
    assert _call_law("call_rule_discards_warmup", source, data)


@pytest.mark.parametrize("source", RULE_SOURCES)
@given(data=st.data())
def test_call_rule_stop_has_reason(source: str, data: st.DataObject) -> None:
    """A call rule that stops always gives a reason."""
    assert _call_law("call_rule_stop_has_reason", source, data)


@pytest.mark.parametrize("source", RULE_SOURCES)
@given(data=st.data())
def test_sweep_rule_accumulates(source: str, data: st.DataObject) -> None:
    """A sweep rule's step appends exactly the new point to its state."""
    assert _sweep_law("sweep_rule_accumulates", source, data)


@pytest.mark.parametrize("source", RULE_SOURCES)
@given(data=st.data())
def test_sweep_rule_pure(source: str, data: st.DataObject) -> None:
    """A sweep rule decides the same way for the same points."""
    assert _sweep_law("sweep_rule_pure", source, data)


@pytest.mark.parametrize("source", RULE_SOURCES)
@given(data=st.data())
def test_sweep_rule_stop_has_reason(source: str, data: st.DataObject) -> None:
    """A sweep rule that stops always gives a reason."""
    assert _sweep_law("sweep_rule_stop_has_reason", source, data)


@given(ratio=saturation_ratios(), backoff=backoffs(), points=sweep_paths())
def test_saturation_not_before_minimum(
    ratio: float, backoff: int, points: tuple[SweepPoint, ...]
) -> None:
    """Throughput saturation never stops within its first backoff + 1 batch sizes."""
    law = next(law for law in SATURATION_LAWS if law.name == "saturation_not_before_minimum")
    assert law.holds(ratio, backoff, points)


@given(ratio=saturation_ratios(), backoff=backoffs(), points=sweep_paths())
def test_saturation_stops_when_stalled(
    ratio: float, backoff: int, points: tuple[SweepPoint, ...]
) -> None:
    """Saturation stops exactly when more than backoff trailing batch sizes made no progress."""
    law = next(law for law in SATURATION_LAWS if law.name == "saturation_stops_when_stalled")
    assert law.holds(ratio, backoff, points)


@given(budget=budgets(), points=sweep_paths())
def test_budget_sweep_stops_over_budget(budget: float, points: tuple[SweepPoint, ...]) -> None:
    """The latency-budget sweep stops exactly at a batch size whose mean is over budget."""
    assert BUDGET_SWEEP_LAWS[0].holds(budget, points)


@given(latencies=call_latencies())
def test_fixed_steps_defaults_are_the_references(latencies: tuple[float, ...]) -> None:
    """The default fixed-steps rule discards 10 warm-up calls and keeps 20 timed ones."""
    calls, state, decision = drive_call_rule(fixed_steps(), latencies)
    assert (calls, len(state.samples), decision.stop) == (30, 20, True)


def test_stable_window_gives_up_with_a_reason() -> None:
    """A stable window that never settles stops at 100 timed calls with a reason, no exception."""
    calls, state, decision = drive_call_rule(stable_window(), (1.0, 3.0))
    assert (calls, len(state.samples), decision.stop) == (110, 100, True)
    assert decision.reason.startswith("gave up: not stable")


def test_stable_window_stops_once_stable() -> None:
    """A stable window stops as soon as its first full window is steady (10 + 20 calls)."""
    calls, _, decision = drive_call_rule(stable_window(), (2.0,))
    assert calls == 30
    assert decision.reason.startswith("stable: cv 0.0%")


def test_saturation_defaults_stop_after_three_stalls() -> None:
    """The default saturation rule stops at the third batch size in a row without progress."""
    rule = throughput_saturation()
    points = [SweepPoint(1, 1.0), SweepPoint(2, 2.5), SweepPoint(4, 5.0), SweepPoint(8, 10.0)]
    state: tuple[SweepPoint, ...] = ()
    stops = []
    for point in points:
        state, decision = rule.step(state, point)
        stops.append(decision.stop)
    assert stops == [False, False, False, True]


def test_saturation_progress_resets_the_count() -> None:
    """A batch size that makes progress resets the run of stalled batch sizes."""
    rule = throughput_saturation(backoff=1)
    points = (SweepPoint(1, 1.0), SweepPoint(2, 4.0), SweepPoint(4, 1.0), SweepPoint(8, 16.0))
    assert not rule.judge(points).stop
    assert rule.judge((*points, SweepPoint(16, 64.0))).stop


def test_never_stop_never_stops() -> None:
    """``never_stop`` sweeps every planned batch size."""
    rule = never_stop()
    assert not rule.judge(tuple(SweepPoint(2**k, 1e6) for k in range(10))).stop
