"""Laws as values: the rules every strategy, the fold and the stop rules must obey.

A :class:`Law` is a name, a one-sentence statement and a pure predicate ``holds(...)``
that returns ``True`` when the law holds for the given inputs. Laws are grouped by what
they govern, and every law of a group takes the same arguments:

- ``STRATEGY_LAWS``: ``holds(strategy, a, b, c)`` over three profiling results;
  ``compare`` is a strict weak order and ``speedup`` agrees with it;
- ``MEASURE_LAWS``: ``holds(strategy, profile)``;
- ``FOLD_LAWS``: ``holds(strategy, case)`` over a :class:`FoldCase`; the fold's winner is
  a success (or the baseline) that nothing strictly beats, and the fold agrees with
  :func:`reference_tune`, a naive re-statement of BEHAVIOUR.md §3;
- ``CALL_RULE_LAWS``: ``holds(rule, latencies)``; ``SWEEP_RULE_LAWS``:
  ``holds(rule, points, point)``; ``SATURATION_LAWS``: ``holds(ratio, backoff, points)``;
  ``BUDGET_SWEEP_LAWS``: ``holds(budget_ms, points)``.

A law whose premise does not apply to its inputs holds vacuously. This module is pure and
imports no test library; ``aitune_fp.testing`` checks the laws with Hypothesis.

>>> from aitune_fp import BackendProfilingResult, max_throughput
>>> r = BackendProfilingResult(10.0, 1, 100.0, 10.0)
>>> all(law.holds(max_throughput, r, r, r) for law in STRATEGY_LAWS)
True
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Generic, ParamSpec

from returns.pipeline import is_successful
from returns.result import Failure, Result, Success

from aitune_fp.core.fold import Candidate, tune
from aitune_fp.core.records import (
    BackendFailure,
    BackendPerfResult,
    BackendProfilingResult,
    Profile,
    Selection,
    TuneError,
)
from aitune_fp.core.stop_rules import (
    CallRule,
    CallState,
    Decision,
    SweepPoint,
    SweepRule,
    throughput_saturation,
)
from aitune_fp.core.stop_rules import latency_budget_sweep as budget_sweep_rule
from aitune_fp.core.strategy import Strategy

P = ParamSpec("P")
R = BackendProfilingResult
Outcome = Result[Selection, TuneError]
Scored = tuple[str, BackendProfilingResult]
NO_CORRECT_BACKEND = "no correct backend found"


@dataclass(frozen=True, slots=True)
class Law(Generic[P]):
    """A named rule with a pure predicate that is ``True`` when the rule holds.

    >>> law = Law("positive", "the number is > 0", lambda x: x > 0)
    >>> law.holds(3), law.holds(-1)
    (True, False)
    """

    name: str
    description: str
    holds: Callable[P, bool]


@dataclass(frozen=True, slots=True)
class FoldCase:
    """Inputs for the fold laws: candidates, a baseline, one extra candidate, an order.

    ``extra`` is inserted at ``position`` by the "adding a candidate" laws; ``order`` is a
    permutation of the candidates' indices (reversed when ``None``).

    >>> FoldCase((), position=1)
    Traceback (most recent call last):
    ...
    ValueError: position must be within [0, 0], got 1
    """

    candidates: tuple[Candidate, ...]
    baseline: Candidate | None = None
    extra: Candidate | None = None
    position: int = 0
    order: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        n = len(self.candidates)
        if not 0 <= self.position <= n:
            raise ValueError(f"position must be within [0, {n}], got {self.position}")
        if self.order is not None and sorted(self.order) != list(range(n)):
            raise ValueError(f"order must be a permutation of range({n}), got {self.order}")

    def reordered(self) -> tuple[Candidate, ...]:
        """The candidates in ``order``."""
        order = self.order if self.order is not None else range(len(self.candidates) - 1, -1, -1)
        return tuple(self.candidates[i] for i in order)

    def with_extra(self, extra: Candidate) -> tuple[Candidate, ...]:
        """The candidates with ``extra`` inserted at ``position``."""
        return (*self.candidates[: self.position], extra, *self.candidates[self.position :])


# --------------------------------------------------------------------------- helpers
def implies(premise: bool, conclusion: bool) -> bool:
    """Material implication: a law with a false premise holds vacuously.

    >>> implies(False, False), implies(True, False)
    (True, False)
    """
    return not premise or conclusion


def incomparable(strategy: Strategy, a: R, b: R) -> bool:
    """Neither ``a`` nor ``b`` is strictly better than the other (a tie)."""
    return not strategy.compare(a, b) and not strategy.compare(b, a)


def name_of(candidate: Candidate) -> str:
    """The backend a candidate names, success or failure."""
    match candidate:
        case Success(profile):
            return str(profile.backend)
        case Failure(failure):
            return str(failure.backend)
    raise TypeError(f"not a Result: {candidate!r}")  # pragma: no cover


def winner(outcome: Outcome) -> tuple[str, R, bool] | None:
    """The selected backend, its result and whether it fell back; ``None`` on failure."""
    match outcome:
        case Success(selection):
            return selection.backend, selection.result, selection.fell_back_to_baseline
    return None


def _successes(strategy: Strategy, candidates: Iterable[Candidate]) -> list[Scored]:
    """Every candidate that profiled and measured, with its result, in order."""
    scored = ((name_of(c), c.bind(strategy.measure)) for c in candidates)
    return [(name, measured.unwrap()) for name, measured in scored if is_successful(measured)]


def _measured_baseline(strategy: Strategy, case: FoldCase) -> Scored | None:
    """The baseline's result when the fold uses it (validation on, measured fine)."""
    if case.baseline is None or not strategy.validate_performance:
        return None
    found = _successes(strategy, [case.baseline])
    return found[0] if found else None


# --------------------------------------------------------------------------- reference
def reference_tune(
    strategy: Strategy, candidates: Iterable[Candidate], baseline: Candidate | None = None
) -> Outcome:
    """A naive, list-based statement of BEHAVIOUR.md §3 to check the fold against.

    The winner is the earliest success that no other success strictly beats; with a
    usable baseline it must strictly beat the baseline. The error message is only the
    stem ``no correct backend found`` (the fold adds the names); only the ``MODELLED``
    fields of a selection are computed (no notes).

    >>> from aitune_fp import Profile, max_throughput
    >>> slow, fast = Profile("slow", {1: [2.0]}), Profile("fast", {1: [1.0]})
    >>> reference_tune(max_throughput, [Success(slow), Success(fast)]).unwrap().backend
    'fast'
    """
    given = list(candidates)
    names = tuple(name_of(c) for c in given)
    measured = [c.bind(strategy.measure) for c in given]
    failures = tuple(m.failure() for m in measured if not is_successful(m))
    successes = _successes(strategy, given)
    base = _measured_baseline(strategy, FoldCase((), baseline))
    unbeaten = [s for s in successes if not any(strategy.compare(t[1], s[1]) for t in successes)]
    best = unbeaten[0] if unbeaten else None
    perf: tuple[BackendPerfResult, ...] = ()
    if base is not None and base[1].metric > 0:
        ratios = [(n, r, strategy.speedup(r, base[1])) for n, r in successes]
        perf = tuple(
            BackendPerfResult(n, r.metric, base[1].metric, x, x >= 1) for n, r, x in ratios
        )
    if best is None and (strategy.no_winner_message is not None or base is None):
        message = strategy.no_winner_message or NO_CORRECT_BACKEND
        return Failure(TuneError(message, failures, names))
    fall_back = base is not None and (best is None or not strategy.compare(best[1], base[1]))
    chosen = base if fall_back else best
    assert chosen is not None  # best is None only when falling back to a present baseline
    return Success(
        Selection(
            backend=chosen[0],
            result=chosen[1],
            fell_back_to_baseline=fall_back,
            perf_results=perf,
            failures=failures,
            baseline=base,
            ranking=tuple(successes),
            considered=names,
        )
    )


MODELLED = (
    "backend",
    "result",
    "fell_back_to_baseline",
    "perf_results",
    "failures",
    "baseline",
    "ranking",
    "considered",
)


def _agree(fold: Outcome, reference: Outcome) -> bool:
    """Whether the fold's outcome matches the reference's on every field it models."""
    match fold, reference:
        case Success(got), Success(want):
            return all(getattr(got, f) == getattr(want, f) for f in MODELLED)
        case Failure(got), Failure(want):
            names = want.message != NO_CORRECT_BACKEND or all(
                n in got.message for n in want.considered
            )
            same = (got.failures, got.considered) == (want.failures, want.considered)
            return bool(got.message.startswith(want.message) and names and same)
    return False


# --------------------------------------------------------------------------- strategy laws
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


# --------------------------------------------------------------------------- measure laws
def _measure_failure_names_backend(strategy: Strategy, profile: Profile) -> bool:
    match strategy.measure(profile):
        case Failure(failure):
            return bool(failure.backend == profile.backend and failure.stage == "measure")
    return True


def _measure_picks_measured_batch(strategy: Strategy, profile: Profile) -> bool:
    match strategy.measure(profile):
        case Success(result):
            return result.selected_batch_size in profile.batch_sizes
    return True


def _measure_deterministic(strategy: Strategy, profile: Profile) -> bool:
    return bool(strategy.measure(profile) == strategy.measure(profile))


MEASURE_LAWS: tuple[Law[[Strategy, Profile]], ...] = (
    Law(
        "measure_failure_names_backend",
        "a measure failure names the profile's backend at stage 'measure'",
        _measure_failure_names_backend,
    ),
    Law(
        "measure_picks_measured_batch",
        "a measured result's batch size is one the profile measured",
        _measure_picks_measured_batch,
    ),
    Law(
        "measure_deterministic",
        "measuring a profile twice gives equal results",
        _measure_deterministic,
    ),
)


# --------------------------------------------------------------------------- fold laws
def consumed_run(strategy: Strategy, case: FoldCase) -> tuple[Outcome, tuple[Candidate, ...]]:
    """The fold's outcome and the candidates it consumed (all, unless it settled early)."""
    outcome, pulled = traced_tune(strategy, case)
    return outcome, case.candidates[: len(pulled)]


def _winner_is_member(strategy: Strategy, case: FoldCase) -> bool:
    outcome, consumed = consumed_run(strategy, case)
    found = winner(outcome)
    if found is None:
        return True
    base = _measured_baseline(strategy, case)
    pool = [*_successes(strategy, consumed), *([base] if base else [])]
    return (found[0], found[1]) in pool


def _nothing_beats_winner(strategy: Strategy, case: FoldCase) -> bool:
    outcome, consumed = consumed_run(strategy, case)
    found = winner(outcome)
    if found is None:
        return True
    return not any(strategy.compare(r, found[1]) for _, r in _successes(strategy, consumed))


def _failures_never_win(strategy: Strategy, case: FoldCase) -> bool:
    outcome, consumed = consumed_run(strategy, case)
    won = {name for name, _ in _successes(strategy, consumed)}
    base = _measured_baseline(strategy, case)
    failed = {name_of(c) for c in case.candidates} - won - ({base[0]} if base else set())
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
    extra = _successes(strategy, [case.extra] if case.extra is not None else [])
    if before is None or not extra or not strategy.compare(before[1], extra[0][1]):
        return True
    assert case.extra is not None
    return winner(tune(strategy, case.with_extra(case.extra), case.baseline)) == before


def _order_independent(strategy: Strategy, case: FoldCase) -> bool:
    results = [r for _, r in _successes(strategy, case.candidates)]
    tied = any(incomparable(strategy, a, b) for a, b in itertools.combinations(results, 2))
    forward = winner(tune(strategy, case.candidates, case.baseline))
    return tied or forward == winner(tune(strategy, case.reordered(), case.baseline))


def traced_tune(strategy: Strategy, case: FoldCase) -> tuple[Outcome, tuple[int, ...]]:
    """Run the fold over a one-shot stream of ``case.candidates``.

    Returns the outcome and, for each candidate pulled, how many ``measure`` calls had
    been made when it was pulled (so a law can tell whether the fold reads ahead).
    """
    calls: list[Profile] = []
    seen_at_pull: list[int] = []

    def stream() -> Iterator[Candidate]:
        for candidate in case.candidates:
            seen_at_pull.append(len(calls))
            yield candidate

    def counted(profile: Profile) -> Result[R, BackendFailure]:
        calls.append(profile)
        return strategy.measure(profile)

    outcome = tune(replace(strategy, measure=counted), stream(), case.baseline)
    return outcome, tuple(seen_at_pull)


def _agrees_with_reference(strategy: Strategy, case: FoldCase) -> bool:
    fold, pulled = traced_tune(strategy, case)
    consumed = case.candidates[: len(pulled)]
    return _agree(fold, reference_tune(strategy, consumed, case.baseline))


def _consumes_lazily_once(strategy: Strategy, case: FoldCase) -> bool:
    outcome, seen_at_pull = traced_tune(strategy, case)
    uses_baseline = int(strategy.validate_performance) * _is_profile(case.baseline)
    before = tuple(itertools.accumulate(map(_is_profile, case.candidates), initial=uses_baseline))
    pulled = len(seen_at_pull)
    all_or_settled = pulled == len(case.candidates) or strategy.settled is not None
    same = outcome == tune(strategy, case.candidates, case.baseline)
    return seen_at_pull == before[:pulled] and all_or_settled and same


def _is_profile(candidate: Candidate | None) -> int:
    """1 when ``candidate`` is a profiled success (so ``measure`` sees it), else 0."""
    return 1 if candidate is not None and is_successful(candidate) else 0


def _perf_results_per_success(strategy: Strategy, case: FoldCase) -> bool:
    outcome, consumed = consumed_run(strategy, case)
    if not is_successful(outcome):
        return True
    perf = outcome.unwrap().perf_results
    base = _measured_baseline(strategy, case)
    expected = [n for n, _ in _successes(strategy, consumed)] if base else []
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


# --------------------------------------------------------------------------- call rules
def drive_call_rule(
    rule: CallRule, latencies: tuple[float, ...]
) -> tuple[int, CallState, Decision]:
    """Feed ``latencies`` (cycled) to ``rule`` until it stops or passes its maximum.

    Returns the number of calls made, the final state and the last decision.

    >>> from aitune_fp.core.stop_rules import fixed_steps
    >>> calls, state, decision = drive_call_rule(fixed_steps(warmup=2, steps=3), (1.0,))
    >>> calls, state.samples, decision.stop
    (5, (1.0, 1.0, 1.0), True)
    """
    if not latencies:
        raise ValueError("drive_call_rule needs at least one latency to cycle")
    state, decision, calls = rule.start(), Decision(False), 0
    for latency in itertools.islice(itertools.cycle(latencies), rule.max_calls + 1):
        state, decision = rule.step(state, latency)
        calls += 1
        if decision.stop:
            break
    return calls, state, decision


def _call_not_before_minimum(rule: CallRule, latencies: tuple[float, ...]) -> bool:
    calls, _, _ = drive_call_rule(rule, latencies)
    return calls >= rule.warmup + rule.min_samples


def _call_stops_by_maximum(rule: CallRule, latencies: tuple[float, ...]) -> bool:
    calls, _, decision = drive_call_rule(rule, latencies)
    return decision.stop and calls <= rule.max_calls


def _call_warmup_discarded(rule: CallRule, latencies: tuple[float, ...]) -> bool:
    calls, state, _ = drive_call_rule(rule, latencies)
    fed = tuple(itertools.islice(itertools.cycle(latencies), calls))
    return state.calls == calls and state.samples == fed[rule.warmup :]


def _call_stop_has_reason(rule: CallRule, latencies: tuple[float, ...]) -> bool:
    _, _, decision = drive_call_rule(rule, latencies)
    return implies(decision.stop, bool(decision.reason))


CALL_RULE_LAWS: tuple[Law[[CallRule, tuple[float, ...]]], ...] = (
    Law(
        "call_rule_not_before_minimum",
        "a call rule never stops before warm-up plus min_samples calls",
        _call_not_before_minimum,
    ),
    Law(
        "call_rule_stops_by_maximum",
        "a call rule always stops by warm-up plus max_samples calls",
        _call_stops_by_maximum,
    ),
    Law(
        "call_rule_discards_warmup",
        "the state keeps exactly the latencies fed after the warm-up calls",
        _call_warmup_discarded,
    ),
    Law("call_rule_stop_has_reason", "a stop decision always says why", _call_stop_has_reason),
)


# --------------------------------------------------------------------------- sweep rules
Points = tuple[SweepPoint, ...]


def _sweep_accumulates(rule: SweepRule, points: Points, point: SweepPoint) -> bool:
    state, _ = rule.step(points, point)
    return state == (*points, point)


def _sweep_pure(rule: SweepRule, points: Points, point: SweepPoint) -> bool:
    return rule.step(points, point) == rule.step(points, point)


def _sweep_stop_has_reason(rule: SweepRule, points: Points, point: SweepPoint) -> bool:
    _, decision = rule.step(points, point)
    return implies(decision.stop, bool(decision.reason))


SWEEP_RULE_LAWS: tuple[Law[[SweepRule, Points, SweepPoint]], ...] = (
    Law("sweep_rule_accumulates", "a step appends exactly the new point", _sweep_accumulates),
    Law("sweep_rule_pure", "the same points always give the same decision", _sweep_pure),
    Law("sweep_rule_stop_has_reason", "a stop decision always says why", _sweep_stop_has_reason),
)


def _last_decision(rule: SweepRule, points: Points) -> Decision:
    """The decision after stepping ``rule`` through ``points`` (continue when empty)."""
    state: Points = ()
    decision = Decision(False)
    for point in points:
        state, decision = rule.step(state, point)
    return decision


def _stalled_tail(ratio: float, points: Points) -> int:
    """Trailing points whose throughput, less ``ratio``, stays under every earlier best."""
    stalled = 0
    for i in range(len(points) - 1, 0, -1):
        best_before = max(p.throughput for p in points[:i])
        if points[i].throughput * (1.0 - ratio) >= best_before:
            break
        stalled += 1
    return stalled


def _saturation_not_before_minimum(ratio: float, backoff: int, points: Points) -> bool:
    decision = _last_decision(throughput_saturation(ratio=ratio, backoff=backoff), points)
    return implies(len(points) <= backoff + 1, not decision.stop)


def _saturation_stops_when_stalled(ratio: float, backoff: int, points: Points) -> bool:
    decision = _last_decision(throughput_saturation(ratio=ratio, backoff=backoff), points)
    return decision.stop == (_stalled_tail(ratio, points) > backoff)


SATURATION_LAWS: tuple[Law[[float, int, Points]], ...] = (
    Law(
        "saturation_not_before_minimum",
        "throughput saturation never stops within the first backoff + 1 batch sizes",
        _saturation_not_before_minimum,
    ),
    Law(
        "saturation_stops_when_stalled",
        "saturation stops exactly when more than backoff trailing batch sizes made no progress",
        _saturation_stops_when_stalled,
    ),
)


def _budget_sweep_stops_over_budget(budget_ms: float, points: Points) -> bool:
    decision = _last_decision(budget_sweep_rule(budget_ms), points)
    return decision.stop == (bool(points) and points[-1].mean_ms > budget_ms)


BUDGET_SWEEP_LAWS: tuple[Law[[float, Points]], ...] = (
    Law(
        "budget_sweep_stops_over_budget",
        "the latency-budget sweep stops exactly at a batch size over budget (inclusive ok)",
        _budget_sweep_stops_over_budget,
    ),
)
