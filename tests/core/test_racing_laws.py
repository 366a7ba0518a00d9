"""Laws of the race (:mod:`aitune_fp.core.session.racing`) on simulated machines."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.session import Build, Profiled
from aitune_fp.core.session.racing import Observed, RaceState, step, widen
from aitune_fp.testing.simulated import SimulatedMachine
from tests.core.shares import share

MARGIN = 0.01
LADDER = (1, 2, 4, 8, 16)


def _race(machine: SimulatedMachine) -> RaceState:
    """Every candidate measured briefly at the machine's batch sizes, in order, raced."""
    answer, state = machine.answers(), RaceState(margin=MARGIN)
    for name in machine.true_ms:
        event = answer(Build(name))
        assert isinstance(event, Profiled)
        profile = event.result.unwrap()
        for bs in profile.batch_sizes:
            state, _ = step(state, Observed(name, bs, profile.samples(bs)))
    return state


@st.composite
def _ahead(draw: st.DrawFn) -> dict[str, float]:
    """True latencies where the best ("best") is at least twice the margin ahead."""
    best = draw(st.floats(0.5, 5.0))
    others = draw(st.lists(st.floats(1.0 + 2 * MARGIN, 3.0), min_size=1, max_size=5))
    names = [f"c{i}" for i in range(len(others))]
    where = draw(st.integers(0, len(others)))
    names.insert(where, "best")
    ms = [best * f for f in others]
    ms.insert(where, best)
    return dict(zip(names, ms, strict=True))


@given(_ahead(), st.floats(0.01, 0.08))
def test_a_best_twice_the_margin_ahead_is_never_dropped(
    true_ms: dict[str, float], sigma: float
) -> None:
    """Where the best is at least twice the margin ahead, the race keeps it on at least 19
    of 20 noisy machines (jitter, stalls, drift)."""
    dropped = sum(
        "best" in _race(SimulatedMachine(true_ms, seed=seed, sigma=sigma)).dropped
        for seed in range(20)
    )
    assert dropped <= 1


@st.composite
def _crossing(draw: st.DrawFn) -> SimulatedMachine:
    """A noise-free machine whose candidates scale differently over the ladder."""
    n = draw(st.integers(2, 6))
    ms = {f"c{i}": draw(st.floats(0.5, 5.0)) for i in range(n)}
    scalings = {name: draw(st.floats(0.4, 1.1)) for name in ms}
    return SimulatedMachine(ms, sigma=0.0, outlier_p=0.0, drift=0.0, scalings=scalings,
                            batch_sizes=LADDER)  # fmt: skip


def _full(machine: SimulatedMachine) -> str:
    """The full sweep's pick: the lowest per-row cost over the ladder (ties: the first)."""
    names = list(machine.true_ms)
    return min(names, key=lambda n: (min(machine.per_row_ms(n, b) for b in LADDER), names.index(n)))


def _crosses(machine: SimulatedMachine) -> bool:
    """Whether the best at batch size 1 is not the full sweep's pick."""
    return min(machine.true_ms, key=lambda n: machine.per_row_ms(n, 1)) != _full(machine)


@given(_crossing())
def test_on_a_noise_free_machine_the_race_picks_what_the_full_sweep_picks(
    machine: SimulatedMachine,
) -> None:
    """Without noise, where rankings cross between batch sizes, the race's leader is the
    full sweep's pick (the lowest per-row cost over the ladder, ties to the first), and
    that pick is never dropped: no one is compared before it was measured at every batch
    size the leader was."""
    state = _race(machine)
    full = _full(machine)
    assert state.leader == full and full not in state.dropped


def test_the_noise_free_machines_cross() -> None:
    """In at least a quarter of the noise-free machines the best at batch size 1 is not the
    full sweep's pick."""
    assert share(_crossing(), _crosses) >= 0.25


def test_a_clearly_beaten_candidate_is_dropped_with_its_reason() -> None:
    """A candidate three times slower is dropped, its reason naming the leader and the
    interval; no contender is widened once dropped."""
    state = _race(SimulatedMachine({"fast": 1.0, "slow": 3.0}, seed=3))
    loss = state.dropped["slow"]
    assert (loss.against, loss.batch_size) == ("fast", 8) and "against fast@8" in loss.reason
    assert widen(state, "slow", (1, 8, 16)) == () and widen(state, "fast", (1, 4, 8, 16)) == (4, 16)
