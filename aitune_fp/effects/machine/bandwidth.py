"""This machine's memory read bandwidth, and the bytes of weights a decode step reads.

Rules: the bandwidth is the best of a few timed ``torch.sum`` passes over a float32 tensor
far larger than the caches (256 MiB, or an eighth of the memory available when that is
less), with torch's current thread count, as the decode itself runs; measured once per
process. The weight bytes are those of every distinct parameter and buffer of the module
the pick runs, less the input embedding's matrix (a step reads only its rows), unless the
output head shares that matrix (then it is read whole, as the head).
"""

from __future__ import annotations

import functools
import time
from typing import Any

import torch

SIZE = 256 << 20
PASSES = 5


@functools.cache
def read_bandwidth() -> float:
    """Bytes per second this process reads from memory (see the module's rules)."""
    size = min(SIZE, _available() // 8) if _available() else SIZE
    data = torch.ones(max(size // 4, 1 << 20), dtype=torch.float32)
    best = float("inf")
    for _ in range(PASSES):
        start = time.perf_counter()
        float(data.sum())
        best = min(best, time.perf_counter() - start)
    return data.numel() * 4 / best


def _available() -> int:
    """Bytes of memory available (0: unknown)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as info:
            lines = info.read().splitlines()
    except OSError:
        return 0
    found = [line.split()[1] for line in lines if line.startswith("MemAvailable:")]
    return int(found[0]) * 1024 if found else 0


def weight_bytes(module: Any) -> float:
    """Bytes of weights one decode step of ``module`` reads (see the module's rules)."""
    seen: dict[int, torch.Tensor] = {}
    for tensor in (*module.parameters(), *module.buffers()):
        seen.setdefault(id(tensor), tensor)
    total = sum(t.numel() * t.element_size() for t in seen.values())
    embed = _weight(getattr(module, "get_input_embeddings", lambda: None)())
    head = _weight(getattr(module, "get_output_embeddings", lambda: None)())
    if embed is not None and (head is None or head.data_ptr() != embed.data_ptr()):
        total -= embed.numel() * embed.element_size()
    return float(total)


def _weight(layer: Any) -> torch.Tensor | None:
    """A layer's weight matrix (``None``: no such layer)."""
    weight = getattr(layer, "weight", None)
    return weight if isinstance(weight, torch.Tensor) else None
