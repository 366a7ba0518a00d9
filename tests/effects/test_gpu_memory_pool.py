"""A backend's peak memory excludes the profiler's input pool and torch's cached blocks
(issue 26 §7): on CPU for real, on CUDA against a fake caching allocator.

Source checked: torch 2.13's ``torch.cuda`` memory API, which the fake below mirrors:
``memory_allocated`` (bytes in live tensors), ``max_memory_allocated`` (its peak since
``reset_peak_memory_stats``, which sets the peak to the current allocation),
``empty_cache`` (hands cached, unused blocks back: reserved drops to what is allocated)
and ``mem_get_info`` (``(free, total)`` of the whole device: what the caching allocator
reserves counts as used until ``empty_cache``).
"""

from __future__ import annotations

import pytest
import torch

from aitune_fp.core.measure.stop_rules import fixed_steps, never_stop
from aitune_fp.effects.inputs.samples import normalise_samples
from aitune_fp.effects.measure import memory
from aitune_fp.effects.measure.memory import MemoryWatch, apart_from_peak
from aitune_fp.effects.measure.profiler import SweepPlan, profile_runner
from aitune_fp.effects.measure.timing import ProfileSettings
from aitune_fp.shell.io import perform

MIB = 1024 * 1024
CPU = torch.device("cpu")
CUDA = torch.device("cuda", 0)


class FakeCudaAllocator:
    """torch's caching allocator as seen through ``torch.cuda``'s memory functions."""

    TOTAL = 80_000 * MIB

    def __init__(self) -> None:
        self.allocated = 0
        self.peak = 0
        self.reserved = 0

    def alloc(self, mib: int) -> None:
        """A tensor of ``mib`` MiB is created."""
        self.allocated += mib * MIB
        self.peak = max(self.peak, self.allocated)
        self.reserved = max(self.reserved, self.allocated)

    def free(self, mib: int) -> None:
        """A tensor of ``mib`` MiB dies; its block stays reserved (cached)."""
        self.allocated -= mib * MIB

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Route the ``torch.cuda`` functions memory.py calls to this allocator."""
        cuda = torch.cuda
        monkeypatch.setattr(cuda, "is_available", lambda: True)
        monkeypatch.setattr(cuda, "synchronize", lambda device=None: None)
        monkeypatch.setattr(cuda, "memory_allocated", lambda device=None: self.allocated)
        monkeypatch.setattr(cuda, "max_memory_allocated", lambda device=None: self.peak)
        monkeypatch.setattr(cuda, "reset_peak_memory_stats", lambda device=None: self._reset())
        monkeypatch.setattr(cuda, "empty_cache", lambda: self._empty())
        monkeypatch.setattr(
            cuda, "mem_get_info", lambda device=None: (self.TOTAL - self.reserved, self.TOTAL)
        )

    def _reset(self) -> None:
        self.peak = self.allocated

    def _empty(self) -> None:
        self.reserved = self.allocated


def test_on_cuda_the_figure_is_the_backend_own_allocated_peak(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Weights of 10 MiB, a 100 MiB input pool per batch size and 5 MiB of workspace per
    call: the figure is 15 MiB (not 115 with the pool, nor the 115 MiB still reserved)."""
    gpu = FakeCudaAllocator()
    gpu.install(monkeypatch)
    watch = MemoryWatch(CUDA)
    watch.on_stage("build")
    gpu.alloc(10)  # the backend's own weights, kept
    watch.on_stage("validate")
    watch.on_stage("profile")
    for _ in range(2):  # two batch sizes, each with its own pool
        apart_from_peak(CUDA, lambda: gpu.alloc(100))
        gpu.alloc(5)  # one call's workspace
        gpu.free(5)
        gpu.free(100)  # the pool dies with its batch size
    assert watch.peak_mb() == pytest.approx(15.0)


def test_without_an_armed_watch_the_pool_is_just_built() -> None:
    """``apart_from_peak`` only builds the pool when no watch measures this device."""
    assert apart_from_peak(CPU, lambda: 42) == 42


@pytest.mark.skipif(
    not (memory.reset_resident_peak() and memory.PROC_STATUS.exists()),
    reason="needs /proc/self/clear_refs (Linux >= 4.0)",
)
def test_on_cpu_a_large_input_pool_is_not_the_backend_peak() -> None:
    """Profiling a runner that allocates almost nothing over 2 × 64 MiB of rotating inputs
    reports well under the pool's size."""
    samples = normalise_samples(torch.randn(4, 4 * MIB))  # one 64 MiB batch of 4 rows
    watch = MemoryWatch(CPU)
    watch.on_stage("build")
    watch.on_stage("profile")
    settings = ProfileSettings(input_mode="rotating", pool_factor=0.0, warmup=None)
    profile = profile_runner(
        "sum",
        lambda x: x[0, 0] + 1.0,
        samples,
        CPU,
        SweepPlan((4,), fixed_steps(warmup=1, steps=2), never_stop()),
        settings,
    )
    assert perform(profile).unwrap().latencies_ms
    peak = watch.peak_mb()
    assert peak is not None and peak < 32.0, peak


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_a_real_gpu_the_pool_is_not_the_backend_peak() -> None:
    """On CUDA, profiling a runner that allocates almost nothing over a 256 MiB pool of
    inputs reports well under the pool's size."""
    samples = normalise_samples(torch.randn(4, 16 * MIB)).to(torch.device("cuda"))
    watch = MemoryWatch(torch.device("cuda"))
    watch.on_stage("build")
    watch.on_stage("profile")
    profile = profile_runner(
        "sum",
        lambda x: x[0, 0] + 1.0,
        samples,
        torch.device("cuda"),
        SweepPlan((4,), fixed_steps(warmup=1, steps=2), never_stop()),
        ProfileSettings(input_mode="rotating", pool_factor=0.0, warmup=None),
    )
    assert perform(profile).unwrap().latencies_ms  # the profile ran and timed something
    peak = watch.peak_mb()
    assert peak is not None and peak < 64.0, peak
