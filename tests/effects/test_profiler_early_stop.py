"""The profiler with the early-stop rule: clear losers stop after their probe, others do not."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from typing import Any

import cloudpickle
import torch
from returns.unsafe import unsafe_perform_io

from aitune_fp.core.measure.early_stop import early_stop_for
from aitune_fp.core.measure.stop_rules import fixed_steps, never_stop
from aitune_fp.core.records import Profile
from aitune_fp.core.strategies import max_throughput, min_latency
from aitune_fp.core.strategy import Strategy
from aitune_fp.effects.inputs.samples import normalise_samples
from aitune_fp.effects.measure.profiler import Clocks, EarlyStop, SweepPlan, profile_runner
from aitune_fp.effects.measure.timing import ProfileSettings

CPU = torch.device("cpu")
SAMPLES = normalise_samples([torch.randn(1, 8) for _ in range(3)])
SETTINGS = ProfileSettings(warmup=None, max_pool=2)
RULE = fixed_steps(warmup=2, steps=20)
JITTER = (1.0, 1.01, 0.99, 1.02, 0.98)


def fake_timer(ms: float) -> Callable[[Callable[[], Any]], float]:
    """A timer that makes the call and reports ``ms`` with a small fixed jitter."""
    jitter = itertools.cycle(JITTER)

    def timer(call: Callable[[], Any]) -> float:
        call()
        return ms * next(jitter)

    return timer


def leader(strategy: Strategy, ms: float, sizes: Iterable[int]) -> EarlyStop:
    """The early stop against a leader that took ``ms`` per call at every batch size."""
    rule = early_stop_for(strategy)
    assert rule is not None
    samples = {bs: [ms * j for j in JITTER * 4] for bs in sizes}
    best = strategy.measure(Profile("lead", samples)).unwrap()
    return EarlyStop(rule, rule.start("lead", best, baseline=False))


class Counting:
    """A runner that counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """Count the call and return ``x``."""
        self.calls += 1
        return x


def _profile(
    early: EarlyStop | None,
    ms: float,
    sizes: tuple[int, ...],
    settings: ProfileSettings = SETTINGS,
    runner: Counting | None = None,
) -> Profile:
    plan = SweepPlan(sizes, RULE, never_stop(), early)
    io = profile_runner("cand", runner or Counting(), SAMPLES, CPU, plan, settings,
                        clocks=Clocks(fake_timer(ms)))  # fmt: skip
    profile: Profile = unsafe_perform_io(io).unwrap()
    return profile


def test_a_candidate_three_times_slower_stops_after_the_probe_at_each_batch_size() -> None:
    """A candidate 3x slower than the leader keeps only its probe's samples at every batch
    size, the sweep still visits every batch size, its first one is not measured again,
    and its profile says so in one line naming each batch size."""
    early = leader(max_throughput, 1.0, (1, 2, 4))
    runner = Counting()
    profile = _profile(early, 3.0, (1, 2, 4), runner=runner)
    probe = early.rule.probe_calls
    assert profile.batch_sizes == (1, 2, 4)
    assert all(len(profile.samples(bs)) == probe for bs in (1, 2, 4))
    assert runner.calls == 3 * (1 + RULE.warmup + probe)  # no re-measure of batch size 1
    line = profile.stopped_early
    assert line is not None and "\n" not in line
    assert all(f"batch size {bs}:" in line for bs in (1, 2, 4)) and "lead" in line


def test_a_close_candidate_is_not_stopped() -> None:
    """A candidate within 5 % of the leader runs its whole call rule."""
    profile = _profile(leader(min_latency, 1.0, (1,)), 1.04, (1,))
    assert len(profile.samples(1)) == RULE.max_samples and profile.stopped_early is None


def test_the_baseline_is_never_stopped_even_when_slowest() -> None:
    """A baseline 3x slower than the best runs its whole call rule."""
    early = leader(min_latency, 1.0, (1,))
    baseline = EarlyStop(early.rule, early.rule.start("lead", early.state.best, baseline=True))
    profile = _profile(baseline, 3.0, (1,))
    assert len(profile.samples(1)) == RULE.max_samples and profile.stopped_early is None


def test_early_stop_off_in_the_settings_measures_in_full() -> None:
    """``ProfileSettings(early_stop=False)`` ignores the early stop it is given."""
    off = ProfileSettings(warmup=None, max_pool=2, early_stop=False)
    profile = _profile(leader(min_latency, 1.0, (1,)), 3.0, (1,), off)
    assert len(profile.samples(1)) == RULE.max_samples and profile.stopped_early is None


def test_the_early_stop_travels_to_a_worker() -> None:
    """An early stop (the rule with its strategy, and the leader) survives cloudpickle and
    still stops the same clear loser."""
    early = leader(max_throughput, 1.0, (1, 2))
    again = cloudpickle.loads(cloudpickle.dumps(early))
    assert again.state == early.state
    assert _profile(again, 3.0, (1, 2)).stopped_early == _profile(early, 3.0, (1, 2)).stopped_early
