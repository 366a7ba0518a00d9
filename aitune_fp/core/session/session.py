"""The whole tune as a pure session: ``start(plan)`` and ``step(session, event)``.

Both return the new session and the commands to carry out, in order
(:mod:`aitune_fp.core.session.commands`); the interpreter answers each measuring command
with one event (:mod:`aitune_fp.core.session.events`) and decides nothing. The phases:
the builds ahead, when there are any (:mod:`~aitune_fp.core.session.prebuild`), the
baseline and the sweep (:mod:`~aitune_fp.core.session.sweep`), the final rounds
(:mod:`~aitune_fp.core.session.final_rounds_step`), the selection and its verification
(:mod:`~aitune_fp.core.session.ending`), each a value of
:mod:`~aitune_fp.core.session.phase` that ``step`` matches on. Every session ends with
``Done``; an event that answers no pending command is a ``ValueError`` (an
interpreter's bug, not a fault). What a step says (each ``Say``'s note) is kept in
``Session.notes``, once, by :func:`noted`.

>>> from returns.result import Success
>>> from aitune_fp.core.records import Profile
>>> from aitune_fp.core.strategies import min_latency
>>> s, cmds = start(SessionPlan(min_latency, ("a",)))
>>> [type(c).__name__ for c in cmds], cmds[0].name
(['Build'], 'eager')
>>> s, cmds = step(s, Profiled("eager", Success(Profile("eager", {1: [2.0]})), live=True))
>>> [type(c).__name__ for c in cmds], cmds[-1].name
(['Build'], 'a')
>>> s, cmds = step(s, Profiled("a", Success(Profile("a", {1: [1.0]})), live=True))
>>> [type(c).__name__ for c in cmds], cmds[-1].selection.unwrap().backend
(['Say', 'Done'], 'a')
>>> s.notes
(NewBest(name='a', metric=1.0, fmt='.3f', unit='ms'),)
"""

from __future__ import annotations

from dataclasses import replace

from aitune_fp.core.fold import settled
from aitune_fp.core.session.commands import Command, Say
from aitune_fp.core.session.ending import begin_verification, on_verified
from aitune_fp.core.session.events import Event, Prebuilt, Profiled, Timed
from aitune_fp.core.session.final_rounds_step import begin_rounds, on_rounds
from aitune_fp.core.session.notes import BuildAheadFailed, Settled
from aitune_fp.core.session.phase import (
    Baseline,
    Prebuilding,
    Rounds,
    Sweeping,
    Swept,
    Verifying,
    Widening,
)
from aitune_fp.core.session.prebuild import prebuild_of
from aitune_fp.core.session.race_sweep import widening
from aitune_fp.core.session.state import Session, SessionPlan
from aitune_fp.core.session.sweep import begin, early_stop, on_baseline, on_candidate, on_widened

Step = tuple[Session, tuple[Command, ...]]

__all__ = ["Session", "SessionPlan", "start", "step"]


def start(plan: SessionPlan) -> Step:
    """A new session and its first commands (the builds ahead first, when there are any)."""
    ahead = prebuild_of(plan)
    if ahead is not None:
        return Session(plan, phase=Prebuilding()), (ahead,)
    return noted(*_onwards(*begin(Session(plan))))


def step(session: Session, event: Event) -> Step:
    """The session after ``event`` (the answer to its pending command) and what to do next."""
    return noted(*_step(session, event))


def noted(session: Session, commands: tuple[Command, ...]) -> Step:
    """``session`` keeping the notes ``commands`` say (each ``Say``'s, in order), and the
    commands: every step's notes reach ``Session.notes`` here, once."""
    said = tuple(c.note for c in commands if isinstance(c, Say))
    return (replace(session, notes=(*session.notes, *said)) if said else session), commands


def _step(session: Session, event: Event) -> Step:
    """:func:`step`, its notes not yet kept."""
    logged = replace(session, events=(*session.events, event))
    match session.phase, event:
        case Prebuilding(), Prebuilt():
            return _prebuilt(logged, event)
        case Baseline(), Profiled():
            return _onwards(*on_baseline(_expected(logged, event), event))
        case Sweeping(pending), Profiled():
            return _onwards(*on_candidate(_expected(logged, event), pending, event))
        case Widening(), Profiled():
            return _onwards(*on_widened(_expected(logged, event), event))
        case Rounds(setup), Timed():
            return _closing(*on_rounds(logged, setup, event))
        case Verifying(vp), Timed():
            return on_verified(logged, vp, event)
    raise ValueError(
        f"{type(event).__name__} answers no pending command (phase {session.phase_name})"
    )


def _expected(session: Session, event: Profiled) -> Session:
    """``session``, when ``event`` names the build it waits for (else a ``ValueError``)."""
    expected = session.waiting_for
    if event.name != expected:
        raise ValueError(f"a Profiled for {event.name!r} came while {expected!r} was built")
    return session


def _prebuilt(session: Session, event: Prebuilt) -> Step:
    """The builds ahead ended: their failures said as warnings, then the sweep begins."""
    warned = tuple(Say(BuildAheadFailed(name, why)) for name, why in sorted(event.failures.items()))
    after, more = _onwards(*begin(session))
    return after, (*warned, *more)


def onwards(session: Session) -> Step:
    """A session put together after the sweeps (phase ``Swept``) and what it does next:
    widen the race's contenders, the final rounds, the verification or the end."""
    return noted(*_onwards(session, ()))


def _onwards(session: Session, said: tuple[Command, ...]) -> Step:
    """After a sweep step: wait for the next build, or close the sweep."""
    if not isinstance(session.phase, Swept):
        return session, said
    if settled(session.strategy, session.fold):
        said = (*said, Say(Settled(session.strategy.name)))
    elif (widened := widening(session, early_stop(session))) is not None:
        return widened[0], (*said, *widened[1])
    after, more, waits = begin_rounds(session)
    if waits:
        return after, (*said, *more)
    return _closing(after, (*said, *more))


def _closing(session: Session, said: tuple[Command, ...]) -> Step:
    """After the rounds (or none): select, and verify when asked."""
    after, more = begin_verification(session)
    return after, (*said, *more)
