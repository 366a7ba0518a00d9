"""Running the fold under observation: what it pulled, when, and what it consumed.

Rules:
- ``traced_tune`` feeds the fold a one-shot stream and records, for each candidate pulled,
  how many ``measure`` calls had been made by then (so a law can tell whether the fold
  reads ahead);
- ``consumed_run`` is the outcome with the prefix of candidates the fold pulled (all of
  them, unless the strategy settled early).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace

from returns.result import Result

from aitune_fp.core.fold import tune
from aitune_fp.core.laws.fold_case import FoldCase
from aitune_fp.core.laws.outcomes import Outcome
from aitune_fp.core.records import BackendFailure, BackendProfilingResult, Candidate, Profile
from aitune_fp.core.strategy import Strategy


def _pulled(
    candidates: Iterable[Candidate], calls: list[Profile], seen_at_pull: list[int]
) -> Iterator[Candidate]:
    """``candidates`` one at a time, noting how many ``calls`` were made at each pull."""
    for candidate in candidates:
        seen_at_pull.append(len(calls))
        yield candidate


def traced_tune(strategy: Strategy, case: FoldCase) -> tuple[Outcome, tuple[int, ...]]:
    """Run the fold over a one-shot stream of ``case.candidates``.

    Returns the outcome and, for each candidate pulled, how many ``measure`` calls had
    been made when it was pulled.

    >>> from returns.result import Success
    >>> from aitune_fp import Profile, max_throughput
    >>> one = Success(Profile("a", {1: [1.0]}))
    >>> traced_tune(max_throughput, FoldCase((one, one)))[1]
    (0, 1)
    """
    calls: list[Profile] = []
    seen_at_pull: list[int] = []
    stream = _pulled(case.candidates, calls, seen_at_pull)

    def counted(profile: Profile) -> Result[BackendProfilingResult, BackendFailure]:
        calls.append(profile)
        return strategy.measure(profile)

    outcome = tune(replace(strategy, measure=counted), stream, case.baseline)
    return outcome, tuple(seen_at_pull)


def consumed_run(strategy: Strategy, case: FoldCase) -> tuple[Outcome, tuple[Candidate, ...]]:
    """The fold's outcome and the candidates it consumed (all, unless it settled early)."""
    outcome, pulled = traced_tune(strategy, case)
    return outcome, case.candidates[: len(pulled)]
