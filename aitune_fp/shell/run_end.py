"""The end of a run: the winner made in this process, the summary lines, the partial outcome.

Rules: the session has already released every runner but the winner's and the
baseline's; the winner's runner is made here from what its worker built (or, for a
fallback to a baseline without a runner, the baseline's config is built: the one the
plan named, as its first run was); a winner whose runner is gone is already
the session's failure (:func:`~aitune_fp.core.session.ending.runnable`), so only a
runner that cannot be made here (an artifact this process cannot load) is a
``TuneError`` outcome found here, never an exception; the summary is the decision
account's lines (or the one failure line).
"""

from __future__ import annotations

from returns.io import IOFailure, IOResult
from returns.result import Failure, Result, Success

from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.core.records import Selection, TuneError
from aitune_fp.core.report.decision import decision_lines
from aitune_fp.effects.backends.base import Backend, Built
from aitune_fp.effects.isolation import materialize
from aitune_fp.shell import building
from aitune_fp.shell.io import perform
from aitune_fp.shell.setup import RunState, Setup
from aitune_fp.shell.tuned_module import CallLimits, TunedModule

Winning = tuple[Built, Backend]
Winner = Winning | None


def summary(record: RunRecord, outcome: Result[Selection, TuneError]) -> tuple[str, ...]:
    """The decision account's lines, as every report shows them (or the failure line)."""
    match outcome:
        case Success(_):
            return decision_lines(record)
        case Failure(error):
            return (f"tuning failed: {error.message}",)
    return ()  # pragma: no cover


def winner_built(setup: Setup, run: RunState, selection: Selection) -> IOResult[Winning, str]:
    """The selected backend's runner made here and its config (a fallback without a
    runner: the baseline's config, the one the plan named, built again)."""
    name = selection.backend
    config = run.configs.get(name)  # a candidate named as the baseline is its config
    if config is not None and name in run.live:
        return materialize(run.live[name]).map(lambda built: (built, config))
    if config is None or not selection.fell_back_to_baseline:
        return IOFailure(f"{name} has no runner left to run the tuned module")
    folder = building.work_dir(setup, config, name)
    return (
        config.build(setup.request.module, setup.request.samples, setup.request.device, folder)
        .map(lambda built: (built, config))
        .alt(lambda failure: failure.describe())
    )


def make_winner(
    setup: Setup, run: RunState, outcome: Result[Selection, TuneError]
) -> tuple[Winner, Result[Selection, TuneError]]:
    """The winner's runner and config (``None``: none), and the outcome (a failure when the
    winner cannot be made in this process)."""
    if isinstance(outcome, Failure):
        return None, outcome
    made = perform(winner_built(setup, run, outcome.unwrap()))
    if isinstance(made, Failure):
        return None, Failure(TuneError(made.failure()))
    return made.unwrap(), outcome


def tuned_of(
    setup: Setup, winner: Winner, outcome: Result[Selection, TuneError], record: RunRecord
) -> TunedModule | None:
    """The module running the winner (the record given at construction), or ``None``."""
    if winner is None or isinstance(outcome, Failure):
        return None
    built, config = winner
    return TunedModule(
        built,
        config,
        outcome.unwrap(),
        setup.request.samples,
        record,
        source=setup.request.module,
        limits=CallLimits(setup.max_batch_size, setup.outside),
    )
