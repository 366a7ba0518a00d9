"""Check every law of :mod:`aitune_fp.core.laws` for a strategy, with Hypothesis.

Rules:
- ``law_checks(strategy)`` maps each law's name to a zero-argument check that draws inputs
  with Hypothesis and fails with the law's name and statement when the law breaks;
- fold laws are checked with performance validation both on and off;
- the strategy's own call rule and sweep rule are checked with the stop-rule laws;
- ``skip`` leaves out laws by name (e.g. a statistical ``compare`` that is deliberately
  not a strict weak order); an unknown name is refused, so a typo cannot hide a law.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from aitune_fp.core.laws import (
    CALL_RULE_LAWS,
    FOLD_LAWS,
    MEASURE_LAWS,
    STRATEGY_LAWS,
    SWEEP_RULE_LAWS,
    FoldCase,
    Law,
)
from aitune_fp.core.measure.stop_rules import CallRule, SweepPoint, SweepRule
from aitune_fp.core.records import BackendProfilingResult, Profile
from aitune_fp.core.strategy import Strategy
from aitune_fp.testing.generators import fold_cases, profiles, result_triples
from aitune_fp.testing.rule_generators import call_latencies, sweep_paths, sweep_points

Check = Callable[[], None]
R = BackendProfilingResult
Points = tuple[SweepPoint, ...]


def _broken(law: Law[...]) -> str:
    return f"law {law.name!r} does not hold: {law.description}"


def _strategy_check(strategy: Strategy, law: Law[[Strategy, R, R, R]]) -> Check:
    @given(triple=result_triples(strategy))
    def check(triple: tuple[R, R, R]) -> None:
        assert law.holds(strategy, *triple), _broken(law)

    return check


def _measure_check(strategy: Strategy, law: Law[[Strategy, Profile]]) -> Check:
    @given(profile=profiles())
    def check(profile: Profile) -> None:
        assert law.holds(strategy, profile), _broken(law)

    return check


def _fold_check(strategy: Strategy, law: Law[[Strategy, FoldCase]]) -> Check:
    @given(case=fold_cases(), validate=st.booleans())
    def check(case: FoldCase, validate: bool) -> None:
        assert law.holds(replace(strategy, validate_performance=validate), case), _broken(law)

    return check


def _call_rule_check(strategy: Strategy, law: Law[[CallRule, tuple[float, ...]]]) -> Check:
    rule = strategy.plan.call_rule

    @given(latencies=call_latencies())
    def check(latencies: tuple[float, ...]) -> None:
        assert law.holds(rule, latencies), _broken(law)

    return check


def _sweep_rule_check(strategy: Strategy, law: Law[[SweepRule, Points, SweepPoint]]) -> Check:
    rule = strategy.plan.sweep_rule

    @given(points=sweep_paths(), point=sweep_points())
    def check(points: Points, point: SweepPoint) -> None:
        assert law.holds(rule, points, point), _broken(law)

    return check


def law_checks(strategy: Strategy, *, skip: Collection[str] = ()) -> dict[str, Check]:
    """Every law that governs ``strategy``, by name, as a Hypothesis-driven check.

    >>> from aitune_fp import max_throughput
    >>> sorted(law_checks(max_throughput))[:3]
    ['adding_failure_keeps_winner', 'adding_worse_keeps_winner', 'agrees_with_reference']
    """
    checks: dict[str, Check] = {}
    for s_law in STRATEGY_LAWS:
        checks[s_law.name] = _strategy_check(strategy, s_law)
    for m_law in MEASURE_LAWS:
        checks[m_law.name] = _measure_check(strategy, m_law)
    for f_law in FOLD_LAWS:
        checks[f_law.name] = _fold_check(strategy, f_law)
    for c_law in CALL_RULE_LAWS:
        checks[c_law.name] = _call_rule_check(strategy, c_law)
    for w_law in SWEEP_RULE_LAWS:
        checks[w_law.name] = _sweep_rule_check(strategy, w_law)
    unknown = set(skip) - set(checks)
    if unknown:
        raise ValueError(f"unknown law names in skip: {sorted(unknown)}")
    return {name: check for name, check in sorted(checks.items()) if name not in skip}


def check_all_laws(
    strategy: Strategy, *, skip: Collection[str] = (), hypothesis_settings: settings | None = None
) -> None:
    """Run every law for ``strategy``; raise ``AssertionError`` naming the first that breaks.

    ``hypothesis_settings`` overrides the loaded Hypothesis profile (e.g. ``max_examples``).
    """
    for check in law_checks(strategy, skip=skip).values():
        (hypothesis_settings(check) if hypothesis_settings is not None else check)()
