"""Drive a session to its end with any interpreter: the one loop, effects in ``answer``.

Rules: commands are carried out in the order the session gives them; ``answer(command)``
returns the event for a measuring command and ``None`` for the others (a ``Build`` must
be answered by a ``Profiled``, a ``TimeRounds`` or ``Verify`` by a ``Timed``, a
``Prebuild`` by a ``Prebuilt``); before each command, ``watch(session, command)`` is told
the session as it stands (its phase says where the run is: an interpreter times its
phases from their changes, :func:`moved`); the loop ends at ``Done``, which every
session reaches. :func:`run` starts from a plan, :func:`carry` from a session and the
commands it gave (a session put together after sweeps run elsewhere). Every driver of a
session is this loop: the shell's interpreter, the final rounds outside a tune, the
simulated machine and a replay.

>>> from returns.result import Success
>>> from aitune_fp.core.records import Profile
>>> from aitune_fp.core.strategies import max_throughput
>>> ms = {"eager": 4.0, "a": 3.0, "b": 1.0}
>>> def fake(command):
...     if isinstance(command, Build):
...         profile = Profile(command.name, {1: [ms[command.name]]})
...         return Profiled(command.name, Success(profile), live=True)
...     return None
>>> session, done = run(SessionPlan(max_throughput, ("a", "b")), fake)
>>> done.selection.unwrap().backend, [type(e).__name__ for e in session.events]
('b', ['Profiled', 'Profiled', 'Profiled'])
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable

from aitune_fp.core.session.commands import Build, Command, Done, Prebuild, TimeRounds, Verify
from aitune_fp.core.session.events import Event, Profiled, Timed
from aitune_fp.core.session.phase import Phase
from aitune_fp.core.session.session import start, step
from aitune_fp.core.session.state import Session, SessionPlan

Answer = Callable[[Command], Event | None]
Watch = Callable[[Session, Command], None]
MEASURING = (Build, Prebuild, TimeRounds, Verify)
"""The commands answered by an event."""


def unwatched(_session: Session, _command: Command) -> None:
    """Watch nothing."""


def run(plan: SessionPlan, answer: Answer, watch: Watch = unwatched) -> tuple[Session, Done]:
    """The finished session and its ``Done``, every command carried out by ``answer``."""
    return carry(*start(plan), answer, watch)


def carry(
    session: Session, commands: Iterable[Command], answer: Answer, watch: Watch = unwatched
) -> tuple[Session, Done]:
    """``session`` driven to its end from ``commands`` (see the module's rules)."""
    queue = deque(commands)
    while queue:
        command = queue.popleft()
        watch(session, command)
        if isinstance(command, Done):
            return session, command
        event = answer(command)
        if isinstance(command, MEASURING):
            if event is None:
                raise ValueError(f"{type(command).__name__} needs an answer")
            session, more = step(session, event)
            queue.extend(more)
    raise ValueError("the session stopped without Done")  # pragma: no cover - see the laws


def moved(seen: Phase | None, session: Session, command: Command) -> bool:
    """Whether the run has left the phase ``seen`` (``None``: none seen yet) as it carries
    out ``command``: a measuring command or ``Done`` given in another phase (the notes
    and record writes a step gives before them still belong to the phase they close).

    >>> from aitune_fp.core.strategies import min_latency
    >>> from aitune_fp.core.session.phase import Prebuilding, Sweeping
    >>> s = Session(SessionPlan(min_latency, ("a",)), phase=Sweeping(1))
    >>> moved(Sweeping(0), s, Build("a")), moved(Prebuilding(), s, Build("a"))
    (False, True)
    """
    changed = seen is None or type(session.phase) is not type(seen)
    return changed and isinstance(command, (*MEASURING, Done))


__all__ = ["Answer", "Profiled", "Timed", "Watch", "carry", "moved", "run"]
