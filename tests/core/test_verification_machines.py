"""The verification on simulated machines (the decision benchmark's noise model): it finds a
true gain of twice the margin, keeps the earlier pick on an equivalence, and does not
depend on the order its participants are listed in."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from aitune_fp.core.rounds.rounds_plan import rotation
from aitune_fp.core.verification.judge import MARGIN, Paired, Verification, judge

LOOKS = (6, 9, 13, 19, 28, 42, 63, 94, 141, 211, 316, 474)  # judged there, as the timing would
BURST = 3  # calls per round's burst; the round's sample is their median


def _call(rng: random.Random, ms: float, ambient: float, sigma: float, outlier_p: float) -> float:
    """One call on the benchmark's machine: log-normal jitter, a rare 2-6× stall."""
    t = ms * ambient * math.exp(rng.gauss(0.0, sigma))
    return t * rng.uniform(2.0, 6.0) if rng.random() < outlier_p else t


def simulate(
    true_ms: Sequence[float],
    sigma: float,
    outlier_p: float,
    drift: float,
    seed: int,
    order: Sequence[int] | None = None,
) -> Verification:
    """Verify participant 0 (the pick) against the others on a simulated machine: rotated
    interleaved rounds of 3-call bursts under a drifting ambient level and maybe a
    neighbour episode, judged at ``LOOKS`` until clear or settled (or the last look).
    ``order`` lists the participants in another order (each keeps its own noise stream)."""
    rng = random.Random(seed)
    streams = [random.Random(rng.getrandbits(64)) for _ in true_ms]
    listed = tuple(order) if order is not None else tuple(range(len(true_ms)))
    episode = (rng.randrange(LOOKS[-1]), rng.randrange(10, 80), rng.uniform(1.05, 1.3))
    samples: list[list[float]] = [[] for _ in true_ms]
    level, verdict = 0.0, None
    for r in range(LOOKS[-1]):
        level += rng.gauss(0.0, drift)
        slow = episode[2] if episode[0] <= r < episode[0] + episode[1] else 1.0
        for i in rotation(listed, r):
            burst = sorted(
                _call(streams[i], true_ms[i], math.exp(level) * slow, sigma, outlier_p)
                for _ in range(BURST)
            )
            samples[i].append(burst[BURST // 2])
        if r + 1 in LOOKS:
            paired = [Paired(f"b{i}", 1, tuple(samples[i])) for i in range(len(true_ms))]
            others = tuple(paired[i] for i in listed if i != 0)
            verdict = judge(paired[0], others, "latency", seconds=float(r + 1))
            if verdict.outcome in ("clear", "settled"):
                return verdict
    assert verdict is not None
    return verdict


machines = st.fixed_dictionaries(
    {
        "sigma": st.floats(0.005, 0.03),
        "outlier_p": st.floats(0.0, 0.02),
        "drift": st.floats(0.0, 0.01),
        "seed": st.integers(0, 2**32),
    }
)


@settings(max_examples=6, deadline=None)
@given(machine=machines, gain=st.floats(2 * MARGIN, 0.08))
def test_a_true_gain_of_twice_the_margin_is_found(machine: dict[str, float], gain: float) -> None:
    """A challenger truly faster by at least twice the margin takes the pick in at least 95 %
    of 20 simulated verifications given enough rounds (up to 474)."""
    seed = int(machine["seed"])
    found = sum(
        simulate(
            (1.0, 1.0 / (1.0 + gain)),
            machine["sigma"],
            machine["outlier_p"],
            machine["drift"],
            seed + k,
        ).selected
        == "b1"
        for k in range(20)
    )
    assert found >= 19


TRIALS = 300


@settings(max_examples=6, deadline=None)
@given(machine=machines, gap=st.floats(-MARGIN / 2, MARGIN / 2))
def test_an_equivalence_within_the_margin_keeps_the_earlier_pick(
    machine: dict[str, float], gap: float
) -> None:
    """A challenger within half the margin of the pick takes it in at most 1 of 20 simulated
    verifications (the 95 % intervals' error rate), counted over 300 of them: measured
    about 1.75 % at the noisiest corner, so 20 verifications and at most one move failed
    about 5 % of examples there (flaky by design), while 300 and at most 15 fail about 1 in
    10,000. An equivalence keeps the earlier candidate. On the judge's own verdicts it is
    never moved (``verification_no_loss_holds``)."""
    seed = int(machine["seed"])
    moved = sum(
        not simulate(
            (1.0, 1.0 / (1.0 + gap)),
            machine["sigma"],
            machine["outlier_p"],
            machine["drift"],
            seed + k,
        ).holds
        for k in range(TRIALS)
    )
    assert moved <= TRIALS // 20


@settings(max_examples=10, deadline=None)
@given(
    machine=machines,
    gains=st.lists(st.floats(-0.1, 0.1), min_size=2, max_size=3),
    data=st.data(),
)
def test_the_decision_does_not_depend_on_the_order_of_the_participants(
    machine: dict[str, float], gains: list[float], data: st.DataObject
) -> None:
    """Listing the participants in another order (each keeping its own noise and the
    machine's drift) gives the same verification, pick and line included."""
    true_ms = (1.0, *(1.0 / (1.0 + g) for g in gains))
    rest = list(range(1, len(true_ms)))
    shuffled = data.draw(st.permutations(rest))
    args = (true_ms, machine["sigma"], machine["outlier_p"], machine["drift"])
    seed = int(machine["seed"])
    plain = simulate(*args, seed, order=(0, *rest))
    permuted = simulate(*args, seed, order=(0, *shuffled))
    assert plain == permuted
