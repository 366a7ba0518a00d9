"""What the session says, as values: one frozen record per kind of note.

Rules:
- a note is data, never a formatted line: it names its subjects and carries the figures
  and reasons behind them; :func:`aitune_fp.core.report.notes.render` writes its one
  line (the log's, the report's, the replay's);
- each kind has its ``kind`` (the tag the run record writes, :mod:`aitune_fp.core.record.note_log`)
  and its ``level`` (``info`` or ``warning``), as data on the record: warnings are what
  did not go as asked (a build ahead failed, a participant left a timing, a verification
  that could not be timed or did not hold);
- the session keeps every note it gave, in order (``Session.notes``), and the run record
  keeps them (``RunRecord.notes``).

>>> NewBest("ort", 12.5, ".2f", "samples/s").level, BuildAheadFailed("ort", "oom").level
('info', 'warning')
>>> VerificationVerdict(False, "overturned").level, NOTE_KINDS["settled"] is Settled
('warning', True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Final, Literal

from aitune_fp.core.session.racing import RaceLoss

Level = Literal["info", "warning"]

TIMINGS: Final = {"rounds": "final rounds", "verify": "verification"}
"""Each timing's purpose, as the notes name it."""


@dataclass(frozen=True, slots=True)
class NewBest:
    """``name`` is the fold's new best, at ``metric`` (written ``format(metric, fmt)``
    then ``unit``, as the strategy writes its metric)."""

    kind: ClassVar[str] = "new_best"
    level: ClassVar[Level] = "info"
    name: str
    metric: float
    fmt: str
    unit: str


@dataclass(frozen=True, slots=True)
class Skipped:
    """``name`` is not built, and why (not admitted, or a variant of a beaten base)."""

    kind: ClassVar[str] = "skipped"
    level: ClassVar[Level] = "info"
    name: str
    why: str


@dataclass(frozen=True, slots=True)
class DroppedInRace:
    """The race dropped ``name``, on ``evidence`` (its speedup over the leader, the
    interval, the leader, the margin)."""

    kind: ClassVar[str] = "dropped_in_race"
    level: ClassVar[Level] = "info"
    name: str
    evidence: RaceLoss


@dataclass(frozen=True, slots=True)
class Settled:
    """``strategy`` settled: the later candidates are not built."""

    kind: ClassVar[str] = "settled"
    level: ClassVar[Level] = "info"
    strategy: str


@dataclass(frozen=True, slots=True)
class BuildAheadFailed:
    """Building ``name`` ahead failed (its own build follows), and why."""

    kind: ClassVar[str] = "build_ahead_failed"
    level: ClassVar[Level] = "warning"
    name: str
    why: str


@dataclass(frozen=True, slots=True)
class LeftTiming:
    """``name`` left the timing of ``purpose`` (``rounds`` or ``verify``) before it was
    timed, and why (its runner could not be made)."""

    kind: ClassVar[str] = "left_timing"
    level: ClassVar[Level] = "warning"
    name: str
    purpose: str
    why: str


@dataclass(frozen=True, slots=True)
class NoFinalRounds:
    """No final rounds are timed, and why."""

    kind: ClassVar[str] = "no_final_rounds"
    level: ClassVar[Level] = "info"
    why: str


@dataclass(frozen=True, slots=True)
class RoundsStarted:
    """Final rounds time ``timed`` (the members' names, in order)."""

    kind: ClassVar[str] = "rounds_started"
    level: ClassVar[Level] = "info"
    timed: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RoundsReduced:
    """Why the final rounds' members are fewer than asked."""

    kind: ClassVar[str] = "rounds_reduced"
    level: ClassVar[Level] = "info"
    why: str


@dataclass(frozen=True, slots=True)
class RoundsEnded:
    """The final rounds ended, why, after ``seconds``."""

    kind: ClassVar[str] = "rounds_ended"
    level: ClassVar[Level] = "info"
    reason: str
    seconds: float


@dataclass(frozen=True, slots=True)
class VerificationPlanned:
    """``winner`` at ``batch_size`` is re-measured against ``against`` (runner-ups'
    names, then its own other batch sizes as ``name@size``) for ``seconds``."""

    kind: ClassVar[str] = "verification_planned"
    level: ClassVar[Level] = "info"
    winner: str
    batch_size: int
    against: tuple[str, ...]
    seconds: float


@dataclass(frozen=True, slots=True)
class VerificationTiming:
    """Why the verification's timing stopped."""

    kind: ClassVar[str] = "verification_timing"
    level: ClassVar[Level] = "info"
    reason: str


@dataclass(frozen=True, slots=True)
class VerificationVerdict:
    """Whether the pick held when re-measured, and the verification's line (a warning
    when it did not hold)."""

    kind: ClassVar[str] = "verification_verdict"
    holds: bool
    reason: str

    @property
    def level(self) -> Level:
        """``info`` when the pick held, else ``warning``."""
        return "info" if self.holds else "warning"


@dataclass(frozen=True, slots=True)
class NoVerification:
    """No verification is planned, and why (nobody left to check the pick against)."""

    kind: ClassVar[str] = "no_verification"
    level: ClassVar[Level] = "info"
    why: str


@dataclass(frozen=True, slots=True)
class VerificationUntimed:
    """A verification was planned, but fewer than two backends could be timed (why its
    timing stopped)."""

    kind: ClassVar[str] = "verification_untimed"
    level: ClassVar[Level] = "warning"
    reason: str


Note = (
    NewBest
    | Skipped
    | DroppedInRace
    | Settled
    | BuildAheadFailed
    | LeftTiming
    | NoFinalRounds
    | RoundsStarted
    | RoundsReduced
    | RoundsEnded
    | VerificationPlanned
    | VerificationTiming
    | VerificationVerdict
    | NoVerification
    | VerificationUntimed
)

NOTE_TYPES: Final[tuple[type[Note], ...]] = (
    NewBest,
    Skipped,
    DroppedInRace,
    Settled,
    BuildAheadFailed,
    LeftTiming,
    NoFinalRounds,
    RoundsStarted,
    RoundsReduced,
    RoundsEnded,
    VerificationPlanned,
    VerificationTiming,
    VerificationVerdict,
    NoVerification,
    VerificationUntimed,
)
"""Every kind of note."""

NOTE_KINDS: Final[dict[str, type[Note]]] = {t.kind: t for t in NOTE_TYPES}
"""Each kind of note by its tag."""
