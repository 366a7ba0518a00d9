"""The session's notes as text: one line each, and the report's Notes section (pure).

Rules:
- :func:`render` writes a note's one line, the line the tune logs at the note's level
  (the lines are those the session said as text before notes were values: a reader of
  the log sees no difference);
- :func:`note_lines` is the report's section: one line per note in the order said, a
  warning marked as such; no notes, no section.

>>> from aitune_fp.core.session.notes import NewBest, Skipped, VerificationVerdict
>>> render(NewBest("ort", 1234.5, ".2f", "samples/s"))
'new best: ort (1234.50 samples/s)'
>>> note_lines((Skipped("trt", "not admitted by min_latency"), VerificationVerdict(False, "x")))
('skipping trt: not admitted by min_latency', 'warning: x')
"""

from __future__ import annotations

from collections.abc import Sequence

from aitune_fp.core.session.notes import (
    TIMINGS,
    BuildAheadFailed,
    DroppedInRace,
    LeftTiming,
    NewBest,
    NoFinalRounds,
    Note,
    NoVerification,
    RoundsEnded,
    RoundsReduced,
    RoundsStarted,
    Settled,
    Skipped,
    VerificationPlanned,
    VerificationTiming,
    VerificationUntimed,
    VerificationVerdict,
)


def render(note: Note) -> str:
    """The note's one line (see the module's rules).

    >>> render(Settled("min_latency"))
    'min_latency settled: later candidates are not built'
    """
    match note:
        case NewBest(name, metric, fmt, unit):
            return f"new best: {name} ({format(metric, fmt)} {unit})"
        case Skipped(name, why):
            return f"skipping {name}: {why}"
        case DroppedInRace(name, evidence):
            return f"{name} {evidence.reason}"
        case Settled(strategy):
            return f"{strategy} settled: later candidates are not built"
        case BuildAheadFailed(name, why):
            return f"building {name} ahead failed (its own build follows): {why}"
        case LeftTiming(name, purpose, why):
            return f"{name} leaves the {TIMINGS.get(purpose, purpose)}: {why}"
    return _rounds_or_verification(note)


def _rounds_or_verification(note: Note) -> str:
    """The line of a note about the final rounds or the verification."""
    match note:
        case NoFinalRounds(why):
            return f"no final rounds: {why}"
        case RoundsStarted(timed):
            return f"final rounds: {', '.join(timed)}"
        case RoundsReduced(why) | VerificationVerdict(_, why):
            return why
        case RoundsEnded(reason, seconds):
            return f"final rounds: {reason} ({seconds:.1f} s)"
        case VerificationPlanned(winner, size, against, seconds):
            return f"verification: {winner}@{size} against {', '.join(against)} for {seconds:g} s"
        case VerificationTiming(reason):
            return f"verification timing: {reason}"
        case NoVerification(why):
            return f"no verification: {why}"
        case VerificationUntimed(reason):
            return f"no verification: fewer than two backends could be timed ({reason})"
    raise TypeError(f"not a note: {note!r}")  # pragma: no cover - every kind is matched


def note_lines(notes: Sequence[Note]) -> tuple[str, ...]:
    """The report's Notes: each note's line in order, a warning's prefixed ``warning:``."""
    return tuple(f"warning: {render(n)}" if n.level == "warning" else render(n) for n in notes)
