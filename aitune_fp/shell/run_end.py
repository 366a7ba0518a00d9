"""The end of a run: the winner made in this process, the summary lines, the partial outcome.

Rules: the winner's runner is made here from what its worker built
(:func:`~aitune_fp.shell.drive.winner_built`); a winner that ran in its worker but cannot
be made here is a ``TuneError`` outcome, not an exception; the summary is the decision
account's lines (or the one failure line); a record written mid-run has the
"interrupted" outcome.
"""

from __future__ import annotations

from returns.result import Failure, Result, Success

from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.core.records import Selection, TuneError
from aitune_fp.core.report.decision import decision_lines
from aitune_fp.effects.backends.base import Backend, Built
from aitune_fp.shell.drive import RunState, Setup, winner_built
from aitune_fp.shell.tuned_module import TunedModule

Winner = tuple[Built, Backend] | None


def interrupted() -> Result[Selection, TuneError]:
    """The outcome a record written mid-run carries."""
    return Failure(TuneError("the run was interrupted before it finished (partial record)"))


def summary(record: RunRecord, outcome: Result[Selection, TuneError]) -> tuple[str, ...]:
    """The decision account's lines, as every report shows them (or the failure line)."""
    match outcome:
        case Success(_):
            return decision_lines(record)
        case Failure(error):
            return (f"tuning failed: {error.message}",)
    return ()  # pragma: no cover


def make_winner(
    setup: Setup, run: RunState, outcome: Result[Selection, TuneError]
) -> tuple[Winner, Result[Selection, TuneError]]:
    """The winner's runner and config (``None``: none), and the outcome (a failure when the
    winner cannot be made in this process)."""
    try:
        return winner_built(setup, run, outcome), outcome
    except RuntimeError as error:  # the winner ran in its worker but cannot be made here
        return None, Failure(TuneError(str(error)))


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
        setup.samples,
        record,
        source=setup.module,
        max_batch_size=setup.max_batch_size,
        outside=setup.outside,
    )
