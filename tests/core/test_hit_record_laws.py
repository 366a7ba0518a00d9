"""Laws of a decision cache hit's record (:func:`~aitune_fp.core.record.hit.hit_record`):
for any stored run, the hit's record carries the stored evidence whole, and ``reselect``,
``replay`` and the report answer on it as on the stored run, with the hit's own
re-verification beside the stored verification."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import event, given, settings
from hypothesis import strategies as st

from aitune_fp.core.record.derive import RecordEnv, record_of
from aitune_fp.core.record.hit import hit_record
from aitune_fp.core.record.provenance import Provenance
from aitune_fp.core.record.run_record import RunRecord, dumps, loads, reselect, with_strategy
from aitune_fp.core.record.wall import WallAccount
from aitune_fp.core.report.decision import decision_lines, hit_lines
from aitune_fp.core.report.tables import backend_rows
from aitune_fp.core.session import SessionPlan, run
from aitune_fp.core.session.recorded import replay_record
from aitune_fp.core.session.replay import Replayed
from aitune_fp.core.strategy import Strategy
from aitune_fp.testing.simulated import SimulatedMachine
from tests.core.run_record_strategies import run_records
from tests.core.test_session_laws import PLAIN, machines, strategies_any

LINE = "decision cache hit (d/x.json): a re-verified against b"
HIT_ENV = RecordEnv("mlp", "cpu", wall=WallAccount(1.0, (("verification", 0.5),)),
                    provenance=Provenance(decision=LINE))  # fmt: skip
Case = tuple[SimulatedMachine, tuple[str, ...]]


def _record(case: Case, strategy: Strategy, env: RecordEnv) -> RunRecord:
    """The record of the session ``strategy`` runs on the case's machine (verified)."""
    machine, names = case
    plan = SessionPlan(strategy, names, "eager", True, 1.0, ladder=(1, 2, 4, 8))
    return record_of(run(plan, machine.answers())[0], env)


def _same_answers(hit: RunRecord, stored: RunRecord, strategy: Strategy) -> None:
    """``reselect`` and ``with_strategy`` under ``strategy`` answer on ``hit`` as on ``stored``
    (the re-selected record differs only in what the hit adds)."""
    assert reselect(hit, strategy) == reselect(stored, strategy)
    mine = replace(with_strategy(stored, strategy), provenance=hit.provenance, wall=hit.wall,
                   status=hit.status)  # fmt: skip
    assert with_strategy(hit, strategy) == mine


def _replayed(record: RunRecord, strategy: Strategy | None) -> Replayed | str:
    """The record's replay under ``strategy``, or why it cannot be replayed."""
    try:
        return replay_record(record, strategy)
    except ValueError as error:
        return str(error)


@settings(max_examples=40)
@given(machines(), strategies_any(), machines())
def test_a_hits_record_reselects_replays_and_reports_as_the_stored_run(
    stored_case: Case, strategy: Strategy, short_case: Case
) -> None:
    """On a stored run with an event log, the hit's record keeps the stored evidence, log
    and verification, adds the short run's verification as its re-verification, survives
    its JSON, re-selects under every strategy, replays and shows its table as the stored
    run does, and its decision lines are the stored run's followed by the hit's own."""
    stored = _record(stored_case, strategy, RecordEnv("mlp", "cpu"))
    short = _record(short_case, strategy, HIT_ENV)
    hit = hit_record(stored, short)
    event(f"stored verification: {stored.verification is not None}")
    kept = ("baseline", "candidates", "selection", "error", "strategy", "events", "plan",
            "verification", "max_batch_size", "environment")  # fmt: skip
    assert all(getattr(hit, k) == getattr(stored, k) for k in kept)
    assert hit.reverification == short.verification and hit.provenance.cache_hit
    assert loads(dumps(hit)) == hit
    for other in (strategy, *PLAIN):
        _same_answers(hit, stored, other)
        assert _replayed(hit, other) == _replayed(stored, other)
    assert _replayed(hit, None) == _replayed(stored, None)
    assert backend_rows(hit) == backend_rows(stored)
    lines = hit_lines(hit)
    assert decision_lines(hit) == (*decision_lines(stored), *lines)
    assert len(lines) == 1 + (short.verification is not None)


@given(run_records(), run_records(), st.sampled_from(PLAIN))
def test_any_stored_runs_hit_reselects_and_reports_as_it_does(
    stored: RunRecord, short: RunRecord, strategy: Strategy
) -> None:
    """On any stored run (no log needed), the hit's record re-selects under any strategy
    and shows the same table as the stored run, and reads back from its JSON."""
    short = replace(short, provenance=Provenance(decision=LINE))
    hit = hit_record(stored, short)
    assert (hit.baseline, hit.candidates, hit.selection) == (
        stored.baseline, stored.candidates, stored.selection)  # fmt: skip
    assert loads(dumps(hit)) == hit
    _same_answers(hit, stored, strategy)
    assert backend_rows(hit) == backend_rows(stored)
