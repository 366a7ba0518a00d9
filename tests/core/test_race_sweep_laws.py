"""Laws of the race wired into the session's sweep (aitune_fp.core.session.race_sweep), on
simulated machines: the clear best survives, a noise-free race picks what the full sweep
picks, a dropped candidate says why, and a raced session replays bit for bit."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Failure, Success

from aitune_fp.core.records import BackendFailure, Profile
from aitune_fp.core.report.notes import render
from aitune_fp.core.session import (
    Build,
    Command,
    Done,
    Event,
    Profiled,
    Say,
    Session,
    SessionPlan,
    Timed,
    TimeRounds,
    Verify,
    run,
)
from aitune_fp.core.session.notes import DroppedInRace
from aitune_fp.core.session.race_sweep import observed
from aitune_fp.core.session.racing import RaceState
from aitune_fp.core.session.replay import replay
from aitune_fp.core.strategies import confident, latency_budget, max_throughput, min_latency
from aitune_fp.core.strategy import Strategy
from aitune_fp.core.verification.judge import CONFIDENCE, MARGIN
from aitune_fp.testing.simulated import SimulatedMachine
from tests.core.shares import share
from tests.core.test_session_laws import machines, recorded

LADDER = (1, 2, 4, 8, 16)
RACING = (max_throughput, confident(max_throughput))


def _raced(
    true_ms: dict[str, float], strategy: Strategy, **machine: object
) -> tuple[list[Command], str, Session]:
    """The commands of a raced session over every non-eager name, the pick and the
    session's last state."""
    sim = SimulatedMachine(true_ms, batch_sizes=LADDER, max_rounds=40, **machine)  # type: ignore[arg-type]
    names = tuple(n for n in true_ms if n != "eager")
    commands, done, session = _session_of(SessionPlan(strategy, names, ladder=LADDER), sim)
    return commands, done.selection.map(lambda s: s.backend).value_or(""), session


def _session_of(
    plan: SessionPlan, machine: SimulatedMachine
) -> tuple[list[Command], Done, Session]:
    """Every command the session gave on ``machine``, its ``Done`` and its last state."""
    answer, given = machine.answers(), list[Command]()

    def keeping(command: Command) -> Event | None:
        given.append(command)
        return answer(command)

    session, done = run(plan, keeping)
    return [*given, done], done, session


def _dropped(session: Session) -> set[str]:
    """The names whose profile in the session says the race dropped them."""
    return {name for name, p in session.profiles.items()
            if "dropped in the race" in (p.stopped_early or "")}  # fmt: skip


@st.composite
def _ahead(draw: st.DrawFn) -> tuple[dict[str, float], dict[str, float]]:
    """Eager and candidates, each scaling its own way over the ladder, where "best" is at
    least twice the margin ahead of every other at its best batch size (often behind them
    at the smallest: a late bloomer), and the per-backend scalings."""
    scalings = {f"c{i}": draw(st.floats(0.6, 1.0)) for i in range(draw(st.integers(1, 4)))}
    true = {name: draw(st.floats(0.5, 5.0)) for name in scalings}
    lowest = min(true[n] * min(b ** (scalings[n] - 1) for b in LADDER) for n in true)
    scalings["best"] = draw(st.floats(0.4, 1.0))
    true["best"] = lowest / draw(st.floats(1.0 + 2 * MARGIN, 3.0)) / 16 ** (scalings["best"] - 1)
    order = draw(st.permutations(sorted(true)))
    eager = max(true.values()) * draw(st.floats(1.0, 3.0))
    return {"eager": eager, **{n: true[n] for n in order}}, scalings


def _behind_at_one(case: tuple[dict[str, float], dict[str, float]]) -> bool:
    """Whether "best" is slower than another candidate at batch size 1."""
    true = case[0]
    return min((m, n) for n, m in true.items() if n != "eager")[1] != "best"


def _unspared(events: tuple[Event, ...]) -> RaceState:
    """The racing rule stepped over the candidates' answers as the session fed them, with
    nothing spared (the session spares the fold's best: this is the race's own verdict)."""
    race = RaceState(margin=MARGIN, confidence=CONFIDENCE)
    for event in events:
        profile = event.result.value_or(None) if isinstance(event, Profiled) else None
        if profile is not None and profile.backend != "eager":
            race = observed(race, profile)
    return race


@settings(max_examples=15)
@given(_ahead(), st.floats(0.01, 0.08), st.sampled_from(RACING))
def test_the_sessions_race_never_drops_a_best_twice_the_margin_ahead(
    case: tuple[dict[str, float], dict[str, float]], sigma: float, strategy: Strategy
) -> None:
    """Where the best is at least twice the margin ahead at its best batch size (a late
    bloomer, often), the racing rule fed what the session measured keeps it on at least
    19 of 20 noisy machines (jitter, stalls, drift), before anything is spared."""
    true_ms, scalings = case
    names = tuple(n for n in true_ms if n != "eager")
    plan = SessionPlan(strategy, names, ladder=LADDER)
    dropped = 0
    for seed in range(20):
        sim = SimulatedMachine(true_ms, seed=seed, sigma=sigma, scalings=scalings,
                               batch_sizes=LADDER, max_rounds=40)  # fmt: skip
        dropped += "best" in _unspared(recorded(plan, sim)[2]).dropped
    assert dropped <= 1


def test_the_best_is_often_behind_at_the_smallest_batch_size() -> None:
    """In at least a third of the drawn cases the best is slower than another candidate
    at batch size 1 (a race deciding there would drop it)."""
    assert share(_ahead(), _behind_at_one) >= 1 / 3


@settings(max_examples=40)
@given(
    st.lists(st.tuples(st.floats(0.5, 5.0), st.floats(0.4, 1.1)), min_size=2, max_size=6),
    st.sampled_from(RACING),
)
def test_on_a_noise_free_machine_the_race_picks_what_the_full_sweep_picks(
    drawn: list[tuple[float, float]], strategy: Strategy
) -> None:
    """Without noise, where candidates scale differently (rankings cross between batch
    sizes), the raced session selects the backend the full sweep (every candidate at
    every batch size) selects."""
    true_ms = {"eager": 6.0, **{f"c{i}": m for i, (m, _) in enumerate(drawn)}}
    scalings = {f"c{i}": s for i, (_, s) in enumerate(drawn)}
    quiet = SimulatedMachine(true_ms, sigma=0.0, outlier_p=0.0, drift=0.0, scalings=scalings,
                             batch_sizes=LADDER, max_rounds=40)  # fmt: skip
    names = tuple(true_ms)[1:]
    _, raced, _ = recorded(SessionPlan(strategy, names, ladder=LADDER), quiet)
    _, full, _ = recorded(SessionPlan(strategy, names), quiet)
    pick = raced.selection.map(lambda s: s.backend).value_or(None)
    assert pick == full.selection.map(lambda s: s.backend).value_or(None)


def test_a_clearly_beaten_candidate_is_dropped_and_says_why() -> None:
    """A candidate three times slower is raced at the ladder's smallest, middle and largest
    sizes, dropped with a log line and a profile that say why, and never widened; the
    winner is widened over the sizes the race skipped, once."""
    commands, pick, session = _raced(
        {"eager": 4.0, "fast": 1.0, "slow": 3.0}, max_throughput, seed=3
    )
    builds = [(c.name, c.batch_sizes) for c in commands if isinstance(c, Build)]
    assert builds == [("eager", ()), ("fast", (1, 4, 16)), ("slow", (1, 4, 16)), ("fast", (2, 8))]
    drops = [c.note for c in commands if isinstance(c, Say) and isinstance(c.note, DroppedInRace)]
    assert [(d.name, d.evidence.against, d.evidence.batch_size) for d in drops] == [
        ("slow", "fast", 16)
    ]
    assert render(drops[0]).startswith("slow dropped in the race: ")
    assert _dropped(session) == {"slow"} and pick == "fast"
    assert session.profiles["fast"].batch_sizes == LADDER  # widened, as the record reads it


def test_the_race_never_drops_the_folds_best() -> None:
    """When the race's median intervals would drop the fold's best but the strategy's own
    compare does not let the other lead (its mean carries stalls its median does not), the
    race keeps that best: it is selected, never dropped, its runner never closed."""

    def answer(command: Command) -> Event | None:
        if isinstance(command, TimeRounds | Verify):
            return Timed("rounds" if isinstance(command, TimeRounds) else "verify")
        if not isinstance(command, Build):
            return None
        steady, stalls = (1.0,) * 40, (0.5,) * 34 + (30.0,) * 6
        calls = {"b": stalls, "eager": (3.0,) * 40}.get(command.name, steady)
        per = {bs: [c * bs for c in calls] for bs in command.batch_sizes or LADDER}
        return Profiled(command.name, Success(Profile(command.name, per)), live=True)

    plan = SessionPlan(max_throughput, ("a", "b"), ladder=LADDER)
    session, done = run(plan, answer)
    assert session.race is not None and "a" not in session.race.dropped
    assert done.selection.unwrap().backend == "a" and "a" in session.live


@given(st.sampled_from((min_latency, latency_budget(4.0), confident(min_latency))))
def test_latency_strategies_and_budgets_do_not_race(strategy: Strategy) -> None:
    """A latency metric, or a throughput under a latency budget, builds every candidate
    over the whole ladder once (the race compares per-row costs, not their metric)."""
    commands, _, _ = _raced({"eager": 4.0, "fast": 1.0, "slow": 3.0}, strategy, seed=1)
    builds = [(c.name, c.batch_sizes) for c in commands if isinstance(c, Build)]
    assert builds == [("eager", ()), ("fast", ()), ("slow", ())]


def test_a_failed_widening_keeps_the_race_profile() -> None:
    """When a contender's widening build fails, its race profile stays its profile, the
    fold still ranks it first, and its race runner (never closed for the widening) is
    still live: the session selects it at a batch size the race measured."""
    sim = SimulatedMachine({"eager": 4.0, "a": 1.0, "b": 3.0}, batch_sizes=LADDER, seed=2)
    answer = sim.answers()

    def failing_wide(command: Command) -> Event | None:
        if isinstance(command, Build) and command.batch_sizes == (2, 8):
            return Profiled(command.name, Failure(BackendFailure(command.name, "profile", "x")))
        return answer(command)

    session, done = run(SessionPlan(max_throughput, ("a", "b"), ladder=LADDER), failing_wide)
    assert session.fold.best is not None and session.fold.best.backend == "a"
    assert "a" in session.live
    picked = done.selection.unwrap()
    assert picked.backend == "a" and picked.result.selected_batch_size in (1, 4, 16)
    assert session.profiles["a"].batch_sizes == (1, 4, 16)


@settings(max_examples=30)
@given(machines(), st.sampled_from(RACING), st.sampled_from((None, 1.0)), st.booleans())
def test_a_raced_session_builds_twice_at_most_and_replays_bit_for_bit(
    case: tuple[SimulatedMachine, tuple[str, ...]],
    strategy: Strategy,
    verify: float | None,
    validate: bool,
) -> None:
    """A raced session builds a candidate at most twice (the second time over the ladder's
    sizes the first skipped, never one it dropped), never selects or times one it dropped in final
    rounds or the verification, and its event log replays its commands exactly."""
    machine, names = case
    machine = replace(machine, batch_sizes=LADDER)
    strategy = replace(strategy, validate_performance=validate)
    plan = SessionPlan(strategy, names, "eager", True, verify, ladder=LADDER)
    commands, done, session = _session_of(plan, machine)
    events = session.events
    builds: dict[str, list[tuple[int, ...]]] = {}
    for c in commands:
        if isinstance(c, Build):
            builds.setdefault(c.name, []).append(c.batch_sizes)
    for name, sizes in builds.items():
        assert len(sizes) <= 2 and (
            len(sizes) == 1
            or (set(sizes[0]).isdisjoint(sizes[1]) and {*sizes[0], *sizes[1]} == set(LADDER))
        )
        assert len(sizes) == 1 or name not in _dropped(session)
    picked = done.selection.map(lambda s: s.backend).value_or(None)
    assert picked not in _dropped(session) - {"eager"}
    for c in commands:
        if isinstance(c, TimeRounds | Verify):
            timed = [p[0] for p in c.participants] if isinstance(c, TimeRounds) \
                else [backend for _, backend, _ in c.entries]  # fmt: skip
            assert not set(timed) & (_dropped(session) - {"eager"})
    again = replay(plan, events)
    assert list(again.commands) == commands and again.done == done and again.diverged is None
