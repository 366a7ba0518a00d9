"""The long-lived tuning service's loop: accept a CLI invocation, fork a fresh tune for it,
report its exit; stop when asked or idle.

Rules:
- the policy (who is refused, when a tune is killed, when the service stops, what is
  reported) is the pure state machine :mod:`aitune_fp.core.serving.service_state`; this
  loop only turns what happened (a request, a fork, a tune's end, a client gone, a tick,
  a signal) into its message and carries out the actions ``step`` returns, in order;
- the service is warm (torch, the backends' libraries, the workers' fork server; see
  :mod:`aitune_fp.cli.service_main`) and single-threaded; it never runs a job, loads a
  model or touches a device itself;
- each ``tune`` request (the client's argv, working directory, environment and its
  stdin/stdout/stderr) gets a fresh process: a plain ``os.fork`` of the service
  (:mod:`.service_child` runs the CLI there and exits with its code), so a tune starts
  with the service's imports and nothing of any earlier tune; the client first hears the
  tune's pid (to forward Ctrl-C and SIGTERM), then its exit code (``128 + n`` for
  signal ``n``); a client whose :func:`~.service_wire.digest` differs from the service's
  is refused with the reason and tunes in its own process;
- before each fork the fork server is checked and restarted if it died;
- on stopping (``stop``, SIGTERM, SIGINT, SIGHUP, or idle), the running tunes are
  terminated (SIGKILL after the grace), their codes reported, the fork server stopped and
  the socket removed.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NoReturn

from pyrsistent import pmap

from aitune_fp.core.serving import service_messages as said
from aitune_fp.core.serving import service_state as policy
from aitune_fp.effects.isolation import server
from aitune_fp.effects.isolation.reaping import kill_group, kill_orphans, say
from aitune_fp.effects.isolation.service_wire import digest, peer_uid, receive, send

Child = Callable[[said.TuneAsked, list[int], list[int]], NoReturn]


@dataclass
class Tune:
    """A running tune's handles: its process, the pidfd that says it ended, its client."""

    pid: int
    pidfd: int
    conn: socket.socket


@dataclass(frozen=True, slots=True)
class Received:
    """One request as read: its connection, message (or why it could not be read) and
    descriptors."""

    conn: socket.socket
    message: said.Request | said.Refused
    fds: list[int]


@dataclass
class Service:
    """The loop's handles and the policy's state (see the module's rules)."""

    listener: socket.socket
    socket_path: Path
    idle: float
    child: Child
    private_fds: list[int] = field(default_factory=list)
    digest: str = field(default_factory=digest)
    warm_env: dict[str, str] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    tunes: dict[int, Tune] = field(default_factory=dict)
    selector: Any = field(default_factory=selectors.DefaultSelector)
    socket_file: tuple[int, int] = (0, 0)
    signalled: str = ""
    state: policy.DaemonState = field(init=False)

    def __post_init__(self) -> None:
        """The policy's first state; the socket file as it is now (ours), so that closing
        never removes one a later service put there."""
        self.state = policy.DaemonState(self.idle, self.digest, last=time.monotonic())
        info = self.socket_path.stat()
        self.socket_file = (info.st_dev, info.st_ino)

    @property
    def served(self) -> int:
        """How many tunes have ended."""
        return self.state.served

    def serve(self) -> None:
        """Answer requests until stopped or idle; then clean up."""
        signals = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
        previous = {sig: signal.signal(sig, self._on_signal) for sig in signals}
        self.selector.register(self.listener, selectors.EVENT_READ, ("accept", None))
        try:
            while not self.state.stopping:
                for key, _ in self.selector.select(min(1.0, self.idle)):
                    self._event(*key.data)
                if self.signalled:
                    self._feed(policy.Signalled(self.signalled))
                self._feed(policy.Tick(time.monotonic()))
        finally:
            self._close()
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.signalled = signal.Signals(signum).name

    def _feed(self, message: policy.Message, request: Received | None = None) -> None:
        """Step the policy with ``message`` and carry out its actions."""
        self.state, actions = policy.step(self.state, message)
        for action in actions:
            self._do(action, request)

    def _do(self, action: policy.Action, request: Received | None) -> None:
        """Carry out one action of the policy (a reply and a fork need their request)."""
        match action:
            case policy.Respond(reply) if request is not None:
                send(request.conn, self._facts(reply) if isinstance(reply, said.Status) else reply)
            case policy.Fork() if request is not None:
                self._fork(request)
            case policy.Kill(pid, name):
                kill_group(pid, getattr(signal, name))
            case policy.Report(pid, code):
                self._report(pid, code)
            case policy.KillOrphans():
                kill_orphans(server.server_pid())
            case policy.LogLine(line):
                say(line)

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
            self._gone(tune)

    def _request(self, conn: socket.socket) -> None:
        """Read one request and let the policy answer it (a forked tune keeps the
        connection until it ends; any other is closed)."""
        conn.settimeout(10.0)
        request = Received(conn, said.StatusAsked(), [])
        try:
            same = peer_uid(conn) == os.getuid()
            if same:
                body, fds = receive(conn)
                request = Received(conn, said.decode_request(body), fds)
            self._feed(_asked(request, same, time.monotonic()), request)
        except (OSError, EOFError, ValueError) as error:
            say(f"a request failed: {type(error).__name__}: {error}")
        finally:
            for fd in request.fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
        if not any(t.conn is conn for t in self.tunes.values()):
            with contextlib.suppress(OSError):
                conn.close()

    def _fork(self, request: Received) -> None:
        conn, asked = request.conn, request.message
        if not isinstance(asked, said.TuneAsked):  # the policy forks only a tune
            return
        server.keep_running()
        close = [self.listener.fileno(), self.selector.fileno(), conn.fileno(), *self.private_fds]
        for tune in self.tunes.values():
            close += [tune.pidfd, tune.conn.fileno()]
        message = replace(asked, env=pmap({**self.warm_env, **asked.env}))
        pid = os.fork()
        if pid == 0:  # pragma: no cover (the child never returns)
            self.child(message, request.fds, close)
        tune = Tune(pid, os.pidfd_open(pid), conn)
        self.tunes[pid] = tune
        self._feed(policy.Forked(pid, time.monotonic()))
        say(f"tune {pid} started: {' '.join(message.argv)}")
        try:
            conn.settimeout(10.0)
            send(conn, said.Started(pid))
            conn.setblocking(False)
            self.selector.register(conn, selectors.EVENT_READ, ("client", tune))
        except OSError:
            self._gone(tune)
        self.selector.register(tune.pidfd, selectors.EVENT_READ, ("ended", tune))

    def _gone(self, tune: Tune) -> None:
        """Its client went away: no longer listened to; the policy terminates the tune."""
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(tune.conn)
        self._feed(policy.ClientGone(tune.pid, time.monotonic()))

    def _ended(self, tune: Tune) -> None:
        """Reap the tune and tell the policy its exit code."""
        _, status = os.waitpid(tune.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        self.selector.unregister(tune.pidfd)
        os.close(tune.pidfd)
        self._feed(policy.TuneEnded(tune.pid, 128 - code if code < 0 else code, time.monotonic()))

    def _report(self, pid: int, code: int) -> None:
        """Tell tune ``pid``'s client its exit ``code``; close the connection."""
        tune = self.tunes.pop(pid)
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(tune.conn)
        with contextlib.suppress(OSError):
            tune.conn.setblocking(True)
            tune.conn.settimeout(5.0)
            send(tune.conn, said.Exited(code))
        with contextlib.suppress(OSError):
            tune.conn.close()

    def _facts(self, status: said.Status) -> said.Status:
        """The policy's ``status`` with the loop's own part: its start-up facts, its pid,
        the fork server's."""
        return replace(status, **self.info, pid=os.getpid(), fork_server=server.server_pid())

    def _close(self) -> None:
        if not self.state.stopping:
            say("stopping: error")
        with contextlib.suppress(OSError):
            info = self.socket_path.stat()
            if (info.st_dev, info.st_ino) == self.socket_file:
                self.socket_path.unlink()
        with contextlib.suppress(OSError):
            self.listener.close()
        for tune in list(self.tunes.values()):
            kill_group(tune.pid, signal.SIGTERM)
        deadline = time.monotonic() + policy.GRACE
        while self.tunes:
            if time.monotonic() > deadline:
                for tune in self.tunes.values():
                    kill_group(tune.pid, signal.SIGKILL)
            for key, _ in self.selector.select(0.2):
                if key.data[0] == "ended":
                    self._ended(key.data[1])
        server.shutdown()
        say("stopped")


def _asked(request: Received, same_user: bool, now: float) -> policy.ServiceRequest:
    """The policy's view of a request: its op, digest and descriptors, or why it could not
    be read."""
    message, count = request.message, len(request.fds)
    if isinstance(message, said.Refused):
        return policy.ServiceRequest("", now, same_user, None, count, message.refused)
    digest = message.digest if isinstance(message, said.TuneAsked) else None
    return policy.ServiceRequest(said.tag_of(message), now, same_user, digest, count)
