"""Bursts in the interleaved rounds: a runtime that needs calls to settle after another ran."""

from __future__ import annotations

import statistics
import time
from dataclasses import replace

import torch

from aitune_fp.core.rounds.burst import Burst
from aitune_fp.core.verification.verification_plan import timing_plan, timing_verdict
from aitune_fp.effects.measure.rounds import time_paired
from tests.effects.rounds_fixtures import CPU, SAMPLES, SETTINGS


def spin(ms: float) -> None:
    """Busy-wait ``ms`` milliseconds (a sleep is too coarse for these sizes)."""
    end = time.perf_counter() + ms / 1000.0
    while time.perf_counter() < end:
        pass


class Machine:
    """Two runners on one shared 'machine': ``settler`` runs 0.2 ms per call once settled,
    but its first 4 calls after ``steady`` ran take 1 ms (the ONNX Runtime pattern);
    ``steady`` always takes 0.5 ms."""

    def __init__(self) -> None:
        self.last, self.settled = "", 0

    def settler(self, x: torch.Tensor) -> torch.Tensor:
        self.settled = self.settled + 1 if self.last == "settler" else 0
        self.last = "settler"
        spin(1.0 if self.settled < 4 else 0.2)
        return x

    def steady(self, x: torch.Tensor) -> torch.Tensor:
        self.last = "steady"
        spin(0.5)
        return x


def medians(burst: Burst) -> dict[str, float]:
    """Both runners timed in interleaved rounds for 0.6 s under ``burst``: median per round."""
    machine = Machine()
    plan = replace(timing_plan(0.6), burst=burst)
    timed = time_paired(
        [("settler", machine.settler, 1), ("steady", machine.steady, 1)],
        SAMPLES,
        CPU,
        plan,
        lambda _samples, done, elapsed, still: timing_verdict(plan, done, elapsed, still),
        SETTINGS,
    )
    return {name: statistics.median(values) for name, values in timed.samples.items()}


def test_one_call_rounds_mis_rank_a_runtime_that_settles_after_a_switch() -> None:
    """Timed one call a round, the runner that is faster alone looks slower (the old bias)."""
    got = medians(Burst())
    assert got["settler"] > got["steady"]


def test_bursts_rank_each_runner_by_its_steady_latency() -> None:
    """Timed in 10 ms bursts, each runner's round sample is its settled latency."""
    got = medians(Burst(min_ms=10.0, min_calls=3))
    assert got["settler"] < 0.5 < got["steady"] < 0.8
    assert got["settler"] < 0.45
