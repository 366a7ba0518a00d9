"""The tuning service's policy as a pure state machine: ``step(state, message) -> (state,
actions)``.

Rules (the loop that reads sockets, forks and signals is
:mod:`aitune_fp.effects.isolation.service_daemon`; it turns what happened into a message,
and carries out the actions in order):
- a request (:class:`ServiceRequest`) from another user is refused; one that could not be
  read is refused saying why; ``status`` is answered (:class:`Respond` of
  :func:`status_of`); ``stop`` stops the service (its reason
  ``asked to stop``) and answers how many tunes run; a ``tune`` from a client of another
  installation (its digest differs) is refused saying so; a ``tune`` with its three
  descriptors is forked (:class:`Fork`); anything else is refused naming the request; every
  request counts as activity (the idle clock restarts);
- a forked tune (:class:`Forked`) runs until it ends (:class:`TuneEnded`: its exit code is
  reported to its client, :class:`Report`, once; the served count grows; with no tune
  left, processes left under the fork server are killed, :class:`KillOrphans`);
- a client that goes away (:class:`ClientGone`) gets its tune a ``SIGTERM`` at once and
  a ``SIGKILL`` on the first tick :data:`GRACE` seconds later (:class:`Tick`), never
  before; a tune is abandoned once;
- with no tune running, a tick more than ``idle`` seconds after the last activity stops
  the service (``idle for N s``); a signal stops it (``signal NAME``); stopping is said
  once, and its reason kept;
- the state is frozen: nothing here reads a clock, a socket or a process; every time is
  the message's ``now``; what is said to a client is a typed reply
  (:mod:`~aitune_fp.core.serving.service_messages`).

>>> s = DaemonState(idle=60.0, digest="d")
>>> s, acts = step(s, ServiceRequest("tune", 1.0, same_user=True, digest="d", descriptors=3))
>>> acts
(Fork(),)
>>> s, acts = step(s, Forked(42, 1.5))
>>> s, acts = step(s, TuneEnded(42, 0, 9.0))
>>> acts[0], acts[-1], s.served, s.running
(Report(pid=42, code=0), KillOrphans(), 1, 0)
>>> step(s, Tick(70.0))[0].stopping
'idle for 60 s'

Longer than 260 lines: the messages, the actions and the step that maps one to the other are
one state machine.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Final

from pyrsistent import PMap, pmap

from aitune_fp.core.serving.service_messages import Refused, Reply, Status, Stopping

GRACE: Final = 10.0
"""Seconds between the SIGTERM and the SIGKILL of a tune whose client went away."""


@dataclass(frozen=True, slots=True)
class Running:
    """A running tune: its pid, when it began and when its client went away (if it did)."""

    pid: int
    began: float
    abandoned: float | None = None


@dataclass(frozen=True, slots=True)
class DaemonState:
    """The service's state (see the module's rules)."""

    idle: float
    digest: str
    tunes: PMap[int, Running] = field(default_factory=pmap)
    served: int = 0
    stopping: str = ""
    last: float = 0.0

    @property
    def running(self) -> int:
        """How many tunes run."""
        return len(self.tunes)


@dataclass(frozen=True, slots=True)
class ServiceRequest:
    """A client's request: its ``op``, when, whether its uid is the service's, its digest
    (``None``: none sent), how many descriptors came with it and why it could not be read
    (``""``: it was)."""

    op: str
    now: float
    same_user: bool = True
    digest: str | None = None
    descriptors: int = 0
    unreadable: str = ""


@dataclass(frozen=True, slots=True)
class Forked:
    """The tune asked for was forked as ``pid`` at ``now``."""

    pid: int
    now: float


@dataclass(frozen=True, slots=True)
class TuneEnded:
    """Tune ``pid`` ended with ``code`` (``128 + n`` for signal ``n``) at ``now``."""

    pid: int
    code: int
    now: float


@dataclass(frozen=True, slots=True)
class ClientGone:
    """The client of tune ``pid`` went away at ``now``."""

    pid: int
    now: float


@dataclass(frozen=True, slots=True)
class Tick:
    """Time passed: it is ``now``."""

    now: float


@dataclass(frozen=True, slots=True)
class Signalled:
    """The service got signal ``name`` (SIGTERM, SIGINT, SIGHUP)."""

    name: str


Message = ServiceRequest | Forked | TuneEnded | ClientGone | Tick | Signalled


@dataclass(frozen=True, slots=True)
class Respond:
    """Answer the request's client with ``reply`` and close its connection (to a
    :class:`~aitune_fp.core.serving.service_messages.Status` the loop adds its own facts,
    its pid and the fork server's)."""

    reply: Reply


@dataclass(frozen=True, slots=True)
class Fork:
    """Fork a tune for the request (the loop answers with :class:`Forked`)."""


@dataclass(frozen=True, slots=True)
class Kill:
    """Send ``signal`` to tune ``pid``'s process group."""

    pid: int
    signal: str


@dataclass(frozen=True, slots=True)
class Report:
    """Tell tune ``pid``'s client its exit ``code`` and close the connection."""

    pid: int
    code: int


@dataclass(frozen=True, slots=True)
class KillOrphans:
    """Kill every process left under the fork server (no tune runs)."""


@dataclass(frozen=True, slots=True)
class LogLine:
    """One line for the service's log."""

    line: str


Action = Respond | Fork | Kill | Report | KillOrphans | LogLine
Step = tuple[DaemonState, tuple[Action, ...]]
OTHER_INSTALLATION: Final = "it was started for another installation, search path or environment"


def step(state: DaemonState, message: Message) -> Step:
    """The state after ``message`` and what to do (see the module's rules)."""
    match message:
        case ServiceRequest():
            return _asked(state, message)
        case Forked(pid, now):
            tunes = state.tunes.set(pid, Running(pid, now))
            return replace(state, tunes=tunes), ()
        case TuneEnded():
            return _ended(state, message)
        case ClientGone(pid, now):
            return _gone(state, pid, now)
        case Tick(now):
            return _tick(state, now)
        case Signalled(name):
            return _stop(state, f"signal {name}")
    raise TypeError(f"not a service message: {message!r}")  # pragma: no cover


def _asked(state: DaemonState, m: ServiceRequest) -> Step:
    """A request answered, refused or forked (see the module's rules)."""
    if not m.same_user:
        return state, (Respond(Refused("the service belongs to another user")),)
    state = replace(state, last=m.now)
    if m.unreadable:
        return state, (Respond(Refused(m.unreadable)),)
    if m.op == "status":
        return state, (Respond(status_of(state, m.now)),)
    if m.op == "stop":
        stopped, said = _stop(state, "asked to stop")
        return stopped, (Respond(Stopping(state.running)), *said)
    if m.op == "tune" and m.digest != state.digest:
        return state, (Respond(Refused(OTHER_INSTALLATION)),)
    if m.op == "tune" and m.descriptors == 3:
        return state, (Fork(),)
    return state, (Respond(Refused(f"unknown request {m.op!r} or missing descriptors")),)


def _ended(state: DaemonState, m: TuneEnded) -> Step:
    """A tune's end reported once; orphans killed when none runs."""
    tune = state.tunes.get(m.pid)
    if tune is None:
        return state, ()
    tunes = state.tunes.remove(m.pid)
    state = replace(state, tunes=tunes, served=state.served + 1, last=m.now)
    line = LogLine(f"tune {m.pid} ended with {m.code} after {m.now - tune.began:.1f} s")
    rest: tuple[Action, ...] = () if tunes else (KillOrphans(),)
    return state, (Report(m.pid, m.code), line, *rest)


def _gone(state: DaemonState, pid: int, now: float) -> Step:
    """A tune whose client went away: terminated once."""
    tune = state.tunes.get(pid)
    if tune is None or tune.abandoned is not None:
        return state, ()
    tunes = state.tunes.set(pid, replace(tune, abandoned=now))
    said = LogLine(f"tune {pid}: its client went away; terminating it")
    return replace(state, tunes=tunes), (said, Kill(pid, "SIGTERM"))


def _tick(state: DaemonState, now: float) -> Step:
    """Abandoned tunes past their grace killed; an idle service stopped."""
    late = [
        t.pid for t in state.tunes.values() if t.abandoned is not None and now - t.abandoned > GRACE
    ]
    kills = tuple(Kill(pid, "SIGKILL") for pid in sorted(late))
    if not state.tunes and now - state.last > state.idle:
        stopped, said = _stop(state, f"idle for {state.idle:g} s")
        return stopped, (*kills, *said)
    return state, kills


def _stop(state: DaemonState, reason: str) -> Step:
    """The service stopping for ``reason`` (the first reason is kept)."""
    if state.stopping:
        return state, ()
    return replace(state, stopping=reason), (LogLine(f"stopping: {reason}"),)


def status_of(state: DaemonState, now: float) -> Status:
    """The state's part of ``aitune-fp service status`` (the loop adds its pid, the fork
    server's and its start-up facts).

    >>> status_of(DaemonState(idle=9.0, digest="d", last=1.0), 3.0).idle_for
    2.0
    """
    idle_for = 0.0 if state.tunes else now - state.last
    return Status(state.digest, state.served, state.running, state.idle, idle_for)
