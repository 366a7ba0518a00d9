"""The service's policy is a pure state machine whose laws hold for any sequence of events:
refusals, one report per tune, a kill only after the grace, idle stops only when idle."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.serving.service_messages import Refused
from aitune_fp.core.serving.service_state import (
    GRACE,
    OTHER_INSTALLATION,
    ClientGone,
    DaemonState,
    Fork,
    Forked,
    Kill,
    Message,
    Report,
    Respond,
    ServiceRequest,
    Signalled,
    Tick,
    TuneEnded,
    step,
)

PIDS = st.integers(100, 104)


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    """Events in time order: requests, forks, ends, clients gone, ticks, signals."""
    now, out = 0.0, list[Message]()
    for _ in range(draw(st.integers(1, 30))):
        now += draw(st.floats(0.0, 8.0))
        kind = draw(st.sampled_from(["ask", "fork", "end", "gone", "tick", "signal"]))
        pid = draw(PIDS)
        if kind == "ask":
            op = draw(st.sampled_from(["tune", "status", "stop", "other"]))
            same, digest = draw(st.booleans()), draw(st.sampled_from(["d", "x"]))
            out.append(ServiceRequest(op, now, same, digest, draw(st.sampled_from([0, 3]))))
        elif kind == "fork":
            out.append(Forked(pid, now))
        elif kind == "end":
            out.append(TuneEnded(pid, draw(st.integers(0, 143)), now))
        elif kind == "gone":
            out.append(ClientGone(pid, now))
        elif kind == "tick":
            out.append(Tick(now))
        else:
            out.append(Signalled("SIGTERM"))
    return out


def _run(history: list[Message]) -> tuple[DaemonState, list[tuple[Message, object]]]:
    state, seen = DaemonState(idle=20.0, digest="d"), list[tuple[Message, object]]()
    for message in history:
        state, actions = step(state, message)
        seen.extend((message, a) for a in actions)
    return state, seen


@given(histories())
def test_every_tune_is_reported_once_and_only_a_running_one(history: list[Message]) -> None:
    """A tune's exit is reported at most once per fork, only after it was forked, and the
    served count is the number of reports."""
    state, seen = _run(history)
    reports = [a.pid for _, a in seen if isinstance(a, Report)]
    forks = [m.pid for m in history if isinstance(m, Forked)]
    assert all(reports.count(p) <= forks.count(p) for p in set(reports))
    assert state.served == len(reports)


@given(histories())
def test_a_sigkill_comes_only_after_the_grace_of_a_sigterm(history: list[Message]) -> None:
    """Every SIGKILL of a tune follows its SIGTERM (its client gone) by more than the grace,
    and a tune is terminated at most once per fork."""
    _, seen = _run(history)
    terms: dict[int, float] = {}
    for message, action in seen:
        if isinstance(action, Kill) and action.signal == "SIGTERM":
            assert isinstance(message, ClientGone)
            terms[action.pid] = message.now
        if isinstance(action, Kill) and action.signal == "SIGKILL":
            assert isinstance(message, Tick) and message.now - terms[action.pid] > GRACE


@given(histories())
def test_requests_are_refused_or_forked_by_the_rules(history: list[Message]) -> None:
    """Another user's request and another installation's tune are refused; only a tune of
    this installation with its three descriptors is forked; each request gets one answer."""
    _, seen = _run(history)
    for message in (m for m in history if isinstance(m, ServiceRequest)):
        answers = [a for m, a in seen if m is message and isinstance(a, Respond | Fork)]
        assert len(answers) == 1
        forked = isinstance(answers[0], Fork)
        ok = message.same_user and message.op == "tune" and message.digest == "d"
        assert forked == (ok and message.descriptors == 3)
        if message.same_user and message.op == "tune" and message.digest != "d":
            assert answers[0] == Respond(Refused(OTHER_INSTALLATION))


@given(histories())
def test_an_idle_stop_comes_only_with_no_tune_running(history: list[Message]) -> None:
    """The service stops for idleness only on a tick with no tune running, more than the
    idle time after the last activity; a stop keeps its first reason."""
    state = DaemonState(idle=20.0, digest="d")
    for message in history:
        before = state
        state, _ = step(state, message)
        if state.stopping.startswith("idle") and not before.stopping:
            assert isinstance(message, Tick) and not before.tunes
            assert message.now - before.last > before.idle
        if before.stopping:
            assert state.stopping == before.stopping
