"""The final rounds after the sweep: who is timed, their judge, and the fold after.

Rules (:mod:`aitune_fp.core.rounds.final_rounds` states them): rounds run only with a
rounds plan, a ``confidence`` rule and a leader, among the contenders still alive, each
at its selected batch size, the baseline only while some contender is unsettled against
it, and only when at least two would be timed; their budget is the plan's, cut to its
share of the sweeps' seconds. The judge is the core's
(:func:`~aitune_fp.core.rounds.round_members.judge_rounds`), as a value
(:class:`~aitune_fp.core.session.judges.RoundsJudge`). After the rounds the same fold is
re-run over the same baseline and candidates with the participants' round samples, the
session's profiles are the participants' with their round samples (``rounded`` names
them: each gets its share of the rounds' seconds in the record), and a note says how the
rounds ended (after a warning for each participant that left before it was timed: its
runner could not be made, so it has no round samples).
"""

from __future__ import annotations

from dataclasses import replace

from aitune_fp.core.records import Profile
from aitune_fp.core.rounds.final_rounds import (
    RoundsSetup,
    refold,
    rounds_note,
    setup_rounds,
    skipped,
)
from aitune_fp.core.session.commands import Command, Say, TimeRounds
from aitune_fp.core.session.events import Timed, leaving
from aitune_fp.core.session.judges import RoundsJudge, with_rounds
from aitune_fp.core.session.notes import NoFinalRounds, RoundsEnded, RoundsReduced, RoundsStarted
from aitune_fp.core.session.phase import Rounds
from aitune_fp.core.session.state import Session

Step = tuple[Session, tuple[Command, ...]]


def _candidates(session: Session) -> dict[str, Profile]:
    return {p.backend: p for p in (r.value_or(None) for r in session.fed) if p is not None}


def _everyone(session: Session, setup: RoundsSetup) -> tuple[tuple[Profile, int], ...]:
    """The participants judged (the baseline first when it is), with their batch sizes."""
    found = _candidates(session)
    base = session.baseline_profile
    first = ((base, setup.baseline[1]),) if setup.baseline is not None and base else ()
    return (*first, *((found[n], bs) for n, bs in setup.candidates))


def rounds_judge(session: Session, setup: RoundsSetup) -> RoundsJudge:
    """The rounds' judge over the samples so far, as a value."""
    has_base = setup.baseline is not None and session.baseline_profile is not None
    return RoundsJudge(session.strategy, _everyone(session, setup), has_base, setup.plan)


def _setup(session: Session) -> RoundsSetup | None:
    """The rounds the strategy asks for after the sweep (``None``: none)."""
    strategy = session.strategy
    if strategy.plan.rounds is None or strategy.confidence is None:
        return None
    base = session.baseline_profile if strategy.validate_performance else None
    name = base.backend if base is not None else None
    return setup_rounds(
        strategy, session.fold, _candidates(session), session.live, name, session.sweep_seconds
    )


def begin_rounds(session: Session) -> tuple[Session, tuple[Command, ...], bool]:
    """The rounds' commands, and whether they wait for an answer (``False``: no rounds)."""
    setup = _setup(session)
    if setup is None:
        return session, (), False
    if not setup.runs:
        why = (Say(NoFinalRounds(setup.reason)),) if setup.reason else ()
        return replace(session, fold=skipped(session.fold, setup)), why, False
    said: tuple[Command, ...] = (Say(RoundsStarted(setup.timed)),)
    said += (Say(RoundsReduced(setup.reason)),) if setup.reason else ()
    base_name = setup.baseline[0] if setup.baseline is not None else None
    timed = tuple(
        (p.backend, bs)
        for p, bs in _everyone(session, setup)
        if setup.time_baseline or p.backend != base_name
    )
    command = TimeRounds(timed, setup.plan, rounds_judge(session, setup))
    return replace(session, phase=Rounds(setup)), (*said, command), True


def on_rounds(session: Session, setup: RoundsSetup, event: Timed) -> Step:
    """The rounds' samples: the fold re-run with them, the profiles with their samples."""
    everyone = [
        with_rounds(p, bs, event.samples.get(p.backend, ())) for p, bs in _everyone(session, setup)
    ]
    timed = {p.backend: p for p in everyone}
    note = rounds_note(event.rounds, event.seconds, event.reason, setup)
    state = refold(session.strategy, session.baseline_profile, session.fed, timed, note)
    said: tuple[Command, ...] = (
        *leaving(event),
        Say(RoundsEnded(event.reason, event.seconds)),
    )
    rounded = tuple(p.backend for p in everyone)
    return replace(
        session, fold=state, profiles=session.profiles.update(timed), rounded=rounded
    ), said
