"""Final rounds outside a tune (the benchmarks and tests time runners they built): the
session's rounds step carried out once.

Rules: :func:`final_rounds` puts the fold's state after the sweeps into a session
(:mod:`aitune_fp.core.session`), lets it decide the rounds
(:func:`~aitune_fp.core.session.final_rounds_step.begin_rounds`: who is timed, the plan,
the judge), times them here (:func:`~aitune_fp.effects.measure.rounds.time_rounds`) and
feeds the samples back (the same fold re-run with them); without rounds the state comes
back as the session left it (with a note when the sweeps settled the decision). A tune
does exactly this through :mod:`aitune_fp.shell.drive`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from pyrsistent import pmap

from aitune_fp.core.records import Candidate, Profile, TuneState
from aitune_fp.core.session import Amend, Say, Session, SessionPlan, Timed, TimeRounds
from aitune_fp.core.session.final_rounds_step import begin_rounds, on_rounds
from aitune_fp.core.session.phase import Rounds, Swept
from aitune_fp.core.strategy import Strategy
from aitune_fp.effects.inputs.samples import Samples
from aitune_fp.effects.measure.profiler import ProfileSettings
from aitune_fp.effects.measure.rounds import RoundsOutcome, time_rounds

log = logging.getLogger("aitune_fp")


def swept(
    strategy: Strategy,
    state: TuneState,
    baseline: Profile | None,
    fed: Sequence[Candidate],
    live: Sequence[str],
    sweep_seconds: float | None,
) -> Session:
    """The session as it stands after the sweeps (the fold's ``state`` over ``fed``).

    >>> from returns.result import Success
    >>> from aitune_fp.core.strategies import min_latency
    >>> s = swept(min_latency, TuneState(), None, [Success(Profile("a", {1: [1.0]}))], ["a"], 2.0)
    >>> s.phase_name, sorted(s.live), s.sweep_seconds
    ('swept', ['a'], 2.0)
    """
    names = tuple(p.backend for p in (r.value_or(None) for r in fed) if p is not None)
    plan = SessionPlan(strategy, names, baseline.backend if baseline else "eager")
    # no sweep seconds (0): the rounds' budget is not cut (RoundsPlan.within)
    return Session(plan, Swept(), state, fed=tuple(fed), live=frozenset(live),
                   baseline_profile=baseline, sweep_seconds=sweep_seconds or 0.0)  # fmt: skip


def final_rounds(
    strategy: Strategy,
    state: TuneState,
    baseline: Profile | None,
    fed: Sequence[Candidate],
    runners: Mapping[str, Callable[..., Any]],
    samples: Samples,
    device: torch.device,
    settings: ProfileSettings = ProfileSettings(),
    *,
    sweep_seconds: float | None = None,
) -> tuple[TuneState, RoundsOutcome | None]:
    """Run the strategy's final rounds after the sweeps and re-fold with their samples.

    ``state`` is the fold's state after ``baseline`` and every candidate in ``fed`` (in
    order); ``runners`` maps the backends still alive to their runners; ``sweep_seconds``,
    the wall time the sweeps took, caps the rounds' time at ``plan.sweep_share`` times it.
    """
    session = swept(strategy, state, baseline, fed, list(runners), sweep_seconds)
    session, said, waits = begin_rounds(session)
    for line in (c.line for c in said if isinstance(c, Say)):
        log.info("%s", line)
    command = next((c for c in said if isinstance(c, TimeRounds)), None)
    if not waits or command is None or not isinstance(session.phase, Rounds):
        return session.fold, None
    who = [(n, runners[n], bs) for n, bs in command.participants]
    timed = time_rounds(who, samples, device, command.plan, command.judge, settings)
    event = Timed("rounds", pmap(timed.samples), timed.rounds, timed.reason, timed.seconds)
    after, more = on_rounds(session, session.phase.setup, event)
    amended = next(c for c in more if isinstance(c, Amend))
    outcome = RoundsOutcome(amended.profiles, timed.rounds, timed.reason, timed.seconds)
    log.info("final rounds: %s (%.1f s)", timed.reason, timed.seconds)
    return after.fold, outcome
