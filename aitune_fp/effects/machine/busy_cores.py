"""How many of this machine's cores are busy right now, measured over a short window.

Rules:
- :func:`busy_cores` reads the aggregate ``cpu`` line of ``/proc/stat`` twice,
  ``window`` seconds apart, and returns the cores that were busy in between (the share of
  time not idle and not waiting for I/O, times the number of cores); the caller sleeps
  through the window, so its own share is nil;
- it answers "is anything else running now", which the one-minute load average cannot:
  that average still counts this very tune's imports of the last minute (on a 2-core
  machine a tune's own start-up left it near 1.2, which read as one core taken);
- ``None`` where ``/proc/stat`` cannot be read (not Linux): the caller falls back.
"""

from __future__ import annotations

import time
from pathlib import Path

STAT = Path("/proc/stat")


def _sample(stat: Path) -> tuple[int, int, int]:
    """(busy ticks, total ticks, cores) from ``stat``'s aggregate and per-core lines."""
    lines = stat.read_text().splitlines()
    fields = [int(v) for v in lines[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    cores = sum(1 for line in lines[1:] if line.startswith("cpu"))
    return sum(fields[:8]) - idle, sum(fields[:8]), max(1, cores)


def busy_cores(window: float = 0.25, stat: Path = STAT) -> float | None:
    """Cores busy during the next ``window`` seconds (see the rules); ``None``: unknown.

    >>> busy = busy_cores(0.05)
    >>> busy is None or 0.0 <= busy
    True
    """
    try:
        busy0, total0, cores = _sample(stat)
        time.sleep(window)
        busy1, total1, _ = _sample(stat)
    except (OSError, ValueError, IndexError):
        return None
    ticks = total1 - total0
    return cores * (busy1 - busy0) / ticks if ticks > 0 else 0.0
