"""Tests for the profiler: stop rules drive it, raw samples are kept, faults are values."""

from __future__ import annotations

from typing import Any

import torch
from returns.unsafe import unsafe_perform_io

from aitune_fp.core.measure.stop_rules import fixed_steps, never_stop, throughput_saturation
from aitune_fp.effects.inputs.samples import normalise_samples
from aitune_fp.effects.measure.batch_timing import measure_batch_size
from aitune_fp.effects.measure.profiler import SweepPlan, profile_runner
from aitune_fp.effects.measure.timing import ProfileSettings, input_pool, timer_overhead_ns

CPU = torch.device("cpu")
SAMPLES = normalise_samples([torch.randn(1, 8) for _ in range(3)])


class CountingRunner:
    """A runner that counts calls and the batch sizes it saw."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """Record the batch size and double ``x``."""
        self.sizes.append(int(x.shape[0]))
        return x * 2


def test_rule_counts_prime_warmup_and_timed_calls() -> None:
    """Without a warm-up rule, each batch size gets one priming call, the call rule's fixed
    warm-up, then exactly its timed calls."""
    runner = CountingRunner()
    fixed = ProfileSettings(warmup=None)
    pool = input_pool(SAMPLES, 4, CPU, fixed)
    report = measure_batch_size(runner, pool, fixed_steps(warmup=3, steps=5), CPU, fixed)
    assert len(report.samples) == 5
    assert len(runner.sizes) == 1 + 3 + 5
    assert report.warmup_ms and len(report.warmup_ms) == 3
    assert report.warmup_reason == "fixed: 3 warm-up calls"


def test_warmup_rule_counts_prime_warmup_and_timed_calls() -> None:
    """With the default warm-up rule, a batch size gets one priming call, the warm-up calls it
    reports (at least the rule's floor of 10), then exactly the timed calls."""
    runner = CountingRunner()
    pool = input_pool(SAMPLES, 4, CPU, ProfileSettings())
    report = measure_batch_size(
        runner, pool, fixed_steps(warmup=3, steps=5), CPU, ProfileSettings()
    )
    assert len(report.samples) == 5
    assert len(report.warmup_ms) >= 10
    assert len(runner.sizes) == 1 + len(report.warmup_ms) + 5 == report.calls
    assert report.warmup_reason.startswith(("stable", "max calls", "time cap"))


def test_profile_keeps_every_sample_per_batch_size() -> None:
    """The profile holds every timed sample for each swept batch size, warm-up excluded."""
    runner = CountingRunner()
    result = profile_runner(
        "fake",
        runner,
        SAMPLES,
        CPU,
        SweepPlan((1, 2, 4), fixed_steps(warmup=2, steps=7), never_stop()),
    )
    profile = unsafe_perform_io(result).unwrap()
    assert profile.batch_sizes == (1, 2, 4)
    assert all(len(profile.samples(bs)) == 7 for bs in (1, 2, 4))
    assert profile.sweep_stop == "plan exhausted"


def test_rotating_pool_holds_distinct_batches_larger_than_a_batch() -> None:
    """The default input pool holds several distinct pre-built batch tensors."""
    pool = input_pool(SAMPLES, 2, CPU, ProfileSettings())
    assert len(pool) >= 2
    assert len({b.args[0].data_ptr() for b in pool}) == len(pool)


def test_same_mode_uses_one_batch() -> None:
    """Input mode 'same' reuses one batch and is recorded in the profile."""
    settings = ProfileSettings(input_mode="same")
    assert len(input_pool(SAMPLES, 2, CPU, settings)) == 1
    result = profile_runner(
        "fake",
        CountingRunner(),
        SAMPLES,
        CPU,
        SweepPlan((1,), fixed_steps(warmup=0, steps=2), never_stop()),
        settings,
    )
    assert unsafe_perform_io(result).unwrap().input_mode == "same"


class FailsAbove:
    """A runner that raises an error (optionally an OOM) above a batch size."""

    def __init__(self, limit: int, oom: bool) -> None:
        self.limit, self.oom = limit, oom

    def __call__(self, x: torch.Tensor) -> Any:
        """Return ``x``, or raise when its batch is above the limit."""
        if x.shape[0] > self.limit:
            if self.oom:
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2 GiB")
            raise RuntimeError("kaboom")
        return x


def test_oom_ends_the_sweep_and_keeps_earlier_results() -> None:
    """An out-of-memory error at a later batch size ends the sweep with earlier results kept."""
    result = profile_runner(
        "fake",
        FailsAbove(2, oom=True),
        SAMPLES,
        CPU,
        SweepPlan((1, 2, 4, 8), fixed_steps(warmup=0, steps=2), never_stop()),
    )
    profile = unsafe_perform_io(result).unwrap()
    assert profile.batch_sizes == (1, 2)
    assert profile.sweep_stop.startswith("out of memory at batch size 4")


def test_error_at_first_batch_size_is_a_profile_failure() -> None:
    """An exception at the first batch size is a BackendFailure at stage profile, not a crash."""
    result = profile_runner(
        "fake",
        FailsAbove(0, oom=False),
        SAMPLES,
        CPU,
        SweepPlan((1, 2), fixed_steps(warmup=0, steps=2), never_stop()),
    )
    failure = unsafe_perform_io(result).failure()
    assert failure.stage == "profile" and "kaboom" in failure.message and failure.backend == "fake"


def test_sweep_rule_stop_reason_is_recorded() -> None:
    """When the sweep rule stops the sweep, its reason is recorded in the profile."""

    def slow_runner(x: torch.Tensor) -> torch.Tensor:
        # latency grows faster than the batch: throughput never improves
        for _ in range(int(x.shape[0]) ** 2 * 50):
            pass
        return x

    result = profile_runner(
        "fake",
        slow_runner,
        SAMPLES,
        CPU,
        SweepPlan(
            (1, 2, 4, 8, 16, 32),
            fixed_steps(warmup=1, steps=3),
            throughput_saturation(ratio=0.05, backoff=0),
        ),
    )
    profile = unsafe_perform_io(result).unwrap()
    assert profile.sweep_stop.startswith("saturated")
    assert len(profile.batch_sizes) < 6


def test_timer_overhead_is_measured_and_positive() -> None:
    """The profiler reports its own per-call overhead as a positive number of ns."""
    assert timer_overhead_ns(CPU, calls=1000) > 0
