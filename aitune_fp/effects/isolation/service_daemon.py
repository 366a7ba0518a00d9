"""The long-lived tuning service's loop: accept a CLI invocation, fork a fresh tune for it,
report its exit; stop when asked or idle.

Rules:
- the service is warm (torch, the backends' libraries, the workers' fork server; see
  :mod:`aitune_fp.cli.service_main`) and single-threaded; it never runs a job, loads a
  model or touches a device itself;
- each ``tune`` request (the client's argv, working directory, environment and its
  stdin/stdout/stderr) gets a fresh process: a plain ``os.fork`` of the service
  (:mod:`.service_child` runs the CLI there and exits with its code), so a tune starts
  with the service's imports and nothing of any earlier tune; the client first hears the
  tune's pid (to forward Ctrl-C and SIGTERM), then its exit code (``128 + n`` for
  signal ``n``);
- a request from another uid, or from a client whose :func:`~.service_wire.digest`
  differs from the service's (another installation, search path or import-time
  environment), is refused with the reason; the client then tunes in its own process;
- a client that goes away while its tune runs gets its tune terminated (SIGTERM to the
  tune's process group, SIGKILL :data:`GRACE` seconds later); when no tune runs, any
  process still left under the fork server (a worker of a tune that was killed) is
  killed;
- before each fork the fork server is checked and restarted if it died;
- ``stop`` (or SIGTERM, SIGINT, SIGHUP to the service) terminates the running tunes,
  reports their codes, stops the fork server, removes the socket and exits; so does an
  idle timeout: ``idle`` seconds with no tune running and no request.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, NoReturn

from aitune_fp.effects.isolation import server
from aitune_fp.effects.isolation.service_wire import digest, peer_uid, receive, send

GRACE: Final = 10.0
Child = Callable[[dict[str, Any], list[int], list[int]], NoReturn]


def say(line: str) -> None:
    """One line in the service's log (its stderr), stamped."""
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} [{os.getpid()}] {line}", file=sys.stderr,
          flush=True)  # fmt: skip


@dataclass
class Tune:
    """A running tune: its process, the pidfd that says it ended, its client's connection."""

    pid: int
    pidfd: int
    conn: socket.socket
    began: float
    abandoned: float | None = None


@dataclass
class Service:
    """The service's state (see the module's rules)."""

    listener: socket.socket
    socket_path: Path
    idle: float
    child: Child
    private_fds: list[int] = field(default_factory=list)
    digest: str = field(default_factory=digest)
    warm_env: dict[str, str] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    tunes: dict[int, Tune] = field(default_factory=dict)
    served: int = 0
    stopping: str = ""
    last: float = field(default_factory=time.monotonic)
    selector: Any = field(default_factory=selectors.DefaultSelector)
    socket_file: tuple[int, int] = (0, 0)

    def __post_init__(self) -> None:
        """Remember the socket file as it is now (ours), so that closing never removes one
        a later service put there."""
        info = self.socket_path.stat()
        self.socket_file = (info.st_dev, info.st_ino)

    def serve(self) -> None:
        """Answer requests until stopped or idle; then clean up."""
        signals = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
        previous = {sig: signal.signal(sig, self._on_signal) for sig in signals}
        self.selector.register(self.listener, selectors.EVENT_READ, ("accept", None))
        try:
            while not self.stopping:
                for key, _ in self.selector.select(min(1.0, self.idle)):
                    self._event(*key.data)
                self._tick()
        finally:
            self._close()
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.stopping = f"signal {signal.Signals(signum).name}"

    def _event(self, kind: str, tune: Tune | None) -> None:
        if kind == "accept":
            with contextlib.suppress(OSError):
                conn, _ = self.listener.accept()
                self._request(conn)
        elif kind == "ended" and tune is not None:
            self._ended(tune)
        elif kind == "client" and tune is not None:
            with contextlib.suppress(OSError):
                if tune.conn.recv(1024, socket.MSG_DONTWAIT):
                    return  # a client says nothing while its tune runs: ignored
            self._abandon(tune)

    def _tick(self) -> None:
        now = time.monotonic()
        for tune in list(self.tunes.values()):
            if tune.abandoned is not None and now - tune.abandoned > GRACE:
                _kill(tune.pid, signal.SIGKILL)
        if not self.tunes and now - self.last > self.idle:
            self.stopping = f"idle for {self.idle:g} s"

    def _request(self, conn: socket.socket) -> None:
        conn.settimeout(10.0)
        fds: list[int] = []
        try:
            if peer_uid(conn) != os.getuid():
                send(conn, {"refused": "the service belongs to another user"})
                return
            message, fds = receive(conn)
            self.last = time.monotonic()
            op = message.get("op")
            if op == "status":
                send(conn, self.status())
            elif op == "stop":
                self.stopping = "asked to stop"
                send(conn, {"stopping": True, "running": len(self.tunes)})
            elif op == "tune" and message.get("digest") != self.digest:
                send(conn, {"refused": "it was started for another installation, search "
                            "path or environment"})  # fmt: skip
            elif op == "tune" and len(fds) == 3:
                self._fork(conn, message, fds)
                return  # the connection stays open until the tune ends
            else:
                send(conn, {"refused": f"unknown request {op!r} or missing descriptors"})
        except (OSError, EOFError, ValueError) as error:
            say(f"a request failed: {type(error).__name__}: {error}")
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
        with contextlib.suppress(OSError):
            conn.close()

    def _fork(self, conn: socket.socket, message: dict[str, Any], fds: list[int]) -> None:
        server.keep_running()
        close = [self.listener.fileno(), self.selector.fileno(), conn.fileno(), *self.private_fds]
        for tune in self.tunes.values():
            close += [tune.pidfd, tune.conn.fileno()]
        message = {**message, "env": {**self.warm_env, **message.get("env", {})}}
        pid = os.fork()
        if pid == 0:  # pragma: no cover (the child never returns)
            self.child(message, fds, close)
        tune = Tune(pid, os.pidfd_open(pid), conn, time.monotonic())
        self.tunes[pid] = tune
        say(f"tune {pid} started: {' '.join(message.get('argv', []))}")
        try:
            conn.settimeout(10.0)
            send(conn, {"pid": pid})
            conn.setblocking(False)
            self.selector.register(conn, selectors.EVENT_READ, ("client", tune))
        except OSError:
            self._abandon(tune)
        self.selector.register(tune.pidfd, selectors.EVENT_READ, ("ended", tune))

    def _abandon(self, tune: Tune) -> None:
        if tune.abandoned is None:
            say(f"tune {tune.pid}: its client went away; terminating it")
            tune.abandoned = time.monotonic()
            _kill(tune.pid, signal.SIGTERM)
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(tune.conn)

    def _ended(self, tune: Tune) -> None:
        _, status = os.waitpid(tune.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        code = 128 - code if code < 0 else code
        self.selector.unregister(tune.pidfd)
        os.close(tune.pidfd)
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(tune.conn)
        with contextlib.suppress(OSError):
            tune.conn.setblocking(True)
            tune.conn.settimeout(5.0)
            send(tune.conn, {"exit": code})
        with contextlib.suppress(OSError):
            tune.conn.close()
        del self.tunes[tune.pid]
        self.served += 1
        self.last = time.monotonic()
        say(f"tune {tune.pid} ended with {code} after {self.last - tune.began:.1f} s")
        if not self.tunes:
            _kill_orphans(server.server_pid())

    def status(self) -> dict[str, Any]:
        """What ``aitune-fp service status`` shows."""
        return {
            **self.info,
            "pid": os.getpid(),
            "digest": self.digest,
            "served": self.served,
            "running": len(self.tunes),
            "idle_timeout": self.idle,
            "idle_for": 0.0 if self.tunes else time.monotonic() - self.last,
            "fork_server": server.server_pid(),
        }

    def _close(self) -> None:
        say(f"stopping: {self.stopping or 'error'}")
        with contextlib.suppress(OSError):
            info = self.socket_path.stat()
            if (info.st_dev, info.st_ino) == self.socket_file:
                self.socket_path.unlink()
        with contextlib.suppress(OSError):
            self.listener.close()
        for tune in list(self.tunes.values()):
            _kill(tune.pid, signal.SIGTERM)
        deadline = time.monotonic() + GRACE
        while self.tunes:
            if time.monotonic() > deadline:
                for tune in self.tunes.values():
                    _kill(tune.pid, signal.SIGKILL)
            for key, _ in self.selector.select(0.2):
                if key.data[0] == "ended":
                    self._ended(key.data[1])
        server.shutdown()
        say("stopped")


def _kill(pid: int, sig: int) -> None:
    """Signal a tune's process group (its own: the tune made itself a group leader)."""
    with contextlib.suppress(OSError):
        os.killpg(pid, sig)
    with contextlib.suppress(OSError):
        os.kill(pid, sig)


def _kill_orphans(parent: int | None) -> None:
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
            _kill(int(entry.name), signal.SIGKILL)
