"""The console script's way out (``aitune_fp.cli.entry.leave``) in real child processes:
an idle executor's worker ends at once, a stuck thread is named and left, a hanging
``atexit`` handler is cut by the watchdog, and the command's code is kept each time."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _leave_after(setup: str, code: int = 3) -> tuple[int, float, str]:
    """Run ``setup`` then ``leave(code)`` in a fresh interpreter: (exit code, seconds from
    the start, stderr)."""
    program = textwrap.dedent(setup) + f"\nfrom aitune_fp.cli.entry import leave\nleave({code})\n"
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", program],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.returncode, time.monotonic() - start, done.stderr


def test_an_idle_executor_does_not_hold_the_exit() -> None:
    """A ThreadPoolExecutor left open (as Inductor leaves its compile pool) is shut down the
    way Python does it: the process ends at once with the command's code and no warning."""
    setup = """
    import concurrent.futures
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    assert pool.submit(lambda: 41).result() == 41
    """
    code, seconds, err = _leave_after(setup)
    assert code == 3 and seconds < 4.0 and "warning" not in err, err


def test_a_stuck_thread_is_named_and_left_behind() -> None:
    """A non-daemon thread that never ends is joined for at most the bound, named in one
    warning line, and the process still exits with the command's code."""
    setup = """
    import threading, time
    threading.Thread(target=time.sleep, args=(3600,), name="stuck-worker").start()
    """
    code, seconds, err = _leave_after(setup)
    assert code == 3 and seconds < 12.0, err
    assert "leaving with threads still running: stuck-worker" in err


def test_a_hanging_atexit_handler_is_cut_by_the_watchdog() -> None:
    """An atexit handler that sleeps for an hour ends with the watchdog's one line naming
    the step, and the command's code."""
    setup = """
    import atexit, time
    atexit.register(time.sleep, 3600)
    """
    code, seconds, err = _leave_after(setup, code=0)
    assert code == 0 and seconds < 15.0, err
    assert "did not finish in 8 s (running the atexit handlers)" in err
