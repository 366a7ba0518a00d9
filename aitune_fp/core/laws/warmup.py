"""Warm-up laws: the warm-up rule stops between its floor and its caps, keeps every call,
decides on the calls so far alone, and stops as stable exactly when its windows agree.

Every law here takes ``(rule, latencies)``: the latencies (ms) are cycled up to the rule's
``max_calls`` and each call's ``elapsed_s`` is the running sum of the latencies so far
(:func:`warmup_calls`), so the time caps are exercised by slow streams.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from aitune_fp.core.laws.law import Law, implies
from aitune_fp.core.measure.stop_rules import Decision
from aitune_fp.core.measure.warmup import WarmupCall, WarmupRule, WarmupState

Latencies = tuple[float, ...]


def warmup_calls(
    rule: WarmupRule, latencies: Latencies, elapsed_from: Latencies | None = None
) -> tuple[WarmupCall, ...]:
    """``latencies`` cycled to ``rule.max_calls`` calls, elapsed = running sum of ms / 1000.

    ``elapsed_from``, when given, supplies the latencies the clock is summed from instead
    (so a law can change the latencies without changing the time).

    >>> warmup_calls(WarmupRule(min_calls=1, max_calls=3), (1000.0, 500.0))
    (WarmupCall(latency_ms=1000.0, elapsed_s=1.0), WarmupCall(latency_ms=500.0, elapsed_s=1.5), \
WarmupCall(latency_ms=1000.0, elapsed_s=2.5))
    """
    if not latencies:
        raise ValueError("warmup_calls needs at least one latency to cycle")
    fed = tuple(itertools.islice(itertools.cycle(latencies), rule.max_calls))
    source = latencies if elapsed_from is None else elapsed_from
    clock = tuple(itertools.islice(itertools.cycle(source), rule.max_calls))
    out, total = [], 0.0
    for ms, tick in zip(fed, clock, strict=True):
        total += tick
        out.append(WarmupCall(ms, total / 1000.0))
    return tuple(out)


def drive_warmup(
    rule: WarmupRule, calls: tuple[WarmupCall, ...]
) -> tuple[WarmupState, tuple[Decision, ...]]:
    """Step ``rule`` through ``calls`` until it stops; the final state and every decision."""
    state, decisions = rule.start(), []
    for call in calls:
        state, decision = rule.step(state, call)
        decisions.append(decision)
        if decision.stop:
            break
    return state, tuple(decisions)


def _run(rule: WarmupRule, latencies: Latencies) -> tuple[int, WarmupState, Decision]:
    state, decisions = drive_warmup(rule, warmup_calls(rule, latencies))
    return len(decisions), state, decisions[-1]


def _not_before_minimum(rule: WarmupRule, latencies: Latencies) -> bool:
    calls, _, _ = _run(rule, latencies)
    return calls >= rule.min_calls


def _stops_by_maximum(rule: WarmupRule, latencies: Latencies) -> bool:
    calls, _, decision = _run(rule, latencies)
    return decision.stop and calls <= rule.max_calls


def _time_cap(rule: WarmupRule, latencies: Latencies) -> bool:
    calls, _, _ = _run(rule, latencies)
    capped = [
        i + 1
        for i, c in enumerate(warmup_calls(rule, latencies))
        if i + 1 >= rule.min_calls and c.elapsed_s >= rule.max_seconds
    ]
    return not capped or calls <= capped[0]


def _keeps_every_call(rule: WarmupRule, latencies: Latencies) -> bool:
    calls, state, _ = _run(rule, latencies)
    fed = warmup_calls(rule, latencies)[:calls]
    return state.samples == tuple(c.latency_ms for c in fed) and state.elapsed_s == (
        fed[-1].elapsed_s
    )


def _prefix_decides(rule: WarmupRule, latencies: Latencies) -> bool:
    """The decisions on a prefix do not depend on the calls after it."""
    calls = warmup_calls(rule, latencies)
    _, full = drive_warmup(rule, calls)
    cut = len(full) // 2
    changed = tuple(WarmupCall(c.latency_ms * 3.0, c.elapsed_s + 1.0) for c in calls[cut:])
    _, other = drive_warmup(rule, calls[:cut] + changed)
    return full[:cut] == other[:cut]


def _ready(rule: WarmupRule, call: WarmupCall, samples: tuple[float, ...]) -> bool:
    """Whether ``call``, the last of ``samples``, meets every condition of a stable stop."""
    spread = rule.spread(samples)
    return (
        len(samples) >= rule.min_calls
        and call.elapsed_s >= rule.min_seconds
        and spread is not None
        and spread <= rule.tolerance
    )


def _stable_exactly_when_windows_agree(rule: WarmupRule, latencies: Latencies) -> bool:
    """A stop is 'stable' exactly when the floor is done and the windows' spread is in
    tolerance, and no earlier call met those conditions."""
    calls = warmup_calls(rule, latencies)
    _, decisions = drive_warmup(rule, calls)
    samples = tuple(c.latency_ms for c in calls)
    for i, decision in enumerate(decisions):
        ready = _ready(rule, calls[i], samples[: i + 1])
        if ready != (decision.stop and decision.reason.startswith("stable")):
            return False
    return True


def _expected_stop(rule: WarmupRule, ticks: Sequence[WarmupCall]) -> int:
    """The call a constant stream should stop at: the first past the floor that is
    stable (windows and ``min_seconds`` done) or past ``max_seconds``, else the cap."""
    need = rule.stable_after
    for n, c in enumerate(ticks, start=1):
        if n < rule.min_calls:
            continue
        stable = need is not None and n >= need and c.elapsed_s >= rule.min_seconds
        if stable or c.elapsed_s >= rule.max_seconds:
            return n
    return rule.max_calls


def _constant_stops_when_full(rule: WarmupRule, latencies: Latencies) -> bool:
    """A constant stream stops at the first call past the floor, the windows and
    ``min_seconds``, unless a cap stops it first."""
    constant = (latencies[0],)
    calls, _, decision = _run(rule, constant)
    expect = _expected_stop(rule, warmup_calls(rule, constant))
    need = rule.stable_after
    early = need is not None and calls < need
    return calls == expect and not (early and decision.reason.startswith("stable"))


def _falling_never_stable(rule: WarmupRule, latencies: Latencies) -> bool:
    """A level that falls by more than the tolerance per window never stops as stable."""
    factor = (1.0 + rule.tolerance) ** (1.0 / rule.window) * 1.01
    falling = tuple(latencies[0] * factor**-i for i in range(rule.max_calls))
    if not math.isfinite(factor) or min(falling) < 1e-300:
        return True  # outside floating point: nothing to check
    _, decisions = drive_warmup(rule, warmup_calls(rule, falling, latencies))
    return not decisions[-1].reason.startswith("stable")


def _scale_free(rule: WarmupRule, latencies: Latencies) -> bool:
    """Scaling every latency by a power of two (same clock) changes no decision."""
    scaled = tuple(x * 4.0 for x in latencies)
    _, plain = drive_warmup(rule, warmup_calls(rule, latencies))
    _, other = drive_warmup(rule, warmup_calls(rule, scaled, latencies))
    return plain == other


def _stop_has_reason(rule: WarmupRule, latencies: Latencies) -> bool:
    _, _, decision = _run(rule, latencies)
    return implies(decision.stop, bool(decision.reason) and "\n" not in decision.reason)


WARMUP_LAWS: tuple[Law[[WarmupRule, Latencies]], ...] = (
    Law(
        "warmup_not_before_minimum",
        "the warm-up never stops before min_calls calls",
        _not_before_minimum,
    ),
    Law("warmup_stops_by_maximum", "the warm-up always stops by max_calls", _stops_by_maximum),
    Law(
        "warmup_time_cap",
        "the warm-up stops by the first call past min_calls with max_seconds elapsed",
        _time_cap,
    ),
    Law(
        "warmup_keeps_every_call",
        "the state holds exactly the latencies fed and the last elapsed time",
        _keeps_every_call,
    ),
    Law(
        "warmup_prefix_decides",
        "the decisions on a prefix of the calls never depend on later calls",
        _prefix_decides,
    ),
    Law(
        "warmup_stable_exactly_when_windows_agree",
        "a stop is 'stable' exactly when the floor is done and the windows agree",
        _stable_exactly_when_windows_agree,
    ),
    Law(
        "warmup_constant_stops_when_full",
        "a constant stream stops once the floor and the windows are full, or at a cap",
        _constant_stops_when_full,
    ),
    Law(
        "warmup_falling_never_stable",
        "a level falling faster than the tolerance per window never stops as stable",
        _falling_never_stable,
    ),
    Law("warmup_scale_free", "scaling latencies by 4 changes no decision", _scale_free),
    Law("warmup_stop_has_reason", "a stop says why, in one line", _stop_has_reason),
)
