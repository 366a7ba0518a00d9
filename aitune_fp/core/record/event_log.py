"""The run record's ``events``: the session's event log as JSON and back (pure).

Rules: each event is one object, ``{"event": "profiled", "name", "profile" | "failure",
"live", "profile_seconds"}`` or ``{"event": "timed", "purpose", "samples", "rounds",
"reason", "seconds"}`` (with ``"left"``, why each backend left before it was timed, only
when one did) or ``{"event": "prebuilt", "seconds", "failures"}``; floats are
written as JSON numbers (Python's shortest repr, so a decoded log is the same values bit
for bit and a replay reproduces the run exactly); records written before the log existed
read as an empty log.

>>> from returns.result import Failure, Success
>>> from aitune_fp.core.records import BackendFailure, Profile
>>> log = (Profiled("a", Success(Profile("a", {1: [0.1 + 0.2]})), True, 1.5),
...        Profiled("b", Failure(BackendFailure("b", "build", "no")), False),
...        Timed("rounds", pmap({"a": (1.0, 2.0)}), 2, "clear", 0.25),
...        Timed("verify", pmap({"a": (1.0,)}), 1, "cap", 0.1, pmap({"b": "no live runner"})),
...        Prebuilt(2.5, pmap({"b": "worker died with SIGSEGV during build"})))
>>> read_events(Reader({"events": encode_events(log)}, "run record")) == log
True
>>> read_events(Reader({}, "run record"))
()
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyrsistent import PMap, pmap
from returns.result import Failure, Success

from aitune_fp.core.record.codec import (
    decode_failure,
    decode_profile,
    encode_failure,
    encode_profile,
)
from aitune_fp.core.record.reader import Reader
from aitune_fp.core.records import Candidate
from aitune_fp.core.session.events import Event, Prebuilt, Profiled, Timed


def encode_event(event: Event) -> dict[str, Any]:
    """One event as a JSON-able dict."""
    if isinstance(event, Profiled):
        return {"event": "profiled", "name": event.name, **_result(event.result),
                "live": event.live, "profile_seconds": event.profile_seconds}  # fmt: skip
    if isinstance(event, Prebuilt):
        return {"event": "prebuilt", "seconds": event.seconds,
                "failures": dict(sorted(event.failures.items()))}  # fmt: skip
    left = {"left": dict(sorted(event.left.items()))} if event.left else {}
    return {
        "event": "timed",
        "purpose": event.purpose,
        "samples": {k: list(v) for k, v in sorted(event.samples.items())},
        "rounds": event.rounds,
        "reason": event.reason,
        "seconds": event.seconds,
        **left,
    }


def _result(result: Candidate) -> dict[str, Any]:
    """A build's result: its profile or its failure (the other ``None``)."""
    if isinstance(result, Success):
        return {"profile": encode_profile(result.unwrap()), "failure": None}
    return {"profile": None, "failure": encode_failure(result.failure())}


def encode_events(events: Sequence[Event]) -> list[dict[str, Any]]:
    """The log as a JSON-able list."""
    return [encode_event(e) for e in events]


def decode_event(doc: Reader) -> Event:
    """One event from :func:`encode_event`'s output; ``ValueError`` naming a bad path."""
    kind = doc.text("event")
    if kind == "profiled":
        return Profiled(doc.text("name"), _decoded_result(doc), doc.flag("live"),
                        doc.number("profile_seconds"))  # fmt: skip
    if kind == "timed":
        samples = doc.child("samples")
        timed = pmap({k: samples.numbers(k) for k in samples.data})
        left = doc.child_or_none("left")
        return Timed(doc.text("purpose"), timed, doc.integer("rounds"), doc.text("reason"),
                     doc.number("seconds"), _texts(left))  # fmt: skip
    if kind == "prebuilt":
        return Prebuilt(doc.number("seconds"), _texts(doc.child("failures")))
    raise ValueError(f"{doc.path}.event: expected profiled, timed or prebuilt, got {kind!r}")


def _texts(doc: Reader | None) -> PMap[str, str]:
    """An object of texts by name (``None``: absent, empty)."""
    return pmap({k: doc.text(k) for k in doc.data}) if doc is not None else pmap()


def _decoded_result(doc: Reader) -> Candidate:
    """A profiled event's result: exactly one of its profile and its failure."""
    profile = doc.decoded_or_none("profile", decode_profile)
    failure = doc.decoded_or_none("failure", decode_failure)
    if profile is not None and failure is None:
        return Success(profile)
    if failure is not None and profile is None:
        return Failure(failure)
    raise ValueError(f"{doc.path}: a profiled event has a profile or a failure")


def read_events(record: Reader) -> tuple[Event, ...]:
    """The event log of a decoded record (absent or ``null``, as in older records: empty)."""
    if record.raw("events", None) is None:
        return ()
    return tuple(decode_event(item) for item in record.children("events"))
