"""Laws of the interleaved rounds' schedule (:mod:`aitune_fp.core.rounds.schedule`): a
failure or a spent budget is always judged, judging never costs more than the rounds it
judges, and a round the caller cannot afford stops the loop."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.rounds.rounds_plan import RoundsPlan
from aitune_fp.core.rounds.schedule import (
    Judge,
    Pace,
    Skip,
    Stop,
    after_round,
    before_round,
    judged,
    next_move,
)

SECONDS = st.floats(0.0, 5.0, allow_nan=False)
paces = st.builds(Pace, st.integers(0, 100), SECONDS, SECONDS, SECONDS)
plans = st.builds(
    RoundsPlan,
    min_rounds=st.integers(2, 6),
    max_rounds=st.integers(6, 90),
    max_seconds=st.floats(0.5, 30.0),
    judge_every=st.integers(1, 4),
)


@given(paces, plans)
def test_a_failure_or_a_spent_budget_is_always_judged(pace: Pace, plan: RoundsPlan) -> None:
    """After a round in which a participant failed, or once rounds or seconds are spent, the
    schedule asks the judge."""
    assert next_move(pace, plan, failed=True) == Judge()
    spent = Pace(plan.max_rounds, plan.max_seconds, 0.0, pace.judge_cost + 1.0)
    assert next_move(spent, plan, failed=False) == Judge()


@given(paces, plans)
def test_judging_never_costs_more_than_the_rounds_it_judges(pace: Pace, plan: RoundsPlan) -> None:
    """Within budget and without failures, a skip happens exactly when the rounds since the
    last verdict took less time than that verdict."""
    within = pace.done < plan.max_rounds and pace.measuring < plan.max_seconds
    move = next_move(pace, plan, failed=False)
    if within:
        assert (move == Skip()) == (pace.since_judged < pace.judge_cost)


@given(paces, plans, SECONDS, SECONDS)
def test_a_round_and_a_verdict_account_for_their_time(
    pace: Pace, plan: RoundsPlan, round_seconds: float, cost: float
) -> None:
    """A round adds one to the rounds and its seconds to those since the last verdict; a
    verdict the cadence asks for resets them and sets its cost, any other leaves them."""
    after = after_round(pace, pace.measuring + round_seconds, round_seconds)
    assert after.done == pace.done + 1 and after.since_judged == pace.since_judged + round_seconds
    then = judged(after, plan, cost)
    if plan.judges(after.done, after.measuring):
        assert (then.since_judged, then.judge_cost) == (0.0, cost)
    else:
        assert then == after


@given(paces)
def test_an_unaffordable_round_stops_the_rounds(pace: Pace) -> None:
    """A round the caller cannot afford stops the loop, saying after how many rounds; an
    affordable one never does."""
    assert before_round(pace, True) is None
    assert before_round(pace, False) == Stop(f"call budget spent after {pace.done} rounds")
