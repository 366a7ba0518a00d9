"""Early-stop rule laws (aitune_fp.core.laws.early_stop) and its stated winner-stop rate."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.laws.early_stop import EARLY_STOP_LAWS
from aitune_fp.core.measure.early_stop import (
    WINNER_STOP_RATE,
    EarlyStopRule,
    Probe,
    early_stop_for,
)
from aitune_fp.core.records import BackendProfilingResult, Profile
from aitune_fp.core.strategies import confident, max_throughput, min_latency, min_latency_at
from aitune_fp.core.strategy import Strategy
from aitune_fp.testing import measured_results, shipped_strategies

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def strategies_with_intervals() -> st.SearchStrategy[Strategy]:
    """Shipped strategies, plain and confident, and a percentile latency."""
    plain = shipped_strategies()
    return st.one_of(plain, plain.map(confident), st.just(min_latency_at(90)))


@st.composite
def cases(draw: st.DrawFn) -> tuple[EarlyStopRule, BackendProfilingResult, Probe]:
    """A rule for a drawn strategy, a best that strategy measured and a probe near it."""
    strategy = draw(strategies_with_intervals())
    rule = early_stop_for(strategy, margin=draw(st.sampled_from((0.0, 0.05, 0.1, 0.25))))
    assert rule is not None
    best = draw(measured_results(strategy))
    base = best.samples_ms or (best.latency,)
    factor = draw(st.sampled_from((0.5, 0.9, 1.0, 1.05, 1.2, 1.5, 3.0)))
    jitter = draw(st.lists(st.floats(0.9, 1.1), min_size=2, max_size=12))
    samples = tuple(base[i % len(base)] * factor * j for i, j in enumerate(jitter))
    bs = draw(st.one_of(st.just(best.selected_batch_size), st.sampled_from((1, 2, 8))))
    return rule, best, Probe(bs, samples)


@pytest.mark.parametrize("law", EARLY_STOP_LAWS, ids=lambda law: law.name)
@given(case=cases())
def test_early_stop_law(
    law: object, case: tuple[EarlyStopRule, BackendProfilingResult, Probe]
) -> None:
    """Every early-stop law holds for a generated strategy, best and probe (its id states it)."""
    assert law.holds(*case)  # type: ignore[attr-defined]


def test_a_clear_loser_stops_and_a_close_one_goes_on() -> None:
    """Twice as slow as the best stops after the probe; 3 % slower goes on measuring."""
    rule = early_stop_for(max_throughput)
    assert rule is not None
    best = max_throughput.measure(Profile("ort", {4: [4.0, 4.1, 3.9, 4.05, 3.95]})).unwrap()
    state = rule.start("ort", best, baseline=False)
    _, clear = rule.step(state, Probe(4, (8.0, 8.2, 7.8, 8.1, 7.9)))
    _, close = rule.step(state, Probe(4, (4.12, 4.22, 4.02, 4.17, 4.07)))
    assert clear.stop and clear.reason.startswith("clearly beaten at batch size 4 after 5 calls")
    assert not close.stop


def test_stops_accumulate_over_a_sweep() -> None:
    """The summary names every batch size stopped early, in sweep order, in one line."""
    rule = early_stop_for(confident(max_throughput))
    assert rule is not None
    best = rule.strategy.measure(Profile("ort", {1: [1.0, 1.01, 0.99, 1.0, 1.0]})).unwrap()
    state = rule.start("ort", best, baseline=False)
    for bs in (1, 2):
        state, _ = rule.step(state, Probe(bs, tuple(3.0 * bs * k for k in (1, 1.01, 0.99))))
    summary = rule.stopped_early(state)
    assert summary is not None and summary.startswith("batch size 1: ort 3.00× as fast")
    assert "; batch size 2: ort 3.00× as fast after 3 calls" in summary


def test_a_metric_without_an_interval_gets_no_rule() -> None:
    """A strategy whose metric is neither latency nor throughput has no early-stop rule."""
    import dataclasses

    from aitune_fp.core.strategy import Metric

    odd = dataclasses.replace(min_latency, metric=Metric("score", "points", ".1f"))
    assert early_stop_for(odd) is None


@pytest.mark.parametrize("strategy", [min_latency, confident(min_latency, rounds=None)])
def test_winner_stop_rate_on_the_synthetic_model_is_within_the_stated_rate(
    strategy: Strategy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On 300 seeded synthetic trials the default rule stops the true best at most at the
    rate the module states (the benchmark's own simulation, run small)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    sys.modules.pop("early_stop", None)
    import early_stop

    figures = early_stop.run(300, 7, strategy, 0.10)
    assert figures.winner_stopped <= WINNER_STOP_RATE
    assert figures.calls < 1.0  # it does stop clear losers: fewer timed calls
