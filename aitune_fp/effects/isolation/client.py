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
  ``SystemExit``), so no worker or compiler process is left behind;
- but one: a build ahead run with ``keep_as`` whose worker answers ``("kept", None)`` (it
  built, and keeps its warm runner: :mod:`.worker`) stays, idle, under that key, with a
  pipe to send it one more job; :func:`run_kept` sends it the candidate's job (the same
  watchdog, the same answer as :func:`run_job`, then the same end) or says ``None`` when
  no live worker is kept under the key (the caller runs the job afresh); a second keep
  under a key ends the first; :func:`release_kept` ends every kept worker (the tune
  calls it when its run ends, also when interrupted; the process's exit does too), and a
  kept worker dies with the fork server as any worker does.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.machinery
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from aitune_fp.effects.checks.tf32 import Tf32Switches
from aitune_fp.effects.isolation import worker
from aitune_fp.effects.isolation.heartbeat import Heartbeat
from aitune_fp.effects.isolation.protocol import Timeouts
from aitune_fp.effects.isolation.server import _main_hidden, context, start
from aitune_fp.effects.isolation.watchdog import Ended, Handle, end, watch

__all__ = [
    "Ended",
    "NotIsolated",
    "context",
    "dumps",
    "release_kept",
    "run_job",
    "run_kept",
    "start",
]

log = logging.getLogger("aitune_fp")
_STARTING = threading.Lock()  # _main_hidden edits process-wide state: one start at a time


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


@contextlib.contextmanager
def _worker(payload: bytes, keep: bool = False) -> Iterator[Handle]:
    """A worker started on ``payload``, ended when the block leaves (unless the block marks
    it kept by putting it in ``_KEPT``)."""
    ctx = context()
    receiver, sender = ctx.Pipe(duplex=False)
    jobs_in, jobs_out = ctx.Pipe(duplex=False) if keep else (None, None)
    beat = Heartbeat.shared(ctx)
    switches = Tf32Switches.now()  # the caller's, not the fork server's (started earlier)
    proc = ctx.Process(
        target=worker.main, args=(sender, beat.cells, payload, switches, jobs_in), daemon=True
    )
    handle = Handle(proc, receiver, beat, jobs_out)
    try:
        with _STARTING, _main_hidden():
            proc.start()
        sender.close()
        if jobs_in is not None:
            jobs_in.close()
        yield handle
    finally:
        with _KEPT_LOCK:
            kept = any(h is handle for h in _KEPT.values())
        if not kept:
            end(handle)


_KEPT: dict[str, Handle] = {}
_KEPT_LOCK = threading.Lock()


def run_job(
    payload: bytes,
    timeouts: Timeouts,
    on_event: Callable[[tuple[str, Any]], None],
    first_stage: str,
    keep_as: str | None = None,
) -> tuple[str, Any] | Ended:
    """Run the serialised job in a worker: its ``("done", value)`` or ``("error", text)``
    answer, or :class:`Ended` when it died or overran a timeout; with ``keep_as``, a
    worker that answers ``("kept", None)`` stays under that key (see the rules)."""
    asked = time.monotonic()
    with _worker(payload, keep=keep_as is not None) as handle:
        answer = watch(handle, timeouts, on_event, first_stage, asked)
        if keep_as is not None and not isinstance(answer, Ended) and answer[0] == "kept":
            with _KEPT_LOCK:
                earlier = _KEPT.pop(keep_as, None)
                _KEPT[keep_as] = handle
            if earlier is not None:
                end(earlier)
        return answer


def run_kept(
    key: str,
    payload: bytes,
    timeouts: Timeouts,
    on_event: Callable[[tuple[str, Any]], None],
    first_stage: str,
) -> tuple[str, Any] | Ended | None:
    """Run the serialised job in the worker kept under ``key`` (as :func:`run_job` would,
    the worker ended afterwards), or ``None`` when none is kept there alive."""
    with _KEPT_LOCK:
        handle = _KEPT.pop(key, None)
    if handle is None:
        return None
    try:
        if not handle.proc.is_alive():
            return None
        asked = time.monotonic()
        try:
            handle.jobs.send_bytes(payload)
        except OSError:
            return None
        return watch(handle, timeouts, on_event, first_stage, asked)
    finally:
        end(handle)


def release_kept() -> int:
    """End every kept worker; how many there were."""
    with _KEPT_LOCK:
        handles = list(_KEPT.values())
        _KEPT.clear()
    for handle in handles:
        end(handle)
    return len(handles)


atexit.register(release_kept)
