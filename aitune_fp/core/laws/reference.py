"""``reference_tune``: a naive, list-based re-statement of BEHAVIOUR.md §3 to check the fold.

Rules:
- the winner is the earliest success that no other success strictly beats; with a usable
  baseline it must strictly beat the baseline, otherwise the baseline is selected;
- with nothing to select, the error message is only the stem ``no correct backend found``
  (the fold adds the names), or the strategy's own ``no_winner_message``;
- only the ``MODELLED`` fields of a selection are computed (no notes), and ``agrees``
  compares the fold's outcome with the reference's on exactly those fields.
"""

from __future__ import annotations

from collections.abc import Iterable

from returns.pipeline import is_successful
from returns.result import Failure, Success

from aitune_fp.core.laws.outcomes import Outcome, measured_baseline, name_of, successes
from aitune_fp.core.records import BackendPerfResult, Candidate, Selection, TuneError
from aitune_fp.core.strategy import Strategy

NO_CORRECT_BACKEND = "no correct backend found"
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


def reference_tune(
    strategy: Strategy, candidates: Iterable[Candidate], baseline: Candidate | None = None
) -> Outcome:
    """Select like the fold, but naively, over a list: the oracle the fold laws check against.

    >>> from aitune_fp import Profile, max_throughput
    >>> slow, fast = Profile("slow", {1: [2.0]}), Profile("fast", {1: [1.0]})
    >>> reference_tune(max_throughput, [Success(slow), Success(fast)]).unwrap().backend
    'fast'
    """
    given = list(candidates)
    names = tuple(name_of(c) for c in given)
    measured = [c.bind(strategy.measure) for c in given]
    failures = tuple(m.failure() for m in measured if not is_successful(m))
    scored = successes(strategy, given)
    base = measured_baseline(strategy, baseline)
    unbeaten = [s for s in scored if not any(strategy.compare(t.result, s.result) for t in scored)]
    best = unbeaten[0] if unbeaten else None
    perf: tuple[BackendPerfResult, ...] = ()
    if base is not None and base.result.metric > 0:
        ratios = [(s.backend, s.result, strategy.speedup(s.result, base.result)) for s in scored]
        perf = tuple(
            BackendPerfResult(n, r.metric, base.result.metric, x, x >= 1) for n, r, x in ratios
        )
    if best is None and (strategy.no_winner_message is not None or base is None):
        message = strategy.no_winner_message or NO_CORRECT_BACKEND
        return Failure(TuneError(message, failures, names))
    fall_back = base is not None and (
        best is None or not strategy.compare(best.result, base.result)
    )
    chosen = base if fall_back else best
    assert chosen is not None  # best is None only when falling back to a present baseline
    return Success(
        Selection(
            backend=chosen.backend,
            result=chosen.result,
            fell_back_to_baseline=fall_back,
            perf_results=perf,
            failures=failures,
            baseline=base,
            ranking=tuple(scored),
            considered=names,
        )
    )


def agrees(fold: Outcome, reference: Outcome) -> bool:
    """Whether the fold's outcome matches the reference's on every field it models.

    Two failures agree when the fold's message starts with the reference's (and, for the
    generic stem, names every considered backend) and they list the same failures.
    """
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
