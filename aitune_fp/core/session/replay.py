"""Replay a recorded run from its event log, with its own strategy or another one.

Rules:
- the log answers the session's commands: a ``Build`` by the logged ``Profiled`` of the
  same backend (the n-th build of a backend by its n-th answer, the last one again past
  them: a raced contender is built twice; one never built in the recorded run answers
  as a ``measure`` failure saying so), a ``TimeRounds`` or ``Verify`` by the logged
  ``Timed`` of that purpose,
  restricted to the participants asked for (none logged: no samples; who left, of the
  backends asked for), a ``Prebuild`` by
  the logged ``Prebuilt`` (none logged: one with no failures);
- replaying with the recorded plan reproduces the recorded commands and selection bit
  for bit (a law); with another plan the replay says where its commands first diverge
  from the recorded plan's, and what it selects from the same measurements (building
  ahead decides nothing, so a ``Prebuild`` is no decision a replay compares);
- decisions are compared as values, every field of them (a build's early stop, a
  timing's participants, plan and judge, the end's selection and verification): the
  divergence is the first decision whose line (:func:`describe`) differs, else, when
  every line agrees, the first that differs as a value (a judge's rule or parameters,
  an early stop's rule), its lines naming the first field that differs.

>>> from returns.result import Success
>>> from aitune_fp.core.records import Profile
>>> from aitune_fp.core.strategies import max_throughput, min_latency
>>> log = [Profiled(n, Success(Profile(n, {1: [ms], 8: [8 * ms2]})), True)
...        for n, ms, ms2 in [("eager", 2.0, 2.0), ("a", 1.0, 1.5), ("b", 1.5, 0.5)]]
>>> plan = SessionPlan(max_throughput, ("a", "b"))
>>> same = replay(plan, log)
>>> same.done.selection.unwrap().backend, same.diverged
('b', None)
>>> other = replay(plan, log, SessionPlan(min_latency, ("a", "b")))
>>> other.done.selection.unwrap().backend, other.diverged
('a', Divergence(index=3, recorded='close a', replayed='close b'))
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass
from functools import partial

from pyrsistent import pmap
from returns.result import Failure

from aitune_fp.core.records import BackendFailure
from aitune_fp.core.report.notes import render
from aitune_fp.core.session.commands import (
    Build,
    Close,
    Command,
    Done,
    Prebuild,
    Say,
    TimeRounds,
    Verify,
)
from aitune_fp.core.session.events import Event, Prebuilt, Profiled, Timed
from aitune_fp.core.session.run import run
from aitune_fp.core.session.state import Session, SessionPlan


@dataclass(frozen=True, slots=True)
class Divergence:
    """The first decision (by position among builds, closes, timings and the end) where
    a replay differs from the recorded plan's: what the recorded run did, what it asks."""

    index: int
    recorded: str
    replayed: str


@dataclass(frozen=True, slots=True)
class Replayed:
    """A replay's session, its commands and ``Done``, and where it diverged (``None``)."""

    session: Session
    commands: tuple[Command, ...]
    done: Done
    diverged: Divergence | None


def answers(log: Sequence[Event]) -> Callable[[Command], Event | None]:
    """An interpreter that answers from ``log`` (see the module's rules)."""
    built: dict[str, list[Profiled]] = {}
    for e in log:
        if isinstance(e, Profiled):
            built.setdefault(e.name, []).append(e)
    timed = {e.purpose: e for e in log if isinstance(e, Timed)}
    ahead = next((e for e in log if isinstance(e, Prebuilt)), Prebuilt())
    return partial(_answer, built, {}, timed, ahead)


def _answer(
    built: Mapping[str, list[Profiled]],
    asked: dict[str, int],
    timed: Mapping[str, Timed],
    ahead: Prebuilt,
    command: Command,
) -> Event | None:
    """The logged answer to ``command``: a build's ``n``-th profile for its ``n``-th ask
    (the last one again after that), a timing kept to its participants, the builds ahead."""
    if isinstance(command, Build):
        missing = BackendFailure(command.name, "measure", "not built in the recorded run")
        found = built.get(command.name, [Profiled(command.name, Failure(missing))])
        nth = asked[command.name] = asked.get(command.name, -1) + 1
        return found[min(nth, len(found) - 1)]
    if isinstance(command, TimeRounds | Verify):
        return _restricted(command, timed)
    return ahead if isinstance(command, Prebuild) else None


def _restricted(command: TimeRounds | Verify, timed: Mapping[str, Timed]) -> Timed:
    """The logged timing of the command's purpose, kept to the participants it asks for."""
    purpose = "rounds" if isinstance(command, TimeRounds) else "verify"
    keys = _keys(command)
    found = timed.get(purpose, Timed(purpose))
    samples = {k: v for k, v in found.samples.items() if k in keys}
    left = {k: why for k, why in found.left.items() if k in command.backends}
    return Timed(purpose, pmap(samples), found.rounds, found.reason, found.seconds, pmap(left))


def _keys(command: TimeRounds | Verify) -> frozenset[str]:
    if isinstance(command, TimeRounds):
        return frozenset(name for name, _ in command.participants)
    return frozenset(key for key, _, _ in command.entries)


def commands_of(
    plan: SessionPlan, log: Sequence[Event]
) -> tuple[Session, tuple[Command, ...], Done]:
    """Every command ``plan``'s session gives when answered from ``log``."""
    answer = answers(log)
    given: list[Command] = []

    def recording(command: Command) -> Event | None:
        given.append(command)
        return answer(command)

    session, done = run(plan, recording)
    return session, (*given, done), done


def replay(
    recorded: SessionPlan, log: Sequence[Event], plan: SessionPlan | None = None
) -> Replayed:
    """Replay ``log`` under ``plan`` (default: the recorded one, which cannot diverge from
    itself) and find where it diverges."""
    session, theirs, done = commands_of(recorded, log)
    if plan is None:
        return Replayed(session, theirs, done, None)
    session, mine, done = commands_of(plan, log)
    return Replayed(session, mine, done, _first_difference(theirs, mine))


DECISIONS = (Build, Close, TimeRounds, Verify, Done)


def _first_difference(theirs: Sequence[Command], mine: Sequence[Command]) -> Divergence | None:
    """The first decision (log lines left out) whose line differs;
    when every line agrees, the first that differs as a value (see the module's rules)."""
    theirs = [c for c in theirs if isinstance(c, DECISIONS)]
    mine = [c for c in mine if isinstance(c, DECISIONS)]
    pairs = [
        (theirs[i] if i < len(theirs) else None, mine[i] if i < len(mine) else None)
        for i in range(max(len(theirs), len(mine)))
    ]
    lines = [(_line(a), _line(b)) for a, b in pairs]
    seen = next((i for i, (one, two) in enumerate(lines) if one != two), None)
    if seen is not None:
        return Divergence(seen, *lines[seen])
    valued = next((i for i, (a, b) in enumerate(pairs) if a != b), None)
    if valued is None:
        return None
    where = field_difference(*pairs[valued])
    one, two = lines[valued]
    return Divergence(valued, f"{one} ({where} differs)", f"{two} ({where} differs)")


def _line(command: Command | None) -> str:
    return describe(command) if command is not None else "(nothing)"


def field_difference(a: object, b: object, path: str = "") -> str:
    """The dotted path of the first field where two unequal values differ (their type's
    name when they are not records of one type).

    >>> field_difference(Build("a"), Build("a", batch_sizes=(1, 8)))
    'batch_sizes'
    >>> field_difference(Close(frozenset("a")), Build("a"))
    'Close'
    """
    if is_dataclass(a) and type(a) is type(b):
        named = [(f".{f.name}", getattr(a, f.name), getattr(b, f.name)) for f in fields(a)]
    elif isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        named = [(f"[{i}]", x, y) for i, (x, y) in enumerate(zip(a, b, strict=True))]
    else:
        return path or type(a).__name__
    where, x, y = next(n for n in named if n[1] != n[2])
    return field_difference(x, y, f"{path}{where}".lstrip("."))


def describe(command: Command) -> str:
    """One line naming a command and what it carries (as a replay reports it).

    >>> describe(Build("a")), describe(Close(frozenset({"b", "a"})))
    ('build a', 'close a, b')
    """
    match command:
        case Build():
            return _build_line(command)
        case Close(names):
            return f"close {', '.join(sorted(names))}"
        case TimeRounds(participants, plan):
            who = ", ".join(f"{n}@{bs}" for n, bs in participants)
            return f"final rounds: {who} (at most {plan.max_seconds:g} s)"
        case Verify(entries, seconds):
            return f"verify: {', '.join(k for k, _, _ in entries)} for {seconds:g} s"
        case Done(selection):
            return "done: " + selection.map(lambda s: f"selects {s.backend}").value_or("fails")
    return _note_line(command)


def _build_line(command: Build) -> str:
    """``build NAME`` with its role, its early stop and whether its profile is reused."""
    extra = " (baseline)" if command.baseline else ""
    if command.early_stop is not None:
        extra += f", early stop against {command.early_stop.state.best_name}"
    if command.batch_sizes:
        extra += f", batch sizes {', '.join(map(str, command.batch_sizes))}"
    return f"build {command.name}{extra}{', reused' if command.reuse else ''}"


def _note_line(command: Command) -> str:
    """A log line, a profile replaced or a build ahead, named."""
    match command:
        case Say(note):
            return f"say: {render(note)}"
        case Prebuild(names, parallel):
            return f"build ahead {', '.join(names)} ({parallel} at a time)"
    raise TypeError(f"not a command: {command!r}")  # pragma: no cover
