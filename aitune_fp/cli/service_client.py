"""The CLI's side of the long-lived tuning service: attach a ``tune`` or ``demo`` to it, or
ask it for its status or to stop.

Rules (standard library only on import, before the CLI imports anything heavy or anything
of the core; the typed messages, :mod:`aitune_fp.core.serving.service_messages`, are
imported once a service answers):
- ``aitune-fp tune`` and ``demo`` attach when this user's service is running
  (:func:`attach`), unless ``--no-service`` is given, ``AITUNE_FP_SERVICE=0``, or the
  tune is on a CUDA device (:func:`on_cuda`); without
  a running service nothing changes: the command runs in this process as always;
- attaching sends the command line, working directory, environment, search path, start
  time and this process's stdin/stdout/stderr; the service forks a fresh tune that
  prints here and whose exit code this process exits with; Ctrl-C, SIGTERM and SIGHUP
  here are forwarded to the tune (SIGHUP as SIGTERM) through a pidfd, so a signal never
  reaches a recycled pid;
- when none is running, the command starts one in the background (:func:`autostart`:
  detached, in its own session, the idle timeout of ``aitune-fp service start``) and runs
  its own tune in this process without waiting; later commands attach; a service that
  cannot be started is one warning line and the tune goes on here; ``tune-generate`` and
  other tuning verbs call :func:`autostart` (or :func:`attach`) the same way;
- Ctrl-Z at the client stops the tune too (``SIGSTOP``, as the tune is not in the
  terminal's process group) and ``fg`` continues both; a window-size change
  (``SIGWINCH``) is forwarded;
- any failure to attach (no socket, a stale socket of a service that died — removed
  here —, a folder that is not private, a refusal, a service of another installation:
  a service of an older protocol, a malformed answer: a one-line note) means the command
  runs in this process, so attaching is never worse than not; once the tune started, a
  service that dies under it (or answers what cannot be read) ends this command with
  exit code 1 and one line.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from aitune_fp.effects.isolation import service_wire as wire

if TYPE_CHECKING:
    from aitune_fp.core.serving.service_messages import Reply, Request

ATTACHING: Final = frozenset({"tune", "demo", "tune-generate"})
FORWARDED: Final = {signal.SIGINT: signal.SIGINT, signal.SIGTERM: signal.SIGTERM,
                    signal.SIGHUP: signal.SIGTERM, signal.SIGWINCH: signal.SIGWINCH,
                    signal.SIGCONT: signal.SIGCONT}  # fmt: skip


def wants_service(argv: Sequence[str], env: dict[str, str] | None = None) -> bool:
    """Whether this command line should try the service (see the rules).

    >>> wants_service(["demo", "--model", "mlp"], {}), wants_service(["report", "r.json"], {})
    (True, False)
    >>> wants_service(["tune", "m.py:f", "--no-service"], {})
    False
    >>> wants_service(["demo"], {"AITUNE_FP_SERVICE": "0"})
    False
    >>> cuda = (["demo", "--device", "cuda"], ["demo", "--device=cuda:1"])
    >>> [wants_service(argv, {}) for argv in cuda]
    [False, False]
    """
    env = dict(os.environ) if env is None else env
    if env.get("AITUNE_FP_SERVICE", "1") == "0" or "--no-service" in argv or on_cuda(argv):
        return False
    command = next((a for a in argv if not a.startswith("-")), None)
    return command in ATTACHING


def on_cuda(argv: Sequence[str]) -> bool:
    """Whether the command line tunes on a CUDA device (``--device cuda…``): such a tune
    runs in its own process, never forked from the service, whose warm imports (Inductor's
    compiler) leave a process that a fork of it cannot use CUDA in (measured on an H200,
    torch 2.11+cu130: "Cannot re-initialize CUDA in forked subprocess")."""
    for i, arg in enumerate(argv):
        value = arg.removeprefix("--device=") if arg.startswith("--device=") else None
        if arg == "--device" and i + 1 < len(argv):
            value = argv[i + 1]
        if value is not None and value.startswith("cuda"):
            return True
    return False


def connect(timeout: float = 5.0) -> socket.socket | None:
    """A connection to this user's service, or ``None`` (a stale socket is removed)."""
    path = _listening_path()
    if path is None:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(path))
        return sock
    except ConnectionRefusedError:  # nobody listens: the service died
        sock.close()
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    except OSError:
        sock.close()
        return None


def _listening_path() -> Path | None:
    """The service's socket when one exists in a safe private folder, else ``None`` (an
    unsafe folder is one note)."""
    try:
        path = wire.private_dir(create=False) / wire.SOCKET
    except OSError:
        return None
    except wire.Unsafe as error:
        _note(f"service not used: {error}")
        return None
    return path if wire.is_socket(path) else None


def ask(request: Request, timeout: float = 5.0) -> Reply | None:
    """The service's answer to ``request`` (a status, a stop), or ``None`` when none runs."""
    sock = connect(timeout)
    if sock is None:
        return None
    with sock:
        try:
            wire.send(sock, request)
            return wire.reply(sock)
        except (OSError, EOFError):
            return None


def attach(argv: Sequence[str]) -> int | None:
    """Run this command line in the service: its exit code, or ``None`` to run it here."""
    if not wants_service(argv) or not _stdio_open():
        return None
    sock = connect()
    if sock is None:
        autostart()
        return None
    with sock:
        return _tune_there(sock, argv)


def _tune_there(sock: socket.socket, argv: Sequence[str]) -> int | None:
    """Send the command line and this process's stdio to the service: the tune's exit code,
    or ``None`` to run it here (no answer, or the service refused it: one note)."""
    from aitune_fp.core.serving.service_messages import Started

    try:
        wire.send(sock, wire.tune_asked(argv), [0, 1, 2])
        reply = wire.reply(sock)
    except (OSError, EOFError):
        return None
    if not isinstance(reply, Started):
        why = getattr(reply, "refused", f"unexpected answer {reply!r}")
        _note(f"service not used: {why}; tuning in this process")
        return None
    return _wait(sock, reply.pid)


def _handlers(pidfd: int | None) -> dict[signal.Signals, Any]:
    """The client's handlers: forward each signal to the tune; Ctrl-Z stops both."""

    def forward(signum: int, frame: Any) -> None:
        if pidfd is not None:
            with contextlib.suppress(OSError):
                sent = FORWARDED.get(signal.Signals(signum), signal.Signals(signum))
                signal.pidfd_send_signal(pidfd, sent)

    def suspend(signum: int, frame: Any) -> None:  # Ctrl-Z: the tune stops, then this process
        forward(signal.SIGSTOP, frame)
        signal.signal(signal.SIGTSTP, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTSTP)
        signal.signal(signal.SIGTSTP, suspend)  # continued: SIGCONT reached the tune too

    return {**dict.fromkeys(FORWARDED, forward), signal.SIGTSTP: suspend}


def _wait(sock: socket.socket, pid: int) -> int:
    """Forward signals to the tune until the service reports its exit code."""
    from aitune_fp.core.serving.service_messages import Exited

    pidfd = _pidfd(pid)
    previous = {sig: signal.signal(sig, h) for sig, h in _handlers(pidfd).items()}
    sock.settimeout(None)
    try:
        ended = wire.reply(sock)
    except (OSError, EOFError):
        ended = None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if pidfd is not None:
            os.close(pidfd)
    if isinstance(ended, Exited):
        return ended.exit
    why = "ended during the tune" if ended is None else f"answered {ended!r}"
    _note(f"error: the service {why}")
    return 1


def _pidfd(pid: int) -> int | None:
    """A descriptor of process ``pid`` to signal it by, or ``None`` where none can be opened."""
    try:
        return os.pidfd_open(pid)
    except OSError:
        return None


def autostart(env: dict[str, str] | None = None) -> bool:
    """Start this user's service in the background unless opted out (``AITUNE_FP_SERVICE=0``)
    or one is already starting (its lock is held): whether one was started. Nothing waits
    for it; a service that cannot be started is one warning line."""
    env = dict(os.environ) if env is None else env
    if env.get("AITUNE_FP_SERVICE", "1") == "0":
        return False
    from aitune_fp.cli.service_start import spawn

    try:
        return spawn(env)
    except (OSError, wire.Unsafe) as error:
        _note(f"warning: the tuning service could not be started ({error}); tuning here")
        return False


def _stdio_open() -> bool:
    """Whether descriptors 0, 1 and 2 are open (they are what the tune prints to)."""
    try:
        for fd in (0, 1, 2):
            os.fstat(fd)
    except OSError:
        return False
    return True


def _note(line: str) -> None:
    print(f"aitune-fp: {line}", file=sys.stderr)


def socket_path() -> Path:
    """Where this user's service listens (whether or not one does)."""
    return wire.service_dir() / wire.SOCKET
