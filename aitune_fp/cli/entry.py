"""The console script: run the command line, then leave without the interpreter's teardown.

Rules:
- :func:`run` is ``aitune-fp``'s entry point (``pyproject.toml``) and ``python -m
  aitune_fp``'s: it runs :func:`~aitune_fp.cli.main.main`, then :func:`leave`;
- :func:`leave` does what a normal exit does that anything depends on, in Python's own
  order, and then ends the process with ``os._exit``:
  1. it shuts the interpreter's executors down the way ``threading._shutdown`` does, by
     calling what was registered with ``threading._register_atexit`` (``concurrent.
     futures`` wakes its idle workers and lets them end: Inductor's compile pool, a
     ``ThreadPoolExecutor`` whose worker is not a daemon, waits for work forever until
     then);
  2. it joins the threads that are not daemons, all of them together within
     :data:`JOIN_SECONDS`; a thread still alive then is named in one warning line on
     stderr (``aitune-fp: warning: leaving with threads still running: …``) and left
     behind, never waited for;
  3. it runs the ``atexit`` handlers (the workers' fork server's shutdown,
     multiprocessing's, logging's flush, temporary folders' finalizers) and flushes
     standard output and error;
  A watchdog bounds the whole way out: when steps 1–3 have not finished within
  :data:`LEAVE_SECONDS`, it says which step hung in one warning line and ends the
  process with the command's code all the same. What ``leave`` skips is the
  interpreter freeing every module and object one by one, which after a tune (torch,
  the compilers, ONNX Runtime loaded) took about 2 s here, with nothing to show for it:
  every file the command writes is closed (and atomically renamed) before ``main``
  returns;
- ``main(argv)`` itself, which tests and embedders call, returns normally and is unchanged;
  an exception that escapes it (``--debug``) takes the normal way out, traceback included;
- :func:`run` first tries to attach to the tuning service
  (:func:`~aitune_fp.cli.service_client.attach`, standard library only) and imports the
  command line (its parser, the core's strategies: 0.2–0.5 s here) only when it runs the
  command itself: a tune the service runs costs this process its interpreter's start and
  the attach, nothing more.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Final, NoReturn

JOIN_SECONDS: Final = 5.0
"""How long :func:`leave` waits, in all, for the threads that are not daemons."""

LEAVE_SECONDS: Final = 8.0
"""How long the whole way out may take before the watchdog ends the process."""


def _warn(text: str) -> None:
    with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing to say
        sys.stderr.write(f"aitune-fp: warning: {text}\n")
        sys.stderr.flush()


class _Watchdog:
    """Ends the process with ``code`` after ``seconds`` unless :meth:`done` came first;
    :attr:`step` names what the way out was doing, for the warning line."""

    def __init__(self, code: int, seconds: float) -> None:
        self.step = "starting"
        self._finished = threading.Event()
        self._code = code
        watcher = threading.Thread(target=self._watch, args=(seconds,), daemon=True)
        watcher.name = "aitune-fp-leave-watchdog"
        watcher.start()

    def _watch(self, seconds: float) -> None:
        if not self._finished.wait(seconds):
            _warn(f"the exit did not finish in {seconds:g} s ({self.step}); leaving anyway")
            os._exit(self._code)

    def done(self) -> None:
        self._finished.set()


def shut_executors() -> None:
    """Run what ``threading._register_atexit`` holds, newest first, as Python's own
    ``threading._shutdown`` does before it joins threads (rule 1); later registrations
    are refused, as there."""
    threading._SHUTTING_DOWN = True  # type: ignore[attr-defined]
    calls: list[Callable[[], object]] = list(threading._threading_atexits)  # type: ignore[attr-defined]
    for call in reversed(calls):
        with contextlib.suppress(Exception):
            call()


def lingering(seconds: float) -> tuple[str, ...]:
    """Join the threads that are not daemons, all within ``seconds``; the names of those
    still alive then (rule 2)."""
    deadline = time.monotonic() + seconds
    here = threading.current_thread()
    others = [t for t in threading.enumerate() if t is not here and not t.daemon]
    for thread in others:
        if thread is not threading.main_thread():
            thread.join(max(0.0, deadline - time.monotonic()))
    return tuple(t.name for t in others if t.is_alive() and t is not threading.main_thread())


def leave(code: int) -> NoReturn:
    """End the process with ``code`` after a normal exit's visible work (see the rules)."""
    watchdog = _Watchdog(code, LEAVE_SECONDS)
    watchdog.step = "shutting the executors down"
    shut_executors()
    watchdog.step = "joining threads"
    alive = lingering(JOIN_SECONDS)
    if alive:
        _warn(f"leaving with threads still running: {', '.join(alive)}")
    watchdog.step = "running the atexit handlers"
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing to say
            stream.flush()
    watchdog.done()
    os._exit(code)


def run() -> NoReturn:
    """``aitune-fp``: the command line's exit code, without the interpreter's teardown:
    the service's when it ran the command, else this process's (see the rules)."""
    from aitune_fp.cli.service_client import attach

    try:
        code = attach(sys.argv[1:])
    except KeyboardInterrupt:  # before the service said which tune to forward it to
        print("aitune-fp: interrupted", file=sys.stderr)
        leave(130)
    if code is not None:
        leave(code)
    from aitune_fp.cli.main import run_here

    leave(run_here())
