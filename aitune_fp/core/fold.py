"""The single ``tune`` fold: candidates' profiles in, a selection (or an error) out.

Rules (BEHAVIOUR.md §3, reproduced exactly):
1. the baseline is measured before any candidate and is not a candidate;
2. candidates are consumed lazily, in the user's order; a failed candidate (or one whose
   ``measure`` fails) is recorded and the fold goes on;
3. among successes the best by ``compare`` wins; ties go to the earlier candidate;
4. with ``validate_performance`` on and a measured baseline, the winner must strictly beat
   the baseline, otherwise the baseline is selected (ties go to the baseline), also when
   no candidate succeeded;
5. with validation off the baseline is ignored; when nothing succeeded (and no baseline can
   be fallen back to) the result is a ``TuneError`` "no correct backend found" naming them;
6. a baseline that failed is a note, not an error: tuning goes on without the check;
7. a strategy with ``no_winner_message`` (the latency budget) fails with that message when
   no candidate succeeded, even when the baseline would do;
8. each measured candidate gets a ``BackendPerfResult`` when the baseline metric is > 0;
9. with a baseline, a candidate that beats it always outranks one that does not, so the
   leader is the best among the candidates that beat the baseline when there are any
   (for a strict weak order this selects exactly what rules 3-4 select; for a statistical
   compare, whose ties are not transitive, it keeps a significant winner from being
   shadowed by an earlier candidate that merely tied with it);
10. when the strategy has ``settled`` and it holds after a step, the fold stops consuming
    candidates (``first_wins``): later candidates are never pulled from the iterable;
11. when the strategy has ``admits``, a candidate it does not admit is recorded as a
    failure at stage ``measure`` (``one_backend``); the baseline is never filtered.

The fold is driven by one function, :func:`fold_states`: it starts from the baseline and
yields the state after every candidate, stopping once the strategy has settled. Everything
that folds candidates goes through it: :func:`fold_all` keeps its last state, :func:`tune`
finishes that, and the shell iterates it to release losers' resources as soon as they lose.
``start``/``step``/``settled``/``finish`` are public for laws and tests.

Longer than 260 lines: the one fold and its per-candidate step are read together, and the
laws test them as one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace

from returns.result import Failure, Result, Success

from aitune_fp.core.records import (
    BackendFailure,
    BackendPerfResult,
    BackendProfilingResult,
    Candidate,
    Scored,
    Selection,
    TuneError,
    TuneState,
)
from aitune_fp.core.strategy import Strategy

__all__ = [
    "Candidate",
    "Scored",
    "TuneState",
    "backend_of",
    "finish",
    "fold_all",
    "fold_states",
    "settled",
    "start",
    "step",
    "tune",
]


def start(strategy: Strategy, baseline: Candidate | None = None) -> TuneState:
    """The fold's initial state: the baseline measured (or why there is none to check).

    >>> from aitune_fp import Profile, max_throughput
    >>> start(max_throughput, Success(Profile("eager", {1: [1.0]}))).baseline.result.metric
    1000.0
    >>> start(max_throughput, Failure(BackendFailure("eager", "build", "x"))).notes
    ('baseline eager failed at build: x; tuning went on without the performance check',)
    >>> start(max_throughput) == TuneState()
    True
    """
    if baseline is None:
        return TuneState()
    if not strategy.validate_performance:
        return TuneState(notes=("performance validation is off: the baseline is not used",))
    match baseline.bind(strategy.measure):
        case Success(result):
            return TuneState(baseline=Scored(backend_of(baseline), result))
        case Failure(failure):
            note = f"baseline {failure.describe()}; tuning went on without the performance check"
            return TuneState(notes=(note,))
    raise TypeError(f"not a Result: {baseline!r}")  # pragma: no cover


def backend_of(candidate: Candidate) -> str:
    """The backend a candidate names, success or failure.

    >>> backend_of(Failure(BackendFailure("onnxruntime", "build", "no provider")))
    'onnxruntime'
    """
    match candidate:
        case Success(profile):
            return str(profile.backend)
        case Failure(failure):
            return str(failure.backend)
    raise TypeError(f"not a Result: {candidate!r}")  # pragma: no cover


def step(strategy: Strategy, state: TuneState, candidate: Candidate) -> TuneState:
    """Fold one candidate into the state (never raises for a failed candidate).

    >>> from aitune_fp import Profile, max_throughput
    >>> s = step(max_throughput, TuneState(), Success(Profile("a", {1: [1.0]})))
    >>> s.best.backend, s.considered
    ('a', ('a',))
    >>> s = step(max_throughput, s, Failure(BackendFailure("b", "build", "no")))
    >>> s.best.backend, s.considered, len(s.failures)
    ('a', ('a', 'b'), 1)
    """
    name = backend_of(candidate)
    considered = (*state.considered, name)
    if strategy.admits is not None and not strategy.admits(name):
        refused = BackendFailure(name, "measure", f"{name} is not admitted by {strategy.name}")
        return replace(state, considered=considered, failures=(*state.failures, refused))
    measured = candidate.bind(strategy.measure)
    match measured:
        case Failure(failure):
            return replace(state, considered=considered, failures=(*state.failures, failure))
        case Success(result):
            return _score(strategy, replace(state, considered=considered), Scored(name, result))
    raise TypeError(f"not a Result: {measured!r}")  # pragma: no cover


def _score(strategy: Strategy, state: TuneState, scored: Scored) -> TuneState:
    name, result = scored.backend, scored.result
    perf = state.perf_results
    if state.baseline is not None and state.baseline.result.metric > 0:
        base = state.baseline.result
        speedup = strategy.speedup(result, base)
        perf = (*perf, BackendPerfResult(name, result.metric, base.metric, speedup, speedup >= 1))
    leads = _leads(strategy, state, result)
    return replace(
        state,
        best=scored if leads else state.best,
        ranking=(*state.ranking, scored),
        perf_results=perf,
    )


def _beats_baseline(strategy: Strategy, state: TuneState, result: BackendProfilingResult) -> bool:
    return state.baseline is not None and strategy.compare(result, state.baseline.result)


def _leads(strategy: Strategy, state: TuneState, result: BackendProfilingResult) -> bool:
    """Rank by (beats the baseline, ``compare``); ties keep the earlier leader."""
    if state.best is None:
        return True
    if state.baseline is None:
        return strategy.compare(result, state.best.result)
    new, old = (
        _beats_baseline(strategy, state, result),
        _beats_baseline(strategy, state, state.best.result),
    )
    if new != old:
        return new
    return strategy.compare(result, state.best.result)


def settled(strategy: Strategy, state: TuneState) -> bool:
    """Whether the fold may stop consuming candidates (only strategies with ``settled``).

    >>> from aitune_fp import Profile, first_wins, max_throughput
    >>> s = step(max_throughput, TuneState(), Success(Profile("a", {1: [1.0]})))
    >>> settled(max_throughput, s), settled(first_wins(max_throughput), s)
    (False, True)
    """
    return strategy.settled is not None and strategy.settled(state)


def fold_states(
    strategy: Strategy, candidates: Iterable[Candidate], baseline: Candidate | None = None
) -> Iterator[TuneState]:
    """The one fold driver: the start state, then the state after each candidate.

    ``candidates`` is pulled lazily, once, in order; once the strategy has ``settled``
    after a step, no further candidate is pulled. A caller with effects to run between
    steps (the shell releasing a loser) iterates this; everyone else reduces it.

    >>> from aitune_fp import Profile, first_wins, max_throughput
    >>> cands = (Success(Profile(n, {1: [ms]})) for n, ms in [("a", 2.0), ("b", 1.0)])
    >>> [s.best.backend if s.best else None for s in fold_states(max_throughput, cands)]
    [None, 'a', 'b']
    >>> cands = iter([Success(Profile("a", {1: [2.0]})), Success(Profile("b", {1: [1.0]}))])
    >>> len(list(fold_states(first_wins(max_throughput), cands))), next(cands).unwrap().backend
    (2, 'b')
    """
    state = start(strategy, baseline)
    yield state
    for candidate in candidates:
        state = step(strategy, state, candidate)
        yield state
        if settled(strategy, state):
            return


def fold_all(
    strategy: Strategy, candidates: Iterable[Candidate], baseline: Candidate | None = None
) -> TuneState:
    """The last state of :func:`fold_states`: every candidate folded in (or until settled).

    >>> from aitune_fp import Profile, max_throughput
    >>> s = fold_all(max_throughput, [Success(Profile("a", {1: [1.0]}))],
    ...              Success(Profile("eager", {1: [2.0]})))
    >>> s.best.backend, s.baseline.backend, [p.speedup for p in s.perf_results]
    ('a', 'eager', [2.0])
    """
    state = TuneState()
    for state in fold_states(strategy, candidates, baseline):  # noqa: B007
        pass
    return state


def finish(strategy: Strategy, state: TuneState) -> Result[Selection, TuneError]:
    """Resolve the winner: the best candidate, the baseline, or a ``TuneError``.

    >>> from aitune_fp import Profile, max_throughput
    >>> finish(max_throughput, TuneState()).failure().message
    'no correct backend found among: no candidates were given'
    >>> base = start(max_throughput, Success(Profile("eager", {1: [1.0]})))
    >>> finish(max_throughput, base).unwrap().fell_back_to_baseline
    True
    """
    if state.best is None:
        return _no_winner(strategy, state)
    if state.baseline is not None and not strategy.compare(
        state.best.result, state.baseline.result
    ):
        return Success(_selection(state, state.baseline, fell_back=True))
    return Success(_selection(state, state.best, fell_back=False))


def _no_winner(strategy: Strategy, state: TuneState) -> Result[Selection, TuneError]:
    if strategy.no_winner_message is not None:
        return Failure(TuneError(strategy.no_winner_message, state.failures, state.considered))
    if state.baseline is not None:
        return Success(_selection(state, state.baseline, fell_back=True))
    names = ", ".join(state.considered) if state.considered else "no candidates were given"
    return Failure(
        TuneError(f"no correct backend found among: {names}", state.failures, state.considered)
    )


def _selection(state: TuneState, winner: Scored, *, fell_back: bool) -> Selection:
    return Selection(
        backend=winner.backend,
        result=winner.result,
        fell_back_to_baseline=fell_back,
        perf_results=state.perf_results,
        failures=state.failures,
        baseline=state.baseline,
        ranking=state.ranking,
        considered=state.considered,
        notes=state.notes,
    )


def tune(
    strategy: Strategy,
    candidates: Iterable[Candidate],
    baseline: Candidate | None = None,
) -> Result[Selection, TuneError]:
    """Select the best backend from profiled candidates by ``strategy``.

    ``candidates`` is consumed lazily, once, in order. ``baseline=None`` means no baseline.

    >>> from returns.result import Success
    >>> from aitune_fp import Profile, max_throughput
    >>> fast = Success(Profile("onnxruntime", {1: [1.0], 8: [2.0]}))
    >>> slow = Success(Profile("eager", {1: [2.0], 8: [8.0]}))
    >>> tune(max_throughput, [fast], baseline=slow).unwrap().backend
    'onnxruntime'
    >>> tune(max_throughput, [slow], baseline=fast).unwrap().fell_back_to_baseline
    True
    """
    return finish(strategy, fold_all(strategy, candidates, baseline))
