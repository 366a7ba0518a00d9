"""Peak memory of a backend while it runs, in MiB: what ``Profile.peak_memory_mb`` holds.

The figure is ``peak - before``, clamped at 0: ``before`` is the memory in use just before
the backend is built, ``peak`` the highest use during its profiled calls, **less the
profiler's input pool**. So it counts what the backend holds (its own weights, engine,
compiled code, runtime arenas) plus its activations and workspace while running, never
the inputs the profiler pre-built for it. A :class:`MemoryWatch` takes the readings
around one candidate: ``on_stage("build")`` reads ``before``, ``on_stage("profile")``
resets the peak counter, ``peak_mb()`` reads the peak after the profiled calls.

The input pool: the profiler builds each batch size's pool through :func:`apart_from_peak`.
While a watch on that device is armed (in this thread of control: a context variable),
that closes the current peak segment (its peak less the previous pool counts), measures
what building the pool adds to the held memory, and starts a new segment; the figure is
the largest segment peak, each less its own pool.

CPU rules (the whole process's resident memory, from ``/proc/self/status``):

- ``before`` is ``VmRSS`` (resident now), read after a garbage collection and a
  ``malloc_trim(0)`` (glibc; skipped elsewhere) so memory freed by earlier backends is
  handed back to the OS first;
- the peak counter ``VmHWM`` is reset to the current ``VmRSS`` by writing ``5`` to
  ``/proc/self/clear_refs`` (Linux >= 4.0) right before the profiled calls; ``peak`` is
  ``VmHWM`` read after them;
- when ``/proc`` cannot be read or the reset fails (older kernel, no permission, not
  Linux), the measurement is ``None``, never a guess, and the reason is logged (INFO, on
  the ``aitune_fp`` logger).

The CPU figure is approximate, and why: resident memory belongs to the whole process, so
(1) pages freed earlier but kept by an allocator (glibc arenas, torch's CPU caching) can be
reused by the backend without the resident size growing, which understates it; the trim
before ``before`` shrinks that error, it cannot remove it; (2) memory the backend's build
or validation allocated and did not free counts, and so does anything other threads of
the process allocate meanwhile; (3) weights the backend shares with the user's module
(torch eager, ``torch.compile``) were resident before the build, so only its activations
and workspace count, whereas a runtime that copies them (ONNX Runtime, TensorRT) counts
the copy; (4) one-time costs land on whichever backend pays them first: the shared
libraries and Python modules a build imports (ONNX export tooling, ``torch._dynamo`` and
Inductor, the ONNX Runtime library) stay resident. ``tune_module`` imports the admitted
backends' libraries before anything is measured (:mod:`aitune_fp.effects.machine.preload`), which
removes most of that: on the demo MLP, without the preload ONNX Runtime measured 190 MiB
when it exported first and 39 MiB from the cache, Inductor 40 or 139 MiB depending on the
order; with it, ONNX Runtime 20-50 MiB and Inductor 16-25 MiB in either order. What is
left are lazy first-use costs (the first compilation's caches, the first ONNX export).
Backends that stay alive (the baseline, the current leader) are in both and cancel out.

CUDA rules (the device the backend runs on; taken only for a ``cuda`` device when CUDA is
available):

- ``before`` holds ``torch.cuda.memory_allocated(device)`` and the device's used memory
  ``total - free`` from ``torch.cuda.mem_get_info(device)``, after a synchronize,
  a garbage collection and ``torch.cuda.empty_cache()``;
- ``torch.cuda.reset_peak_memory_stats(device)`` runs right before the profiled calls;
- afterwards the torch delta is ``max_memory_allocated - pool - before.allocated``
  (allocated memory, not reserved: torch's cache of freed blocks is not the backend's)
  and the device delta is ``used now - before.used``, read after a synchronize, a garbage
  collection and ``torch.cuda.empty_cache()`` so that the freed input pool and torch's
  cached blocks are handed back first (runtimes such as ONNX Runtime and TensorRT
  allocate outside torch's allocator, so only the device-level reading sees what they
  keep); the figure is the larger of the two. The device-level reading is what the
  backend still holds after its calls, not a peak, and counts other processes on the
  same GPU, so it is approximate too.

Other device types are not measured (``None``, reason logged).
Longer than 260 lines: the CPU and CUDA peak readings share one sampling loop.
"""

from __future__ import annotations

import ctypes
import gc
import logging
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TypeVar

import torch

log = logging.getLogger("aitune_fp")

T = TypeVar("T")
MIB: Final = 1024 * 1024
PROC_STATUS = Path("/proc/self/status")
PROC_CLEAR_REFS = Path("/proc/self/clear_refs")
RESET_PEAK_RSS: Final = "5"


@dataclass(frozen=True, slots=True)
class MemoryLevel:
    """Memory in use at one moment (or at its peak), in MiB.

    ``held_mb`` is the process's resident memory (CPU) or torch's allocated memory (CUDA);
    ``device_used_mb`` is the whole device's used memory (CUDA only, else ``None``).
    """

    held_mb: float
    device_used_mb: float | None = None


def peak_delta_mb(before: MemoryLevel, peak: MemoryLevel) -> float:
    """The larger of the held and the device-level growth from ``before`` to ``peak``, >= 0.

    >>> peak_delta_mb(MemoryLevel(100.0), MemoryLevel(350.0))
    250.0
    >>> peak_delta_mb(MemoryLevel(10.0, 500.0), MemoryLevel(30.0, 900.0))
    400.0
    >>> peak_delta_mb(MemoryLevel(100.0), MemoryLevel(90.0))
    0.0
    """
    deltas = [peak.held_mb - before.held_mb]
    if before.device_used_mb is not None and peak.device_used_mb is not None:
        deltas.append(peak.device_used_mb - before.device_used_mb)
    return max(0.0, *deltas)


def _unavailable(reason: str) -> None:
    """Log why a memory figure is not measured."""
    log.info("peak memory not measured: %s", reason)


def read_status_mb(key: str) -> float | None:
    """A ``kB`` field of ``/proc/self/status`` (``VmRSS``, ``VmHWM``) in MiB, or ``None``."""
    try:
        lines = PROC_STATUS.read_text().splitlines()
    except OSError as error:
        _unavailable(f"cannot read {PROC_STATUS}: {error}")
        return None
    for line in lines:
        name, _, rest = line.partition(":")
        fields = rest.split()
        if name == key and len(fields) == 2 and fields[0].isdigit() and fields[1] == "kB":
            return int(fields[0]) / 1024.0
    _unavailable(f"{PROC_STATUS} has no {key} field in kB")
    return None


def reset_resident_peak() -> bool:
    """Reset the process's peak resident size (``VmHWM``) to its current ``VmRSS``."""
    try:
        with PROC_CLEAR_REFS.open("w") as fh:
            fh.write(RESET_PEAK_RSS)
    except OSError as error:
        _unavailable(f"cannot reset the peak resident size via {PROC_CLEAR_REFS}: {error}")
        return False
    return True


def _trim_heap() -> None:
    """Hand memory freed by the C heap back to the OS (glibc ``malloc_trim``; best effort)."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        return


def _is_cuda(device: torch.device) -> bool:
    return device.type == "cuda" and torch.cuda.is_available()


def _cuda_used_mb(device: torch.device) -> float:
    free, total = torch.cuda.mem_get_info(device)
    return (total - free) / MIB


def memory_level(device: torch.device) -> MemoryLevel | None:
    """Memory in use on ``device`` now (after freeing what can be freed), or ``None``."""
    gc.collect()
    if _is_cuda(device):
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()
        return MemoryLevel(torch.cuda.memory_allocated(device) / MIB, _cuda_used_mb(device))
    if device.type != "cpu":
        _unavailable(f"device type {device.type!r} is not measured")
        return None
    _trim_heap()
    rss = read_status_mb("VmRSS")
    return None if rss is None else MemoryLevel(rss)


def reset_peak(device: torch.device) -> bool:
    """Start a peak-measured region on ``device``; ``False`` (reason logged) when impossible."""
    if _is_cuda(device):
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        return True
    if device.type != "cpu":
        _unavailable(f"device type {device.type!r} is not measured")
        return False
    _trim_heap()
    return reset_resident_peak()


def peak_level(device: torch.device) -> MemoryLevel | None:
    """The peak since :func:`reset_peak` on ``device`` (CUDA: the allocated peak, and the
    device use now, after freed and cached blocks are handed back)."""
    if _is_cuda(device):
        torch.cuda.synchronize(device)
        held = torch.cuda.max_memory_allocated(device) / MIB
        gc.collect()
        torch.cuda.empty_cache()
        return MemoryLevel(held, _cuda_used_mb(device))
    if device.type != "cpu":
        return None
    hwm = read_status_mb("VmHWM")
    return None if hwm is None else MemoryLevel(hwm)


class MemoryWatch:
    """One backend's peak memory, read around its stages (see the module rules).

    ``on_stage`` is meant as (part of) a candidate's stage callback: ``"build"`` reads the
    level before the build, ``"profile"`` resets the peak counter; :meth:`peak_mb` then
    gives ``peak - before`` in MiB, or ``None`` when either reading was impossible.

    >>> watch = MemoryWatch(torch.device("cpu"))
    >>> watch.peak_mb() is None      # nothing read yet
    True
    """

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.before: MemoryLevel | None = None
        self.armed = False
        self.pool_mb = 0.0
        """What the current segment's input pool added to the held memory."""
        self.segments_mb = 0.0
        """The largest held peak of the closed segments, each less its pool."""

    def on_stage(self, stage: str) -> None:
        """Take the reading that ``stage`` (about to start) calls for, if any."""
        if stage == "build":
            self.mark_before_build()
        elif stage == "profile":
            self.start_peak()

    def mark_before_build(self) -> None:
        """Read the level the backend's figure is measured from."""
        self.before = memory_level(self.device)
        self.armed = False

    def start_peak(self) -> None:
        """Reset the peak counter: the measured region starts now."""
        self.armed = self.before is not None and reset_peak(self.device)
        self.pool_mb = self.segments_mb = 0.0
        _ACTIVE.set(self if self.armed else None)

    def apart(self, make: Callable[[], T]) -> T:
        """``make()``, its allocations kept out of the peak (see the module rules)."""
        peak = _held_peak(self.device)
        if peak is not None:
            self.segments_mb = max(self.segments_mb, peak - self.pool_mb)
        held = _held_now(self.device)
        made = make()
        after = _held_now(self.device)
        self.pool_mb = max(0.0, after - held) if held is not None and after is not None else 0.0
        self.armed = reset_peak(self.device)
        return made

    def peak_mb(self) -> float | None:
        """The peak since :meth:`start_peak`, less the input pools, minus the level before
        the build, in MiB."""
        if _ACTIVE.get() is self:
            _ACTIVE.set(None)
        if not self.armed or self.before is None:
            return None
        peak = peak_level(self.device)
        if peak is None:
            return None
        held = max(self.segments_mb, peak.held_mb - self.pool_mb)
        return peak_delta_mb(self.before, MemoryLevel(held, peak.device_used_mb))


_ACTIVE: ContextVar[MemoryWatch | None] = ContextVar("aitune_fp_memory_watch", default=None)


def _held_now(device: torch.device) -> float | None:
    """The held memory now (CUDA: allocated; CPU: resident), no freeing first."""
    if _is_cuda(device):
        torch.cuda.synchronize(device)
        return torch.cuda.memory_allocated(device) / MIB
    return read_status_mb("VmRSS") if device.type == "cpu" else None


def _held_peak(device: torch.device) -> float | None:
    """The held peak since the last reset (CUDA: allocated; CPU: ``VmHWM``)."""
    if _is_cuda(device):
        torch.cuda.synchronize(device)
        return torch.cuda.max_memory_allocated(device) / MIB
    return read_status_mb("VmHWM") if device.type == "cpu" else None


def apart_from_peak(device: torch.device, make: Callable[[], T]) -> T:
    """``make()`` (the profiler's input pool), kept out of the peak of the armed watch on
    ``device``, if any; just ``make()`` otherwise."""
    watch = _ACTIVE.get()
    if watch is None or not watch.armed or watch.device != device:
        return make()
    return watch.apart(make)
