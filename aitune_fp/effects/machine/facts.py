"""Facts about the machine the profiler needs: last-level cache size and free memory.

Rules: each function reads the OS or torch once and returns a plain number; when a fact is
unknown a conservative default is returned rather than raising.
"""

from __future__ import annotations

from pathlib import Path

import torch

DEFAULT_LLC_BYTES = 32 * 1024 * 1024
DEFAULT_FREE_BYTES = 4 * 1024**3


def _parse_size(text: str) -> int:
    """``'32768K'`` → 33554432; ``'8M'`` → 8388608; plain digits are bytes.

    >>> _parse_size("512K")
    524288
    """
    text = text.strip().upper()
    scale = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(text[-1:], 1)
    digits = text[:-1] if text[-1:] in "KMG" else text
    return int(digits) * scale


def last_level_cache_bytes() -> int:
    """The largest CPU cache size reported by sysfs (the LLC), or 32 MiB when unknown."""
    root = Path("/sys/devices/system/cpu/cpu0/cache")
    sizes = []
    for index in sorted(root.glob("index*")):
        try:
            sizes.append(_parse_size((index / "size").read_text()))
        except (OSError, ValueError):
            continue
    return max(sizes) if sizes else DEFAULT_LLC_BYTES


def free_memory_bytes(device: torch.device) -> int:
    """Free memory on ``device``: CUDA's free bytes, or ``MemAvailable`` for the CPU."""
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return int(free)
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return DEFAULT_FREE_BYTES


def synchronize(device: torch.device) -> None:
    """Wait for all queued work on ``device`` (a no-op on the CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
