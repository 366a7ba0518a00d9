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
    Event,
    Profiled,
    Replace,
    Say,
    SessionPlan,
    Timed,
    TimeRounds,
    Verify,
    run,
)
from aitune_fp.core.session.notes import DroppedInRace
from aitune_fp.core.session.replay import replay
from aitune_fp.core.strategies import confident, latency_budget, max_throughput, min_latency
from aitune_fp.core.strategy import Strategy
from aitune_fp.core.verification.judge import MARGIN
from aitune_fp.testing.simulated import SimulatedMachine
from tests.core.test_session_laws import machines, recorded

LADDER = (1, 2, 4, 8, 16)
RACING = (max_throughput, confident(max_throughput))


def _raced(
    true_ms: dict[str, float], strategy: Strategy, **machine: object
) -> tuple[list[Command], str]:
    """The commands of a raced session over every non-eager name, and the pick."""
    sim = SimulatedMachine(true_ms, batch_sizes=LADDER, max_rounds=40, **machine)  # type: ignore[arg-type]
    names = tuple(n for n in true_ms if n != "eager")
    commands, done, _ = recorded(SessionPlan(strategy, names, ladder=LADDER), sim)
    return commands, done.selection.map(lambda s: s.backend).value_or("")


def _dropped(commands: list[Command]) -> set[str]:
    """The names whose profile the session replaced to say the race dropped them."""
    return {c.profile.backend for c in commands if isinstance(c, Replace)
            and "dropped in the race" in (c.profile.stopped_early or "")}  # fmt: skip


@st.composite
def _ahead(draw: st.DrawFn) -> dict[str, float]:
    """Eager and candidates where "best" is at least twice the margin ahead of the others."""
    best = draw(st.floats(0.5, 5.0))
    others = draw(st.lists(st.floats(1.0 + 2 * MARGIN, 3.0), min_size=1, max_size=4))
    true = {f"c{i}": best * f for i, f in enumerate(others)}
    where = draw(st.integers(0, len(others)))
    names = [*[*true][:where], "best", *[*true][where:]]
    true["best"] = best
    return {"eager": best * draw(st.floats(1.0, 3.0)), **{n: true[n] for n in names}}


@settings(max_examples=15)
@given(_ahead(), st.floats(0.01, 0.08), st.sampled_from(RACING))
def test_the_sessions_race_never_drops_a_best_twice_the_margin_ahead(
    true_ms: dict[str, float], sigma: float, strategy: Strategy
) -> None:
    """Where the best is at least twice the margin ahead, the session's race keeps it on
    at least 19 of 20 noisy machines (jitter, stalls, drift)."""
    dropped = sum(
        "best" in _dropped(_raced(true_ms, strategy, seed=seed, sigma=sigma)[0])
        for seed in range(20)
    )
    assert dropped <= 1


@settings(max_examples=40)
@given(
    st.lists(st.floats(0.5, 5.0), min_size=2, max_size=6),
    st.floats(0.5, 1.0),
    st.sampled_from(RACING),
)
def test_on_a_noise_free_machine_the_race_picks_what_the_full_sweep_picks(
    ms: list[float], scaling: float, strategy: Strategy
) -> None:
    """Without noise, the raced session selects the backend the full sweep (every
    candidate at every batch size) selects."""
    true_ms = {"eager": 6.0, **{f"c{i}": m for i, m in enumerate(ms)}}
    quiet = SimulatedMachine(true_ms, sigma=0.0, outlier_p=0.0, drift=0.0, scaling=scaling,
                             batch_sizes=LADDER, max_rounds=40)  # fmt: skip
    names = tuple(true_ms)[1:]
    _, raced, _ = recorded(SessionPlan(strategy, names, ladder=LADDER), quiet)
    _, full, _ = recorded(SessionPlan(strategy, names), quiet)
    pick = raced.selection.map(lambda s: s.backend).value_or(None)
    assert pick == full.selection.map(lambda s: s.backend).value_or(None)


def test_a_clearly_beaten_candidate_is_dropped_and_says_why() -> None:
    """A candidate three times slower is raced at the ladder's smallest and middle sizes,
    dropped with a log line and a profile that say why, and never widened; the winner is
    widened over the larger sizes once."""
    commands, pick = _raced({"eager": 4.0, "fast": 1.0, "slow": 3.0}, max_throughput, seed=3)
    builds = [(c.name, c.batch_sizes) for c in commands if isinstance(c, Build)]
    assert builds == [("eager", ()), ("fast", (1, 4)), ("slow", (1, 4)), ("fast", (8, 16))]
    drops = [c.note for c in commands if isinstance(c, Say) and isinstance(c.note, DroppedInRace)]
    assert [(d.name, d.evidence.against, d.evidence.batch_size) for d in drops] == [
        ("slow", "fast", 4)
    ]
    assert render(drops[0]).startswith("slow dropped in the race: ")
    assert _dropped(commands) == {"slow"} and pick == "fast"
    widened = [
        c.profile for c in commands if isinstance(c, Replace) and c.profile.backend == "fast"
    ]
    assert widened[-1].batch_sizes == (1, 4, 8, 16)


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
    commands, _ = _raced({"eager": 4.0, "fast": 1.0, "slow": 3.0}, strategy, seed=1)
    builds = [(c.name, c.batch_sizes) for c in commands if isinstance(c, Build)]
    assert builds == [("eager", ()), ("fast", ()), ("slow", ())]


def test_a_failed_widening_keeps_the_race_profile() -> None:
    """When a contender's widening build fails, its race profile stays its profile, the
    fold still ranks it first, and its race runner (never closed for the widening) is
    still live: the session selects it at a batch size the race measured."""
    sim = SimulatedMachine({"eager": 4.0, "a": 1.0, "b": 3.0}, batch_sizes=LADDER, seed=2)
    answer = sim.answers()

    def failing_wide(command: Command) -> Event | None:
        if isinstance(command, Build) and command.batch_sizes and command.batch_sizes[0] > 4:
            return Profiled(command.name, Failure(BackendFailure(command.name, "profile", "x")))
        return answer(command)

    session, done = run(SessionPlan(max_throughput, ("a", "b"), ladder=LADDER), failing_wide)
    assert session.fold.best is not None and session.fold.best.backend == "a"
    assert "a" in session.live
    picked = done.selection.unwrap()
    assert picked.backend == "a" and picked.result.selected_batch_size in (1, 4)
    assert session.profiles["a"].batch_sizes == (1, 4)


@settings(max_examples=30)
@given(machines(), st.sampled_from(RACING), st.sampled_from((None, 1.0)), st.booleans())
def test_a_raced_session_builds_twice_at_most_and_replays_bit_for_bit(
    case: tuple[SimulatedMachine, tuple[str, ...]],
    strategy: Strategy,
    verify: float | None,
    validate: bool,
) -> None:
    """A raced session builds a candidate at most twice (the second time only over larger
    batch sizes, never one it dropped), never selects or times one it dropped in final
    rounds or the verification, and its event log replays its commands exactly."""
    machine, names = case
    machine = replace(machine, batch_sizes=LADDER)
    strategy = replace(strategy, validate_performance=validate)
    plan = SessionPlan(strategy, names, "eager", True, verify, ladder=LADDER)
    commands, done, events = recorded(plan, machine)
    builds: dict[str, list[tuple[int, ...]]] = {}
    for c in commands:
        if isinstance(c, Build):
            builds.setdefault(c.name, []).append(c.batch_sizes)
    for name, sizes in builds.items():
        assert len(sizes) <= 2 and (len(sizes) == 1 or min(sizes[1]) > max(sizes[0]))
        assert len(sizes) == 1 or name not in _dropped(commands)
    picked = done.selection.map(lambda s: s.backend).value_or(None)
    assert picked not in _dropped(commands) - {"eager"}
    for c in commands:
        if isinstance(c, TimeRounds | Verify):
            timed = [p[0] for p in c.participants] if isinstance(c, TimeRounds) \
                else [backend for _, backend, _ in c.entries]  # fmt: skip
            assert not set(timed) & (_dropped(commands) - {"eager"})
    again = replay(plan, events)
    assert list(again.commands) == commands and again.done == done and again.diverged is None
