"""Decisions the interpreter used to make, made by the session from the facts it reports:
a plan whose baseline names no config is refused, a participant that left a timing is the
session's warning (logged and replayed), and a winner whose runner is gone is no
selection but the failure that says so."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st
from pyrsistent import pmap

from aitune_fp.core.session import Command, Event, Say, SessionPlan, Timed, TimeRounds, Verify
from aitune_fp.core.session.baseline import refused
from aitune_fp.core.session.notes import LeftTiming
from aitune_fp.core.session.replay import commands_of
from aitune_fp.core.session.run import run
from aitune_fp.core.strategies import confident, max_throughput, min_latency
from aitune_fp.testing.simulated import SimulatedMachine

PLAN = SessionPlan(confident(min_latency), ("a", "b"), "eager", False, 1.0)


def test_a_plan_whose_baseline_names_no_config_is_refused_before_anything_runs() -> None:
    """Only a plan that builds a baseline is refused for it, with the names there are."""
    assert refused(PLAN, {"eager", "a", "b"}) is None
    unvalidated = replace(PLAN, strategy=replace(max_throughput, validate_performance=False))
    assert refused(unvalidated, {"a", "b"}) is None
    found = refused(PLAN, {"b", "a"})
    assert found is not None
    session, done = found
    assert session.selection == done.selection and session.events == ()
    assert done.selection.failure().message == (
        "the baseline 'eager' names no backend of this run (it has: a, b)"
    )


def _leaving(seed: int, gone: str) -> tuple[list[Command], tuple[Event, ...]]:
    """The commands of ``PLAN`` on a near-tie machine whose interpreter cannot make
    ``gone``'s runner for any timing (it reports it left, with no samples)."""
    machine = SimulatedMachine({"eager": 1.0, "a": 1.01, "b": 1.005}, seed=seed, max_rounds=40)
    answer, given = machine.answers(), []

    def dropping(command: Command) -> Event | None:
        given.append(command)
        event = answer(command)
        timing = isinstance(command, TimeRounds | Verify) and gone in command.backends
        if isinstance(event, Timed) and isinstance(command, TimeRounds | Verify) and timing:
            keys = {k for k, b in _keys(command) if b == gone}
            samples = pmap({k: v for k, v in event.samples.items() if k not in keys})
            return replace(event, samples=samples, left=pmap({gone: "no live runner"}))
        return event

    session, done = run(PLAN, dropping)
    return [*given, done], session.events


def _keys(command: TimeRounds | Verify) -> list[tuple[str, str]]:
    """Each participant's key and backend."""
    if isinstance(command, TimeRounds):
        return [(n, n) for n, _ in command.participants]
    return [(k, b) for k, b, _ in command.entries]


@settings(max_examples=10)
@given(st.integers(0, 2**16), st.sampled_from(("a", "b", "eager")))
def test_a_participant_that_left_a_timing_is_the_sessions_warning(seed: int, gone: str) -> None:
    """Each timing ``gone`` was asked into is followed by the session's warning that it
    left (in the event log: a replay gives the same commands, the warning included)."""
    commands, events = _leaving(seed, gone)
    timings = [c for c in commands if isinstance(c, TimeRounds | Verify) and gone in c.backends]
    notes = [c.note for c in commands if isinstance(c, Say)]
    warned = [n for n in notes if isinstance(n, LeftTiming) and n.name == gone]
    assert timings and len(warned) == len(timings)
    assert all(w.level == "warning" and w.why == "no live runner" for w in warned)
    assert commands_of(PLAN, events)[1] == tuple(commands)


def test_a_winner_whose_runner_is_gone_is_no_selection() -> None:
    """A clear winner that kept no runner ends the session with the error naming it and
    no verification; a fallback to a baseline without a runner is still selected."""
    plan = SessionPlan(max_throughput, ("a", "b"), verify_seconds=1.0)
    machine = SimulatedMachine({"eager": 2.0, "a": 0.5, "b": 1.0}, seed=1, no_runner=frozenset("a"))
    session, done = run(plan, machine.answers())
    assert done.selection.failure().message == "a has no runner left to run the tuned module"
    assert done.verification is None and session.selection == done.selection
    failing = replace(machine, no_runner=frozenset({"eager"}), failing={"a": "build", "b": "build"})
    _, fallback = run(plan, failing.answers())
    assert fallback.selection.unwrap().fell_back_to_baseline
