"""Laws of the confidence-based compare, checked with Hypothesis on raw samples."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.records import BackendProfilingResult
from aitune_fp.core.stats import confidence
from aitune_fp.core.stats.confidence import (
    ConfidenceRule,
    MetricKind,
    beats,
    check_kind,
    clearly_not_faster,
    costs,
    speedup_interval,
)

R = BackendProfilingResult
KINDS: tuple[MetricKind, ...] = ("latency", "throughput")


@st.composite
def rules(draw: st.DrawFn) -> ConfidenceRule:
    """Any valid rule, with few resamples so the laws run fast."""
    return ConfidenceRule(
        confidence=draw(st.floats(0.5, 0.99)),
        min_speedup=draw(st.sampled_from((0.0, 0.01, 0.02, 0.1))),
        resamples=draw(st.integers(10, 120)),
        seed=draw(st.integers(0, 2**32)),
        statistic=draw(st.sampled_from(("mean", "median", "trimmed", "p90"))),
    )


def _latencies(scale: float, factors: list[float]) -> tuple[float, ...]:
    return tuple(scale * f for f in factors)


@st.composite
def results(draw: st.DrawFn, *, rounds: bool | None = None) -> R:
    """A result with 0-15 raw samples and, sometimes, 0-15 interleaved-round samples."""
    bs = draw(st.sampled_from((1, 2, 4, 8)))
    scale = draw(st.sampled_from((0.5, 1.0, 2.0, 3.0)) | st.floats(0.05, 50.0))
    factors = st.lists(st.sampled_from((0.9, 1.0, 1.1)) | st.floats(0.7, 1.4), max_size=15)
    samples = _latencies(scale, draw(factors))
    with_rounds = draw(st.booleans()) if rounds is None else rounds
    round_samples = _latencies(scale, draw(factors)) if with_rounds else ()
    metric = draw(st.floats(0.1, 1000.0))
    return R(metric, bs, scale, bs * 1000.0 / scale, samples_ms=samples, rounds_ms=round_samples)


kinds = st.sampled_from(KINDS)


@given(rule=rules(), kind=kinds, a=results())
def test_nothing_beats_itself(rule: ConfidenceRule, kind: MetricKind, a: R) -> None:
    """Irreflexive: a result never significantly beats itself, and its speedup is exactly 1."""
    assert not beats(rule, kind, a, a)
    assert speedup_interval(rule, kind, a, a).point == 1.0


@given(rule=rules(), kind=kinds, a=results(), b=results())
def test_wins_are_asymmetric_and_ties_symmetric(
    rule: ConfidenceRule, kind: MetricKind, a: R, b: R
) -> None:
    """If a beats b, b does not beat a; "neither beats the other" is symmetric."""
    ab, ba = beats(rule, kind, a, b), beats(rule, kind, b, a)
    assert not (ab and ba)
    tie_ab = not ab and not ba
    tie_ba = not beats(rule, kind, b, a) and not beats(rule, kind, a, b)
    assert tie_ab == tie_ba


@given(rule=rules(), kind=kinds, a=results(), b=results())
def test_the_reverse_interval_is_the_inverse(
    rule: ConfidenceRule, kind: MetricKind, a: R, b: R
) -> None:
    """b's speedup over a is exactly the inverse interval of a's speedup over b."""
    forward = speedup_interval(rule, kind, a, b)
    backward = speedup_interval(rule, kind, b, a)
    assert backward == forward.inverse() or backward.inverse() == forward


@given(rule=rules(), kind=kinds, a=results(), b=results())
def test_a_win_implies_a_speedup_above_the_margin(
    rule: ConfidenceRule, kind: MetricKind, a: R, b: R
) -> None:
    """compare(a, b) implies speedup(a, b) > 1 + min_speedup > 1 (the converse may fail)."""
    if beats(rule, kind, a, b):
        assert speedup_interval(rule, kind, a, b).point > rule.threshold >= 1.0


@given(rule=rules(), kind=kinds, a=results(), b=results())
def test_a_win_and_a_settled_tie_exclude_each_other(
    rule: ConfidenceRule, kind: MetricKind, a: R, b: R
) -> None:
    """A result that beats another is never also 'clearly not faster' than it."""
    assert not (beats(rule, kind, a, b) and clearly_not_faster(rule, kind, a, b))


@given(
    rule=rules(),
    kind=kinds,
    a=results(rounds=False),
    bs=st.sampled_from((1, 2, 4)),
    gap=st.floats(1.001, 3.0),
    n=st.integers(1, 12),
)
def test_strictly_dominating_samples_always_win(
    rule: ConfidenceRule, kind: MetricKind, a: R, bs: int, gap: float, n: int
) -> None:
    """When every cost of b exceeds every cost of a by more than the margin, a beats b."""
    worst = max(costs(kind, a))
    per_sample = worst * rule.threshold * gap
    samples = tuple(
        per_sample * (bs if kind == "throughput" else 1) * (1 + i / 100) for i in range(n)
    )
    b = R(1.0, bs, samples[0], 1.0, samples_ms=samples)
    assert beats(rule, kind, a, b)
    assert not beats(rule, kind, b, a)


@given(rule=rules(), kind=kinds, a=results(), b=results(), k=st.integers(-3, 3))
def test_scaling_every_sample_by_a_power_of_two_keeps_decisions(
    rule: ConfidenceRule, kind: MetricKind, a: R, b: R, k: int
) -> None:
    """Multiplying all samples (and metrics) of both sides by 2**k changes no decision."""
    f = 2.0**k

    def scaled(r: R) -> R:
        metric = r.metric / f if kind == "throughput" else r.metric * f
        return replace(
            r,
            metric=metric,
            samples_ms=tuple(s * f for s in r.samples_ms),
            rounds_ms=tuple(s * f for s in r.rounds_ms),
        )

    assert beats(rule, kind, a, b) == beats(rule, kind, scaled(a), scaled(b))


@given(rule=rules(), kind=kinds, a=results(), b=results())
def test_decisions_are_deterministic_for_a_seed(
    rule: ConfidenceRule, kind: MetricKind, a: R, b: R
) -> None:
    """The same rule (seed included) and data always give the same interval, memo or not."""
    first = speedup_interval(rule, kind, a, b)
    confidence._memo.cache_clear()
    assert speedup_interval(rule, kind, a, b) == first


def test_results_without_samples_compare_by_metric() -> None:
    """Without raw samples the metrics decide, through a point interval."""
    rule = ConfidenceRule()
    fast, slow = R(2.0, 1, 2.0, 500.0), R(3.0, 1, 3.0, 333.3)
    assert beats(rule, "latency", fast, slow)
    assert speedup_interval(rule, "latency", fast, slow).point == pytest.approx(1.5)
    assert beats(rule, "throughput", R(600.0, 4, 6.7, 600.0), R(500.0, 8, 16.0, 500.0))


def test_round_samples_make_the_interval_paired() -> None:
    """When both sides have interleaved rounds the interval is paired and uses them."""
    drift = [1.0 + 0.3 * (i % 7) for i in range(30)]
    a = R(1.0, 1, 1.0, 1.0, samples_ms=(5.0,) * 3, rounds_ms=tuple(drift))
    b = R(1.0, 1, 1.0, 1.0, samples_ms=(1.0,) * 3, rounds_ms=tuple(1.05 * d for d in drift))
    ci = speedup_interval(ConfidenceRule(), "latency", a, b)
    assert ci.paired and ci.point == pytest.approx(1.05)
    assert beats(ConfidenceRule(), "latency", a, b)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"confidence": 1.0},
        {"min_speedup": -0.01},
        {"min_speedup": float("inf")},
        {"resamples": 5},
        {"seed": -1},
        {"statistic": "mode"},
    ],
)
def test_invalid_rules_are_refused(kwargs: dict[str, object]) -> None:
    """A rule with an out-of-range parameter is refused at construction."""
    with pytest.raises(ValueError):
        ConfidenceRule(**kwargs)  # type: ignore[arg-type]


def test_unknown_metric_kinds_are_refused() -> None:
    """Only throughput and latency metrics have a per-sample cost."""
    assert check_kind("latency") == "latency"
    with pytest.raises(ValueError, match="metric kind"):
        check_kind("memory")
