"""Warm-up rule laws (aitune_fp.core.laws.warmup) on generated rules and streams."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.laws.warmup import WARMUP_LAWS, drive_warmup, warmup_calls
from aitune_fp.core.measure.warmup import WarmupCall, WarmupRule, fixed_warmup


@st.composite
def warmup_rules(draw: st.DrawFn) -> WarmupRule:
    """A warm-up rule with drawn bounds (the default and the fixed warm-up included)."""
    kind = draw(st.sampled_from(("default", "fixed", "drawn")))
    if kind == "default":
        return WarmupRule()
    if kind == "fixed":
        return fixed_warmup(draw(st.integers(1, 40)))
    min_calls = draw(st.integers(1, 30))
    min_seconds = draw(st.sampled_from((0.0, 0.001, 0.05)))
    return WarmupRule(
        min_calls=min_calls,
        max_calls=draw(st.integers(min_calls, 120)),
        window=draw(st.integers(1, 12)),
        windows=draw(st.sampled_from((0, 2, 3, 4, 5))),
        tolerance=draw(st.sampled_from((0.0, 0.01, 0.05, 0.2))),
        min_seconds=min_seconds,
        max_seconds=min_seconds + draw(st.sampled_from((0.0, 0.01, 0.5, 5.0, math.inf))),
    )


def streams() -> st.SearchStrategy[tuple[float, ...]]:
    """Per-call latencies in ms, from a fast steady level to slow warm-up spikes."""
    level = st.floats(min_value=0.01, max_value=200.0)
    noisy = st.lists(level, min_size=1, max_size=60).map(tuple)
    steady = st.tuples(level, st.integers(1, 80)).map(lambda lv: (lv[0],) * lv[1])
    warming = st.tuples(level, st.integers(1, 60), st.floats(1.0, 3.0)).map(
        lambda w: tuple(w[0] * (1.0 + (w[2] - 1.0) * math.exp(-i / 8)) for i in range(w[1]))
    )
    return st.one_of(noisy, steady, warming)


@pytest.mark.parametrize("law", WARMUP_LAWS, ids=lambda law: law.name)
@given(rule=warmup_rules(), latencies=streams())
def test_warmup_law(law: object, rule: WarmupRule, latencies: tuple[float, ...]) -> None:
    """Every warm-up law holds for a generated rule and stream (its statement is its id)."""
    assert law.holds(rule, latencies)  # type: ignore[attr-defined]


def test_default_rule_stops_a_steady_stream_after_its_windows() -> None:
    """The default rule stops a constant stream as stable after 4 windows of 10 calls."""
    rule = WarmupRule()
    state, decisions = drive_warmup(rule, warmup_calls(rule, (0.2,)))
    assert len(state.samples) == 40
    assert decisions[-1].reason.startswith("stable: medians of the last 4 windows of 10 calls")


def test_default_rule_waits_out_the_onnx_runtime_pattern() -> None:
    """A stream 40 % slow for 30 calls, then settling by call 50, stops only once settled;
    the old fixed 10-call warm-up stops inside the slow phase."""
    slow = tuple(0.205 if i < 30 else 0.205 - 0.06 * (i - 30) / 20 for i in range(50))
    stream = slow + (0.145,) * 200
    rule = WarmupRule()
    state, decisions = drive_warmup(rule, warmup_calls(rule, stream))
    assert decisions[-1].reason.startswith("stable")
    assert len(state.samples) >= 50
    assert state.samples[-1] == pytest.approx(0.145)
    old = fixed_warmup(10)
    old_state, _ = drive_warmup(old, warmup_calls(old, stream))
    assert old_state.samples[-1] == pytest.approx(0.205)


def test_a_never_stable_stream_stops_at_max_calls_with_a_reason() -> None:
    """Alternating latencies far apart are never stable: the rule stops at max_calls, says so."""
    rule = WarmupRule(max_calls=60, window=3, windows=2, tolerance=0.01)
    state, decisions = drive_warmup(rule, warmup_calls(rule, (1.0, 1.0, 1.0, 5.0, 5.0, 5.0)))
    assert len(state.samples) == 60
    assert decisions[-1].reason.startswith("max calls: 60 warm-up calls, not stable")


def test_the_time_cap_stops_a_slow_unstable_stream() -> None:
    """A slow, unstable stream stops at the time cap once min_calls are done, not before."""
    rule = WarmupRule(min_calls=5, max_seconds=1.0)
    calls = tuple(WarmupCall(ms, 0.4 * (i + 1)) for i, ms in enumerate((400.0, 800.0) * 10))
    state, decisions = drive_warmup(rule, calls)
    assert len(state.samples) == 5
    assert decisions[-1].reason.startswith("time cap: 2 s >= 1 s of warm-up after 5 calls")


def test_min_seconds_keeps_a_fast_stream_warming() -> None:
    """A fast stable stream keeps warming up until min_seconds have passed."""
    rule = WarmupRule(min_seconds=0.01)
    state, decisions = drive_warmup(rule, warmup_calls(rule, (0.125,)))
    assert len(state.samples) == 80  # 80 calls of 0.125 ms: 10 ms, exactly
    assert decisions[-1].reason.startswith("stable")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_calls": 5, "max_calls": 4}, "need 1 <= min_calls <= max_calls"),
        ({"window": 0}, "need window >= 1 and windows 0 or >= 2"),
        ({"windows": 1}, "need window >= 1 and windows 0 or >= 2"),
        ({"tolerance": -0.1}, "tolerance must be finite and >= 0"),
        ({"min_seconds": 2.0, "max_seconds": 1.0}, "need 0 <= min_seconds <= max_seconds"),
    ],
)
def test_bad_bounds_are_rejected(kwargs: dict[str, float], message: str) -> None:
    """A rule with inconsistent bounds is rejected at construction, naming the bound."""
    with pytest.raises(ValueError, match=message):
        WarmupRule(**kwargs)  # type: ignore[arg-type]
