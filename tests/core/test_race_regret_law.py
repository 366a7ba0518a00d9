"""The race's regret law: racing costs at most twice the margin over sweeping everything.

On every drawn machine (crossing batch-size scalings, per-backend noise, heavy-tailed
stalls, slow spells over one candidate's window, exact ties: ``tests/core/race_machines``)
the raced session's pick costs, truly, at most ``1 + 2 * margin`` times what the full
sweep's pick costs; the share checks say the machines make the cases the law is about,
and planted wrong races (measuring only the smallest batch size, or the smallest and the
middle one, before dropping) break it. The draws are derandomized: a fixed batch of
machines, the same on every run.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

from aitune_fp.core.session import SessionPlan
from aitune_fp.core.strategies import confident, max_throughput
from aitune_fp.core.strategy import Strategy
from aitune_fp.testing.simulated import SimulatedMachine
from tests.core.race_machines import BOUND, Planted, crossing, raced_machines, regret, tie
from tests.core.shares import share

RACING = (max_throughput, confident(max_throughput))
FIXED = settings(derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])


@FIXED
@given(raced_machines(), st.sampled_from(RACING), st.sampled_from((None, 1.0)))
def test_the_raced_pick_costs_at_most_twice_the_margin_over_the_full_sweeps(
    machine: SimulatedMachine, strategy: Strategy, verify: float | None
) -> None:
    """The raced session's pick costs, truly, at most (1 + 2 * margin) times the full
    sweep's pick on the same machine (with or without final rounds and a verification)."""
    cost, _ = regret(machine, strategy, verify)
    assert cost <= BOUND


def test_the_machines_make_crossings_spells_and_ties() -> None:
    """At least a quarter of the drawn machines cross (the best at batch size 1 is not the
    best over the ladder), 30 % have a slow spell, a fifth an exact tie."""
    assert share(raced_machines(), crossing) >= 0.25
    assert share(raced_machines(), lambda m: bool(m.spells)) >= 0.3
    assert share(raced_machines(), tie) >= 0.2


def _dropped(case: tuple[SimulatedMachine, float | None]) -> bool:
    """Whether the raced session on ``case`` dropped anyone."""
    race = regret(case[0], max_throughput, case[1])[1]
    return race is not None and bool(race.dropped)


def _spell_dropped(machine: SimulatedMachine) -> bool:
    """Whether the race dropped the candidate whose window fell in a slow spell."""
    race = regret(machine, max_throughput)[1]
    return race is not None and bool(set(machine.spells) & set(race.dropped))


def test_the_race_drops_in_most_sessions_and_spells_cause_drops() -> None:
    """The race drops someone in at least half of the sessions, with or without a
    verification, and the candidate in a slow spell in at least a fifth of them (the law
    holds through the drops, not for want of any)."""
    assert share(st.tuples(raced_machines(), st.sampled_from((None, 1.0))), _dropped, 100) >= 0.5
    assert share(raced_machines(), _spell_dropped, 100) >= 0.2


def _smallest(plan: SessionPlan) -> tuple[int, ...]:
    """A wrong race's sizes: the ladder's smallest only."""
    return (min(plan.ladder),)


def _smallest_and_middle(plan: SessionPlan) -> tuple[int, ...]:
    """A wrong race's sizes: the ladder's smallest and middle ones (before issue 44)."""
    ladder = sorted(plan.ladder)
    return ladder[0], ladder[len(ladder) // 2]


SIZES = "aitune_fp.core.session.sweep.race_sizes"
PLANTED: dict[str, tuple[str, object, tuple[float | None, ...]]] = {
    "smallest only": (SIZES, _smallest, (None, 1.0)),
    "smallest and middle": (SIZES, _smallest_and_middle, (None, 1.0)),
    "no runner-up spared": ("aitune_fp.core.session.race_sweep.CHALLENGERS", 0, (1.0,)),
}
"""Each wrong race: what is replaced, by what, and the verifications it is tried with."""


def _planted(target: str, value: object) -> Planted:
    """A wrong race: ``target`` replaced by ``value`` while the raced session runs."""

    @contextmanager
    def planting() -> Iterator[None]:
        with mock.patch(target, value):
            yield

    return planting


@pytest.mark.parametrize("wrong", sorted(PLANTED))
def test_a_wrong_race_breaks_the_law(wrong: str) -> None:
    """A race measuring only the smallest batch size (or the smallest and middle ones,
    the race before issue 44) before dropping, or one dropping the runner-ups a
    verification would challenge (a slow spell over the best's window), has a machine
    where its pick costs more than (1 + 2 * margin) times the full sweep's."""
    target, value, verify = PLANTED[wrong]
    planted = _planted(target, value)
    case = find(
        st.tuples(raced_machines(), st.sampled_from(RACING), st.sampled_from(verify)),
        lambda c: regret(*c, planted)[0] > BOUND,
        settings=settings(FIXED, max_examples=200, phases=[Phase.generate]),
    )
    assert regret(*case, planted)[0] > BOUND
