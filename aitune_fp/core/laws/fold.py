"""Fold laws: the winner is an unbeaten success (or the baseline), and the fold agrees with
:func:`~aitune_fp.core.laws.reference.reference_tune` over the candidates it consumed.

Every law here takes ``(strategy, case)`` over a :class:`FoldCase`.
"""

from __future__ import annotations

import itertools

from returns.pipeline import is_successful
from returns.result import Failure

from aitune_fp.core.fold import tune
from aitune_fp.core.laws.fold_case import FoldCase
from aitune_fp.core.laws.law import Law
from aitune_fp.core.laws.outcomes import measured_baseline, name_of, successes, winner
from aitune_fp.core.laws.reference import agrees, reference_tune
from aitune_fp.core.laws.strategy import incomparable
from aitune_fp.core.laws.trace import consumed_run, traced_tune
from aitune_fp.core.records import BackendFailure, Candidate, Scored
from aitune_fp.core.strategy import Strategy


def _winner_is_member(strategy: Strategy, case: FoldCase) -> bool:
    outcome, consumed = consumed_run(strategy, case)
    found = winner(outcome)
    if found is None:
        return True
    base = measured_baseline(strategy, case.baseline)
    pool = [*successes(strategy, consumed), *([base] if base else [])]
    return Scored(found[0], found[1]) in pool


def _nothing_beats_winner(strategy: Strategy, case: FoldCase) -> bool:
    outcome, consumed = consumed_run(strategy, case)
    found = winner(outcome)
    if found is None:
        return True
    return not any(strategy.compare(s.result, found[1]) for s in successes(strategy, consumed))


def _failures_never_win(strategy: Strategy, case: FoldCase) -> bool:
    outcome, consumed = consumed_run(strategy, case)
    won = {s.backend for s in successes(strategy, consumed)}
    base = measured_baseline(strategy, case.baseline)
    failed = {name_of(c) for c in case.candidates} - won - ({base.backend} if base else set())
    found = winner(outcome)
    return found is None or found[0] not in failed


def _adding_failure_keeps_winner(strategy: Strategy, case: FoldCase) -> bool:
    name = name_of(case.extra) if case.extra is not None else "extra"
    extra: Candidate = Failure(BackendFailure(name, "build", "inserted by a law"))
    before = tune(strategy, case.candidates, case.baseline)
    after = tune(strategy, case.with_extra(extra), case.baseline)
    return winner(before) == winner(after)


def _adding_worse_keeps_winner(strategy: Strategy, case: FoldCase) -> bool:
    before = winner(tune(strategy, case.candidates, case.baseline))
    extra = successes(strategy, [case.extra] if case.extra is not None else [])
    if before is None or not extra or not strategy.compare(before[1], extra[0].result):
        return True
    assert case.extra is not None
    return winner(tune(strategy, case.with_extra(case.extra), case.baseline)) == before


def _order_independent(strategy: Strategy, case: FoldCase) -> bool:
    results = [s.result for s in successes(strategy, case.candidates)]
    tied = any(incomparable(strategy, a, b) for a, b in itertools.combinations(results, 2))
    forward = winner(tune(strategy, case.candidates, case.baseline))
    return tied or forward == winner(tune(strategy, case.reordered(), case.baseline))


def _agrees_with_reference(strategy: Strategy, case: FoldCase) -> bool:
    fold, consumed = consumed_run(strategy, case)
    return agrees(fold, reference_tune(strategy, consumed, case.baseline))


def _is_profile(candidate: Candidate | None) -> int:
    """1 when ``candidate`` is a profiled success (so ``measure`` sees it), else 0."""
    return 1 if candidate is not None and is_successful(candidate) else 0


def _consumes_lazily_once(strategy: Strategy, case: FoldCase) -> bool:
    outcome, seen_at_pull = traced_tune(strategy, case)
    uses_baseline = int(strategy.validate_performance) * _is_profile(case.baseline)
    before = tuple(itertools.accumulate(map(_is_profile, case.candidates), initial=uses_baseline))
    pulled = len(seen_at_pull)
    all_or_settled = pulled == len(case.candidates) or strategy.settled is not None
    same = outcome == tune(strategy, case.candidates, case.baseline)
    return seen_at_pull == before[:pulled] and all_or_settled and same


def _perf_results_per_success(strategy: Strategy, case: FoldCase) -> bool:
    outcome, consumed = consumed_run(strategy, case)
    if not is_successful(outcome):
        return True
    perf = outcome.unwrap().perf_results
    base = measured_baseline(strategy, case.baseline)
    expected = [s.backend for s in successes(strategy, consumed)] if base else []
    names_match = [p.backend_description for p in perf] == expected
    return names_match and all(p.passed == (p.speedup >= 1.0) for p in perf)


FOLD_LAWS: tuple[Law[[Strategy, FoldCase]], ...] = (
    Law(
        "winner_is_member", "the winner is a measured candidate or the baseline", _winner_is_member
    ),
    Law(
        "nothing_beats_winner",
        "no consumed candidate strictly beats the winner",
        _nothing_beats_winner,
    ),
    Law("failures_never_win", "a candidate that failed is never selected", _failures_never_win),
    Law(
        "adding_failure_keeps_winner",
        "inserting a failed candidate anywhere never changes the winner",
        _adding_failure_keeps_winner,
    ),
    Law(
        "adding_worse_keeps_winner",
        "inserting a candidate strictly worse than the winner never changes the winner",
        _adding_worse_keeps_winner,
    ),
    Law(
        "order_independent_without_ties",
        "when no two successes tie, the winner does not depend on candidate order",
        _order_independent,
    ),
    Law(
        "agrees_with_reference",
        "the fold agrees with reference_tune over the candidates it consumed",
        _agrees_with_reference,
    ),
    Law(
        "consumes_lazily_once",
        "candidates are pulled once, in order, each just before it is measured, and all of"
        " them unless the strategy may settle early",
        _consumes_lazily_once,
    ),
    Law(
        "perf_results_per_success",
        "one perf result per measured candidate when a baseline was measured; passed iff >= 1",
        _perf_results_per_success,
    ),
)
