"""The run record's ``notes``: what the session said, as JSON and back (pure).

Rules: each note is one object, its tag under ``"note"`` (the note's ``kind``:
``new_best``, ``skipped``, ``dropped_in_race``… :data:`~aitune_fp.core.session.notes.NOTE_KINDS`)
and its fields as msgspec writes them (:mod:`.json_codec`: floats as JSON numbers, a
non-finite one by its name); the level is the kind's (or the verdict's), so it is not
written; records written before notes were kept read as no notes.

>>> from aitune_fp.core.session.notes import NewBest, VerificationVerdict
>>> notes = (NewBest("ort", 12.5, ".2f", "samples/s"), VerificationVerdict(True, "clear"))
>>> encode_notes(notes)[1]
{'note': 'verification_verdict', 'holds': True, 'reason': 'clear'}
>>> decode_notes(encode_notes(notes), "run record.notes") == notes
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aitune_fp.core.record.json_codec import decoded_list, from_json, to_json
from aitune_fp.core.session.notes import NOTE_KINDS, Note


def encode_note(note: Note) -> dict[str, Any]:
    """One note as a JSON-able dict, its tag first."""
    return {"note": note.kind, **to_json(note)}


def encode_notes(notes: Sequence[Note]) -> list[dict[str, Any]]:
    """The notes as a JSON-able list, in order."""
    return [encode_note(n) for n in notes]


def decode_note(data: Any, where: str) -> Note:
    """One note from :func:`encode_note`'s output; ``ValueError`` naming a bad path.

    >>> decode_note({"note": "shout"}, "notes[0]")
    Traceback (most recent call last):
    ...
    ValueError: notes[0].note: expected one of the note kinds (new_best, skipped, …), got 'shout'
    """
    tag = data.get("note") if isinstance(data, dict) else None
    kind = NOTE_KINDS.get(tag) if isinstance(tag, str) else None
    if kind is None:
        raise ValueError(
            f"{where}.note: expected one of the note kinds (new_best, skipped, …), got {tag!r}"
        )
    fields = {k: v for k, v in data.items() if k != "note"}
    note: Note = from_json(fields, kind, where)
    return note


def decode_notes(data: Any, where: str) -> tuple[Note, ...]:
    """The notes of a record's JSON (absent or ``null``, as in older records: none)."""
    return decoded_list(data, where, "notes", decode_note)
