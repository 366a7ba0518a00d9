"""A process forked from one whose workers' fork server runs uses that server and never
stops it (the tuning service's tunes)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import os, sys
from aitune_fp.effects.isolation import server
server.start()
ctx = server.context()
warm = ctx.Process(target=int); warm.start(); warm.join()
pid = os.fork()
if pid == 0:
    server.adopt_inherited()
    worker = ctx.Process(target=int)
    with server._main_hidden():
        worker.start()
    worker.join()
    server.shutdown()
    os._exit(0 if worker.exitcode == 0 and not server.running() else 3)
_, status = os.waitpid(pid, 0)
os.kill(server.server_pid(), 0)  # still alive: the child only forgot it
later = ctx.Process(target=int); later.start(); later.join()
print(os.waitstatus_to_exitcode(status), later.exitcode)
server.shutdown()
"""


def test_a_forked_process_uses_the_inherited_server_and_leaves_it_running() -> None:
    """The forked child starts a worker from the parent's server (multiprocessing's own
    check would fail: the server is not its child) and its shutdown leaves the server
    serving the parent."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=300, env=env, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["0", "0"]
