"""Strategy laws: ``compare`` is a strict weak order and ``speedup`` agrees with it.

Every law here takes ``(strategy, a, b, c)`` over three profiling results.
"""

from __future__ import annotations

from aitune_fp.core.laws.law import Law, implies
from aitune_fp.core.records import BackendProfilingResult
from aitune_fp.core.strategy import Strategy

R = BackendProfilingResult


def incomparable(strategy: Strategy, a: R, b: R) -> bool:
    """Neither ``a`` nor ``b`` is strictly better than the other (a tie).

    >>> from aitune_fp import max_throughput
    >>> r = BackendProfilingResult(10.0, 1, 100.0, 10.0)
    >>> incomparable(max_throughput, r, r)
    True
    """
    return not strategy.compare(a, b) and not strategy.compare(b, a)


def _irreflexive(strategy: Strategy, a: R, _b: R, _c: R) -> bool:
    return not strategy.compare(a, a)


def _asymmetric(strategy: Strategy, a: R, b: R, _c: R) -> bool:
    return implies(strategy.compare(a, b), not strategy.compare(b, a))


def _transitive(strategy: Strategy, a: R, b: R, c: R) -> bool:
    return implies(strategy.compare(a, b) and strategy.compare(b, c), strategy.compare(a, c))


def _incomparability_transitive(strategy: Strategy, a: R, b: R, c: R) -> bool:
    both = incomparable(strategy, a, b) and incomparable(strategy, b, c)
    return implies(both, incomparable(strategy, a, c))


def _speedup_identity(strategy: Strategy, a: R, _b: R, _c: R) -> bool:
    return strategy.speedup(a, a) == 1.0


def _speedup_above_one_when_better(strategy: Strategy, a: R, b: R, _c: R) -> bool:
    return implies(strategy.compare(a, b), strategy.speedup(a, b) > 1.0)


def _speedup_agrees(strategy: Strategy, a: R, b: R, _c: R) -> bool:
    return (strategy.speedup(a, b) > 1.0) == strategy.compare(a, b)


STRATEGY_LAWS: tuple[Law[[Strategy, R, R, R]], ...] = (
    Law("compare_irreflexive", "nothing is strictly better than itself", _irreflexive),
    Law("compare_asymmetric", "if a beats b then b does not beat a", _asymmetric),
    Law("compare_transitive", "if a beats b and b beats c then a beats c", _transitive),
    Law(
        "incomparability_transitive",
        "if a ties b and b ties c then a ties c",
        _incomparability_transitive,
    ),
    Law("speedup_identity", "speedup(a, a) == 1", _speedup_identity),
    Law(
        "speedup_above_one_when_better",
        "if a beats b then speedup(a, b) > 1",
        _speedup_above_one_when_better,
    ),
    Law("speedup_agrees_with_compare", "speedup(a, b) > 1 exactly when a beats b", _speedup_agrees),
)
