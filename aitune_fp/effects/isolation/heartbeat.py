"""The worker's heartbeat: three numbers in shared memory that the watchdog reads.

Rules: the worker counts every call it makes (``calls``: a count that moves is a worker
that is not hung), says the batch size it works at (``batch_size``: named in a timeout's
or a death's reason) and whether the current call may compile (``may_compile``: the first
call at a new batch size, validation and a build ahead's warm calls get the build's time
limit instead of the call's); the watchdog only reads them. The cells are a lock-free
shared array of doubles, so a beat costs the worker a few nanoseconds and never blocks.

>>> beat = Heartbeat([0.0, 0.0, 0.0])
>>> beat.tick(may_compile=True); beat.batch_size = 8
>>> beat.calls, beat.batch_size, beat.may_compile
(1.0, 8, True)
"""

from __future__ import annotations

from collections.abc import MutableSequence
from typing import Any

_CALLS, _BATCH, _COMPILE = 0, 1, 2


class Heartbeat:
    """Named access to the shared cells (see the module's rules)."""

    __slots__ = ("cells",)

    def __init__(self, cells: MutableSequence[float]) -> None:
        self.cells = cells

    @classmethod
    def shared(cls, ctx: Any) -> Heartbeat:
        """A fresh heartbeat in shared memory of the multiprocessing context ``ctx``."""
        return cls(ctx.RawArray("d", 3))

    @property
    def calls(self) -> float:
        """The calls counted so far."""
        return float(self.cells[_CALLS])

    @property
    def batch_size(self) -> int:
        """The batch size the worker works at now (0: none yet)."""
        return int(self.cells[_BATCH])

    @batch_size.setter
    def batch_size(self, size: float) -> None:
        self.cells[_BATCH] = float(size)

    @property
    def may_compile(self) -> bool:
        """Whether the current call may compile (it gets the build's time limit)."""
        return bool(self.cells[_COMPILE])

    @may_compile.setter
    def may_compile(self, flag: bool) -> None:
        self.cells[_COMPILE] = 1.0 if flag else 0.0

    def tick(self, *, may_compile: bool | None = None) -> None:
        """Count one call (and, when given, say whether it may compile)."""
        self.cells[_CALLS] += 1.0
        if may_compile is not None:
            self.may_compile = may_compile
