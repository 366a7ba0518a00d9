"""The evidence verdict against its definition, with the margins' edges drawn on purpose
(aitune_fp.core.stats.evidence): a constant or shifted verdict fails these laws."""

from __future__ import annotations

import math

from hypothesis import event, given
from hypothesis import strategies as st

from aitune_fp.core.stats.evidence import can_still_win, verdict
from tests.core.shares import share

margins = st.floats(0.001, 0.1)


@st.composite
def intervals(draw: st.DrawFn) -> tuple[float, float, float]:
    """A margin and an interval whose ends are often exactly on, or one float beside, the
    margin's edges ``1 + m`` and ``1 / (1 + m)`` (else anywhere in ``[0.5, 2]``)."""
    m = draw(margins)
    edges = (1.0 + m, 1.0 / (1.0 + m), 1.0)
    beside = st.sampled_from(edges).flatmap(
        lambda e: st.sampled_from((e, math.nextafter(e, 0.0), math.nextafter(e, 3.0)))
    )
    a, b = draw(beside | st.floats(0.5, 2.0)), draw(beside | st.floats(0.5, 2.0))
    return min(a, b), max(a, b), m


def _defined(low: float, high: float, m: float) -> str:
    """The docstring's rules, read one by one: the interval lies wholly above, wholly
    below, wholly within the band, or none of these."""
    above = low > 1.0 + m
    below = high < 1.0 / (1.0 + m)
    within = 1.0 / (1.0 + m) <= low and high <= 1.0 + m
    assert above + below + within <= 1  # the regions never overlap
    return "win" if above else "loss" if below else "equivalent" if within else "undecided"


@given(intervals())
def test_the_verdict_is_its_definition_on_and_beside_the_edges(case: tuple[float, ...]) -> None:
    """On an edge, one float inside or outside it, or anywhere, the verdict is the one the
    rules define (an end on ``1 + m`` is within the band, not above it)."""
    low, high, m = case
    got = verdict(low, high, m)
    event(f"verdict {got}")
    event(f"an end on an edge: {low in (1 + m, 1 / (1 + m)) or high in (1 + m, 1 / (1 + m))}")
    assert got == _defined(low, high, m)


@given(intervals(), st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_a_narrower_interval_keeps_a_decided_verdict(
    case: tuple[float, ...], u: float, v: float
) -> None:
    """More evidence (an interval inside a decided one) never changes the decision."""
    low, high, m = case
    first = verdict(low, high, m)
    a, b = sorted((low + u * (high - low), low + v * (high - low)))
    inner = verdict(max(a, low), min(b, high), m)
    assert first == "undecided" or inner == first


@given(intervals(), margins)
def test_a_wider_margin_only_moves_towards_equivalence(
    case: tuple[float, ...], other: float
) -> None:
    """Under a wider margin an equivalence stays one and a win or loss can only stay or
    become undecided or equivalent; under a narrower one a win or loss stays."""
    low, high, m = case
    narrow, wide = verdict(low, high, min(m, other)), verdict(low, high, max(m, other))
    if narrow == "equivalent":
        assert wide == "equivalent"
    if wide in ("win", "loss"):
        assert narrow == wide


@given(intervals())
def test_b_can_still_win_exactly_when_the_interval_straddles_the_lower_edge(
    case: tuple[float, ...],
) -> None:
    """``b`` can still win iff the interval holds points below ``1 / (1 + m)`` and the
    edge itself; then the verdict is undecided."""
    low, high, m = case
    edge = 1.0 / (1.0 + m)
    assert can_still_win(low, high, m) == (low < edge <= high)
    if can_still_win(low, high, m):
        assert verdict(low, high, m) == "undecided"


def test_the_generator_makes_every_verdict_and_the_edges_common() -> None:
    """Each verdict comes up in at least 8 % of drawn cases, and an end lies exactly on an
    edge in at least 20 %, so the laws above are about every case they state."""
    for name in ("win", "loss", "equivalent", "undecided"):
        got = share(intervals(), lambda c, name=name: verdict(*c) == name)  # type: ignore[misc]
        assert got >= 0.08, (name, got)
    edge = share(intervals(), lambda c: bool({c[0], c[1]} & {1 + c[2], 1 / (1 + c[2])}))
    assert edge >= 0.2, edge
