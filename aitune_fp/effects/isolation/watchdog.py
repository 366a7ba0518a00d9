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


def watch(
    handle: Handle,
    timeouts: Timeouts,
    on_event: Callable[[tuple[str, Any]], None],
    first_stage: str,
    asked: float,
) -> tuple[str, Any] | Ended:
    """Watch a worker on its job until it answers, dies or overruns (see the rules)."""
    import cloudpickle

    proc, receiver, beat = handle.proc, handle.receiver, handle.beat
    stage, now = first_stage, time.monotonic()
    stage_began = last_change = now
    last_count = beat.calls
    while True:
        if receiver.poll(POLL_SECONDS):
            try:
                message = cloudpickle.loads(receiver.recv_bytes())
            except (EOFError, OSError):
                proc.join(timeout=5.0)
                return died(proc, stage, beat)
            if message[0] == "stage":
                stage, stage_began = str(message[1]), time.monotonic()
                last_change = stage_began
            elif message[0] == "batch":
                last_change = time.monotonic()
            elif message[0] == "started":
                last_change = time.monotonic()
                message = ("started", last_change - asked)
            else:
                return message  # type: ignore[no-any-return]
            on_event(message)
            continue
        now = time.monotonic()
        if beat.calls != last_count:
            last_count, last_change = beat.calls, now
        size = beat.batch_size
        if stage == "build" and now - stage_began > timeouts.build:
            kill_group(proc)
            return Ended(stage, f"build exceeded {timeouts.build:g} s (worker stopped)", size)
        limit = timeouts.build if beat.may_compile else timeouts.call  # a first call may compile
        if stage != "build" and now - last_change > limit:
            kill_group(proc)
            first = " (its first call there, which may compile)" if beat.may_compile else ""
            return Ended(
                stage,
                f"a call did not return within {limit:g} s "
                f"{where(stage, size)}{first} (worker stopped)",
                size,
                hung=True,
            )
        if not proc.is_alive() and not receiver.poll(0):
            return died(proc, stage, beat)


def died(proc: Any, stage: str, beat: Heartbeat) -> Ended:
    size = beat.batch_size
    reason = f"{death_reason(proc.exitcode)} {where(stage, size)}"
    return Ended(stage, reason, size, exitcode=proc.exitcode)
