"""Sweep-rule laws: a batch-size sweep rule is a pure accumulator that says why it stops;
throughput saturation and the latency-budget sweep stop exactly when their rule says.

``SWEEP_RULE_LAWS`` take ``(rule, points, point)``, ``SATURATION_LAWS`` take
``(ratio, backoff, points)`` and ``BUDGET_SWEEP_LAWS`` take ``(budget_ms, points)``.
"""

from __future__ import annotations

from aitune_fp.core.laws.law import Law, implies
from aitune_fp.core.measure.stop_rules import Decision, SweepPoint, SweepRule, throughput_saturation
from aitune_fp.core.measure.stop_rules import latency_budget_sweep as budget_sweep_rule

Points = tuple[SweepPoint, ...]


def _sweep_accumulates(rule: SweepRule, points: Points, point: SweepPoint) -> bool:
    state, _ = rule.step(points, point)
    return state == (*points, point)


def _sweep_pure(rule: SweepRule, points: Points, point: SweepPoint) -> bool:
    return rule.step(points, point) == rule.step(points, point)


def _sweep_stop_has_reason(rule: SweepRule, points: Points, point: SweepPoint) -> bool:
    _, decision = rule.step(points, point)
    return implies(decision.stop, bool(decision.reason))


SWEEP_RULE_LAWS: tuple[Law[[SweepRule, Points, SweepPoint]], ...] = (
    Law("sweep_rule_accumulates", "a step appends exactly the new point", _sweep_accumulates),
    Law("sweep_rule_pure", "the same points always give the same decision", _sweep_pure),
    Law("sweep_rule_stop_has_reason", "a stop decision always says why", _sweep_stop_has_reason),
)


def _last_decision(rule: SweepRule, points: Points) -> Decision:
    """The decision after stepping ``rule`` through ``points`` (continue when empty)."""
    state: Points = ()
    decision = Decision(False)
    for point in points:
        state, decision = rule.step(state, point)
    return decision


def _stalled_tail(ratio: float, points: Points) -> int:
    """Trailing points whose throughput, less ``ratio``, stays under every earlier best."""
    stalled = 0
    for i in range(len(points) - 1, 0, -1):
        best_before = max(p.throughput for p in points[:i])
        if points[i].throughput * (1.0 - ratio) >= best_before:
            break
        stalled += 1
    return stalled


def _saturation_not_before_minimum(ratio: float, backoff: int, points: Points) -> bool:
    decision = _last_decision(throughput_saturation(ratio=ratio, backoff=backoff), points)
    return implies(len(points) <= backoff + 1, not decision.stop)


def _saturation_stops_when_stalled(ratio: float, backoff: int, points: Points) -> bool:
    decision = _last_decision(throughput_saturation(ratio=ratio, backoff=backoff), points)
    return decision.stop == (_stalled_tail(ratio, points) > backoff)


SATURATION_LAWS: tuple[Law[[float, int, Points]], ...] = (
    Law(
        "saturation_not_before_minimum",
        "throughput saturation never stops within the first backoff + 1 batch sizes",
        _saturation_not_before_minimum,
    ),
    Law(
        "saturation_stops_when_stalled",
        "saturation stops exactly when more than backoff trailing batch sizes made no progress",
        _saturation_stops_when_stalled,
    ),
)


def _budget_sweep_stops_over_budget(budget_ms: float, points: Points) -> bool:
    decision = _last_decision(budget_sweep_rule(budget_ms), points)
    return decision.stop == (bool(points) and points[-1].latency_ms > budget_ms)


BUDGET_SWEEP_LAWS: tuple[Law[[float, Points]], ...] = (
    Law(
        "budget_sweep_stops_over_budget",
        "the latency-budget sweep stops exactly at a batch size over budget (inclusive ok)",
        _budget_sweep_stops_over_budget,
    ),
)
