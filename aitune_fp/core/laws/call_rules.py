"""Call-rule laws: a per-call stop rule stops between its minimum and its maximum, discards
its warm-up and always says why it stopped.

Every law here takes ``(rule, latencies)``; the latencies are cycled when too short.
"""

from __future__ import annotations

import itertools

from aitune_fp.core.laws.law import Law, implies
from aitune_fp.core.measure.stop_rules import CallRule, CallState, Decision


def drive_call_rule(
    rule: CallRule, latencies: tuple[float, ...]
) -> tuple[int, CallState, Decision]:
    """Feed ``latencies`` (cycled) to ``rule`` until it stops or passes its maximum.

    Returns the number of calls made, the final state and the last decision.

    >>> from aitune_fp.core.measure.stop_rules import fixed_steps
    >>> calls, state, decision = drive_call_rule(fixed_steps(warmup=2, steps=3), (1.0,))
    >>> calls, state.samples, decision.stop
    (5, (1.0, 1.0, 1.0), True)
    """
    if not latencies:
        raise ValueError("drive_call_rule needs at least one latency to cycle")
    state, decision, calls = rule.start(), Decision(False), 0
    for latency in itertools.islice(itertools.cycle(latencies), rule.max_calls + 1):
        state, decision = rule.step(state, latency)
        calls += 1
        if decision.stop:
            break
    return calls, state, decision


def _call_not_before_minimum(rule: CallRule, latencies: tuple[float, ...]) -> bool:
    calls, _, _ = drive_call_rule(rule, latencies)
    return calls >= rule.warmup + rule.min_samples


def _call_stops_by_maximum(rule: CallRule, latencies: tuple[float, ...]) -> bool:
    calls, _, decision = drive_call_rule(rule, latencies)
    return decision.stop and calls <= rule.max_calls


def _call_warmup_discarded(rule: CallRule, latencies: tuple[float, ...]) -> bool:
    calls, state, _ = drive_call_rule(rule, latencies)
    fed = tuple(itertools.islice(itertools.cycle(latencies), calls))
    return state.calls == calls and state.samples == fed[rule.warmup :]


def _call_stop_has_reason(rule: CallRule, latencies: tuple[float, ...]) -> bool:
    _, _, decision = drive_call_rule(rule, latencies)
    return implies(decision.stop, bool(decision.reason))


CALL_RULE_LAWS: tuple[Law[[CallRule, tuple[float, ...]]], ...] = (
    Law(
        "call_rule_not_before_minimum",
        "a call rule never stops before warm-up plus min_samples calls",
        _call_not_before_minimum,
    ),
    Law(
        "call_rule_stops_by_maximum",
        "a call rule always stops by warm-up plus max_samples calls",
        _call_stops_by_maximum,
    ),
    Law(
        "call_rule_discards_warmup",
        "the state keeps exactly the latencies fed after the warm-up calls",
        _call_warmup_discarded,
    ),
    Law("call_rule_stop_has_reason", "a stop decision always says why", _call_stop_has_reason),
)
