"""Waiting for the workers' fork server, as a stage of its own.

Rules:
- :func:`wait_ready` returns once the fork server of this process can fork a worker: it
  forks one that exits at once (``os._exit(0)``: it runs nothing of the tune's) and joins
  it. The server imports torch and the backends' libraries before it forks anything, so
  the call lasts as long as that preload has left to run; the tune's wall account names
  that time ``worker_pool_start`` instead of hiding it in the first worker's start;
- it never raises: a server that cannot fork is the first job's to report (as a worker
  that did not start), exactly as before; the call then only returns.
"""

from __future__ import annotations

import contextlib
import os

from aitune_fp.effects.isolation.server import _main_hidden, context


def _exit_now() -> None:  # pragma: no cover - runs in the forked process
    os._exit(0)


def wait_ready(timeout: float = 600.0) -> bool:
    """Block until the fork server forks (see the rules); whether it did within ``timeout``.

    >>> from aitune_fp.effects.isolation import server
    >>> server.start([])
    >>> wait_ready(), server.running()
    (True, True)
    """
    with contextlib.suppress(Exception):
        proc = context().Process(target=_exit_now, daemon=True)
        with _main_hidden():
            proc.start()
        proc.join(timeout)
        if proc.exitcode is None:
            proc.kill()
            proc.join(1.0)
            return False
        return bool(proc.exitcode == 0)
    return False
