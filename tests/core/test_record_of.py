"""Laws of ``record_of``, the run record as a pure function of the session, on simulated
machines: the record replays to itself, survives its JSON, has one row per backend built,
and says how the final rounds' seconds were shared; a record written mid-run carries the
interrupted error and an unmade winner the error that says so."""

from __future__ import annotations

from hypothesis import event, given, settings
from hypothesis import strategies as st

from aitune_fp.core.record.derive import INTERRUPTED, RecordEnv, built_rows, record_of
from aitune_fp.core.record.run_record import dumps, loads
from aitune_fp.core.records import TuneError
from aitune_fp.core.session import Profiled, Session, SessionPlan, Timed, run
from aitune_fp.core.session.recorded import recorded_plan
from aitune_fp.core.session.replay import replay
from aitune_fp.core.strategy import Strategy
from aitune_fp.testing.simulated import SimulatedMachine
from tests.core.test_session_laws import machines, strategies_any

ENV = RecordEnv("mlp", "cpu")


Case = tuple[SimulatedMachine, tuple[str, ...]]


def _session(case: Case, strategy: Strategy, verify: float | None) -> Session:
    """The session ``strategy`` runs on the case's machine (racing over four sizes)."""
    machine, names = case
    plan = SessionPlan(strategy, names, "eager", True, verify, ladder=(1, 2, 4, 8))
    return run(plan, machine.answers())[0]


@settings(max_examples=40)
@given(machines(), strategies_any(), st.sampled_from((None, 1.0)))
def test_the_record_of_a_session_replays_to_itself_and_survives_its_json(
    case: Case, strategy: Strategy, verify: float | None
) -> None:
    """``record_of`` of the session a record's log replays to is that record, and
    ``loads(dumps(r)) == r``: nothing in the record is outside the session and the env."""
    session = _session(case, strategy, verify)
    record = record_of(session, ENV)
    assert loads(dumps(record)) == record
    again = replay(recorded_plan(record, strategy), record.events).session
    assert record_of(again, ENV) == record


@settings(max_examples=40)
@given(machines(), strategies_any(), st.sampled_from((None, 1.0)))
def test_one_row_per_backend_built_and_the_rounds_seconds_shared(
    case: Case, strategy: Strategy, verify: float | None
) -> None:
    """Every backend built has one row (the baseline's apart), in build order; each
    final rounds participant has its equal share of their seconds as its ``rounds`` stage."""
    session = _session(case, strategy, verify)
    built = list(dict.fromkeys(e.name for e in session.events if isinstance(e, Profiled)))
    rows = [r.backend for r in built_rows(session)]
    assert rows == built or rows == [built[0], *built] or rows[1:] == built
    rounds = [e for e in session.events if isinstance(e, Timed) and e.purpose == "rounds"]
    widened = sum(isinstance(e, Profiled) for e in session.events) > len(built)
    event(f"final rounds: {bool(session.rounded)}; widened: {widened}")
    for row in built_rows(session):
        if row.backend in session.rounded:
            share = rounds[0].seconds / len(session.rounded)
            assert row.stage_seconds["rounds"] == share
        else:
            assert "rounds" not in row.stage_seconds


@settings(max_examples=20)
@given(machines(), strategies_any())
def test_a_record_mid_run_or_with_an_unmade_winner_carries_its_error(
    case: Case, strategy: Strategy
) -> None:
    """Status ``interrupted``: the interrupted error, no selection, no verification; an
    unmade winner: that error instead of the selection."""
    from dataclasses import replace

    session = _session(case, strategy, 1.0)
    mid = record_of(session, replace(ENV, status="interrupted"))
    assert mid.error == TuneError(INTERRUPTED) and mid.selection is None
    assert mid.verification is None
    unmade = record_of(session, replace(ENV, unmade=TuneError("x cannot be loaded here")))
    assert unmade.error == TuneError("x cannot be loaded here") and unmade.selection is None
