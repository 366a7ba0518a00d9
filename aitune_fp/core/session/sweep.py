"""The sweep: the baseline, then each candidate built as the fold asks for it.

Rules:
- with ``validate_performance`` the baseline is built first, with no early stop (or
  only its runner, when a baseline profile is reused); without it there is none;
- candidates are asked for one at a time, in the user's order; one the strategy does not
  admit, or a variant of a clearly beaten base (:mod:`aitune_fp.core.session.pruning`),
  is never built (a ``measure`` failure in the fold, and a log line); each other is
  built with the early stop against the best so far (the fold's leader, else the
  baseline; none when the plan turns early stops off, for a metric with no interval, or
  before anything was measured);
- after each answer the fold steps; the runners still alive are those that can still
  win or challenge (the leader; with rounds planned every contender; with a
  verification planned the leader's closest runner-ups; always the baseline; never one
  the race dropped), the others are closed;
- the sweep ends when the candidates are exhausted or the strategy has settled after a
  step (later candidates are never built);
- a plan that races (:mod:`aitune_fp.core.session.race_sweep`) builds each candidate over
  the race's batch sizes only, steps the race after each answer, and widens its
  contenders after the last one (phase :class:`~aitune_fp.core.session.phase.Widening`,
  :func:`on_widened`).
"""

from __future__ import annotations

from dataclasses import replace

from returns.result import Failure

from aitune_fp.core.fold import settled, start, step
from aitune_fp.core.measure.early_stop import EarlyStop, early_stop_for
from aitune_fp.core.records import BackendFailure, Candidate, TuneState
from aitune_fp.core.rounds.round_members import contenders
from aitune_fp.core.session.commands import Build, Close, Command, Say
from aitune_fp.core.session.events import Profiled
from aitune_fp.core.session.notes import NewBest, Skipped
from aitune_fp.core.session.phase import Baseline, Sweeping, Swept
from aitune_fp.core.session.pruning import pruned
from aitune_fp.core.session.race_sweep import new_race, race_sizes, raced, with_widened
from aitune_fp.core.session.state import Session
from aitune_fp.core.verification.verification_plan import CHALLENGERS, runner_ups

Step = tuple[Session, tuple[Command, ...]]


def early_stop(session: Session) -> EarlyStop | None:
    """The early stop for the next candidate (``None``: it runs in full).

    >>> from aitune_fp.core.records import Profile, Scored
    >>> from aitune_fp.core.strategies import min_latency
    >>> from aitune_fp.core.session.state import SessionPlan
    >>> best = Scored("ort", min_latency.measure(Profile("ort", {1: [1.0, 1.1]})).unwrap())
    >>> s = Session(SessionPlan(min_latency, ("a",)), fold=TuneState(best=best))
    >>> early_stop(s).state.best_name
    'ort'
    >>> early_stop(replace(s, fold=TuneState())) is None
    True
    """
    if not session.plan.early_stop:
        return None
    rule = early_stop_for(session.strategy)
    best = session.fold.best if session.fold.best is not None else session.fold.baseline
    if rule is None or best is None:
        return None
    return EarlyStop(rule, rule.start(best.backend, best.result, baseline=False))


def kept(session: Session, state: TuneState) -> frozenset[str]:
    """Whose runners stay alive after a step (see the module's rules)."""
    strategy, plan = session.strategy, session.strategy.plan.rounds
    keep = set(contenders(strategy, state, plan.contenders)) if plan is not None else set()
    if state.best is not None:
        ups = CHALLENGERS if session.plan.verify_seconds else 0
        keep |= {state.best.backend, *runner_ups(strategy, state.best, state.ranking, ups)}
    if session.strategy.validate_performance:
        keep.add(session.plan.baseline)
    dropped = set(session.race.dropped) if session.race is not None else set()
    return frozenset(keep - (dropped - {session.plan.baseline}))


def begin(session: Session) -> Step:
    """The first commands: build the baseline, or go straight to the candidates."""
    plan = session.plan
    if session.strategy.validate_performance:
        build = Build(plan.baseline, baseline=True, reuse=plan.reused_baseline)
        return replace(session, phase=Baseline(), race=new_race(plan)), (build,)
    fold = start(session.strategy, None)
    return ask_next(replace(session, fold=fold, race=new_race(plan)), 0, ())


def on_baseline(session: Session, event: Profiled) -> Step:
    """The baseline's answer: the fold starts from it, then the first candidate."""
    session = replace(
        _measured(session, event),
        fold=start(session.strategy, event.result),
        live=session.live | {event.name} if event.live else session.live,
        baseline_profile=event.result.value_or(None),
        baseline_answer=event.result,
    )
    return ask_next(session, 0, ())


def on_candidate(session: Session, pending: int, event: Profiled) -> Step:
    """Candidate number ``pending``'s answer: fold it, close who can no longer win, go on."""
    state = step(session.strategy, session.fold, event.result)
    live, said = _released(session, state, event)
    session = replace(
        _measured(session, event),
        fold=state,
        fed=(*session.fed, event.result),
        live=live,
    )
    session, race_said = raced(session, event)
    said = (*said, *race_said)
    if settled(session.strategy, state):
        return replace(session, phase=Swept()), said
    return ask_next(session, pending + 1, said)


def on_widened(session: Session, event: Profiled) -> Step:
    """A widened contender's answer: its merged profile folded in (the record reads it
    from the session's profiles), who can no longer win closed, then back to the end of
    the sweep (the next widening)."""
    after = with_widened(session, event)
    live, said = _released(session, after.fold, event)
    after = replace(
        after, live=live, phase=Swept(), sweep_seconds=session.sweep_seconds + event.profile_seconds
    )
    return after, said


def _measured(session: Session, event: Profiled) -> Session:
    """``session`` knowing the answer's profile and its sweep's seconds."""
    profile = event.result.value_or(None)
    return replace(
        session,
        profiles=session.profiles.set(event.name, profile) if profile else session.profiles,
        sweep_seconds=session.sweep_seconds + event.profile_seconds,
    )


def _released(
    session: Session, state: TuneState, event: Profiled
) -> tuple[frozenset[str], tuple[Command, ...]]:
    """The runners alive after ``event`` (a new live one joins, those who can no longer
    win or challenge are closed), and what is said about it."""
    if not event.live:
        return session.live, ()
    said: tuple[Command, ...] = ()
    before = session.fold.best.backend if session.fold.best is not None else None
    if state.best is not None and state.best.backend == event.name != before:
        metric = session.strategy.metric
        said = (Say(NewBest(event.name, state.best.result.metric, metric.fmt, metric.unit)),)
    live = session.live | {event.name}
    closing = live - kept(session, state)
    if closing:
        said = (*said, Close(frozenset(closing)))
    return live - closing, said


def _not_built(session: Session, name: str) -> str | None:
    """Why ``name`` is not built: not admitted, or a variant of a clearly beaten base."""
    strategy = session.strategy
    if strategy.admits is not None and not strategy.admits(name):
        return f"not admitted by {strategy.name}"
    base = session.plan.variant_of.get(name)
    return pruned(strategy, session.fold, base) if base is not None else None


def ask_next(session: Session, index: int, said: tuple[Command, ...]) -> Step:
    """Build the next admitted candidate from ``index`` on (the refused ones folded in as
    ``measure`` failures); past the last, or once settled, the sweep is over."""
    names = session.plan.candidates
    while index < len(names):
        why = _not_built(session, names[index])
        if why is None:
            sizes = race_sizes(session.plan)
            build = Build(names[index], early_stop=early_stop(session), batch_sizes=sizes)
            return replace(session, phase=Sweeping(index)), (*said, build)
        session, said = _refused(session, names[index], why, said)
        if settled(session.strategy, session.fold):
            break
        index += 1
    return replace(session, phase=Swept()), said


def _refused(
    session: Session, name: str, why: str, said: tuple[Command, ...]
) -> tuple[Session, tuple[Command, ...]]:
    """``session`` with ``name`` folded in as a ``measure`` failure saying ``why``."""
    refused: Candidate = Failure(BackendFailure(name, "measure", why))
    state = step(session.strategy, session.fold, refused)
    folded = replace(session, fold=state, fed=(*session.fed, refused))
    return folded, (*said, Say(Skipped(name, why)))
