"""The session's plan kept whole in the run record: every field of ``SessionPlan`` but the
strategy, read back as the same plan; an older record without it is read from its options
as before."""

from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from pyrsistent import pmap

from aitune_fp.core.record.plan_record import PlanRecord, plan_record, session_plan
from aitune_fp.core.record.run_record import dumps, loads
from aitune_fp.core.records import Profile
from aitune_fp.core.session.recorded import recorded_plan
from aitune_fp.core.session.state import SessionPlan
from aitune_fp.core.strategies import max_throughput, min_latency

OLD = Path(__file__).parent / "data" / "run_v1.json"
names = st.lists(st.text(min_size=1, max_size=6), min_size=1, max_size=4, unique=True).map(tuple)


def test_the_plan_record_has_every_field_of_the_plan_but_the_strategy() -> None:
    """A new field of ``SessionPlan`` cannot be forgotten by the record: the names match."""
    kept = [f.name for f in fields(PlanRecord)]
    assert kept == [f.name for f in fields(SessionPlan) if f.name != "strategy"]


@given(names, st.booleans(), st.one_of(st.none(), st.floats(0.0, 9.0)), st.integers(0, 4),
       st.lists(st.integers(1, 64), max_size=3).map(tuple))  # fmt: skip
def test_a_plan_reads_back_as_the_same_plan(
    candidates: tuple[str, ...],
    early: bool,
    verify: float | None,
    parallel: int,
    ladder: tuple[int, ...],
) -> None:
    """``session_plan(plan_record(p), p.strategy) == p``, through a record's JSON too."""
    reused = Profile("eager", {1: [1.0]})
    plan = SessionPlan(max_throughput, candidates, "eager", early, verify, reused,
                       pmap(dict.fromkeys(candidates[1:], candidates[0])), candidates[:1],
                       parallel, ladder)  # fmt: skip
    assert session_plan(plan_record(plan), max_throughput) == plan
    record = replace(loads(OLD.read_text()), plan=plan_record(plan))
    assert recorded_plan(loads(dumps(record)), max_throughput) == plan


def test_an_older_record_reads_its_plan_from_its_options() -> None:
    """A record without ``plan`` gives the plan its options describe, as before."""
    record = loads(OLD.read_text())
    assert record.plan is None
    plan = recorded_plan(record, min_latency)
    assert (plan.candidates, plan.baseline, plan.ladder, plan.ahead) == ((), "eager", (), ())
    assert plan.strategy == min_latency and plan.reused_baseline is None
