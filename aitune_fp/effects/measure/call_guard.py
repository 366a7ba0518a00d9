"""The call timeout for calls made in the tune process itself (final rounds, verification).

Builds, validation and profiling run in isolated workers whose parent ends a call that
does not return in time. The final rounds and the verification time runners side by side
in the tune process, so a hang there would hang the tune: this guard gives those calls
the same call timeout.

Rules:
- :func:`call_deadline` opens a deadline (seconds, or ``None`` for none) for the calls
  made inside it; :func:`guarded` wraps one call: with a deadline open, in the main
  thread, on a platform with ``SIGALRM``, the call runs under a real-time interval timer
  and raises :class:`CallHung` once it has run past the deadline; otherwise it is the call
  itself;
- :class:`CallHung` is an ``Exception``: the rounds and the verification already treat a
  raising participant as one that leaves (its samples stay a prefix, it is logged), so a
  hung backend leaves them with the message ``hung past the N s call timeout``;
- a call blocked inside native code that never returns to Python cannot be interrupted
  this way (the timer fires when it does); a crash here is not isolated — every batch
  size timed here has already run in a worker without a fault.

>>> with call_deadline(5.0):
...     guarded(lambda: 41 + 1)()
42
"""

from __future__ import annotations

import contextlib
import functools
import signal
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")
_DEADLINE: ContextVar[float | None] = ContextVar("aitune_fp_call_deadline", default=None)


class CallHung(Exception):
    """A call in the tune process ran past the call timeout."""


@contextlib.contextmanager
def call_deadline(seconds: float | None) -> Iterator[None]:
    """While open, :func:`guarded` calls fail after ``seconds`` (``None``: no limit)."""
    token = _DEADLINE.set(seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def _can_alarm() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


def guarded(call: Callable[[], T]) -> Callable[[], T]:
    """``call`` under the open deadline (see the module rules)."""
    seconds = _DEADLINE.get()
    if seconds is None or not _can_alarm():
        return call
    return functools.partial(_under_alarm, call, seconds)


def _under_alarm(call: Callable[[], T], seconds: float) -> T:
    """``call()`` under a real-time interval timer of ``seconds`` that raises
    :class:`CallHung` when it fires; the previous ``SIGALRM`` handler is put back after."""

    def timed_out(_signum: int, _frame: Any) -> None:
        raise CallHung(f"hung past the {seconds:g} s call timeout")

    previous = signal.signal(signal.SIGALRM, timed_out)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return call()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0.0)
        signal.signal(signal.SIGALRM, previous)
