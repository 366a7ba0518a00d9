"""Strategy and measure laws (aitune_fp.core.laws), checked for every shipped strategy."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.laws import MEASURE_LAWS, STRATEGY_LAWS
from aitune_fp.testing import SHIPPED, profiles, result_triples, shipped_strategies

pytestmark = pytest.mark.parametrize("kind", SHIPPED)


def _order_law(name: str, kind: str, data: st.DataObject) -> bool:
    """Draw a shipped strategy of ``kind`` and three results, and evaluate the named law."""
    law = next(law for law in STRATEGY_LAWS if law.name == name)
    strategy = data.draw(shipped_strategies(only=kind), label="strategy")
    a, b, c = data.draw(result_triples(strategy), label="results")
    return law.holds(strategy, a, b, c)


def _measure_law(name: str, kind: str, data: st.DataObject) -> bool:
    """Draw a shipped strategy of ``kind`` and a profile, and evaluate the named law."""
    law = next(law for law in MEASURE_LAWS if law.name == name)
    strategy = data.draw(shipped_strategies(only=kind), label="strategy")
    return law.holds(strategy, data.draw(profiles(), label="profile"))


@given(data=st.data())
def test_compare_irreflexive(kind: str, data: st.DataObject) -> None:
    """No result is strictly better than itself."""
    assert _order_law("compare_irreflexive", kind, data)


@given(data=st.data())
def test_compare_asymmetric(kind: str, data: st.DataObject) -> None:
    """If a beats b, b never beats a."""
    assert _order_law("compare_asymmetric", kind, data)


@given(data=st.data())
def test_compare_transitive(kind: str, data: st.DataObject) -> None:
    """If a beats b and b beats c, a beats c."""
    assert _order_law("compare_transitive", kind, data)


@given(data=st.data())
def test_incomparability_transitive(kind: str, data: st.DataObject) -> None:
    """Ties are transitive: a ~ b and b ~ c imply a ~ c."""
    assert _order_law("incomparability_transitive", kind, data)


@given(data=st.data())
def test_speedup_identity(kind: str, data: st.DataObject) -> None:
    """A result's speedup over itself is exactly 1."""
    assert _order_law("speedup_identity", kind, data)


@given(data=st.data())
def test_speedup_above_one_when_better(kind: str, data: st.DataObject) -> None:
    """A strictly better result has a speedup above 1."""
    assert _order_law("speedup_above_one_when_better", kind, data)


@given(data=st.data())
def test_speedup_agrees_with_compare(kind: str, data: st.DataObject) -> None:
    """speedup(a, b) > 1 holds exactly when compare(a, b) does."""
    assert _order_law("speedup_agrees_with_compare", kind, data)


@given(data=st.data())
def test_measure_failure_names_backend(kind: str, data: st.DataObject) -> None:
    """A measure failure names the profile's backend at stage 'measure'."""
    assert _measure_law("measure_failure_names_backend", kind, data)


@given(data=st.data())
def test_measure_picks_measured_batch(kind: str, data: st.DataObject) -> None:
    """A measured result's batch size is one of the profile's batch sizes."""
    assert _measure_law("measure_picks_measured_batch", kind, data)


@given(data=st.data())
def test_measure_deterministic(kind: str, data: st.DataObject) -> None:
    """Measuring the same profile twice gives equal results."""
    assert _measure_law("measure_deterministic", kind, data)
