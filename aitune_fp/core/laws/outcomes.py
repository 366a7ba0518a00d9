"""Reading candidates and fold outcomes the way the laws and the reference fold need.

Rules:
- a candidate names its backend whether it profiled or failed;
- a candidate is a success for a strategy when it profiled and ``measure`` accepted it;
- the baseline counts only when performance validation is on and it measured fine.
"""

from __future__ import annotations

from collections.abc import Iterable

from returns.pipeline import is_successful
from returns.result import Result, Success

from aitune_fp.core.fold import backend_of as name_of  # the laws read names as the fold does
from aitune_fp.core.records import (
    BackendProfilingResult,
    Candidate,
    Scored,
    Selection,
    TuneError,
)
from aitune_fp.core.strategy import Strategy

__all__ = ["Outcome", "Scored", "measured_baseline", "name_of", "successes", "winner"]

Outcome = Result[Selection, TuneError]


def winner(outcome: Outcome) -> tuple[str, BackendProfilingResult, bool] | None:
    """The selected backend, its result and whether it fell back; ``None`` on failure."""
    match outcome:
        case Success(selection):
            return selection.backend, selection.result, selection.fell_back_to_baseline
    return None


def successes(strategy: Strategy, candidates: Iterable[Candidate]) -> list[Scored]:
    """Every candidate that profiled and measured, with its result, in order."""
    scored = ((name_of(c), c.bind(strategy.measure)) for c in candidates)
    return [Scored(name, measured.unwrap()) for name, measured in scored if is_successful(measured)]


def measured_baseline(strategy: Strategy, baseline: Candidate | None) -> Scored | None:
    """The baseline's result when the fold uses it (validation on, measured fine)."""
    if baseline is None or not strategy.validate_performance:
        return None
    found = successes(strategy, [baseline])
    return found[0] if found else None
