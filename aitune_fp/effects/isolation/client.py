"""The tune process's side: start a worker for one job, watch it, and turn its end into a value.

Rules:
- workers come from the fork server (:mod:`aitune_fp.effects.isolation.server`: started
  once per process, reused by later tunes, stopped at exit), a fresh worker per job;
- the job is serialised with cloudpickle; modules the tune process loaded from a file that
  a fresh process cannot import by name (``aitune-fp tune``'s factory files, also when
  they define the backend config) travel by value; a job that cannot be serialised at all
  is reported as :class:`NotIsolated`, and the caller decides what to do (it runs in
  process, with a warning);
- the worker's start is timed from asking for it (before the fork server is asked for a
  process) to its first message, ``("started", None)`` once it has unpickled its job; the
  caller hears it as the event ``("started", seconds)``;
- the watchdog polls every 0.1 s: during ``build`` it ends the worker after
  ``Timeouts.build`` seconds; in any other stage after ``Timeouts.call`` seconds without
  a new heartbeat (a call that does not return), or ``Timeouts.build`` seconds for the
  calls that may compile (validation, and the first call at each batch size); a worker
  that ends without answering (signal, ``os._exit``, abort, out-of-memory kill) is
  described from its exit status and
  the stage and batch size it was in (:func:`~aitune_fp.effects.isolation.protocol.where`);
- the user's ``__main__`` is hidden from multiprocessing while a worker starts
  (:func:`~aitune_fp.effects.isolation.server._main_hidden`), one start at a time (jobs
  may run from several threads: builds ahead); what a worker needs of
  ``__main__`` (a model class defined there) travels by value in the cloudpickled job;
- whatever happens, the worker's whole process group is killed and reaped before this
  returns, also when the tune process is itself interrupted (``KeyboardInterrupt``,
  ``SystemExit``), so no worker or compiler process is left behind.
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

import torch

from aitune_fp.effects.checks.tf32 import Tf32Switches
from aitune_fp.effects.isolation import worker
from aitune_fp.effects.isolation.heartbeat import Heartbeat
from aitune_fp.effects.isolation.protocol import Timeouts, death_reason, where
from aitune_fp.effects.isolation.server import _main_hidden, context, start

__all__ = ["Ended", "NotIsolated", "context", "dumps", "run_job", "start"]

log = logging.getLogger("aitune_fp")
POLL_SECONDS: Final = 0.1
_STARTING = threading.Lock()  # _main_hidden edits process-wide state: one start at a time


@dataclass(frozen=True, slots=True)
class Ended:
    """The worker ended without an answer (or was stopped) in ``stage``: why, in words;
    ``exitcode`` when it died, ``hung`` when the call watchdog stopped it."""

    stage: str
    reason: str
    batch_size: int = 0
    exitcode: int | None = None
    hung: bool = False


@dataclass(frozen=True, slots=True)
class NotIsolated:
    """The job could not be sent to a worker (``reason``); nothing was started."""

    reason: str


def _by_value(module: torch.nn.Module, extra: tuple[type, ...] = ()) -> list[Any]:
    """The Python modules of ``module``'s classes (and of the ``extra`` classes, such as a
    user's backend config) that a fresh process cannot import."""
    found = []
    for cls in {type(m) for m in module.modules()} | set(extra):
        mod = sys.modules.get(cls.__module__)
        top = cls.__module__.split(".")[0]
        if mod is None or top == "__main__" or mod in found:
            continue
        importable = importlib.machinery.PathFinder.find_spec(top) is not None
        if not importable and getattr(mod, "__file__", None):
            found.append(mod)
    return found


def dumps(job: Any, module: torch.nn.Module, *extra: type) -> bytes | NotIsolated:
    """``job`` cloudpickled (file-loaded model code, and that of the ``extra`` classes, by
    value), or why it cannot be."""
    import cloudpickle

    by_value = _by_value(module, extra)
    for mod in by_value:
        cloudpickle.register_pickle_by_value(mod)
    try:
        return bytes(cloudpickle.dumps(job))
    except Exception as error:
        return NotIsolated(f"the job cannot be sent to a worker: {type(error).__name__}: {error}")
    finally:
        for mod in by_value:
            with contextlib.suppress(ValueError):
                cloudpickle.unregister_pickle_by_value(mod)


def _kill_group(proc: Any) -> None:
    """SIGKILL the worker's process group (the worker and anything it started)."""
    if proc.pid is None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        proc.kill()


@contextlib.contextmanager
def _worker(payload: bytes) -> Iterator[tuple[Any, Any, Heartbeat]]:
    ctx = context()
    receiver, sender = ctx.Pipe(duplex=False)
    beat = Heartbeat.shared(ctx)
    switches = Tf32Switches.now()  # the caller's, not the fork server's (started earlier)
    proc = ctx.Process(
        target=worker.main, args=(sender, beat.cells, payload, switches), daemon=True
    )
    try:
        with _STARTING, _main_hidden():
            proc.start()
        sender.close()
        yield proc, receiver, beat
    finally:
        with contextlib.suppress(Exception):
            proc.join(timeout=2.0 if proc.exitcode is None else 0.0)
        _kill_group(proc)
        with contextlib.suppress(Exception):
            proc.join(timeout=5.0)
        receiver.close()


def run_job(
    payload: bytes,
    timeouts: Timeouts,
    on_event: Callable[[tuple[str, Any]], None],
    first_stage: str,
) -> tuple[str, Any] | Ended:
    """Run the serialised job in a worker: its ``("done", value)`` or ``("error", text)``
    answer, or :class:`Ended` when it died or overran a timeout."""
    import cloudpickle

    asked = time.monotonic()
    with _worker(payload) as (proc, receiver, beat):
        stage, now = first_stage, time.monotonic()
        stage_began = last_change = now
        last_count = beat.calls
        while True:
            if receiver.poll(POLL_SECONDS):
                try:
                    message = cloudpickle.loads(receiver.recv_bytes())
                except (EOFError, OSError):
                    proc.join(timeout=5.0)
                    return _died(proc, stage, beat)
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
                _kill_group(proc)
                return Ended(stage, f"build exceeded {timeouts.build:g} s (worker stopped)", size)
            limit = (
                timeouts.build if beat.may_compile else timeouts.call
            )  # a first call may compile
            if stage != "build" and now - last_change > limit:
                _kill_group(proc)
                first = " (its first call there, which may compile)" if beat.may_compile else ""
                return Ended(
                    stage,
                    f"a call did not return within {limit:g} s "
                    f"{where(stage, size)}{first} (worker stopped)",
                    size,
                    hung=True,
                )
            if not proc.is_alive() and not receiver.poll(0):
                return _died(proc, stage, beat)


def _died(proc: Any, stage: str, beat: Heartbeat) -> Ended:
    size = beat.batch_size
    reason = f"{death_reason(proc.exitcode)} {where(stage, size)}"
    return Ended(stage, reason, size, exitcode=proc.exitcode)
