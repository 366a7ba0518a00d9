"""Laws of building ahead (aitune_fp.core.session.prebuild), on the simulated machines of
the session laws: a Prebuild changes no decision, every name it builds ahead is still
built and profiled by the sweep, it comes first or not at all, and a run with it replays
bit for bit from its event log."""

from __future__ import annotations

from hypothesis import event, given, settings
from hypothesis import strategies as st
from pyrsistent import pmap

from aitune_fp.core.session import (
    Build,
    Command,
    Prebuild,
    Prebuilt,
    Say,
    SessionPlan,
    run,
)
from aitune_fp.core.session.notes import BuildAheadFailed
from aitune_fp.core.session.prebuild import BuildTraits, buildable_ahead
from aitune_fp.core.session.replay import replay
from aitune_fp.core.strategy import Strategy
from aitune_fp.testing.simulated import SimulatedMachine
from tests.core.test_session_laws import machines, recorded, strategies_any


@st.composite
def plans(draw: st.DrawFn, names: tuple[str, ...], strategy: Strategy) -> SessionPlan:
    """A plan over ``names`` with some of them buildable ahead, some variants, any
    parallelism and verification."""
    ahead = tuple(n for n in names if draw(st.booleans()) or draw(st.booleans()))
    variants = {n: names[0] for n in names[1:] if draw(st.integers(0, 3)) == 0}
    verify = draw(st.sampled_from((None, 1.0)))
    return SessionPlan(strategy, names, "eager", draw(st.booleans()), verify,
                       variant_of=pmap(variants), ahead=ahead,
                       parallel=draw(st.integers(0, 4)))  # fmt: skip


def _without_ahead(commands: list[Command]) -> list[Command]:
    """The commands less the Prebuild and what its answer made the session say."""
    return [c for c in commands if not isinstance(c, Prebuild)
            and not (isinstance(c, Say) and isinstance(c.note, BuildAheadFailed))]  # fmt: skip


@settings(max_examples=80)
@given(st.data(), machines(), strategies_any())
def test_building_ahead_changes_no_command_and_no_selection(
    data: st.DataObject, case: tuple[SimulatedMachine, tuple[str, ...]], strategy: Strategy
) -> None:
    """On the same machine and noise, a plan that builds ahead gives the same commands
    (less the Prebuild) and the same Done as the same plan without it."""
    machine, names = case
    plan = data.draw(plans(names, strategy))
    with_ahead, done, _ = recorded(plan, machine)
    plain, plain_done, _ = recorded(SessionPlan(plan.strategy, names, "eager", plan.early_stop,
                                                plan.verify_seconds,
                                                variant_of=plan.variant_of), machine)  # fmt: skip
    assert _without_ahead(with_ahead) == plain and done == plain_done
    event(f"built ahead: {any(isinstance(c, Prebuild) for c in with_ahead)}")


@settings(max_examples=80)
@given(st.data(), machines(), strategies_any())
def test_a_prebuild_comes_first_and_each_name_is_still_built_by_the_sweep(
    data: st.DataObject, case: tuple[SimulatedMachine, tuple[str, ...]], strategy: Strategy
) -> None:
    """A Prebuild is the first command or absent; it names at least two candidates the plan
    can build ahead and the strategy admits, in the plan's ``ahead`` order, at most
    ``parallel`` at a time
    (at least two); none for a strategy that may settle early; each that is no variant is
    later built by the sweep's Build (a variant may be pruned)."""
    machine, names = case
    plan = data.draw(plans(names, strategy))
    commands, _, _ = recorded(plan, machine)
    ahead = [c for c in commands if isinstance(c, Prebuild)]
    assert all(not isinstance(c, Prebuild) for c in commands[1:])
    if not ahead:
        return
    first = ahead[0]
    assert commands[0] == first and strategy.settled is None
    assert 2 <= first.parallel <= min(plan.parallel, len(first.names)) and len(first.names) >= 2
    assert set(first.names) <= set(plan.ahead) & set(plan.admitted)
    assert first.names == tuple(n for n in plan.ahead if n in plan.admitted)
    built = [c.name for c in commands if isinstance(c, Build)]
    assert set(first.names) - set(plan.variant_of) <= set(built)


@settings(max_examples=40)
@given(
    st.data(),
    machines(),
    strategies_any(),
    st.dictionaries(st.sampled_from("abcd"), st.text(min_size=1, max_size=8)),
)
def test_a_run_that_built_ahead_replays_bit_for_bit(
    data: st.DataObject,
    case: tuple[SimulatedMachine, tuple[str, ...]],
    strategy: Strategy,
    failed: dict[str, str],
) -> None:
    """A run whose builds ahead ended (some failing, said as warnings) replays from its event
    log to the same commands and Done, the warnings included."""
    machine, names = case
    plan = data.draw(plans(names, strategy))
    answer = machine.answers()
    given: list[Command] = []

    def failing(command: Command) -> object:
        given.append(command)
        if isinstance(command, Prebuild):
            return Prebuilt(1.5, pmap({n: w for n, w in failed.items() if n in command.names}))
        return answer(command)

    session, done = run(plan, failing)  # type: ignore[arg-type]
    again = replay(plan, session.events)
    assert list(again.commands) == [*given, done] and again.done == done
    warned = [c for c in given if isinstance(c, Say) and isinstance(c.note, BuildAheadFailed)]
    assert all(w.level == "warning" for w in warned)
    prebuilt = [e for e in session.events if isinstance(e, Prebuilt)]
    assert len(warned) == (len(prebuilt[0].failures) if prebuilt else 0)
    first = session.events[:1]  # a run that builds and times nothing has no event
    assert (bool(first) and first[0] in prebuilt) == any(isinstance(c, Prebuild) for c in given)


facts = st.builds(BuildTraits, st.booleans(), st.booleans(), st.booleans(), st.booleans())


@given(
    st.dictionaries(st.sampled_from("abcdef"), facts, max_size=6),
    st.sets(st.sampled_from("abcdef")),
)
@settings(max_examples=200)
def test_what_is_built_ahead_follows_the_declared_facts(
    named: dict[str, BuildTraits], variants: set[str]
) -> None:
    """A build that times kernels is never built ahead; one that fills no cache neither;
    when none fills the artifact cache nothing is; else every other one is: those that
    compile first, variants last within each kind, the given order otherwise kept."""
    variant_of = dict.fromkeys(variants, "base")
    chosen = buildable_ahead(named, variant_of)
    fills = any(f.fills_artifact_cache and not f.times_kernels for f in named.values())
    event(f"something built ahead: {bool(chosen)}")
    able = [n for n, f in named.items() if f.fills_artifact_cache or f.warms_own_cache]
    expected = [n for n in able if not named[n].times_kernels]
    assert set(chosen) == (set(expected) if fills else set())
    assert not any(named[n].times_kernels for n in chosen)
    ranks = [(not named[n].compiles, n in variants) for n in chosen]
    assert ranks == sorted(ranks)
    for rank in set(ranks):  # the given order within each kind
        same = [n for n in chosen if (not named[n].compiles, n in variants) == rank]
        assert same == [n for n in expected if n in same]
