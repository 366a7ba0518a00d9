"""Generation strategies are declared like every shipped strategy: their config round-trips
through a run record's JSON, specs name them, and the combinators wrap them."""

from __future__ import annotations

import json

import pytest
from returns.result import Success

from aitune_fp.core.fold import tune
from aitune_fp.core.generation import generation_budget, max_tokens_per_s, min_itl, min_ttft
from aitune_fp.core.measure.generation_profile import GenerationPoint, GenerationProfile
from aitune_fp.core.records import Profile
from aitune_fp.core.strategies.registry import (
    STRATEGY_SPECS,
    parse_strategy,
    strategy_config,
    strategy_from_config,
)
from aitune_fp.core.strategy import Strategy

STRATEGIES = (
    max_tokens_per_s,
    min_itl,
    min_ttft,
    generation_budget(ttft_ms=5.0),
    generation_budget(itl_ms=2),
    generation_budget(ttft_ms=50.0, itl_ms=10.0),
)


def _profile(name: str, ttft_ms: float, itl_ms: float) -> Profile:
    point = GenerationPoint(1, 8, 4, ttft_ms, itl_ms)
    return Profile(name, {1: [point.total_ms]}, generation=GenerationProfile((point,)))


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: s.title)
def test_config_round_trips_through_json(strategy: Strategy) -> None:
    """strategy_from_config(strategy_config(s)) written as JSON text is s: same config and
    the same measure rule."""
    text = json.dumps(strategy_config(strategy), sort_keys=True)
    back = strategy_from_config(json.loads(text))
    assert strategy_config(back) == strategy_config(strategy)
    assert back.measure == strategy.measure


@pytest.mark.parametrize(
    ("spec", "name", "params"),
    [
        ("max-tokens-per-s", "max_tokens_per_s", {}),
        ("MIN_ITL", "min_itl", {}),
        ("min-ttft", "min_ttft", {}),
        ("generation-budget=ttft=50ms,itl=10ms", "generation_budget",
         {"ttft_ms": 50.0, "itl_ms": 10.0}),
        ("first-wins:min-ttft", "first_wins(min_ttft)", {"first_wins": True}),
    ],
)  # fmt: skip
def test_specs_name_them(spec: str, name: str, params: dict[str, object]) -> None:
    """Each spec parses to the named strategy with its parameters (a combinator included)."""
    strategy = parse_strategy(spec)
    assert strategy.name == name and dict(strategy.params) == params


def test_a_bad_budget_spec_says_what_is_accepted_and_tune_lists_none() -> None:
    """generation-budget without ttft=/itl= is a ValueError naming the form; the tune help
    lists no generation spec (a forward tune has no generation profile)."""
    with pytest.raises(ValueError, match="ttft=MS and/or itl=MS"):
        parse_strategy("generation-budget=fast")
    assert not any(s.startswith(("min-ttft", "min-itl", "generation")) for s in STRATEGY_SPECS)


def test_a_combinator_wraps_a_generation_strategy_in_the_fold() -> None:
    """with_min_speedup over min_ttft keeps the baseline unless a candidate's TTFT is at least
    the ratio better, decided by the one fold."""
    strategy = parse_strategy("min-speedup=1.5:min-ttft")
    base = Success(_profile("hf", 10.0, 2.0))
    slight, clear = Success(_profile("a", 8.0, 2.0)), Success(_profile("b", 5.0, 2.0))
    assert tune(strategy, [slight], base).unwrap().fell_back_to_baseline
    assert tune(strategy, [slight, clear], base).unwrap().backend == "b"
