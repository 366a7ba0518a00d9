"""The run's stopwatch: the top-level stages of a tune, for the record's wall account.

Rules:
- a :class:`Stopwatch` starts at ``run_tuning``'s entry; when the process was started for
  this run (the CLI, the ``tune_time`` benchmark: :func:`count_from_process_start`, which
  the next stopwatch consumes, so a later tune in the same process counts from its own
  entry) it starts at the process's start instead and the time before the entry is its
  ``startup`` stage (interpreter, imports, the model's construction);
- :meth:`Stopwatch.lap` closes the stage that ran since the last lap, so the stages are
  disjoint and in order; :meth:`Stopwatch.account` is the
  :class:`~aitune_fp.core.record.wall.WallAccount` so far (what follows the last lap is
  its ``unaccounted`` part); :meth:`Stopwatch.fold` laps a stage and folds it with every
  stage since a count of :attr:`Stopwatch.laps` into one
  (:func:`~aitune_fp.core.record.wall.folded`: a decision-cache hit followed by a full tune);
- the process's age is read from ``/proc/self/stat`` (Linux, 10 ms ticks); where it cannot
  be read the stopwatch starts at the entry and says so (``from_process_start`` false).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from aitune_fp.core.record.wall import WallAccount, folded

_ARMED: dict[str, Any] = {"process": False, "started": None}


def count_from_process_start(started: float | None = None) -> None:
    """Make the next :class:`Stopwatch` count from this process's start, or from
    ``started`` (``CLOCK_BOOTTIME`` seconds) when the process the user started is another
    one (a tune the long-lived service forked for its client).

    >>> count_from_process_start()
    >>> first, second = Stopwatch().account(), Stopwatch().account()
    >>> first.from_process_start == (process_age() is not None), second.from_process_start
    (True, False)
    """
    _ARMED["process"] = True
    _ARMED["started"] = started


def process_age(started: float | None = None) -> float | None:
    """Seconds since this process started, or since ``started`` (``CLOCK_BOOTTIME``
    seconds) when given (``None`` where it cannot be read).

    >>> age = process_age()
    >>> age is None or 0.0 <= age < 10 * 24 * 3600
    True
    """
    if started is not None:
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - started)
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22: start time, ticks
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - started)
    except (OSError, ValueError, IndexError, AttributeError):
        return None


class Stopwatch:
    """Laps of one run (see the rules).

    >>> clock = Stopwatch()
    >>> clock.lap("setup")
    >>> account = clock.account()
    >>> [name for name, _ in account.stages], account.wall >= account.seconds("setup")
    (['setup'], True)
    """

    def __init__(self) -> None:
        now = time.perf_counter()
        age = process_age(_ARMED["started"]) if _ARMED["process"] else None
        _ARMED["process"], _ARMED["started"] = False, None
        self._origin = now - (age or 0.0)
        self._mark = now
        self._stages: list[tuple[str, float]] = [] if age is None else [("startup", age)]
        self._from_process_start = age is not None

    def lap(self, name: str) -> None:
        """Close stage ``name``: the time since the last lap (or the start)."""
        now = time.perf_counter()
        self._stages.append((name, now - self._mark))
        self._mark = now

    def account(self) -> WallAccount:
        """The wall so far and the stages lapped."""
        wall = time.perf_counter() - self._origin
        return WallAccount(wall, tuple(self._stages), self._from_process_start)

    @property
    def laps(self) -> int:
        """The number of stages so far (``startup`` included)."""
        return len(self._stages)

    def fold(self, name: str, since: int) -> None:
        """Lap ``name``, then fold the stages from index ``since`` on into that one stage.

        >>> clock = Stopwatch()
        >>> start = clock.laps
        >>> clock.lap("plan")
        >>> clock.fold("decision_cache_hit", start)
        >>> [name for name, _ in clock.account().stages]
        ['decision_cache_hit']
        """
        self.lap(name)
        self._stages = list(folded(tuple(self._stages), since, name))
