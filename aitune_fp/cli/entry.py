"""The console script: run the command line, then leave without the interpreter's teardown.

Rules:
- :func:`run` is ``aitune-fp``'s entry point (``pyproject.toml``) and ``python -m
  aitune_fp``'s: it runs :func:`~aitune_fp.cli.main.main`, then :func:`leave`;
- :func:`leave` does what a normal exit does that anything depends on — it joins the
  threads that are not daemons, runs the ``atexit`` handlers (the workers' fork server's
  shutdown, multiprocessing's, logging's flush, temporary folders' finalizers) and flushes
  standard output and error — and then ends the process with ``os._exit``. What it skips
  is the interpreter freeing every module and object one by one, which after a tune (torch,
  the compilers, ONNX Runtime loaded) took about 2 s here, with nothing to show for it:
  every file the command writes is closed (and atomically renamed) before ``main`` returns;
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
from typing import NoReturn


def leave(code: int) -> NoReturn:
    """End the process with ``code`` after a normal exit's visible work (see the rules)."""
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing to say
            stream.flush()
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
