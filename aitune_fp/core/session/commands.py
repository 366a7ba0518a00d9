"""What the session asks of its interpreter: commands, as frozen records.

Rules:
- a command names an effect and carries every value it needs; the interpreter decides
  nothing, it carries each one out in order and answers the ones that measure
  (:class:`Build`, :class:`TimeRounds`, :class:`Verify`) and :class:`Prebuild` with
  exactly one event
  (:mod:`aitune_fp.core.session.events`); the others are answered by nothing;
- :class:`Done` is the last command of every session: the selection (or the error) and
  the verification that shaped it;
- every command is a value that compares fully: the judges two commands carry are
  frozen values naming their rule and its parameters (:mod:`aitune_fp.core.session.judges`),
  so a replayed session's commands compare equal to the recorded ones exactly when they
  decide alike;
- no command writes the record: it is derived from the session
  (:func:`~aitune_fp.core.record.derive.record_of`), which the interpreter writes after
  each step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from returns.result import Result

from aitune_fp.core.measure.early_stop import EarlyStop
from aitune_fp.core.records import Profile, Selection, TuneError
from aitune_fp.core.rounds.rounds_plan import RoundsPlan
from aitune_fp.core.session.judges import NoJudge, RoundsJudge, VerifyJudge
from aitune_fp.core.session.notes import Level, Note
from aitune_fp.core.verification.judge import Verification


@dataclass(frozen=True, slots=True)
class Build:
    """Build, validate and profile ``name`` from the config the interpreter holds under
    that name (the baseline's too, when ``baseline``: the plan names it), its sweep
    stopped early by ``early_stop`` when given, over ``batch_sizes`` (``()``: the
    interpreter's whole ladder); with ``reuse``, only build its runner and answer with
    that profile (a reused baseline)."""

    name: str
    baseline: bool = False
    early_stop: EarlyStop | None = None
    reuse: Profile | None = None
    batch_sizes: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Prebuild:
    """Build ``names`` ahead, ``parallel`` at a time, before anything is timed: each build
    only stores its artifact in the cache (or warms its compiler's own cache), so that the
    sweep's ``Build`` of it later only loads it; nothing is validated or timed, and
    nothing else runs until every one has ended (the rule:
    :mod:`aitune_fp.core.session.prebuild`). A failed one is only a warning."""

    names: tuple[str, ...]
    parallel: int


@dataclass(frozen=True, slots=True)
class Close:
    """Release the runners of ``names`` (they can no longer win or challenge)."""

    names: frozenset[str]


@dataclass(frozen=True, slots=True)
class Say:
    """A note for the log, as a value (:mod:`aitune_fp.core.session.notes`: its level is
    the note's; :func:`aitune_fp.core.report.notes.render` writes its line)."""

    note: Note

    @property
    def level(self) -> Level:
        """The note's level (``info`` or ``warning``)."""
        return self.note.level


@dataclass(frozen=True, slots=True)
class TimeRounds:
    """Time ``participants`` (name, batch size) in interleaved final rounds under ``plan``
    until ``judge`` stops; ``warmup_calls`` untimed calls each after one priming call."""

    participants: tuple[tuple[str, int], ...]
    plan: RoundsPlan
    judge: RoundsJudge | NoJudge = field(default_factory=NoJudge)

    @property
    def backends(self) -> tuple[str, ...]:
        """The backends timed, in order."""
        return tuple(dict.fromkeys(name for name, _ in self.participants))


@dataclass(frozen=True, slots=True)
class Verify:
    """Time ``entries`` (key, backend, batch size) in interleaved rounds, each warmed to
    steady state within a share of ``seconds``, until ``judge`` stops (at most
    ``plan.max_seconds``)."""

    entries: tuple[tuple[str, str, int], ...]
    seconds: float
    plan: RoundsPlan
    judge: VerifyJudge | NoJudge = field(default_factory=NoJudge)

    @property
    def backends(self) -> tuple[str, ...]:
        """The entries' backends, in order (each once)."""
        return tuple(dict.fromkeys(backend for _, backend, _ in self.entries))


@dataclass(frozen=True, slots=True)
class Done:
    """The session's end: the selection or the error, and the verification (if one ran)."""

    selection: Result[Selection, TuneError]
    verification: Verification | None = None


Command = Build | Prebuild | Close | Say | TimeRounds | Verify | Done
