"""Burst laws (aitune_fp.core.laws.burst) and the burst value's checks."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.laws.burst import BURST_LAWS, burst_calls
from aitune_fp.core.measure.burst import STEADY, Burst, sample


@st.composite
def bursts(draw: st.DrawFn) -> Burst:
    """A burst with drawn bounds and settling share."""
    min_calls = draw(st.integers(1, 8))
    return Burst(
        min_ms=draw(st.sampled_from((0.0, 0.5, 3.0, 10.0))),
        min_calls=min_calls,
        max_calls=draw(st.integers(min_calls, 200)),
        settle_share=draw(st.sampled_from((0.0, 0.25, 0.5, 0.9))),
    )


TIMES = st.lists(st.floats(0.01, 20.0), min_size=1, max_size=30)


@pytest.mark.parametrize("law", BURST_LAWS, ids=lambda law: law.name)
@given(burst=bursts(), times=TIMES)
def test_burst_law(law: object, burst: Burst, times: Sequence[float]) -> None:
    """Every burst law holds for a drawn burst and call-time stream (its id states it)."""
    assert law.holds(burst, times)  # type: ignore[attr-defined]


def test_the_steady_burst_settles_the_onnx_runtime_pattern() -> None:
    """A 1.1 ms first call and 9 slow ones after a switch, then 0.16 ms: STEADY's sample is
    the settled 0.16 ms (the pattern measured on the demo CNN)."""
    stream = (1.1, *(0.25,) * 9, *(0.16,) * 200)
    made = burst_calls(STEADY, stream)
    assert len(made) > 20 and sample(STEADY, made) == 0.16


@pytest.mark.parametrize(
    "kwargs",
    [{"min_ms": -1.0}, {"min_calls": 0}, {"min_calls": 5, "max_calls": 4}, {"settle_share": 1.0}],
)
def test_bursts_refuse_impossible_bounds(kwargs: dict[str, float]) -> None:
    """A negative floor, no calls, min above max or settling everything is refused."""
    with pytest.raises(ValueError):
        Burst(**kwargs)  # type: ignore[arg-type]
