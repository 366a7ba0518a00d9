"""Peak-memory measurement: the CPU probe on /proc, its refusals, and the CUDA path."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch

from aitune_fp.effects.measure import memory
from aitune_fp.effects.measure.memory import MemoryLevel, MemoryWatch, peak_delta_mb

CPU = torch.device("cpu")
MIB = 1024 * 1024


needs_proc = pytest.mark.skipif(
    not (memory.reset_resident_peak() and memory.PROC_STATUS.exists()),
    reason="needs /proc/self/clear_refs (Linux >= 4.0)",
)


def _allocate_and_free(mib: int) -> None:
    """Touch ``mib`` MiB of fresh memory, then drop it."""
    block = torch.ones(mib * MIB // 4, dtype=torch.float32)
    block.add_(1.0)
    del block


@needs_proc
def test_cpu_probe_sees_a_real_allocation_in_the_measured_region() -> None:
    """A 200 MiB tensor allocated (and freed) inside the region shows as >= 150 MiB of peak."""
    watch = MemoryWatch(CPU)
    watch.on_stage("build")
    watch.on_stage("validate")
    watch.on_stage("profile")
    _allocate_and_free(200)
    peak = watch.peak_mb()
    assert peak is not None and peak >= 150.0


@needs_proc
def test_an_allocation_before_the_reset_is_not_the_peak_of_the_region() -> None:
    """Memory freed before the profiled calls start does not count in the figure."""
    watch = MemoryWatch(CPU)
    watch.on_stage("build")
    _allocate_and_free(300)
    watch.on_stage("profile")
    peak = watch.peak_mb()
    assert peak is not None and peak < 150.0


@needs_proc
def test_memory_held_since_the_build_counts() -> None:
    """A tensor allocated after the 'before' reading and still held counts in the figure."""
    watch = MemoryWatch(CPU)
    watch.on_stage("build")
    held = torch.ones(200 * MIB // 4)
    watch.on_stage("profile")
    peak = watch.peak_mb()
    del held
    assert peak is not None and peak >= 150.0


@pytest.mark.parametrize(
    ("attribute", "message"),
    [
        ("PROC_CLEAR_REFS", "cannot reset the peak resident size"),
        ("PROC_STATUS", "cannot read"),
    ],
)
def test_an_unusable_proc_file_means_no_figure(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    attribute: str,
    message: str,
) -> None:
    """Without a writable clear_refs or a readable status file the figure is None, and the
    reason is logged."""
    monkeypatch.setattr(memory, attribute, tmp_path / "missing" / attribute.lower())
    watch = MemoryWatch(CPU)
    with caplog.at_level(logging.INFO, logger="aitune_fp"):
        watch.on_stage("build")
        watch.on_stage("profile")
        assert watch.peak_mb() is None
    assert message in caplog.text


def test_status_without_the_field_gives_none(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A status file lacking VmHWM/VmRSS in kB yields None, never a guessed number."""
    status = tmp_path / "status"
    status.write_text("Name:\tpython\nVmRSS:\tlots\n")
    monkeypatch.setattr(memory, "PROC_STATUS", status)
    assert memory.read_status_mb("VmRSS") is None
    assert memory.read_status_mb("VmHWM") is None


def test_status_fields_are_read_in_mib(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The kB figures of /proc/self/status are converted to MiB."""
    status = tmp_path / "status"
    status.write_text("VmHWM:\t  409600 kB\nVmRSS:\t  204800 kB\n")
    monkeypatch.setattr(memory, "PROC_STATUS", status)
    assert memory.read_status_mb("VmRSS") == 200.0
    assert memory.read_status_mb("VmHWM") == 400.0


def test_a_watch_that_never_reached_profiling_has_no_figure() -> None:
    """A backend that failed before profiling (no 'profile' stage) gets None."""
    watch = MemoryWatch(CPU)
    watch.on_stage("build")
    watch.on_stage("validate")
    assert watch.peak_mb() is None


def test_unmeasured_device_types_give_none() -> None:
    """A device that is neither cpu nor cuda is not measured."""
    meta = torch.device("meta")
    assert memory.memory_level(meta) is None
    assert not memory.reset_peak(meta)
    assert memory.peak_level(meta) is None


def test_the_figure_is_the_larger_delta_clamped_at_zero() -> None:
    """peak_delta_mb takes the larger of the held and device deltas and never goes below 0."""
    assert peak_delta_mb(MemoryLevel(10.0, 100.0), MemoryLevel(60.0, 120.0)) == 50.0
    assert peak_delta_mb(MemoryLevel(10.0, 100.0), MemoryLevel(20.0, 400.0)) == 300.0
    assert peak_delta_mb(MemoryLevel(10.0, 100.0), MemoryLevel(5.0, 90.0)) == 0.0
    assert peak_delta_mb(MemoryLevel(10.0, None), MemoryLevel(30.0, 500.0)) == 20.0


@pytest.mark.gpu
def test_cuda_probe_sees_a_real_allocation() -> None:
    """On a CUDA device, 256 MiB allocated inside the region shows as >= 200 MiB."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    dev = torch.device("cuda")
    watch = MemoryWatch(dev)
    watch.on_stage("build")
    watch.on_stage("profile")
    block = torch.ones(256 * MIB // 4, device=dev)
    del block
    peak = watch.peak_mb()
    assert peak is not None and peak >= 200.0
