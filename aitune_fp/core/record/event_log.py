"""The run record's ``events``: the session's event log as JSON and back (pure).

Rules: each event is one object, ``{"event": "profiled", "name", "profile" | "failure",
"live", "profile_seconds", "facts"}`` (``facts``: the build's
:class:`~aitune_fp.core.session.facts.BuildFacts`, written only when it has any) or
``{"event": "timed", "purpose", "samples", "rounds", "reason", "seconds"}`` (with
``"left"``, why each backend left before it was timed, only when one did) or
``{"event": "prebuilt", "seconds", "failures"}``; floats are written as JSON numbers
(Python's shortest repr, so a decoded log is the same values bit for bit and a replay
reproduces the run exactly); records written before the log existed read as an empty log;
each event's fields are msgspec's (:mod:`.json_codec`), the tag and the build's result
(``profile`` or ``failure``, flat) are ours.

>>> from pyrsistent import pmap
>>> from returns.result import Failure, Success
>>> from aitune_fp.core.records import BackendFailure, Profile
>>> facts = BuildFacts("a", "k1", {"opt": [1]}, {"build": 2.0}, {"max_abs": 0.0}, "a.pt")
>>> log = (Profiled("a", Success(Profile("a", {1: [0.1 + 0.2]})), True, 1.5, facts),
...        Profiled("b", Failure(BackendFailure("b", "build", "no")), False),
...        Timed("rounds", pmap({"a": (1.0, 2.0)}), 2, "clear", 0.25),
...        Timed("verify", pmap({"a": (1.0,)}), 1, "cap", 0.1, pmap({"b": "no live runner"})),
...        Prebuilt(2.5, pmap({"b": "worker died with SIGSEGV during build"})))
>>> decode_events(encode_events(log), "run record.events") == log
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from returns.result import Failure, Success

from aitune_fp.core.record.json_codec import decoded_fields, decoded_list, from_json, to_json
from aitune_fp.core.records import BackendFailure, Candidate, Profile
from aitune_fp.core.session.events import Event, Prebuilt, Profiled, Timed
from aitune_fp.core.session.facts import BuildFacts

_KINDS: Final[dict[str, type[Event]]] = {"profiled": Profiled, "timed": Timed, "prebuilt": Prebuilt}


def encode_event(event: Event) -> dict[str, Any]:
    """One event as a JSON-able dict."""
    if isinstance(event, Profiled):
        built = {
            "profile": event.result.value_or(None),
            "failure": event.result.swap().value_or(None),
        }
        fields = {
            "name": event.name,
            **built,
            "live": event.live,
            "profile_seconds": event.profile_seconds,
        }
        facts = {"facts": event.facts} if event.facts != BuildFacts() else {}
        return {"event": "profiled", **to_json({**fields, **facts})}
    if isinstance(event, Prebuilt):
        return {"event": "prebuilt", **to_json(event)}
    fields = to_json(event)
    if not event.left:  # written only when a backend left: older logs read the same
        del fields["left"]
    return {"event": "timed", **fields}


def encode_events(events: Sequence[Event]) -> list[dict[str, Any]]:
    """The log as a JSON-able list."""
    return [encode_event(e) for e in events]


def _result(data: dict[str, Any], where: str) -> Candidate:
    """A profiled event's result: exactly one of its profile and its failure."""
    profile: Profile | None = from_json(data.get("profile"), Profile | None, f"{where}.profile")
    failed = data.get("failure")
    failure: BackendFailure | None = from_json(failed, BackendFailure | None, f"{where}.failure")
    if profile is not None and failure is None:
        return Success(profile)
    if failure is not None and profile is None:
        return Failure(failure)
    raise ValueError(f"{where}: a profiled event has a profile or a failure")


def decode_event(data: Any, where: str) -> Event:
    """One event from :func:`encode_event`'s output; ``ValueError`` naming a bad path."""
    tag = data.get("event") if isinstance(data, dict) else None
    kind = _KINDS.get(tag) if isinstance(tag, str) else None
    if kind is None:
        raise ValueError(f"{where}.event: expected profiled, timed or prebuilt, got {tag!r}")
    own = {"result": _result(data, where)} if kind is Profiled else {}
    return decoded_fields(data, kind, where, own)


def decode_events(data: Any, where: str) -> tuple[Event, ...]:
    """The event log of a record's JSON (``null``, as in older records: empty)."""
    return decoded_list(data, where, "events", decode_event)
