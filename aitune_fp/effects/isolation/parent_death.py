"""A worker dies with its parent: it never outlives the fork server (and so the tune
process) that started it, even when that process is killed outright."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from typing import Any


def die_with_parent() -> None:
    """Die with the fork server: drop the server's liveness pipe that multiprocessing hands
    every child (so the server can exit when the tune process goes, even while this worker
    hangs), and ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` on Linux; exit at once if the server
    is already gone."""
    with contextlib.suppress(Exception):
        from multiprocessing import forkserver

        server: Any = forkserver._forkserver
        if server._forkserver_alive_fd is not None:
            os.close(server._forkserver_alive_fd)
            server._forkserver_alive_fd = None
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(1)
