"""Final rounds outside a tune (the benchmarks and tests time runners they built): the
session's end driven by the one loop.

Rules: :func:`final_rounds` puts the fold's state after the sweeps (:class:`AfterSweeps`)
into a session in its ``Swept`` phase (:func:`swept`), and drives it to its end with the
loop every tune uses (:func:`~aitune_fp.core.session.run.carry`): the session decides the
rounds (who is timed, the plan, the judge), they are timed here
(:func:`~aitune_fp.effects.measure.rounds.time_rounds`) and fed back (the same fold re-run
with their samples); without rounds the state comes back as the session left it (with a
note when the sweeps settled the decision). A tune does exactly this through
:mod:`aitune_fp.shell.drive`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from aitune_fp.core.records import Candidate, Profile, TuneState
from aitune_fp.core.report.notes import render
from aitune_fp.core.session import Command, Event, Say, Session, SessionPlan, TimeRounds
from aitune_fp.core.session.phase import Swept
from aitune_fp.core.session.run import carry
from aitune_fp.core.session.session import onwards
from aitune_fp.core.strategy import Strategy
from aitune_fp.effects.inputs.samples import Samples
from aitune_fp.effects.measure.interleave import Interleaved
from aitune_fp.effects.measure.profiler import ProfileSettings
from aitune_fp.effects.measure.rounds import RoundsOutcome, time_rounds
from aitune_fp.shell.drive import as_timed

log = logging.getLogger("aitune_fp")


@dataclass(frozen=True, slots=True)
class AfterSweeps:
    """Where the sweeps left a decision: the fold's ``state`` after ``baseline`` and every
    candidate in ``fed`` (in order) under ``strategy``, and the wall ``seconds`` the sweeps
    took (``None``: the rounds' budget is not cut to its share of them)."""

    strategy: Strategy
    state: TuneState
    baseline: Profile | None
    fed: Sequence[Candidate]
    seconds: float | None = None


def swept(after: AfterSweeps, live: Sequence[str]) -> Session:
    """The session as it stands after the sweeps, the runners of ``live`` alive.

    >>> from returns.result import Success
    >>> from aitune_fp.core.strategies import min_latency
    >>> a = AfterSweeps(min_latency, TuneState(), None, [Success(Profile("a", {1: [1.0]}))], 2.0)
    >>> s = swept(a, ["a"])
    >>> s.phase_name, sorted(s.live), s.sweep_seconds
    ('swept', ['a'], 2.0)
    """
    fed = tuple(after.fed)
    names = tuple(p.backend for p in (r.value_or(None) for r in fed) if p is not None)
    base = after.baseline
    plan = SessionPlan(after.strategy, names, base.backend if base else "eager")
    # no sweep seconds (0): the rounds' budget is not cut (RoundsPlan.within)
    return Session(
        plan,
        Swept(),
        after.state,
        fed=fed,
        live=frozenset(live),
        baseline_profile=base,
        sweep_seconds=after.seconds or 0.0,
    )


def final_rounds(
    after: AfterSweeps,
    runners: Mapping[str, Callable[..., Any]],
    samples: Samples,
    device: torch.device,
    settings: ProfileSettings = ProfileSettings(),
) -> tuple[TuneState, RoundsOutcome | None]:
    """Run the strategy's final rounds after the sweeps and re-fold with their samples.

    ``runners`` maps the backends still alive to their runners; the sweeps' seconds cap
    the rounds' time at ``plan.sweep_share`` times them.
    """
    timings: list[Interleaved] = []

    def answer(command: Command) -> Event | None:
        match command:
            case Say(note):
                log.info("%s", render(note))
            case TimeRounds(participants, plan, judge):
                who = [(n, runners[n], bs) for n, bs in participants]
                timings.append(time_rounds(who, samples, device, plan, judge, settings))
                return as_timed("rounds", timings[-1])
        return None

    session, _ = carry(*onwards(swept(after, list(runners))), answer)
    if not timings:
        return session.fold, None
    t, profiles = timings[-1], tuple(session.profiles[n] for n in session.rounded)
    return session.fold, RoundsOutcome(profiles, t.rounds, t.reason, t.seconds)
