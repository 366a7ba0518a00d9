"""What the command line and its tuning service say to each other, as typed records, and
their JSON text through the strict record codec (:mod:`aitune_fp.core.record.json_codec`).

Rules:
- a request is tagged by ``"op"`` (``status``, ``stop``, ``tune``), a reply by
  ``"reply"`` (``refused``, ``started``, ``exit``, ``stopping``, ``status``); the other
  keys are the record's fields, flat (so a client of the release before this protocol
  still finds ``pid``, ``exit`` and ``refused`` where it read them);
- :func:`decode_request` and :func:`decode_reply` never raise: text that is not JSON, an
  unknown tag or a field of the wrong type is a :class:`Refused` saying so in one line;
  a reply without a tag comes from a service of the protocol before :data:`PROTOCOL`, and
  is refused saying how to end that service;
- :data:`PROTOCOL` is part of the installation's digest
  (:func:`~aitune_fp.effects.isolation.service_wire.digest`): a client and a service of
  different protocols refuse each other's tunes, and the client tunes in its own process.

>>> from pyrsistent import pmap
>>> asked = TuneAsked(("demo",), "aitune-fp", "/w", pmap({"A": "1"}), ("/p",), "d")
>>> decode_request(encode(asked)) == asked, decode_reply(encode(Started(7)))
(True, Started(pid=7))
>>> decode_request(b'{"op": "dance"}')
Refused(refused="not a request: op: expected status, stop or tune, got 'dance'")
>>> decode_reply(b'{"pid": 7}').refused.split(";")[0]
'the service speaks an older protocol'
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from pyrsistent import PMap

from aitune_fp.core.record.json_codec import decoded_fields, to_json

T = TypeVar("T")
PROTOCOL: Final = 2
"""The wire protocol's version: 1 sent untyped objects, 2 these tagged records."""


@dataclass(frozen=True, slots=True)
class StatusAsked:
    """``aitune-fp service status``: what the service is doing."""


@dataclass(frozen=True, slots=True)
class StopAsked:
    """``aitune-fp service stop``: stop, terminating the running tunes."""


@dataclass(frozen=True, slots=True)
class TuneAsked:
    """A tune to fork: the client's command line, place, environment, search path, digest,
    start time (``CLOCK_BOOTTIME`` seconds) and stdout encoding; its stdin, stdout and
    stderr travel with the message."""

    argv: tuple[str, ...]
    argv0: str
    cwd: str
    env: PMap[str, str]
    path: tuple[str, ...]
    digest: str
    started: float | None = None
    encoding: str | None = None


@dataclass(frozen=True, slots=True)
class Refused:
    """The other end refused, or could not read, a message: why, in one line."""

    refused: str


@dataclass(frozen=True, slots=True)
class Started:
    """The tune was forked as ``pid``."""

    pid: int


@dataclass(frozen=True, slots=True)
class Exited:
    """The tune ended with ``exit`` (``128 + n`` for signal ``n``)."""

    exit: int


@dataclass(frozen=True, slots=True)
class Stopping:
    """The service stops; ``running`` tunes are terminated."""

    running: int
    stopping: bool = True


@dataclass(frozen=True, slots=True)
class Status:
    """What ``aitune-fp service status`` shows: the policy's part (digest, counts, idle
    times) and the loop's (its pid, the fork server's, its warm-up seconds, log and wall
    start)."""

    digest: str
    served: int
    running: int
    idle_timeout: float
    idle_for: float
    pid: int = 0
    fork_server: int | None = None
    warm_seconds: float = 0.0
    log: str = ""
    started: float = 0.0
    protocol: int = PROTOCOL


Request = StatusAsked | StopAsked | TuneAsked
Reply = Refused | Started | Exited | Stopping | Status
REQUESTS: Final[dict[str, type[Request]]] = {
    "status": StatusAsked, "stop": StopAsked, "tune": TuneAsked,
}  # fmt: skip
REPLIES: Final[dict[str, type[Reply]]] = {
    "refused": Refused, "started": Started, "exit": Exited, "stopping": Stopping,
    "status": Status,
}  # fmt: skip
OLDER: Final = (
    "the service speaks an older protocol; `aitune-fp service stop` ends it and the next "
    "tune starts a current one"
)
_TAGS: Final[dict[type, tuple[str, str]]] = {
    **{kind: ("op", tag) for tag, kind in REQUESTS.items()},
    **{kind: ("reply", tag) for tag, kind in REPLIES.items()},
}


def encode(message: Request | Reply) -> bytes:
    """``message`` as JSON text: its tag, then its fields (see the module rules)."""
    key, tag = _TAGS[type(message)]
    return json.dumps({key: tag, **to_json(message)}).encode()


def tag_of(message: Request | Reply) -> str:
    """The tag ``message`` is sent with.

    >>> tag_of(StopAsked()), tag_of(Exited(0))
    ('stop', 'exit')
    """
    return _TAGS[type(message)][1]


def _either(names: list[str]) -> str:
    """``a, b or c``.

    >>> _either(["status", "stop", "tune"])
    'status, stop or tune'
    """
    return f"{', '.join(names[:-1])} or {names[-1]}"


def _decoded(data: Any, key: str, kinds: Mapping[str, type[T]], what: str) -> T | Refused:
    """The record JSON ``data`` holds under tag ``key``, or a :class:`Refused` saying why not."""
    tag = data.get(key) if isinstance(data, dict) else None
    if not isinstance(tag, str) or tag not in kinds:
        return Refused(f"not {what}: {key}: expected {_either(list(kinds))}, got {tag!r}")
    try:
        return decoded_fields(data, kinds[tag], tag, {})
    except ValueError as error:
        return Refused(f"not {what}: {' '.join(str(error).split())}")


def _parsed(body: bytes) -> Any:
    """The JSON value of ``body``, or a :class:`Refused` when it is not JSON text."""
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as error:
        return Refused(f"not JSON: {' '.join(str(error).split())}")


def decode_request(body: bytes) -> Request | Refused:
    """The request ``body`` holds, or why it is refused (never an exception)."""
    data = _parsed(body)
    return data if isinstance(data, Refused) else _decoded(data, "op", REQUESTS, "a request")


def decode_reply(body: bytes) -> Reply:
    """The reply ``body`` holds, or a :class:`Refused` saying why it cannot be read (an
    object without a tag: a service of the older protocol)."""
    data = _parsed(body)
    if isinstance(data, Refused):
        return data
    if isinstance(data, dict) and "reply" not in data:
        return Refused(OLDER)
    return _decoded(data, "reply", REPLIES, "a reply")
