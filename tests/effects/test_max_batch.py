"""Tests for the max-batch-size search over the eager module."""

from __future__ import annotations

import torch

from aitune_fp.effects.inputs.samples import normalise_samples
from aitune_fp.effects.measure.max_batch import find_max_batch_size

CPU = torch.device("cpu")
SAMPLES = normalise_samples([torch.randn(1, 4)])


def test_stops_at_the_cap_when_everything_runs() -> None:
    """With nothing failing, the search returns the cap itself (even a non power of two)."""
    assert find_max_batch_size(lambda x: x, SAMPLES, CPU, cap=48).max_batch_size == 48


def test_a_raising_batch_size_ends_the_sweep_keeping_the_last_good_one() -> None:
    """A batch size that raises ends the search; the largest one that ran stands."""

    def runner(x: torch.Tensor) -> torch.Tensor:
        if x.shape[0] > 8:
            raise torch.OutOfMemoryError("out of memory")
        return x

    result = find_max_batch_size(runner, SAMPLES, CPU, cap=1024)
    assert result.max_batch_size == 8 and "raised" in result.reason


def test_memory_guard_stops_before_building_a_batch_that_does_not_fit() -> None:
    """A batch whose inputs would exceed the memory fraction is never built."""
    big = normalise_samples([torch.zeros(1, 1024, 1024)])  # 4 MiB per row
    result = find_max_batch_size(
        lambda x: x, big, CPU, cap=2**20, memory_fraction=1e-4, activation_factor=1.0
    )
    assert result.max_batch_size == 1 and "memory guard" in result.reason


def test_failure_at_batch_one_still_returns_one() -> None:
    """Even when batch size 1 fails, the search returns 1 and lets profiling report it."""

    def runner(x: torch.Tensor) -> torch.Tensor:
        raise RuntimeError("broken")

    assert find_max_batch_size(runner, SAMPLES, CPU, cap=16).max_batch_size == 1
