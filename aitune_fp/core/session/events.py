"""What the interpreter answers: the results of measuring commands, as values.

Rules: a :class:`Profiled` answers a :class:`~aitune_fp.core.session.commands.Build`
(its profile or its ``BackendFailure``, whether a runner is alive, the seconds its sweep
took, and what else the record keeps of the build: :class:`~.facts.BuildFacts`); a
:class:`Timed` answers a ``TimeRounds`` or a ``Verify`` (each participant's samples by
key, in round order; how many rounds; why they stopped; seconds; who left before being
timed, and why); a :class:`Prebuilt` answers a ``Prebuild`` (its wall seconds, and why
each build that did not finish failed: a warning, never a result). A participant that
could not be timed simply has no samples: faults are data here too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyrsistent import PMap, pmap

from aitune_fp.core.records import Candidate
from aitune_fp.core.session.commands import Say
from aitune_fp.core.session.facts import BuildFacts
from aitune_fp.core.session.notes import LeftTiming


@dataclass(frozen=True, slots=True)
class Profiled:
    """``name`` was built, validated and profiled (or failed at some stage); ``facts``:
    what the record keeps of the build besides its profile."""

    name: str
    result: Candidate
    live: bool = False
    profile_seconds: float = 0.0
    facts: BuildFacts = field(default_factory=BuildFacts)


@dataclass(frozen=True, slots=True)
class Timed:
    """Interleaved rounds were timed: samples (ms) by participant key; ``purpose`` echoes
    the command answered (``rounds`` or ``verify``); ``left``: why each backend asked for
    left before it was timed (its runner could not be made; it has no samples)."""

    purpose: str = "rounds"
    samples: PMap[str, tuple[float, ...]] = field(default_factory=pmap)
    rounds: int = 0
    reason: str = ""
    seconds: float = 0.0
    left: PMap[str, str] = field(default_factory=pmap)


@dataclass(frozen=True, slots=True)
class Prebuilt:
    """The builds ahead ended after ``seconds``; ``failures``: why each that failed did
    (the sweep's own build of it finds and records the real failure)."""

    seconds: float = 0.0
    failures: PMap[str, str] = field(default_factory=pmap)


Event = Profiled | Timed | Prebuilt


def leaving(event: Timed) -> tuple[Say, ...]:
    """The session's word on each backend that left ``event``'s timing before it was timed
    (a warning each, in name order): it is not timed, has no samples and is judged as
    such; nothing else changes.

    >>> leaving(Timed("verify", left=pmap({"ort": "no live runner"})))
    (Say(note=LeftTiming(name='ort', purpose='verify', why='no live runner')),)
    """
    return tuple(
        Say(LeftTiming(name, event.purpose, why)) for name, why in sorted(event.left.items())
    )
