"""Drive a session to its end with any interpreter: one loop, effects in ``answer``.

Rules: commands are carried out in the order the session gives them; ``answer(command)``
returns the event for a measuring command and ``None`` for the others (a ``Build`` must
be answered by a ``Profiled``, a ``TimeRounds`` or ``Verify`` by a ``Timed``, a
``Prebuild`` by a ``Prebuilt``); the loop
ends at ``Done``, which every session reaches.

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
from collections.abc import Callable

from aitune_fp.core.session.commands import Build, Command, Done, Prebuild, TimeRounds, Verify
from aitune_fp.core.session.events import Event, Profiled, Timed
from aitune_fp.core.session.session import start, step
from aitune_fp.core.session.state import Session, SessionPlan

Answer = Callable[[Command], Event | None]


def run(plan: SessionPlan, answer: Answer) -> tuple[Session, Done]:
    """The finished session and its ``Done``, every command carried out by ``answer``."""
    session, commands = start(plan)
    queue = deque(commands)
    while queue:
        command = queue.popleft()
        if isinstance(command, Done):
            return session, command
        event = answer(command)
        if isinstance(command, Build | Prebuild | TimeRounds | Verify):
            if event is None:
                raise ValueError(f"{type(command).__name__} needs an answer")
            session, more = step(session, event)
            queue.extend(more)
    raise ValueError("the session stopped without Done")  # pragma: no cover - see the laws


__all__ = ["Answer", "Profiled", "Timed", "run"]
