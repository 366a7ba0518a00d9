"""Laws of the decider above the session (:mod:`aitune_fp.core.session.program`) and the
decision cache's pure rules (:mod:`aitune_fp.core.record.decisions`): for any stored run,
plan and outcome, what runs first, what follows a re-check, and what may stand."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from pyrsistent import pmap

from aitune_fp.core.record.decisions import (
    FULL,
    KEYS_DIFFER,
    digest,
    runner_up,
    sealed,
    usable,
)
from aitune_fp.core.record.run_record import RunRecord, dumps
from aitune_fp.core.session.program import (
    SHORT_VERIFY,
    Full,
    ProgramPlan,
    Recheck,
    Stand,
    Stored,
    after,
    first,
)
from aitune_fp.core.strategies import max_throughput, min_latency
from tests.core.run_record_strategies import run_records

KEYS = st.dictionaries(
    st.sampled_from(["model", "samples", "device", "strategy"]),
    st.sampled_from(["a", "b"]),
    min_size=1,
)
SIZES = st.lists(st.sampled_from([1, 2, 4, 8, 16]), min_size=1, max_size=4, unique=True)


@st.composite
def plans(draw: st.DrawFn, names: tuple[str, ...] = ()) -> ProgramPlan:
    """A plan over ``names`` plus drawn others, with drawn switches and keys."""
    others = tuple(draw(st.lists(st.sampled_from(["x", "y", "z"]), unique=True)))
    strategy = draw(st.sampled_from([max_throughput, min_latency]))
    seconds = draw(st.none() | st.floats(0.0, 5.0))
    race, skip = draw(st.booleans()), draw(st.booleans())
    keys = pmap(draw(KEYS))
    sizes = tuple(sorted(draw(SIZES)))
    return ProgramPlan(names + others, strategy, sizes, seconds, "eager", race, skip, keys)


def _stored(record: RunRecord) -> Stored | None:
    if record.selection is None:
        return None
    pick = record.selection.backend
    return Stored("d/x.json", record, pick, runner_up(record, max_throughput))


@given(run_records(), st.data())
def test_a_stored_pick_among_the_candidates_is_rechecked_first(
    record: RunRecord, data: st.DataObject
) -> None:
    """Unless skipped, a stored pick that is a candidate is re-checked first: the pick
    leads the pair, every member is a candidate, only the stored selection's size is
    measured, the verification is at most SHORT_VERIFY and no final rounds run."""
    stored = _stored(record)
    if stored is None:
        return
    names = (stored.pick,) + ((stored.runner_up,) if stored.runner_up else ())
    plan = data.draw(plans(names))
    step = first(stored, plan)
    if plan.skip:
        assert step == Full(FULL, plan.ladder)
        return
    assert isinstance(step, Recheck)
    assert step.pair[0] == stored.pick and set(step.pair) <= set(plan.names)
    assert record.selection is not None
    assert step.sizes == (record.selection.result.selected_batch_size,)
    assert step.verify_seconds <= SHORT_VERIFY and step.strategy.plan.rounds is None
    assert step.stored_baseline == (len(step.pair) == 1 and plan.strategy.validate_performance)


@given(run_records(), st.data())
def test_a_stored_pick_that_is_no_candidate_is_a_full_tune(
    record: RunRecord, data: st.DataObject
) -> None:
    """A stored pick outside this run's candidates never stands: the run is a full tune
    saying "full tune", racing over the plan's sizes exactly when the plan races."""
    stored = _stored(record)
    plan = data.draw(plans())
    if stored is None or stored.pick in plan.names:
        return
    step = first(stored, plan)
    assert step == Full(FULL, plan.batch_sizes if plan.race else ())


@given(plans(), KEYS)
def test_a_miss_names_exactly_the_keys_that_changed(
    plan: ProgramPlan, last: dict[str, str]
) -> None:
    """Without a stored decision the run is full; its line is "full tune" when the label's
    last keys equal this run's, else it names the changed keys and says so."""
    step = first(None, plan, last)
    assert isinstance(step, Full)
    if plan.skip or dict(plan.keys) == last:
        assert step.line == FULL
    else:
        assert step.line.startswith(f"{FULL}: changed since the stored decision: ")


@given(run_records(), st.data())
def test_a_recheck_stands_exactly_when_it_keeps_the_stored_pick(
    record: RunRecord, data: st.DataObject
) -> None:
    """After a re-check, the decision stands (with the hit's line) exactly when the
    re-check picked the stored pick; otherwise a full tune follows whose line names both
    picks."""
    stored = _stored(record)
    if stored is None:
        return
    plan = ProgramPlan((stored.pick, "x"), max_throughput, (1, 2), None)
    step = first(stored, plan)
    assert isinstance(step, Recheck)
    picked = data.draw(st.sampled_from([stored.pick, "x", ""]))
    then = after(picked, stored, step, plan)
    if picked == stored.pick:
        assert then == Stand(step.line) and step.line.startswith("decision cache hit")
    else:
        assert isinstance(then, Full) and stored.pick in then.line
        assert (picked or "nothing") in then.line


@given(run_records(), KEYS, KEYS)
def test_a_sealed_decision_stands_only_for_its_own_keys(
    record: RunRecord, keys: dict[str, str], other: dict[str, str]
) -> None:
    """A sealed decision with a selection stands for exactly its own keys, and any change
    to its body is refused by the seal."""
    stored = sealed(keys, dumps(record))
    found = usable(stored, other)
    if keys != other:
        assert found == KEYS_DIFFER
    elif record.selection is None:
        assert found == "it holds no selection"
    else:
        assert found == record
    tampered = {**stored, "body": {**stored["body"], "format": 2}}
    assert usable(tampered, keys) != record and stored["sha256"] == digest(stored["body"])
