"""The tuning service's wire messages: every message survives its JSON text, and text that
is not a message (not JSON, an unknown tag, a wrong field, an older protocol's reply) is a
one-line refusal value, never an exception."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyrsistent import pmap

from aitune_fp.core.serving.service_messages import (
    OLDER,
    REPLIES,
    REQUESTS,
    Exited,
    Refused,
    Reply,
    Request,
    Started,
    Status,
    StatusAsked,
    StopAsked,
    Stopping,
    TuneAsked,
    decode_reply,
    decode_request,
    encode,
)
from aitune_fp.core.serving.service_state import DaemonState, Respond, ServiceRequest, step

TEXT = st.text(max_size=20)
NUMBER = st.floats(allow_nan=False, allow_infinity=False)
TUNES = st.builds(
    TuneAsked,
    argv=st.lists(TEXT, max_size=4).map(tuple),
    argv0=TEXT,
    cwd=TEXT,
    env=st.dictionaries(TEXT, TEXT, max_size=4).map(pmap),
    path=st.lists(TEXT, max_size=3).map(tuple),
    digest=TEXT,
    started=st.none() | NUMBER,
    encoding=st.none() | TEXT,
)
STATUSES = st.builds(
    Status,
    digest=TEXT,
    served=st.integers(0, 10**6),
    running=st.integers(0, 64),
    idle_timeout=NUMBER,
    idle_for=NUMBER,
    pid=st.integers(1, 2**22),
    fork_server=st.none() | st.integers(1, 2**22),
    warm_seconds=NUMBER,
    log=TEXT,
    started=NUMBER,
)
REQUEST_VALUES = st.just(StatusAsked()) | st.just(StopAsked()) | TUNES
REPLY_VALUES = (
    st.builds(Refused, TEXT)
    | st.builds(Started, st.integers(1, 2**22))
    | st.builds(Exited, st.integers(0, 255))
    | st.builds(Stopping, st.integers(0, 64))
    | STATUSES
)


@given(REQUEST_VALUES)
def test_every_request_reads_back_as_itself(request: Request) -> None:
    """decode_request(encode(r)) == r for every request kind."""
    assert decode_request(encode(request)) == request


@given(REPLY_VALUES)
def test_every_reply_reads_back_as_itself(reply: Reply) -> None:
    """decode_reply(encode(r)) == r for every reply kind."""
    assert decode_reply(encode(reply)) == reply


def test_the_strategies_cover_every_message_kind() -> None:
    """The round-trip laws above draw every request and reply kind the protocol has."""
    drawn = {StatusAsked, StopAsked, TuneAsked, Refused, Started, Exited, Stopping, Status}
    assert drawn == {*REQUESTS.values(), *REPLIES.values()}


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"not json", "not JSON"),
        (b"[1, 2]", "not a request: op: expected status, stop or tune, got None"),
        (b'{"op": "dance"}', "got 'dance'"),
        (b'{"op": "tune", "argv": ["demo"]}', "not a request: tune: missing field 'argv0'"),
        (
            b'{"op": "tune", "argv": "demo", "argv0": "a", "cwd": "/", "env": {}, "path": [],'
            b' "digest": "d"}',
            "not a request: tune.argv: expected an array, got a string",
        ),
        (b"\xff\xfe", "not JSON"),
    ],
)
def test_a_malformed_request_is_a_one_line_refusal(body: bytes, says: str) -> None:
    """Text that is not a request decodes to a Refused naming what is wrong, on one line."""
    refused = decode_request(body)
    assert isinstance(refused, Refused) and says in refused.refused
    assert "\n" not in refused.refused


def test_a_malformed_or_older_reply_is_a_refusal() -> None:
    """A reply of the wrong shape is a Refused; an untagged object (a service of protocol
    1, as it answered a tune) is refused saying how to end that service."""
    assert decode_reply(json.dumps({"reply": "started", "pid": "7"}).encode()) == Refused(
        "not a reply: started.pid: expected an integer, got a string"
    )
    assert decode_reply(b'{"pid": 7}') == Refused(OLDER)
    assert decode_reply(b'{"refused": "it was started for another installation"}') == Refused(OLDER)
    assert isinstance(decode_reply(b""), Refused)


def test_a_reply_keeps_the_keys_protocol_1_clients_read() -> None:
    """A started, exit, refusal and status reply still holds pid, exit, refused and the
    status fields flat, where a client of the previous release looks for them."""
    assert json.loads(encode(Started(7)))["pid"] == 7
    assert json.loads(encode(Exited(3)))["exit"] == 3
    assert json.loads(encode(Refused("no")))["refused"] == "no"
    status = json.loads(encode(Status("d", 1, 0, 900.0, 2.0, pid=5)))
    assert (status["pid"], status["served"], status["running"]) == (5, 1, 0)


def test_the_policy_refuses_an_unreadable_request_and_counts_it_as_activity() -> None:
    """A request the loop could not read is answered with its refusal and restarts the idle
    clock, as any request does."""
    state, actions = step(
        DaemonState(idle=9.0, digest="d"),
        ServiceRequest("", 4.0, unreadable="not JSON: Expecting value"),
    )
    assert actions == (Respond(Refused("not JSON: Expecting value")),) and state.last == 4.0
