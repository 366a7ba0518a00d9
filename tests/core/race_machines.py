"""Simulated machines for the race's regret law, and the regret of a raced session on one.

A drawn machine has eager and 2-5 candidates, each with its own batch-size scaling (so
rankings cross between batch sizes; a *late bloomer*, slower per row at batch size 1 but
scaling better, is planted in about half of them), its own jitter, heavy-tailed stalls,
sometimes a slow spell over one candidate's whole sweep window and sometimes an exact
tie (a candidate that is a copy of another). Builds draw common random numbers
(``keyed``): a raced and a full sweep on the same machine see the same calls wherever
both measure, so the law compares what the race chose with what sweeping everything
chose, not two noise draws.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

from hypothesis import strategies as st

from aitune_fp.core.session import SessionPlan, run
from aitune_fp.core.session.racing import RaceState
from aitune_fp.core.strategy import Strategy
from aitune_fp.core.verification.judge import MARGIN
from aitune_fp.testing.simulated import SimulatedMachine

LADDER = (1, 2, 4, 8, 16)
BOUND = 1.0 + 2 * MARGIN
"""The regret law's bound: the raced pick's true cost over the full sweep's pick's."""


@st.composite
def raced_machines(draw: st.DrawFn) -> SimulatedMachine:
    """A machine with crossings, heavy tails, per-backend noise, spells and ties."""
    n = draw(st.integers(2, 5))
    names = [f"c{i}" for i in range(n)]
    true = {n: draw(st.floats(0.5, 5.0)) for n in names}
    scaling = {n: draw(st.floats(0.5, 1.05)) for n in names}
    if draw(st.booleans()):  # a late bloomer: slower at batch size 1, faster at 16
        fast = min(names, key=lambda m: true[m] * 16 ** (scaling[m] - 1))
        bloomer = draw(st.sampled_from([m for m in names if m != fast]))
        true[bloomer] = true[fast] * draw(st.floats(1.2, 2.0))
        scaling[bloomer] = scaling[fast] - draw(st.floats(0.15, 0.3))
    if draw(st.integers(0, 3)) == 0:  # an exact tie: one candidate copies another
        a, b = draw(st.permutations(names))[:2]
        true[b], scaling[b] = true[a], scaling[a]
    spells = {draw(st.sampled_from(names)): draw(st.floats(1.1, 2.0))} if draw(
        st.integers(0, 2)) == 0 else {}  # fmt: skip
    return SimulatedMachine(
        {"eager": max(true.values()) * draw(st.floats(1.0, 2.0)), **true},
        seed=draw(st.integers(0, 2**16)),
        scalings=scaling,
        sigmas={n: draw(st.floats(0.002, 0.02)) for n in names},
        outlier_p=draw(st.floats(0.0, 0.1)),
        tail=draw(st.floats(1.2, 3.0)),
        spells=spells,
        keyed=True,
        batch_sizes=LADDER,
        max_rounds=40,
    )


def _best(machine: SimulatedMachine, name: str) -> tuple[float, int]:
    """``name``'s true lowest per-row cost over the ladder, and its batch size."""
    return min((machine.per_row_ms(name, b), b) for b in LADDER)


def crossing(machine: SimulatedMachine) -> bool:
    """Whether the truly best candidate at batch size 1 is not the best over the ladder."""
    names = [n for n in machine.true_ms if n != "eager"]
    at_one = min(names, key=lambda n: machine.per_row_ms(n, 1))
    return _best(machine, at_one)[0] > min(_best(machine, n)[0] for n in names)


def tie(machine: SimulatedMachine) -> bool:
    """Whether two candidates are exact copies of each other."""
    names = [n for n in machine.true_ms if n != "eager"]
    pairs = {(machine.true_ms[n], machine.scalings[n]) for n in names}
    return len(pairs) < len(names)


def _pick(plan: SessionPlan, machine: SimulatedMachine) -> tuple[float, RaceState | None]:
    """The true per-row cost of the session's pick at its selected batch size, and its race."""
    session, done = run(plan, machine.answers())
    chosen = done.selection.unwrap()
    return machine.per_row_ms(chosen.backend, chosen.result.selected_batch_size), session.race


Planted = Callable[[], AbstractContextManager[object]]


def regret(
    machine: SimulatedMachine,
    strategy: Strategy,
    verify: float | None = None,
    planted: Planted = nullcontext,
) -> tuple[float, RaceState | None]:
    """The raced pick's true cost over the full sweep's pick's (the full sweep: every
    candidate at every ladder size; both verified for ``verify`` seconds, when given), and
    the race, with ``planted`` in force while the raced session runs."""
    names = tuple(n for n in machine.true_ms if n != "eager")
    full, _ = _pick(SessionPlan(strategy, names, verify_seconds=verify), machine)
    with planted():
        plan = SessionPlan(strategy, names, verify_seconds=verify, ladder=LADDER)
        raced, race = _pick(plan, machine)
    return raced / full, race
