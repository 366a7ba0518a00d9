"""Generation strategies are ``Strategy`` values: the shipped laws hold for them, the one fold
picks, and an unreachable budget falls back with a reason."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from returns.pipeline import is_successful

from aitune_fp.core.fold import tune
from aitune_fp.core.generation import (
    GenerationResult,
    candidate_of,
    choose,
    generation_budget,
    max_tokens_per_s,
    min_itl,
    min_ttft,
)
from aitune_fp.core.records import Profile
from aitune_fp.core.strategy import Strategy
from aitune_fp.testing import check_all_laws

# check_all_laws runs ~30 laws; fewer examples per law keep this file quick (as in
# tests/core/test_testing_package.py).
QUICK = settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
_ms = st.floats(min_value=0.1, max_value=1e4, allow_nan=False)

STRATEGIES = (
    max_tokens_per_s,
    min_itl,
    min_ttft,
    generation_budget(ttft_ms=50.0),
    generation_budget(itl_ms=5.0),
    generation_budget(ttft_ms=100.0, itl_ms=20.0),
)


@st.composite
def _results(draw: st.DrawFn) -> list[GenerationResult]:
    count = draw(st.integers(min_value=1, max_value=6))
    return [
        GenerationResult(
            f"c{i}",
            "p",
            "d",
            draw(st.sampled_from([1, 8])),
            32,
            64,
            draw(_ms),
            draw(_ms),
            accurate=draw(st.booleans()) if i else True,
            failure=None if i == 0 or draw(st.booleans()) else "c failed at build: boom",
        )
        for i in range(count)
    ]


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: s.title)
def test_shipped_laws_hold_for_generation_strategies(strategy: Strategy) -> None:
    """Every law of aitune_fp.core.laws (order, speedup, measure, fold) holds for each
    generation strategy, checked by the shipped check_all_laws."""
    check_all_laws(strategy, hypothesis_settings=QUICK)


def test_generation_strategies_measure_generation_profiles_only() -> None:
    """A profile without generation figures is a measure failure naming its backend."""
    for strategy in STRATEGIES:
        failed = strategy.measure(Profile("ort", {1: [1.0]})).failure()
        assert (failed.backend, failed.stage) == ("ort", "measure")


@given(strategy=st.sampled_from(STRATEGIES), results=_results())
def test_pick_is_usable_and_unbeaten(strategy: Strategy, results: list[GenerationResult]) -> None:
    """The pick is the baseline or a usable candidate that no usable candidate strictly beats
    under the strategy, and a fallback is always the baseline."""
    chosen = choose(strategy, results, results[0].name)
    if chosen.fell_back:
        assert chosen.result is results[0]
        return
    assert chosen.result.usable
    mine = strategy.measure(candidate_of(chosen.result).unwrap()).unwrap()
    for r in results:
        measured = candidate_of(r).bind(strategy.measure)
        if is_successful(measured):
            assert not strategy.compare(measured.unwrap(), mine)


@given(strategy=st.sampled_from(STRATEGIES), results=_results())
def test_pick_is_the_folds_winner(strategy: Strategy, results: list[GenerationResult]) -> None:
    """choose names the backend the one fold selects over the same candidates."""
    chosen = choose(strategy, results, results[0].name)
    folded = tune(strategy, [candidate_of(r) for r in results[1:]], candidate_of(results[0]))
    want = folded.unwrap().backend if is_successful(folded) else results[0].name
    assert chosen.result.name == want


def test_unreachable_ttft_budget_falls_back_and_says_why() -> None:
    """A TTFT budget below every candidate keeps the baseline and names the budget."""
    base = GenerationResult("base", "e", "e", 1, 32, 64, 20.0, 8.0)
    fast = GenerationResult("fast", "e", "i", 1, 32, 64, 10.0, 3.0)
    chosen = choose(generation_budget(ttft_ms=1.0), [base, fast], "base")
    assert chosen.fell_back and chosen.result is base
    assert "ttft<=1.0ms unreachable" in chosen.reason and "10.00 ms" in chosen.reason


def test_max_tokens_per_s_picks_the_fastest_usable() -> None:
    """The fastest candidate wins unless it is inaccurate or failed."""
    base = GenerationResult("base", "e", "e", 1, 32, 64, 20.0, 8.0)
    wrong = GenerationResult("wrong", "e", "i", 1, 32, 64, 1.0, 1.0, accurate=False)
    fast = GenerationResult("fast", "e", "i", 1, 32, 64, 10.0, 3.0)
    assert choose(max_tokens_per_s, [base, wrong, fast], "base").result is fast


def test_budget_arguments_are_refused_eagerly() -> None:
    """A budget with neither bound, or a non-positive one, is a ValueError at construction."""
    with pytest.raises(ValueError, match="needs ttft_ms"):
        generation_budget()
    with pytest.raises(ValueError, match="ttft_ms must be"):
        generation_budget(ttft_ms=0.0)
