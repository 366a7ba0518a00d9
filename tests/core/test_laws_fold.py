"""Fold laws (aitune_fp.core.laws), checked for every shipped strategy, validation on and off."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.laws import FOLD_LAWS
from aitune_fp.testing import SHIPPED, fold_cases, shipped_strategies

pytestmark = pytest.mark.parametrize("kind", SHIPPED)


def _fold_law(name: str, kind: str, data: st.DataObject) -> bool:
    """Draw a shipped strategy of ``kind`` (either validation setting) and a fold case."""
    law = next(law for law in FOLD_LAWS if law.name == name)
    strategy = data.draw(shipped_strategies(only=kind, validate_performance=None), "strategy")
    return law.holds(strategy, data.draw(fold_cases(), label="case"))


@given(data=st.data())
def test_winner_is_member(kind: str, data: st.DataObject) -> None:
    """The winner is one of the measured candidates or the baseline."""
    assert _fold_law("winner_is_member", kind, data)


@given(data=st.data())
def test_nothing_beats_winner(kind: str, data: st.DataObject) -> None:
    """No measured candidate is strictly better than the winner."""
    assert _fold_law("nothing_beats_winner", kind, data)


@given(data=st.data())
def test_failures_never_win(kind: str, data: st.DataObject) -> None:
    """A candidate that failed (to profile or to measure) is never selected."""
    assert _fold_law("failures_never_win", kind, data)


@given(data=st.data())
def test_adding_failure_keeps_winner(kind: str, data: st.DataObject) -> None:
    """Inserting a failed candidate anywhere leaves the winner unchanged."""
    assert _fold_law("adding_failure_keeps_winner", kind, data)


@given(data=st.data())
def test_adding_worse_keeps_winner(kind: str, data: st.DataObject) -> None:
    """Inserting a candidate strictly worse than the winner anywhere leaves the winner."""
    assert _fold_law("adding_worse_keeps_winner", kind, data)


@given(data=st.data())
def test_order_independent_without_ties(kind: str, data: st.DataObject) -> None:
    """When no two successes tie, reordering the candidates keeps the winner."""
    assert _fold_law("order_independent_without_ties", kind, data)


@given(data=st.data())
def test_agrees_with_reference(kind: str, data: st.DataObject) -> None:
    """The fold selects what the naive reference implementation selects."""
    assert _fold_law("agrees_with_reference", kind, data)


@given(data=st.data())
def test_consumes_lazily_once(kind: str, data: st.DataObject) -> None:
    """Candidates are pulled once, in order, each right before it is measured."""
    assert _fold_law("consumes_lazily_once", kind, data)


@given(data=st.data())
def test_perf_results_per_success(kind: str, data: st.DataObject) -> None:
    """With a measured baseline, one perf result per measured candidate; passed = speedup >= 1."""
    assert _fold_law("perf_results_per_success", kind, data)
