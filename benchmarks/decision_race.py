"""Decision quality of the race: raced against unraced max-throughput sessions.

Each trial draws a simulated machine (:class:`~aitune_fp.testing.simulated.SimulatedMachine`)
the way the race's regret law does (``tests/core/race_machines.py``): 2-5 candidates,
each with its own batch-size scaling (a late bloomer, slower at batch size 1 but scaling
better, in about half), its own jitter, heavy-tailed stalls, a slow spell over one
candidate's sweep window in a third, an exact tie in a quarter. The same machine (same
seed; each session draws its own calls) answers an unraced session (every candidate at
every ladder size) and a raced one (``ladder`` set), each without and with a 1 s
verification. A row gives the regret of the pick (its true per-row cost at its selected
batch size over the best true per-row cost on the ladder, minus 1: p50, p95, max), the
share of picks more than 5 % off, and the sweep's simulated seconds (mean; builds only).

    python benchmarks/decision_quality.py --quick   # prints this table after the other
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from aitune_fp.core.session import SessionPlan, run
from aitune_fp.core.strategies import max_throughput
from aitune_fp.testing.simulated import SimulatedMachine

LADDER = (1, 2, 4, 8, 16)
ROWS = (("unraced", None), ("raced", None), ("unraced", 1.0), ("raced", 1.0))


@dataclass
class RaceScore:
    """One row's regrets and sweep seconds, one per trial."""

    regrets: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)


def draw_machine(rng: random.Random) -> SimulatedMachine:
    """A machine with crossings, heavy tails, per-backend noise, spells and ties."""
    names = [f"c{i}" for i in range(rng.randint(2, 5))]
    true = {n: rng.uniform(0.5, 5.0) for n in names}
    scaling = {n: rng.uniform(0.5, 1.05) for n in names}
    if rng.random() < 0.5:
        fast = min(names, key=lambda m: true[m] * 16 ** (scaling[m] - 1))
        bloomer = rng.choice([m for m in names if m != fast])
        true[bloomer] = true[fast] * rng.uniform(1.2, 2.0)
        scaling[bloomer] = scaling[fast] - rng.uniform(0.15, 0.3)
    if rng.random() < 0.25:
        a, b = rng.sample(names, 2)
        true[b], scaling[b] = true[a], scaling[a]
    spells = {rng.choice(names): rng.uniform(1.1, 2.0)} if rng.random() < 1 / 3 else {}
    return SimulatedMachine(
        {"eager": max(true.values()) * rng.uniform(1.0, 2.0), **true},
        seed=rng.randrange(2**16),
        scalings=scaling,
        sigmas={n: rng.uniform(0.002, 0.02) for n in names},
        outlier_p=rng.uniform(0.0, 0.1),
        tail=rng.uniform(1.2, 3.0),
        spells=spells,
        batch_sizes=LADDER,
        max_rounds=40,
    )


def _regret(machine: SimulatedMachine, raced: bool, verify: float | None) -> tuple[float, float]:
    """The pick's regret against the ladder's true best, and the sweep's seconds."""
    names = tuple(n for n in machine.true_ms if n != "eager")
    plan = SessionPlan(max_throughput, names, verify_seconds=verify,
                       ladder=LADDER if raced else ())  # fmt: skip
    session, done = run(plan, machine.answers())
    chosen = done.selection.unwrap()
    best = min(machine.per_row_ms(n, b) for n in names for b in LADDER)
    cost = machine.per_row_ms(chosen.backend, chosen.result.selected_batch_size)
    return cost / best - 1.0, session.sweep_seconds


def run_raced(trials: int, seed: int) -> dict[str, RaceScore]:
    """Every row's scores over ``trials`` drawn machines."""
    rng = random.Random(seed)
    scores = {_label(r, v): RaceScore() for r, v in ROWS}
    for _ in range(trials):
        machine = draw_machine(rng)
        for raced, verify in ROWS:
            regret, seconds = _regret(machine, raced == "raced", verify)
            scores[_label(raced, verify)].regrets.append(regret)
            scores[_label(raced, verify)].seconds.append(seconds)
    return scores


def _label(raced: str, verify: float | None) -> str:
    """A row's name: the session kind, ``+verify`` with a verification."""
    return f"{raced}{'+verify' if verify else ''}"


def _q(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (the nearest rank at or below)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def print_raced(scores: dict[str, RaceScore], trials: int) -> None:
    """The table: one row per session kind."""
    print(f"race decision quality (max_throughput, simulated machines): {trials} trials")
    print(f"  {'session':<16}{'regret p50':>11}{'p95':>8}{'max':>8}{'>5 %':>7}{'sweep s':>9}")
    for label, s in scores.items():
        wrong = sum(r > 0.05 for r in s.regrets) / len(s.regrets)
        print(
            f"  {label:<16}{_q(s.regrets, 0.5):>11.2%}{_q(s.regrets, 0.95):>8.2%}"
            f"{max(s.regrets):>8.2%}{wrong:>7.1%}{statistics.mean(s.seconds):>9.2f}"
        )
