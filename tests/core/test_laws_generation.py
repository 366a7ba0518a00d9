"""Generation strategies obey their laws, and an unreachable budget falls back with a reason."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.generation import (
    GenerationResult,
    GenerationStrategy,
    generation_budget,
    max_tokens_per_s,
    min_itl,
    min_ttft,
    pick,
)
from aitune_fp.core.laws.generation import GENERATION_LAWS

_ms = st.floats(min_value=0.1, max_value=1e4, allow_nan=False)


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


_strategies = st.sampled_from(
    [
        max_tokens_per_s,
        min_itl,
        min_ttft,
        generation_budget(ttft_ms=50.0),
        generation_budget(itl_ms=5.0),
        generation_budget(ttft_ms=100.0, itl_ms=20.0),
    ]
)


@pytest.mark.parametrize("law", GENERATION_LAWS, ids=lambda law: law.__name__)
@given(strategy=_strategies, results=_results())
def test_generation_law(
    law: object, strategy: GenerationStrategy, results: list[GenerationResult]
) -> None:
    """Each generation law holds for every strategy over any set of measured candidates."""
    assert law(strategy, results)  # type: ignore[operator]


def test_unreachable_ttft_budget_falls_back_and_says_why() -> None:
    """A TTFT budget below every candidate keeps the baseline and names the budget."""
    base = GenerationResult("base", "e", "e", 1, 32, 64, 20.0, 8.0)
    fast = GenerationResult("fast", "e", "i", 1, 32, 64, 10.0, 3.0)
    chosen = pick(generation_budget(ttft_ms=1.0), [base, fast], "base")
    assert chosen.fell_back and chosen.result is base
    assert "ttft<=1.0ms unreachable" in chosen.reason and "10.00 ms" in chosen.reason


def test_max_tokens_per_s_picks_the_fastest_usable() -> None:
    """The fastest candidate wins unless it is inaccurate or failed."""
    base = GenerationResult("base", "e", "e", 1, 32, 64, 20.0, 8.0)
    wrong = GenerationResult("wrong", "e", "i", 1, 32, 64, 1.0, 1.0, accurate=False)
    fast = GenerationResult("fast", "e", "i", 1, 32, 64, 10.0, 3.0)
    assert pick(max_tokens_per_s, [base, wrong, fast], "base").result is fast
