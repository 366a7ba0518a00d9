"""The long-lived tuning service's process (``python -m aitune_fp.cli.service_main``,
started by ``aitune-fp service start``).

Rules:
- one service per user and folder: it holds an exclusive lock on ``service.lock`` for its
  whole life, and a second one exits at once;
- before it listens it pays, once, what every tune process and the workers' fork server
  otherwise pay at start (:func:`warm_up`): torch, every backend's libraries (those a
  fork server may import), Inductor's compiler modules and CPU probe, matplotlib's
  drawing, the CLI's tune path and ``tune-generate``'s (:data:`GENERATION_MODULES`); it
  starts the workers' fork server with the same libraries and waits until that has
  imported them too; then it collects and freezes its heap (as
  :mod:`~aitune_fp.effects.isolation.frozen_heap` does in the fork server);
- its digest (:func:`~aitune_fp.effects.isolation.service_wire.digest`) is taken before
  those imports, as a client's is; what they added to the environment (Inductor's cache
  folder) is passed to each tune under the client's own environment;
- it creates no tensor, starts no Python thread and touches no device, so a plain fork of
  it is as safe as one of the fork server, which imports the same libraries (native
  threads those start on import, ONNX Runtime's, are in both); it logs the counts, and
  refuses to serve if a Python thread runs;
- the socket is bound under a temporary name, made ``0600`` and renamed into place once
  listening, so a client never finds a socket nobody answers on; the service's loop is
  :mod:`~aitune_fp.effects.isolation.service_daemon`, its tunes
  :mod:`~aitune_fp.effects.isolation.service_child`.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import gc
import importlib
import os
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, NoReturn

from aitune_fp.cli.head_start import LIBRARIES
from aitune_fp.core.serving.service_messages import TuneAsked
from aitune_fp.effects.isolation import server
from aitune_fp.effects.isolation import service_wire as wire
from aitune_fp.effects.isolation.ready import wait_ready
from aitune_fp.effects.isolation.reaping import say
from aitune_fp.effects.isolation.service_daemon import Service

CLI_MODULES: Final = (
    "torch",
    "cloudpickle",
    "matplotlib.figure",
    "matplotlib.backends.backend_agg",
    "rich.console",
    "aitune_fp.models",
    "aitune_fp.cli.main",
    "aitune_fp.cli.entry",
    "aitune_fp.cli.tune_commands",
    "aitune_fp.cli.console",
    "aitune_fp.cli.plot",
    "aitune_fp.cli.factory",
    "aitune_fp.shell.tune_module",
    "aitune_fp.shell.persist",
    "aitune_fp.effects.isolation.isolated",
    "aitune_fp.effects.isolation.service_child",
    "aitune_fp.effects.backends.registry",
)
GENERATION_MODULES: Final = (
    "transformers.modeling_utils",
    "transformers.generation",
    "aitune_fp.cli.generate_commands",
    "aitune_fp.shell.generation.tune_generate",
)
"""``tune-generate``'s path (Hugging Face's model and generation machinery, not any one
architecture's modules): a missing ``transformers`` is one warm-up line, as any extra."""


def libraries() -> list[str]:
    """Every backend's libraries a fork server may import (the head start's table)."""
    return [lib for libs in LIBRARIES.values() for lib in libs]


def warm_up() -> None:
    """Import what a tune and its workers need, start the fork server, freeze the heap."""
    for name in (*CLI_MODULES, *GENERATION_MODULES, *libraries(), server.COMPILER_IMPORTS):
        try:
            importlib.import_module(name)
        except Exception as error:  # a missing extra: its backend reports it in the tune
            say(f"warm-up: {name} not imported: {type(error).__name__}: {error}")
    server.start(libraries())
    wait_ready()  # the server forks once it has imported everything
    gc.collect()
    gc.freeze()


def _forked(message: TuneAsked, fds: list[int], close: list[int]) -> NoReturn:
    from aitune_fp.cli.main import run_forked
    from aitune_fp.effects.isolation.service_child import become_tune

    become_tune(message, fds, close, run_forked)


def _listen(path: Any) -> socket.socket:
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        temporary.unlink()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(temporary))
    os.chmod(temporary, 0o600)
    listener.listen(16)
    os.replace(temporary, path)
    return listener


def main() -> int:
    """Run the service until it is stopped or idle."""
    args = _arguments()
    folder = wire.private_dir(create=True)
    lock = _locked(folder)
    if lock is None:
        say("another service holds the lock; exiting")
        return 0
    warm = _warmed()
    if warm is None:
        server.shutdown()
        return 1
    path = folder / wire.SOCKET
    service = Service(
        _listen(path),
        path,
        args.idle_timeout,
        _forked,
        private_fds=[lock],
        digest=warm.digest,
        warm_env=warm.added,
        info=warm.info(folder),
    )
    say(f"listening on {path} (idle timeout {args.idle_timeout:g} s)")
    service.serve()
    return 0


def _arguments() -> argparse.Namespace:
    """The service's command line: ``--idle-timeout`` seconds (default 900)."""
    parser = argparse.ArgumentParser(prog="aitune_fp.cli.service_main")
    parser.add_argument("--idle-timeout", type=float, default=900.0)
    return parser.parse_args()


def _locked(folder: Path) -> int | None:
    """The service's lock held (its descriptor), or ``None`` when another service holds it."""
    lock = os.open(folder / wire.LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return None
    return lock


@dataclass(frozen=True, slots=True)
class _Warm:
    """What the warm-up left: the client-side digest, the environment it added, its seconds."""

    digest: str
    added: dict[str, str]
    seconds: float

    def info(self, folder: Path) -> dict[str, Any]:
        """The service's ``info`` for its clients."""
        return {"warm_seconds": self.seconds, "log": str(folder / wire.LOG), "started": time.time()}


def _warmed() -> _Warm | None:
    """Warm up (:func:`warm_up`) and log the thread counts; ``None`` when a Python thread
    started (forking would be unsafe)."""
    began = time.monotonic()
    mine, before = wire.digest(), dict(os.environ)  # before the imports, as a client's
    say("warming up")
    warm_up()
    added = {key: value for key, value in os.environ.items() if key not in before}
    warm = time.monotonic() - began
    if _threads_said(warm) != 1:
        say("refusing to serve: a thread started during the warm-up, forking would be unsafe")
        return None
    return _Warm(mine, added, warm)


def _threads_said(warm: float) -> int:
    """Log the warm-up's seconds, the thread counts (Python's, and all including the
    libraries' own) and the fork server's pid; the Python thread count."""
    threads = threading.active_count()
    native = len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else 0
    say(
        f"warm in {warm:.1f} s; {threads} Python thread(s), {native} in all (libraries' own, "
        f"as in the fork server); fork server {server.server_pid()}"
    )
    return threads


if __name__ == "__main__":
    raise SystemExit(main())
