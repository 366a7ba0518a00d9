"""The memory a kept runner holds, so the job it serves is charged as if it built it.

Rules: a candidate's peak memory is measured from the level before its build
(:class:`~aitune_fp.effects.measure.memory.MemoryWatch`). A runner kept from its build ahead
(:mod:`.worker`) was built before the job arrived, so the worker reads the level before
and after that build; the job then measures from the level at its start *less* what the
build holds (:func:`footprint`, :func:`without`): the runner's memory is charged, and the
job's own copy of the module is not charged twice. An unreadable level gives ``None``
(the job then reads its level at its build stage, as any job does).

A runner is kept only on the CPU and only with room to spare (:func:`room_to_keep`):
every kept worker holds a copy of the model and its compiled code until its job comes,
and the builds and measures in between must not be starved for it (a model of several
GiB, or a CUDA context per kept worker, would be). Without room the worker closes it and
the sweep builds the candidate afresh, as it did before runners were kept.
"""

from __future__ import annotations

import torch

from aitune_fp.effects.machine.facts import free_memory_bytes
from aitune_fp.effects.measure.memory import MemoryLevel, memory_level

MIB = 1024 * 1024


def _less(a: MemoryLevel, b: MemoryLevel) -> MemoryLevel:
    """``a - b``, field by field (a device figure only when both have one).

    >>> _less(MemoryLevel(300.0, 900.0), MemoryLevel(100.0, 400.0))
    MemoryLevel(held_mb=200.0, device_used_mb=500.0)
    >>> _less(MemoryLevel(300.0), MemoryLevel(100.0, 400.0))
    MemoryLevel(held_mb=200.0, device_used_mb=None)
    """
    both = a.device_used_mb is not None and b.device_used_mb is not None
    dev = a.device_used_mb - b.device_used_mb if both else None  # type: ignore[operator]
    return MemoryLevel(a.held_mb - b.held_mb, dev)


def footprint(before: MemoryLevel | None, device: torch.device) -> MemoryLevel | None:
    """What the runner built since ``before`` holds now (``None``: unreadable)."""
    after = memory_level(device)
    return _less(after, before) if before is not None and after is not None else None


def without(held: MemoryLevel | None, device: torch.device) -> MemoryLevel | None:
    """The level now less a kept runner's ``held`` footprint (``None``: no kept runner, or
    unreadable)."""
    now = memory_level(device) if held is not None else None
    return _less(now, held) if now is not None and held is not None else None


def room_to_keep(held: MemoryLevel | None, device: torch.device) -> bool:
    """Whether a runner holding ``held`` may be kept: on the CPU, its footprint known, and
    the memory still available at least four times that footprint and at least 1 GiB.

    >>> cpu = torch.device("cpu")
    >>> room_to_keep(MemoryLevel(1e12), cpu), room_to_keep(None, cpu)
    (False, False)
    >>> room_to_keep(MemoryLevel(1.0), torch.device("cuda"))
    False
    """
    if device.type != "cpu" or held is None:
        return False
    available_mb = free_memory_bytes(device) / MIB
    return available_mb >= max(4 * held.held_mb, 1024.0)
