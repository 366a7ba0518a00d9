"""The session's phases and judges are values: a phase carries its own fields, every command
compares fully (judges included), a replay with a different judge is caught, and strategies
built alike (or rebuilt from their stored config) compare equal."""

from __future__ import annotations

import pickle
from dataclasses import replace

from hypothesis import event, given, settings
from hypothesis import strategies as st

from aitune_fp.core.session import (
    Command,
    Done,
    Event,
    Finished,
    Phase,
    RoundsJudge,
    Session,
    SessionPlan,
    Timed,
    TimeRounds,
    Verify,
    Verifying,
    VerifyJudge,
    run,
    start,
    step,
)
from aitune_fp.core.session.replay import replay
from aitune_fp.core.session.run import moved
from aitune_fp.core.strategies import confident, latency_budget, min_latency
from aitune_fp.core.strategies.registry import parse_strategy, strategy_config, strategy_from_config
from aitune_fp.testing.simulated import SimulatedMachine

PLAN = SessionPlan(confident(min_latency), ("a", "b"), "eager", False, 1.0)


def _machine(seed: int) -> SimulatedMachine:
    """Eager and two candidates within 1 %: the sweeps leave the decision to the rounds."""
    return SimulatedMachine({"eager": 1.0, "a": 1.01, "b": 1.005}, seed=seed, max_rounds=40)


def _recorded(plan: SessionPlan, seed: int) -> tuple[list[Command], Session]:
    """Every command ``plan``'s session gave on the machine, and the finished session."""
    answer, given = _machine(seed).answers(), []

    def keeping(command: Command) -> Event | None:
        given.append(command)
        return answer(command)

    session, done = run(plan, keeping)
    return [*given, done], session


@settings(max_examples=10)
@given(st.integers(0, 2**16))
def test_the_timing_commands_carry_judges_that_are_values(seed: int) -> None:
    """The rounds' and the verification's judges are frozen values: hashable, equal to
    their copy through pickle (no closure, nothing compared by identity), and a run of the
    plan built again from scratch (new strategy objects) gives equal commands, judges
    included."""
    commands, session = _recorded(PLAN, seed)
    timings = [c for c in commands if isinstance(c, TimeRounds | Verify)]
    assert timings and all(isinstance(c.judge, RoundsJudge | VerifyJudge) for c in timings)
    for command in timings:
        copy = pickle.loads(pickle.dumps(command.judge))
        assert copy == command.judge and hash(copy) == hash(command.judge)
    rebuilt = SessionPlan(confident(min_latency), ("a", "b"), "eager", False, 1.0)
    assert _recorded(rebuilt, seed)[0] == commands
    assert isinstance(session.phase, Finished) and session.phase_name == "done"
    done = commands[-1]
    assert isinstance(done, Done) and session.selection == done.selection


@settings(max_examples=10)
@given(st.integers(0, 2**16))
def test_a_replay_with_a_different_judge_is_caught(seed: int) -> None:
    """A replay whose plan differs only in what its judges apply (the bootstrap seed of the
    confidence rule) diverges: at the final rounds or the verification when the other seed
    changed a decision there (a differing line comes first: who takes part, in what
    order), else at the final rounds, naming the judge's differing field; the recorded
    plan, or one whose strategy is built anew alike, replays with none."""
    commands, session = _recorded(PLAN, seed)
    assert any(isinstance(c, TimeRounds) for c in commands)
    assert replay(PLAN, session.events, PLAN).diverged is None
    alike = replace(PLAN, strategy=confident(min_latency))
    assert replay(PLAN, session.events, alike).diverged is None
    other = replace(PLAN, strategy=confident(min_latency, seed=7))
    diverged = replay(PLAN, session.events, other).diverged
    assert diverged is not None
    if diverged.recorded != diverged.replayed:  # a line differs: a decision the seed shaped
        event("the other seed changed a decision")
        assert diverged.recorded.startswith(("final rounds:", "verify:"))
        return
    assert diverged.recorded.startswith("final rounds:")
    assert "(judge.strategy." in diverged.recorded and "seed differs)" in diverged.recorded


def test_the_verifying_phase_carries_its_plan_and_the_finished_one_the_outcome() -> None:
    """Stepping a session to its verification puts the plan in the ``Verifying`` phase
    (its judge is the command's); the answer finishes it with the selection."""
    plan = SessionPlan(min_latency, ("a",), "eager", False, 1.0)
    answer = _machine(3).answers()
    session, commands = start(plan)
    while not any(isinstance(c, Verify) for c in commands):
        event = next(e for e in map(answer, commands) if e is not None)
        session, commands = step(session, event)
    verify = next(c for c in commands if isinstance(c, Verify))
    assert isinstance(session.phase, Verifying) and session.phase_name == "verify"
    assert verify.judge == VerifyJudge(session.phase.plan) and session.selection is None
    timed = answer(verify)
    assert isinstance(timed, Timed)
    session, _ = step(session, timed)
    assert isinstance(session.phase, Finished) and session.selection is not None


def test_strategies_built_alike_or_rebuilt_from_their_config_compare_equal() -> None:
    """Two strategies built by the same calls are equal (their rules are bound functions
    compared as data), as is a shipped strategy rebuilt from its stored config; other
    parameters make them differ."""
    assert confident(min_latency) == confident(min_latency)
    assert latency_budget(5.0) == latency_budget(5.0) != latency_budget(6.0)
    for spec in ("confident:min-latency", "latency-budget=5ms", "within-memory=1GiB:max-throughput",
                 "first-wins:min-speedup=1.1:one-backend=ort:min-latency"):  # fmt: skip
        strategy = parse_strategy(spec)
        assert strategy_from_config(strategy_config(strategy)) == strategy


@settings(max_examples=10)
@given(st.integers(0, 2**16))
def test_a_watcher_times_the_phases_from_the_sessions_phase_changes(seed: int) -> None:
    """The one loop shows the watcher the session before each command; the phase changes it
    sees at measuring commands come once each, in the session's order, ending at ``done``."""
    order = ["prebuild", "baseline", "sweep", "widen", "rounds", "verify", "done"]
    seen: list[Phase | None] = [None]
    changes: list[str] = []

    def watch(session: Session, command: Command) -> None:
        if moved(seen[-1], session, command):
            seen.append(session.phase)
            changes.append(session.phase_name)

    run(PLAN, _machine(seed).answers(), watch)
    assert changes[0] == "baseline" and changes[-1] == "done" and "rounds" in changes
    assert changes == sorted(set(changes), key=order.index)
