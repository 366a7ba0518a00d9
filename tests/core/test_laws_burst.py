"""Burst laws (aitune_fp.core.laws.burst) and the burst value's checks."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.laws.burst import BURST_LAWS, burst_phases
from aitune_fp.core.rounds.burst import STEADY, Burst, sample


@st.composite
def bursts(draw: st.DrawFn) -> Burst:
    """A burst with drawn bounds and settling share."""
    min_calls = draw(st.integers(1, 8))
    max_calls = draw(st.integers(min_calls, 200))
    return Burst(
        min_ms=draw(st.sampled_from((0.0, 0.5, 3.0, 10.0))),
        min_calls=min_calls,
        max_calls=max_calls,
        settle_calls=draw(st.integers(0, min(max_calls, 10))),
        settle_ms=draw(st.sampled_from((0.0, 1.0, 10.0))),
        rest_ms=draw(st.sampled_from((0.0, 20.0))),
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
    settled, timed = burst_phases(STEADY, stream)
    assert len(settled) >= 10 and len(timed) > 20 and sample(STEADY, timed) == 0.16


def test_the_steady_burst_settles_a_runtime_after_spinning_threads() -> None:
    """37, 8, 6 and 5.5 ms, then 4.2 ms (AOTInductor right after ONNX Runtime's spinning
    threads, the demo transformer at batch size 32): the sample is the settled 4.2 ms."""
    settled, timed = burst_phases(STEADY, (37.0, 8.3, 6.1, 5.5, *(4.2,) * 20))
    assert len(settled) == 3 and sample(STEADY, timed) == 4.2


@pytest.mark.parametrize(
    "kwargs",
    [
        {"min_ms": -1.0},
        {"min_calls": 0},
        {"min_calls": 5, "max_calls": 4},
        {"settle_calls": -1},
        {"rest_ms": float("inf")},
    ],
)
def test_bursts_refuse_impossible_bounds(kwargs: dict[str, float]) -> None:
    """A negative floor, no timed call, min above max, negative settling or an endless rest
    is refused."""
    with pytest.raises(ValueError):
        Burst(**kwargs)  # type: ignore[arg-type]
