"""The sweep as a race: every candidate briefly, the clearly beaten dropped, the rest widened.

Rules:
- a plan *races* (:func:`races`) when early stops are on, its ``ladder`` has three batch
  sizes or more and its strategy's metric is a throughput with no latency budget (the
  race compares per-row costs at each candidate's best batch size, which is that metric;
  a latency, or a throughput under a budget, is not);
- the race's batch sizes (:func:`race_sizes`) are the ladder's smallest, its middle and
  its largest one: the strategy's decisive sizes (a per-row cost falling with the batch
  size is lowest at the largest, one rising at the smallest), so every candidate is
  measured where it may win before anything is dropped (a candidate that is best only
  at the largest sizes is never dropped on the smaller ones: the regret law in
  ``tests/core/test_race_regret_law.py``); every admitted candidate is built over them
  only (with the sweep's early stop);
- each answer steps the racing rule (:mod:`aitune_fp.core.session.racing`, its verdict
  the verification's margin and confidence), which never drops the fold's best (the
  strategy's own compare, e.g. "significant wins only", may keep a leader the race's
  interval would drop: it stays a contender) nor, with a verification planned, the
  runner-ups the sweep keeps for it (:func:`spared`: measured one after another, a
  candidate whose whole window fell in a slow spell may look beaten; the verification's
  interleaved rounds can still find it, so the race leaves it to them, as the full sweep
  would); a candidate the rule drops is said in one
  line and its profile says why (``sweep_stop`` and ``stopped_early``: the report's
  "stopped early" section and the record's ``stopped_early`` show it), in the fold too;
  its runner is closed (it takes part in no final rounds and no verification);
- once every candidate was raced (and the strategy has not settled), each contender left
  is built again over every ladder size the race skipped (``widen``), once; its
  profile is then the union of both builds
  (:func:`merged`), the fold is folded again from the session's answers with it
  (:func:`refolded`), and a failed widening keeps the race's profile and the race's
  runner: the runner stays live through the widening (the interpreter closes it when the
  widening's runner replaces it), so a contender whose widening failed can still be
  selected and run (an isolated runner is made in the tune process only when it is
  used, so keeping it costs nothing until then).
"""

from __future__ import annotations

from dataclasses import replace

from pyrsistent import pmap
from returns.result import Success

from aitune_fp.core.fold import backend_of, start
from aitune_fp.core.fold import step as fold_step
from aitune_fp.core.measure.early_stop import EarlyStop
from aitune_fp.core.records import Candidate, Profile, TuneState
from aitune_fp.core.session.commands import Build, Close, Command, Say
from aitune_fp.core.session.events import Profiled
from aitune_fp.core.session.notes import DroppedInRace
from aitune_fp.core.session.phase import Widening
from aitune_fp.core.session.racing import Observed, RaceState, widen
from aitune_fp.core.session.racing import step as race_step
from aitune_fp.core.session.state import Session, SessionPlan
from aitune_fp.core.verification.judge import CONFIDENCE, MARGIN
from aitune_fp.core.verification.verification_plan import CHALLENGERS, runner_ups

Step = tuple[Session, tuple[Command, ...]]


def races(plan: SessionPlan) -> bool:
    """Whether ``plan``'s candidates race (see the module's rules).

    >>> from aitune_fp.core.strategies import max_throughput, min_latency
    >>> races(SessionPlan(max_throughput, ("a",), ladder=(1, 2, 4)))
    True
    >>> races(SessionPlan(max_throughput, ("a",), ladder=(1, 2)))
    False
    >>> races(SessionPlan(min_latency, ("a",), ladder=(1, 2, 4)))
    False
    """
    strategy = plan.strategy
    return (
        plan.early_stop
        and len(plan.ladder) >= 3
        and strategy.metric.kind == "throughput"
        and "budget_ms" not in strategy.params
    )


def race_sizes(plan: SessionPlan) -> tuple[int, ...]:
    """The batch sizes every candidate is raced at (``()``: no race, the whole ladder).

    >>> from aitune_fp.core.strategies import max_throughput
    >>> race_sizes(SessionPlan(max_throughput, ("a",), ladder=(1, 2, 4, 8, 16)))
    (1, 4, 16)
    """
    if not races(plan):
        return ()
    ladder = sorted(plan.ladder)
    return ladder[0], ladder[len(ladder) // 2], ladder[-1]


def new_race(plan: SessionPlan) -> RaceState | None:
    """The race a session starts with (``None``: it does not race)."""
    return RaceState(margin=MARGIN, confidence=CONFIDENCE) if races(plan) else None


def observed(race: RaceState, profile: Profile) -> RaceState:
    """``race`` after every batch size of ``profile``."""
    for bs in profile.batch_sizes:
        race, _ = race_step(race, Observed(profile.backend, bs, profile.samples(bs)))
    return race


def raced(session: Session, event: Profiled) -> Step:
    """The race after a candidate's answer: the newly dropped said, their profiles marked
    (in the fold too), their runners closed."""
    race, profile = session.race, event.result.value_or(None)
    if race is None or profile is None:
        return session, ()
    after = spared(observed(race, profile), session.fold, session)
    newly = tuple(n for n in after.dropped if n not in race.dropped)
    profiles = session.profiles
    said: tuple[Command, ...] = ()
    for name in newly:
        marked = _marked(profiles.get(name) or profile, after.dropped[name].reason)
        profiles = profiles.set(name, marked)
        said = (*said, Say(DroppedInRace(name, after.dropped[name])))
    fed = tuple(Success(profiles[n]) if (n := backend_of(c)) in newly else c for c in session.fed)
    closing = frozenset(newly) & session.live
    said = (*said, Close(closing)) if closing else said
    return replace(
        session,
        race=after,
        profiles=profiles,
        fed=fed,
        live=session.live - closing,
        fold=refolded(session, fed) if newly else session.fold,
    ), said


def spared(race: RaceState, fold: TuneState, session: Session) -> RaceState:
    """``race`` without dropping the fold's best (the strategy's own verdict keeps it) nor,
    with a verification planned, the runner-ups the sweep keeps to challenge it."""
    best = fold.best
    if best is None:
        return race
    ups = CHALLENGERS if session.plan.verify_seconds else 0
    kept = {best.backend, *runner_ups(session.strategy, best, fold.ranking, ups)}
    if not kept & set(race.dropped):
        return race
    return replace(race, dropped=pmap({n: why for n, why in race.dropped.items() if n not in kept}))


def _marked(profile: Profile, why: str) -> Profile:
    """``profile`` saying that the race dropped it, and why."""
    early = why if profile.stopped_early is None else f"{profile.stopped_early}; {why}"
    return replace(profile, sweep_stop=why, stopped_early=early)


def widening(session: Session, early: EarlyStop | None) -> Step | None:
    """The next contender to widen, as its build (``None``: none is left to widen).

    ``early`` is the early stop the build carries (the sweep's, against the best so far).
    """
    race, ladder = session.race, session.plan.ladder
    if race is None:
        return None
    for name in race.contenders:
        sizes = widen(race, name, ladder)
        if sizes:
            return _widen(session, race, name, sizes, early)
    return None


def merged(before: Profile, after: Profile) -> Profile:
    """One profile of both builds' batch sizes (``after``'s where both measured one).

    >>> a = Profile("x", {1: [1.0], 4: [3.0]}, stopped_early="batch size 1: ...")
    >>> m = merged(a, Profile("x", {8: [5.0]}, sweep_stop="plan exhausted"))
    >>> m.batch_sizes, m.sweep_stop, m.stopped_early
    ((1, 4, 8), 'plan exhausted', 'batch size 1: ...')
    """
    notes = [n for n in (before.stopped_early, after.stopped_early) if n]
    peaks = [p for p in (before.peak_memory_mb, after.peak_memory_mb) if p is not None]
    return replace(
        after,
        latencies_ms={**before.latencies_ms, **after.latencies_ms},
        batches={**before.batches, **after.batches},
        stopped_early="; ".join(notes) if notes else None,
        peak_memory_mb=max(peaks) if peaks else None,
        accuracy=after.accuracy or before.accuracy,
    )


def refolded(session: Session, fed: tuple[Candidate, ...]) -> TuneState:
    """The fold over ``fed`` from the session's baseline answer, as if answered so."""
    state = start(session.strategy, session.baseline_answer)
    for candidate in fed:
        state = fold_step(session.strategy, state, candidate)
    return state


def with_widened(session: Session, event: Profiled) -> Session:
    """``session`` after a widening's answer: the merged profile in ``fed`` and the
    profiles, the fold folded again and the race stepped (a failure keeps the race's)."""
    before = session.profiles.get(event.name)
    after = event.result.value_or(None)
    if before is None or after is None:
        return session
    both = merged(before, after)
    fed = tuple(Success(both) if backend_of(c) == event.name else c for c in session.fed)
    fold = refolded(session, fed)
    race = (
        spared(observed(session.race, after), fold, session) if session.race is not None else None
    )
    profiles = session.profiles.set(event.name, both)
    return replace(session, fed=fed, fold=fold, race=race, profiles=profiles)


def _widen(
    session: Session, race: RaceState, name: str, sizes: tuple[int, ...], early: EarlyStop | None
) -> Step:
    """``name`` built again over ``sizes`` (its race runner, when live, stays live until
    the widening's replaces it)."""
    index = session.plan.candidates.index(name)
    race = replace(race, widened=race.widened | {name})
    after = replace(session, phase=Widening(index), race=race)
    return after, (Build(name, early_stop=early, batch_sizes=sizes),)
