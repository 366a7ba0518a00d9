"""Laws of the pure session, on simulated machines built from the decision benchmark's noise
model (aitune_fp.testing.simulated): it always ends, never builds a closed or repeated
candidate, selects what ``tune`` selects when nothing but the sweeps decide, and replays
bit for bit from its event log."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import event, given, settings
from hypothesis import strategies as st
from returns.result import Failure, Result, Success

from aitune_fp.core.fold import tune
from aitune_fp.core.records import STAGES, Profile, Selection, TuneError
from aitune_fp.core.session import (
    Build,
    Close,
    Command,
    Done,
    Event,
    Profiled,
    SessionPlan,
    TimeRounds,
    Verify,
    run,
)
from aitune_fp.core.session.replay import replay
from aitune_fp.core.strategies import (
    confident,
    first_wins,
    latency_budget,
    max_throughput,
    min_latency,
    one_backend,
)
from aitune_fp.core.strategy import Strategy
from aitune_fp.testing.simulated import SimulatedMachine

NAMES = ("a", "b", "c", "d")
PLAIN = (max_throughput, min_latency, latency_budget(4.0), first_wins(min_latency),
         one_backend(max_throughput, "b"))  # fmt: skip


@st.composite
def machines(draw: st.DrawFn) -> tuple[SimulatedMachine, tuple[str, ...]]:
    """A machine with eager and 0-4 candidates, some failing, some keeping no runner."""
    names = tuple(draw(st.lists(st.sampled_from(NAMES), unique=True, min_size=1, max_size=4)))
    close = draw(st.booleans())  # near-ties: the sweeps leave the decision to the rounds
    low, high = (1.0, 1.02) if close else (0.2, 5.0)
    true = {n: draw(st.floats(low, high)) for n in ("eager", *names)}
    failing = {n: draw(st.sampled_from(sorted(STAGES))) for n in names if draw(st.booleans())
               and draw(st.booleans())}  # fmt: skip
    dead = frozenset(n for n in ("eager", *names) if draw(st.integers(0, 4)) == 0)
    machine = SimulatedMachine(true, seed=draw(st.integers(0, 2**16)), failing=failing,
                               no_runner=dead, max_rounds=40)  # fmt: skip
    return machine, names


def strategies_any() -> st.SearchStrategy[Strategy]:
    """Shipped strategies, plain and confident (with final rounds), either validation."""
    base = st.sampled_from(PLAIN)
    chosen = st.one_of(base, base.map(confident))
    return st.tuples(chosen, st.booleans()).map(
        lambda sv: replace(sv[0], validate_performance=sv[1])
    )


def recorded(
    plan: SessionPlan, machine: SimulatedMachine
) -> tuple[list[Command], Done, tuple[Event, ...]]:
    """Every command the session gave on ``machine``, its ``Done`` and its event log."""
    answer = machine.answers()
    given: list[Command] = []

    def keeping(command: Command) -> Event | None:
        given.append(command)
        return answer(command)

    session, done = run(plan, keeping)
    return [*given, done], done, session.events


@settings(max_examples=60)
@given(machines(), strategies_any(), st.sampled_from((None, 0.0, 1.0)), st.booleans())
def test_the_session_always_ends_and_never_builds_a_closed_or_repeated_candidate(
    case: tuple[SimulatedMachine, tuple[str, ...]],
    strategy: Strategy,
    verify: float | None,
    early: bool,
) -> None:
    """Every session reaches Done, builds each name at most once and never after closing it."""
    machine, names = case
    commands, done, _ = recorded(SessionPlan(strategy, names, "eager", early, verify), machine)
    built: set[str] = set()
    closed: set[str] = set()
    for command in commands:
        if isinstance(command, Build):
            assert command.name not in built | closed
            built.add(command.name)
        if isinstance(command, Close):
            assert command.names <= built
            closed |= command.names
        if isinstance(command, TimeRounds | Verify):
            timed = {p[0] for p in command.participants} if isinstance(command, TimeRounds) \
                else {backend for _, backend, _ in command.entries}  # fmt: skip
            assert not timed & closed
    assert commands[-1] is done and isinstance(done, Done)
    assert sum(isinstance(c, Done) for c in commands) == 1
    event(f"final rounds timed: {any(isinstance(c, TimeRounds) for c in commands)}")
    event(f"verified: {any(isinstance(c, Verify) for c in commands)}")


@settings(max_examples=80)
@given(machines(), st.sampled_from(PLAIN), st.booleans(), st.booleans())
def test_without_rounds_or_verification_the_selection_is_tunes(
    case: tuple[SimulatedMachine, tuple[str, ...]], strategy: Strategy, validate: bool, early: bool
) -> None:
    """With no rounds and no verification planned, the session selects exactly what
    ``tune`` selects over the same profiles (the baseline's included), unless that winner
    kept no runner: then the error saying so."""
    machine, names = case
    strategy = replace(strategy, validate_performance=validate)
    _, done, events = recorded(SessionPlan(strategy, names, "eager", early), machine)
    profiled = [e for e in events if isinstance(e, Profiled)]
    baseline = profiled[0].result if validate else None
    by_name = {e.name: e.result for e in profiled[(1 if validate else 0) :]}
    # never built: refused by the strategy (tune refuses it unmeasured, by name) or after
    # it settled (tune never consumes those)
    unbuilt = {n: Success(Profile(n, {1: [1e-9]})) for n in names}
    expected = tune(strategy, [by_name.get(n, unbuilt[n]) for n in names], baseline)
    assert done.selection == runnable_on(machine, expected)


def runnable_on(
    machine: SimulatedMachine, selected: Result[Selection, TuneError]
) -> Result[Selection, TuneError]:
    """``selected``, unless its winner keeps no runner on ``machine`` (and is no fallback
    to the baseline): then the failure saying so."""
    match selected:
        case Success(picked) if picked.backend in machine.no_runner:
            if not picked.fell_back_to_baseline:
                why = f"{picked.backend} has no runner left to run the tuned module"
                return Failure(TuneError(why))
    return selected


@settings(max_examples=40)
@given(machines(), strategies_any(), st.sampled_from((None, 1.0)))
def test_replaying_the_event_log_reproduces_commands_and_selection_bit_for_bit(
    case: tuple[SimulatedMachine, tuple[str, ...]], strategy: Strategy, verify: float | None
) -> None:
    """Replaying a session's own event log gives the same commands and the same Done."""
    machine, names = case
    plan = SessionPlan(strategy, names, "eager", True, verify)
    commands, done, events = recorded(plan, machine)
    again = replay(plan, events)
    assert list(again.commands) == commands
    assert again.done == done and again.diverged is None


@settings(max_examples=25)
@given(st.lists(st.floats(1.0, 1.02), min_size=3, max_size=3), st.integers(0, 2**16))
def test_near_ties_get_final_rounds_and_a_verification_that_replay_bit_for_bit(
    ms: list[float], seed: int
) -> None:
    """On a machine where eager and two candidates are within 2 %, a confident strategy asks
    for final rounds (the sweeps cannot settle such a gap), the verification runs when a
    runner-up is alive, and the event log replays every command and the selection exactly."""
    machine = SimulatedMachine(dict(zip(("eager", "a", "b"), ms, strict=True)), seed=seed,
                               max_rounds=40)  # fmt: skip
    plan = SessionPlan(confident(min_latency), ("a", "b"), "eager", True, 1.0)
    commands, done, events = recorded(plan, machine)
    assert any(isinstance(c, TimeRounds) for c in commands)
    assert any(isinstance(c, Verify) for c in commands)
    again = replay(plan, events)
    assert list(again.commands) == commands and again.done == done
