"""The /generate request and timing as pure values, and which generate arguments the tuned
generator refuses: laws over generated inputs."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.generation.hf_arguments import NEUTRAL, refusals
from aitune_fp.core.serving.generate_request import (
    GenerateRequest,
    parse_generate,
    request_timing,
)
from aitune_fp.core.serving.schema import PayloadError

rows = st.integers(1, 4).flatmap(
    lambda n: st.lists(st.lists(st.integers(0, 99), min_size=n, max_size=n), min_size=1, max_size=3)
)


@given(rows, st.integers(1, 64))
def test_token_rows_parse_to_the_same_rows(ids: list[list[int]], new: int) -> None:
    """Rectangular in-vocabulary rows parse unchanged, with the keywords as options."""
    doc = {"input_ids": ids, "max_new_tokens": new}
    request = parse_generate(doc, ["max_new_tokens"], 100, False)
    assert isinstance(request, GenerateRequest)
    assert request.input_ids == tuple(map(tuple, ids)) and request.options["max_new_tokens"] == new


@given(rows, st.integers(0, 50))
def test_an_id_outside_the_vocabulary_is_refused(ids: list[list[int]], excess: int) -> None:
    """Any id at or past the vocabulary size is a 422, never a request."""
    ids[0][0] = 100 + excess
    refused = parse_generate({"input_ids": ids}, [], 100, False)
    assert isinstance(refused, PayloadError) and refused.status == 422


@given(st.lists(st.floats(0.0, 10.0), min_size=1, max_size=20), st.integers(1, 8))
def test_timing_is_consistent(gaps: list[float], batch: int) -> None:
    """TTFT <= total, one stamp per new token, and TTFT + (n-1) x ITL equals the total."""
    stamps = [sum(gaps[: i + 1]) + 0.001 for i in range(len(gaps))]
    timing = request_timing(0.0, stamps, batch)
    assert timing["new_tokens"] == len(stamps)
    ttft, total, itl = timing["ttft_ms"], timing["total_ms"], timing["itl_ms"]
    assert ttft is not None and total is not None and ttft <= total + 1e-6
    spread = 0.0 if itl is None else itl * (len(stamps) - 1)
    assert abs(ttft + spread - total) <= 1e-3 * max(1.0, total)


@given(st.sampled_from(sorted(NEUTRAL)), st.sampled_from([2, 0.5, "x", [1], True]))
def test_non_neutral_settings_are_refused_by_name(name: str, value: object) -> None:
    """A listed setting at a value outside its neutral ones is refused, naming it."""
    lines = refusals({name: value}, {})
    neutral = any(value is a or (a is not None and value == a) for a in NEUTRAL[name])
    assert bool(lines) != neutral and all(name in line for line in lines)


@given(st.dictionaries(st.sampled_from(sorted(NEUTRAL)), st.none()))
def test_neutral_settings_and_empty_extras_are_accepted(settings: dict[str, None]) -> None:
    """Unset settings, unlisted knobs and empty call arguments refuse nothing."""
    assert refusals({**settings, "temperature": 0.7}, {"logits_processor": []}) == ()
