"""Starting this user's tuning service: by hand (``aitune-fp service start``) or on first use.

Rules (standard library only, before the CLI imports anything heavy):
- :func:`launch` starts :mod:`aitune_fp.cli.service_main` as a daemon in its own session
  (detached from the terminal, stdin closed), logging to ``service.log`` in the private
  service folder, with this process's interpreter, search path and environment, and the
  idle timeout :data:`IDLE_TIMEOUT` unless told otherwise; it does not wait;
- :func:`spawn` is the first use's start: it launches one only when no service holds the
  folder's lock (none is running or starting); two that race both launch, and the second
  daemon finds the lock held and exits at once (the service's own rule).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
from pathlib import Path
from typing import Final

from aitune_fp.effects.isolation import service_wire as wire

IDLE_TIMEOUT: Final = 900.0


def launch(
    idle: float = IDLE_TIMEOUT, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], Path]:
    """The service started in the background, and its log."""
    folder = wire.private_dir(create=True)
    log = folder / wire.LOG
    env = {
        **(dict(os.environ) if env is None else env),
        "PYTHONPATH": os.pathsep.join(wire.search_path()),
        "PYTHONSAFEPATH": "1",
    }
    command = [sys.executable, "-m", "aitune_fp.cli.service_main", "--idle-timeout", str(idle)]
    with open(os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab") as sink:
        daemon = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=sink,
            env=env,
            cwd=folder,
            start_new_session=True,
        )
    return daemon, log


def _held(folder: Path) -> bool:
    """Whether a service holds ``folder``'s lock (runs or is starting)."""
    fd = os.open(folder / wire.LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
    return False


def spawn(env: dict[str, str] | None = None) -> bool:
    """Launch the service unless one holds the lock: whether one was launched."""
    if _held(wire.private_dir(create=True)):
        return False
    launch(IDLE_TIMEOUT, env)
    return True
