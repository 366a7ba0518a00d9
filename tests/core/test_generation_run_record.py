"""A generation tune's run record: it round-trips through the strict codec, its selection
is the pick choose makes, and reselect re-judges it with another generation strategy."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.generation import (
    GenerationResult,
    choose,
    generation_budget,
    max_tokens_per_s,
    min_itl,
    min_ttft,
)
from aitune_fp.core.generation.run_record import GenerationRun, generation_record
from aitune_fp.core.record.run_record import dumps, loads, reselect
from aitune_fp.core.strategy import Strategy

RUN = GenerationRun("lm", "cpu", (32,), (1, 8), 64, {"python": "3.11"})
STRATEGIES = (max_tokens_per_s, min_itl, min_ttft, generation_budget(ttft_ms=50.0))
_ms = st.floats(min_value=0.1, max_value=1e4, allow_nan=False)


@st.composite
def _results(draw: st.DrawFn) -> list[GenerationResult]:
    """The baseline and up to five candidates, each at batch 1 then batch 8; some failed
    (infinite timings) or inaccurate."""
    rows: list[GenerationResult] = []
    for i in range(draw(st.integers(min_value=1, max_value=6))):
        failed = i > 0 and draw(st.booleans()) and draw(st.booleans())
        accurate = i == 0 or draw(st.booleans())
        for batch in (1, 8):
            ttft, itl = (float("inf"), float("inf")) if failed else (draw(_ms), draw(_ms))
            why = "c failed at build: boom" if failed else None
            rows.append(GenerationResult(f"c{i}", "p", "d", batch, 32, 64, ttft, itl,
                                         accurate=accurate, failure=why))  # fmt: skip
    return rows


@given(strategy=st.sampled_from(STRATEGIES), results=_results())
def test_record_round_trips_and_selects_the_pick(
    strategy: Strategy, results: list[GenerationResult]
) -> None:
    """loads(dumps(r)) == r; a selection names the pick choose makes over the primary points,
    and a record without one holds the fold's error while choose kept the baseline."""
    record = generation_record(strategy, results, "c0", RUN)
    assert loads(dumps(record)) == record
    primary = [r for r in results if r.batch == 1]
    pick = choose(strategy, primary, "c0")
    if record.selection is not None:
        assert record.selection.backend == pick.result.name
    else:
        assert record.error is not None and pick.fell_back and pick.result.name == "c0"


@given(results=_results())
def test_reselect_agrees_with_a_fresh_record(results: list[GenerationResult]) -> None:
    """Re-selecting a max-tokens/s record with min_ttft selects what a min_ttft record does."""
    stored = loads(dumps(generation_record(max_tokens_per_s, results, "c0", RUN)))
    again = reselect(stored, min_ttft).value_or(None)
    fresh = generation_record(min_ttft, results, "c0", RUN).selection
    assert (again and again.backend) == (fresh and fresh.backend)
