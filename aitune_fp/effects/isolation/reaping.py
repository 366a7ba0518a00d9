"""Ending the service's tunes and what they leave: signal a tune's process group, kill
what is left under the fork server.

Rules: a tune made itself a process-group leader, so a signal goes to its group (and to it,
should it have left the group); a process whose parent is the fork server while no tune runs
is a worker its tune could not end, and is killed with its group; every failure to signal
is ignored (the process is gone).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path


def say(line: str) -> None:
    """One line in the service's log (its stderr), stamped."""
    print(
        f"{time.strftime('%Y-%m-%d %H:%M:%S')} [{os.getpid()}] {line}", file=sys.stderr, flush=True
    )


def kill_group(pid: int, sig: int) -> None:
    """Signal a tune's process group (its own: the tune made itself a group leader)."""
    with contextlib.suppress(OSError):
        os.killpg(pid, sig)
    with contextlib.suppress(OSError):
        os.kill(pid, sig)


def kill_orphans(parent: int | None) -> None:
    """SIGKILL every process (and its group) whose parent is ``parent``: with no tune
    running, a child of the fork server is a worker its tune could not end."""
    if parent is None:
        return
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == parent:
            say(f"killing process {entry.name} left under the fork server")
            kill_group(int(entry.name), signal.SIGKILL)
