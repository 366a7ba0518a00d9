"""What the tune process and an isolation worker say to each other, and the timeouts.

Rules:
- a job is one immutable value sent once when the worker starts; the worker answers with
  events (``("stage", label)``, ``("batch", BatchReport)``) and exactly one
  ``("done", value)``; nothing else crosses the pipe, and no event is sent from inside
  a timed region;
- a heartbeat is three numbers in shared memory (calls started, current batch size, and
  whether the next call may compile: validation and the first call at a batch size),
  written by the worker before each call it makes and read by the tune process's watchdog;
- a worker that ends without ``done`` is described from its exit status: a signal by name
  (``SIGSEGV``, ``SIGKILL`` with the likely out-of-memory cause), an exit code as is.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from returns.io import IOResult

_V = TypeVar("_V")
_E = TypeVar("_E")

DEFAULT_BUILD_TIMEOUT: Final = 600.0
DEFAULT_CALL_TIMEOUT: Final = 60.0


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Per-stage limits in seconds: a build (export, compile, load) and one call.

    A build that runs longer than ``build`` seconds, or a call (validation, max-batch
    search, profiling) that has not returned after ``call`` seconds, fails the backend
    at that stage.

    >>> Timeouts().build, Timeouts().call
    (600.0, 60.0)
    >>> Timeouts(call=0)
    Traceback (most recent call last):
    ...
    ValueError: timeouts must be > 0 seconds, got build=600.0 call=0
    """

    build: float = DEFAULT_BUILD_TIMEOUT
    call: float = DEFAULT_CALL_TIMEOUT

    def __post_init__(self) -> None:
        if not (self.build > 0 and self.call > 0):
            raise ValueError(
                f"timeouts must be > 0 seconds, got build={self.build} call={self.call}"
            )

    def as_dict(self) -> dict[str, float]:
        """``{"build_seconds": …, "call_seconds": …}`` for the run record."""
        return {"build_seconds": float(self.build), "call_seconds": float(self.call)}


def death_reason(exitcode: int | None) -> str:
    """How a worker ended, in words, from ``Process.exitcode``.

    >>> death_reason(-11), death_reason(7)
    ('worker died with SIGSEGV', 'worker exited with code 7')
    >>> death_reason(-9)
    'worker was killed with SIGKILL (out of memory?)'
    """
    if exitcode is None:
        return "worker stopped answering"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        if -exitcode == signal.SIGKILL:
            return f"worker was killed with {name} (out of memory?)"
        return f"worker died with {name}"
    return f"worker exited with code {exitcode}"


def eager_fault(exitcode: int | None, batch_size: int, call_timeout: float) -> tuple[str, str]:
    """How the eager module's worker ended at ``batch_size``, as ``(stop, words)``: a
    signal or an exit code (``crashed``), or no exit code: stopped by the call watchdog
    (``hung``).

    >>> eager_fault(-11, 4, 60)
    ('crashed', 'eager crashed at batch size 4 (SIGSEGV)')
    >>> eager_fault(7, 4, 60)[1]
    'eager exited with code 7 at batch size 4'
    >>> eager_fault(-9, 8, 60)[1]
    'eager was killed with SIGKILL (out of memory?) at batch size 8'
    >>> eager_fault(None, 2, 10)
    ('hung', 'eager hung past the 10 s call timeout at batch size 2')
    """
    at = f"at batch size {batch_size}"
    if exitcode is None:
        return "hung", f"eager hung past the {call_timeout:g} s call timeout {at}"
    if exitcode >= 0:
        return "crashed", f"eager exited with code {exitcode} {at}"
    try:
        name = signal.Signals(-exitcode).name
    except ValueError:
        name = f"signal {-exitcode}"
    if -exitcode == signal.SIGKILL:
        return "crashed", f"eager was killed with {name} (out of memory?) {at}"
    return "crashed", f"eager crashed {at} ({name})"


def where(stage: str, batch_size: int) -> str:
    """``during profile at batch size 4`` (the batch size only when one is known).

    >>> where("build", 0), where("profile", 4)
    ('during build', 'during profile at batch size 4')
    """
    return f"during {stage}" + (f" at batch size {batch_size}" if batch_size > 0 else "")


def outcome_values(outcome: IOResult[_V, _E]) -> tuple[_V | None, _E | None]:
    """``(value, None)`` or ``(None, error)`` of an effect that already ran, read through
    its own ``map``/``alt`` (the worker is the composition root of its process; the tune
    process still unwraps effects in one place only).

    >>> from returns.io import IOFailure, IOSuccess
    >>> outcome_values(IOSuccess(1)), outcome_values(IOFailure("no"))
    ((1, None), (None, 'no'))
    """
    values: list[Any] = []
    errors: list[Any] = []
    outcome.map(values.append).alt(errors.append)
    return (values[0] if values else None), (errors[0] if errors else None)
