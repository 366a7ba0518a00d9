"""Generation strategy laws: the order is strict and weak, and the pick respects it.

Every law takes ``(strategy, results)`` with the first result the baseline.
"""

from __future__ import annotations

from collections.abc import Sequence

from aitune_fp.core.generation.records import GenerationResult
from aitune_fp.core.generation.strategies import GenerationStrategy, pick
from aitune_fp.core.laws.law import implies

Rs = Sequence[GenerationResult]


def picked_is_usable_or_fallback(strategy: GenerationStrategy, results: Rs) -> bool:
    """The pick is a usable, admitted candidate, or the baseline flagged as a fallback."""
    chosen = pick(strategy, results, results[0].name)
    if chosen.fell_back:
        return chosen.result is results[0] and "fell back" in chosen.reason
    return chosen.result.usable and strategy.admits(chosen.result)


def nothing_admitted_beats_pick(strategy: GenerationStrategy, results: Rs) -> bool:
    """No usable, admitted candidate is strictly better than the pick."""
    chosen = pick(strategy, results, results[0].name)
    return chosen.fell_back or not any(
        r.usable and strategy.admits(r) and strategy.compare(r, chosen.result) for r in results
    )


def irreflexive_and_asymmetric(strategy: GenerationStrategy, results: Rs) -> bool:
    """``compare`` is irreflexive and asymmetric over every pair."""
    return all(
        not strategy.compare(a, a) and implies(strategy.compare(a, b), not strategy.compare(b, a))
        for a in results
        for b in results
    )


def order_independent(strategy: GenerationStrategy, results: Rs) -> bool:
    """The pick does not depend on the order candidates were measured in."""
    forward = pick(strategy, results, results[0].name).result
    backward = pick(strategy, [results[0], *reversed(results[1:])], results[0].name).result
    return forward == backward


GENERATION_LAWS = (
    picked_is_usable_or_fallback,
    nothing_admitted_beats_pick,
    irreflexive_and_asymmetric,
    order_independent,
)
