"""The end of a session: the selection, its verification, the runners released, ``Done``.

Rules: the selection is :func:`~aitune_fp.core.fold.finish` of the fold (after the
rounds, when they ran); with verification seconds and a selection, the pick is
re-measured against its closest runner-ups (:mod:`aitune_fp.core.session.verify_plan`)
and the selection becomes the verified one (unchanged when it holds, else the better
challenger, with the verification's line in its notes); an entry whose runner could not
be made leaves before it is timed (a warning); a timing that leaves fewer than two
participants with samples gives no verification, said in a warning. Last, every
runner but the winner's (and the baseline's) is closed and ``Done`` carries the result.
"""

from __future__ import annotations

from dataclasses import replace

from returns.result import Failure, Result, Success

from aitune_fp.core.fold import finish
from aitune_fp.core.records import Profile, Selection, TuneError
from aitune_fp.core.session.commands import Close, Command, Done, Say, Verify
from aitune_fp.core.session.events import Timed, leaving
from aitune_fp.core.session.judges import VerifyJudge
from aitune_fp.core.session.notes import (
    NoVerification,
    VerificationTiming,
    VerificationUntimed,
    VerificationVerdict,
)
from aitune_fp.core.session.phase import Finished, Verifying
from aitune_fp.core.session.state import Session
from aitune_fp.core.session.verify_plan import VerifyPlan, alternatives, judged, plan_verification
from aitune_fp.core.verification.judge import Verification, verified

Step = tuple[Session, tuple[Command, ...]]


def _profile(session: Session, backend: str) -> Profile | None:
    """The backend's sweep profile (a candidate's as it was folded, else the record's)."""
    fed = [c.unwrap() for c in session.fed if isinstance(c, Success)]
    found = next((p for p in fed if p.backend == backend), None)
    return found if found is not None else session.profiles.get(backend)


def begin_verification(session: Session) -> Step:
    """Select, then verify the pick when asked (a ``Verify``), else finish."""
    selection = finish(session.strategy, session.fold)
    seconds = session.plan.verify_seconds
    if not seconds or seconds <= 0.0 or isinstance(selection, Failure):
        return done(session, selection, None, ())
    picked = selection.unwrap()
    vp = plan_verification(
        session.strategy, picked, seconds, session.live, _profile(session, picked.backend)
    )
    if vp is None:
        line = Say(NoVerification("the winner or its runner-ups have no live runner"))
        return done(session, selection, None, (line,))
    command = Verify(vp.entries, seconds, vp.plan, VerifyJudge(vp))
    return replace(session, phase=Verifying(vp)), (Say(vp.planned()), command)


def on_verified(session: Session, vp: VerifyPlan, event: Timed) -> Step:
    """The verification's samples judged: the verified selection, then ``Done``."""
    verification = judged(vp, event.samples, event.seconds)
    left = leaving(event)
    if verification is None:
        untimed = Say(VerificationUntimed(event.reason))
        return done(session, Success(vp.selection), None, (*left, untimed))
    said = (
        *left,
        Say(VerificationTiming(event.reason)),
        Say(VerificationVerdict(verification.holds, verification.reason)),
    )
    outcome = Success(verified(vp.selection, verification, alternatives(vp)))
    return done(session, outcome, verification, said)


def done(
    session: Session,
    outcome: Result[Selection, TuneError],
    verification: Verification | None,
    said: tuple[Command, ...],
) -> Step:
    """Close every runner but the winner's and the baseline's, then ``Done`` (a winner
    with no runner left: the failure that says so, see :func:`runnable`)."""
    outcome = runnable(session, outcome)
    verification = verification if isinstance(outcome, Success) else None
    keep = {session.plan.baseline} if session.strategy.validate_performance else set()
    if isinstance(outcome, Success):
        keep.add(outcome.unwrap().backend)
    closing = session.live - keep
    ending: tuple[Command, ...] = (Close(frozenset(closing)),) if closing else ()
    finished = replace(session, phase=Finished(outcome, verification), live=session.live - closing)
    return finished, (*said, *ending, Done(outcome, verification))


def runnable(
    session: Session, outcome: Result[Selection, TuneError]
) -> Result[Selection, TuneError]:
    """``outcome``, unless it selects a backend whose runner is gone (its build kept none,
    or it was closed): then no selection but the error saying so. A fallback to the
    baseline stays selectable without a runner: its config can be built again.

    >>> from aitune_fp.core.records import BackendProfilingResult
    >>> from aitune_fp.core.session.state import SessionPlan
    >>> from aitune_fp.core.strategies import min_latency
    >>> picked = Success(Selection("a", BackendProfilingResult(1.0, 1, 1.0, 1.0), False))
    >>> s = Session(SessionPlan(min_latency, ("a",)), live=frozenset({"eager"}))
    >>> runnable(s, picked).failure().message
    'a has no runner left to run the tuned module'
    >>> runnable(replace(s, live=frozenset({"a"})), picked) == picked
    True
    """
    match outcome:
        case Success(picked) if picked.backend not in session.live:
            if not picked.fell_back_to_baseline:
                why = f"{picked.backend} has no runner left to run the tuned module"
                return Failure(TuneError(why))
    return outcome
