"""The watchdog over one worker's job: its messages, its heartbeat, its limits, its end.

Rules (the isolation client's, :mod:`aitune_fp.effects.isolation.client`, in one place):
the watchdog polls every 0.1 s: during ``build`` it ends the worker after
``Timeouts.build`` seconds; in any other stage after ``Timeouts.call`` seconds without a
new heartbeat (a call that does not return), or ``Timeouts.build`` seconds for the calls
that may compile; a worker that ends without answering is described from its exit status
and the stage and batch size it was in; ending a worker kills its whole process group and
reaps it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from aitune_fp.effects.isolation.heartbeat import Heartbeat
from aitune_fp.effects.isolation.protocol import Timeouts, death_reason, where

POLL_SECONDS: Final = 0.1


@dataclass(frozen=True, slots=True)
class Ended:
    """The worker ended without an answer (or was stopped) in ``stage``: why, in words;
    ``exitcode`` when it died, ``hung`` when the call watchdog stopped it."""

    stage: str
    reason: str
    batch_size: int = 0
    exitcode: int | None = None
    hung: bool = False


def kill_group(proc: Any) -> None:
    """SIGKILL the worker's process group (the worker and anything it started)."""
    if proc.pid is None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        proc.kill()


@dataclass
class Handle:
    """A started worker: its process, the pipe it answers on, its heartbeat, and (a worker
    that may keep a runner) the pipe to send it one more job."""

    proc: Any
    receiver: Any
    beat: Heartbeat
    jobs: Any = None


def end(handle: Handle) -> None:
    """End a worker: close its job pipe, give it a moment to exit, kill its group, reap."""
    if handle.jobs is not None:
        with contextlib.suppress(Exception):
            handle.jobs.close()
    proc = handle.proc
    with contextlib.suppress(Exception):
        proc.join(timeout=2.0 if proc.exitcode is None else 0.0)
    kill_group(proc)
    with contextlib.suppress(Exception):
        proc.join(timeout=5.0)
    handle.receiver.close()


@dataclass
class _Clock:
    """One watch's account: the worker's stage, when it began, when the worker last showed
    life (a message or a heartbeat) and the heartbeat count then."""

    stage: str
    stage_began: float
    last_change: float
    last_count: float


def overrun(
    clock: _Clock, now: float, timeouts: Timeouts, may_compile: bool, size: int
) -> Ended | None:
    """Why the worker must be stopped at ``now``, or ``None`` (the module's rules): a build
    past ``Timeouts.build``, or no sign of life for ``Timeouts.call`` seconds
    (``Timeouts.build`` for a call that may compile).

    >>> c = _Clock("build", 0.0, 0.0, 0)
    >>> overrun(c, 5.0, Timeouts(build=10.0, call=1.0), False, 0) is None
    True
    >>> overrun(c, 11.0, Timeouts(build=10.0, call=1.0), False, 0).reason
    'build exceeded 10 s (worker stopped)'
    """
    if clock.stage == "build":
        if now - clock.stage_began <= timeouts.build:
            return None
        return Ended(clock.stage, f"build exceeded {timeouts.build:g} s (worker stopped)", size)
    limit = timeouts.build if may_compile else timeouts.call  # a first call may compile
    if now - clock.last_change <= limit:
        return None
    first = " (its first call there, which may compile)" if may_compile else ""
    reason = f"a call did not return within {limit:g} s {where(clock.stage, size)}{first}"
    return Ended(clock.stage, f"{reason} (worker stopped)", size, hung=True)


def watch(
    handle: Handle,
    timeouts: Timeouts,
    on_event: Callable[[tuple[str, Any]], None],
    first_stage: str,
    asked: float,
) -> tuple[str, Any] | Ended:
    """Watch a worker on its job until it answers, dies or overruns (see the rules)."""
    now = time.monotonic()
    clock = _Clock(first_stage, now, now, handle.beat.calls)
    while True:
        if handle.receiver.poll(POLL_SECONDS):
            answer = _received(handle, clock, on_event, asked)
            if answer is not None:
                return answer
            continue
        ended = _checked(handle, clock, timeouts)
        if ended is not None:
            return ended


def _received(
    handle: Handle, clock: _Clock, on_event: Callable[[tuple[str, Any]], None], asked: float
) -> tuple[str, Any] | Ended | None:
    """The worker's next message: its answer (or its death), else ``None`` after passing a
    progress message on and noting the sign of life."""
    import cloudpickle

    try:
        message = cloudpickle.loads(handle.receiver.recv_bytes())
    except (EOFError, OSError):
        handle.proc.join(timeout=5.0)
        return died(handle.proc, clock.stage, handle.beat)
    if message[0] not in ("stage", "batch", "started"):
        return message  # type: ignore[no-any-return]
    clock.last_change = now = time.monotonic()
    if message[0] == "stage":
        clock.stage, clock.stage_began = str(message[1]), now
    on_event(("started", now - asked) if message[0] == "started" else message)
    return None


def _checked(handle: Handle, clock: _Clock, timeouts: Timeouts) -> Ended | None:
    """Between messages: the worker stopped when it overran, or described when it died."""
    beat, now = handle.beat, time.monotonic()
    if beat.calls != clock.last_count:
        clock.last_count, clock.last_change = beat.calls, now
    ended = overrun(clock, now, timeouts, beat.may_compile, beat.batch_size)
    if ended is not None:
        kill_group(handle.proc)
        return ended
    if not handle.proc.is_alive() and not handle.receiver.poll(0):
        return died(handle.proc, clock.stage, beat)
    return None


def died(proc: Any, stage: str, beat: Heartbeat) -> Ended:
    size = beat.batch_size
    reason = f"{death_reason(proc.exitcode)} {where(stage, size)}"
    return Ended(stage, reason, size, exitcode=proc.exitcode)
