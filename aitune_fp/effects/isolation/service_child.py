"""What a tune forked by the long-lived service does: become the client's process, run the
CLI, exit with its code.

Rules:
- the child first drops every descriptor of the service (listener, other clients, the
  lock), makes itself a process group leader (so the service can end it and what it
  started), restores the default signal handlers (Ctrl-C is a ``KeyboardInterrupt`` as
  in a fresh process) and adopts the service's fork server
  (:func:`~aitune_fp.effects.isolation.server.adopt_inherited`);
- it then takes the client's stdin, stdout and stderr as its own (fresh ``sys.std*``
  objects: line-buffered on a terminal, in the client's encoding), its working
  directory, environment, ``sys.argv`` and module search path, and runs the CLI with the
  client's start time, so the tune's wall account counts from when the user started it;
- whatever happens it ends with ``os._exit`` after the exit handlers ran and the output
  was flushed: it never unwinds into the service's loop. ``KeyboardInterrupt`` before the
  CLI took over is 130, any other escape 1 (with its traceback on the client's stderr).
"""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import signal
import sys
import traceback
from collections.abc import Callable
from typing import Any, NoReturn

from aitune_fp.core.serving.service_messages import TuneAsked
from aitune_fp.effects.isolation import server

Run = Callable[[list[str], "float | None"], int]


def become_tune(message: TuneAsked, fds: list[int], close: list[int], run: Run) -> NoReturn:
    """Run the client's command line in this (freshly forked) process and exit."""
    code = 1
    try:
        for fd in close:
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        server.adopt_inherited()
        _take_client(message, fds)
        code = run(list(message.argv), message.started)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except KeyboardInterrupt:
        code = 130
    except BaseException:
        with contextlib.suppress(Exception):
            traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):
                stream.flush()
        os._exit(code)


def _take_client(message: TuneAsked, fds: list[int]) -> None:
    """The client's descriptors on 0, 1, 2 and its place, environment and path."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(message.cwd)
    os.environ.clear()
    os.environ.update(message.env)
    sys.argv = [message.argv0, *message.argv]
    sys.path[:] = list(message.path)
    encoding = message.encoding or "utf-8"
    sys.stdin = _text(0, "r", encoding, "strict")
    sys.stdout = _text(1, "w", encoding, "strict")
    sys.stderr = _text(2, "w", encoding, "backslashreplace", line=True)


def _text(fd: int, mode: str, encoding: str, errors: str, *, line: bool = False) -> Any:
    """A text stream on ``fd`` as Python makes one at start (line-buffered on a terminal)."""
    raw = io.FileIO(fd, mode, closefd=False)
    buffered: Any = io.BufferedReader(raw) if mode == "r" else io.BufferedWriter(raw)
    tty = os.isatty(fd)
    return io.TextIOWrapper(
        buffered,
        encoding=encoding,
        errors=errors,
        line_buffering=line or tty,
        write_through=mode == "w" and tty,
    )
