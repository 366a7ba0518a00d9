"""The run record as a pure function of the session: :func:`record_of` (pure).

Rules:
- every row comes from the session: one per ``Profiled`` event (the baseline's first,
  when the strategy validates performance), its config, stage seconds, validation and
  artifact from the event's :class:`~aitune_fp.core.session.facts.BuildFacts`; a
  contender built again (the race widens it) keeps its one row, in its first build's
  place, with the later build's facts and both builds' stage seconds summed;
- a candidate row's profile is the session's (``Session.profiles``: the race's marks, a
  widened contender's merged profile, the final rounds' samples), else its build's
  failure; the baseline row's is its build's, or its final rounds' profile when it was
  timed there; each backend the final rounds timed gets its share of their seconds as
  its ``rounds`` stage;
- the candidates refused before they were built, and (once finished) those never
  reached, get their rows as :mod:`.unbuilt` says; the plan is kept whole
  (:mod:`.plan_record`), and the options hold the plan's (early stop, verification
  seconds, variants, builds ahead, race ladder: older readers read them) over the env's;
- what the session cannot know comes in a :class:`RecordEnv`: the model's name, the
  device, the environment fingerprint, the inputs, the max batch size and its search, the
  wall account, the status, the provenance, the isolation options, the candidates the
  plan left out as not native on the machine (``left_out``), and whether the
  winner could not be made (``unmade``: then that error, no selection, no verification);
  an ``interrupted`` record (written while the run goes on) carries the interrupted
  error (:data:`INTERRUPTED`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pyrsistent import PMap, freeze, pmap
from returns.result import Failure, Result

from aitune_fp.core.accuracy.reach import LeftOut
from aitune_fp.core.record.max_batch import MaxBatchSearch
from aitune_fp.core.record.plan_record import plan_record
from aitune_fp.core.record.provenance import Provenance
from aitune_fp.core.record.run_record import BackendOutcome, RunRecord
from aitune_fp.core.record.unbuilt import with_unbuilt
from aitune_fp.core.record.wall import WallAccount
from aitune_fp.core.records import BackendFailure, Profile, Selection, TuneError
from aitune_fp.core.session.events import Profiled, Timed
from aitune_fp.core.session.phase import Finished
from aitune_fp.core.session.state import Session, SessionPlan
from aitune_fp.core.strategies.registry import strategy_config
from aitune_fp.core.verification.judge import Verification

INTERRUPTED: Final = "the run was interrupted before it finished (partial record)"
"""The error a record written mid-run carries."""


@dataclass(frozen=True, slots=True)
class RecordEnv:
    """What the record needs that the session cannot know (see the module's rules)."""

    model: str
    device: str
    environment: PMap[str, Any] = field(default_factory=pmap)
    input_spec: PMap[str, Any] = field(default_factory=pmap)
    max_batch_size: int | None = None
    max_batch_search: MaxBatchSearch | None = None
    wall: WallAccount | None = None
    status: str = "complete"
    provenance: Provenance = field(default_factory=Provenance)
    options: PMap[str, Any] = field(default_factory=pmap)
    unmade: TuneError | None = None
    left_out: tuple[LeftOut, ...] = ()


def record_of(session: Session, env: RecordEnv) -> RunRecord:
    """The run record of ``session`` as it stands (see the module's rules).

    >>> from returns.result import Success
    >>> from aitune_fp.core.strategies import min_latency
    >>> from aitune_fp.core.session import BuildFacts, run
    >>> def fake(command):
    ...     if hasattr(command, "name") and not hasattr(command, "names"):
    ...         facts = BuildFacts("k", "key", {}, {"build": 1.0})
    ...         return Profiled(command.name, Success(Profile(command.name, {1: [1.0]})),
    ...                         True, 0.1, facts)
    >>> session, _ = run(SessionPlan(min_latency, ("a",)), fake)
    >>> r = record_of(session, RecordEnv("mlp", "cpu"))
    >>> r.baseline.backend, [c.backend for c in r.candidates], r.selection.backend
    ('eager', ['a'], 'eager')
    >>> r.candidates[0].stage_seconds["build"], record_of(session, RecordEnv("m", "cpu",
    ...     status="interrupted")).error.message == INTERRUPTED
    (1.0, True)
    """
    plan = session.plan
    rows = built_rows(session)
    has_baseline = plan.strategy.validate_performance
    outcome, verification = _outcome(session, env)
    refused = tuple(c.failure() for c in session.fed if isinstance(c, Failure))
    built = rows[1:] if has_baseline else rows
    ended = isinstance(session.phase, Finished)
    return RunRecord(
        model=env.model,
        device=env.device,
        strategy=freeze(strategy_config(plan.strategy, list(plan.candidates))),
        baseline=rows[0] if has_baseline and rows else None,
        candidates=with_unbuilt(built, plan.candidates, refused, ended),
        selection=outcome.value_or(None),
        error=outcome.failure() if isinstance(outcome, Failure) else None,
        environment=env.environment,
        input_spec=env.input_spec,
        max_batch_size=env.max_batch_size,
        max_batch_search=env.max_batch_search,
        wall=env.wall,
        status=env.status,
        verification=verification,
        provenance=env.provenance,
        events=session.events,
        notes=session.notes,
        options=freeze({**dict(env.options), **plan_options(plan)}),
        plan=plan_record(plan),
        left_out=env.left_out,
    )


def _outcome(
    session: Session, env: RecordEnv
) -> tuple[Result[Selection, TuneError], Verification | None]:
    """The record's selection or error, and the verification kept with it."""
    selection = session.selection
    if env.status == "interrupted" or selection is None:
        return Failure(TuneError(INTERRUPTED)), None
    if env.unmade is not None:
        return Failure(env.unmade), None
    return selection, session.verification


def plan_options(plan: SessionPlan) -> dict[str, Any]:
    """The plan's part of the record's options (replay reads it back)."""
    return {
        "early_stop": plan.early_stop,
        "verify_seconds": plan.verify_seconds,
        "variants": dict(plan.variant_of),
        "prebuild": {"names": list(plan.ahead), "parallel": plan.parallel},
        "race_ladder": list(plan.ladder),
    }


def built_rows(session: Session) -> tuple[BackendOutcome, ...]:
    """The rows of the backends built so far, in build order (the baseline's first when
    there is one; a contender built again keeps its first place)."""
    profiled = [e for e in session.events if isinstance(e, Profiled)]
    first = 1 if session.strategy.validate_performance and profiled else 0
    candidates = profiled[first:]
    rows: dict[str, BackendOutcome] = {}
    for event in candidates:
        profile = _candidate_profile(session, candidates, event.name)
        rows[event.name] = _row(session, event, profile, rows.get(event.name))
    base = profiled[:first]
    return (*(_row(session, e, _baseline_profile(session, e), None) for e in base), *rows.values())


def _candidate_profile(session: Session, events: Sequence[Profiled], name: str) -> Profile | None:
    """A candidate's profile as the session holds it (``None``: no build of it succeeded)."""
    succeeded = any(e.name == name and e.result.value_or(None) is not None for e in events)
    return session.profiles.get(name) if succeeded else None


def _baseline_profile(session: Session, event: Profiled) -> Profile | None:
    """The baseline's profile: its final rounds' when it was timed there, else its build's."""
    if event.name in session.rounded:
        return session.profiles.get(event.name)
    return event.result.value_or(None)


def _row(
    session: Session, event: Profiled, profile: Profile | None, earlier: BackendOutcome | None
) -> BackendOutcome:
    """One backend's row from its (latest) build and the profile the session holds."""
    facts = event.facts
    seconds = dict(facts.stage_seconds)
    if earlier is not None:  # a widened contender: both builds' seconds
        seconds = {
            k: earlier.stage_seconds.get(k, 0.0) + seconds.get(k, 0.0)
            for k in {*earlier.stage_seconds, *seconds}
        }
    if event.name in session.rounded:
        seconds["rounds"] = _rounds_share(session)
    failure = _failure(event) if profile is None else None
    return BackendOutcome(
        backend=event.name,
        kind=facts.kind,
        key=facts.key,
        config=facts.config,
        profile=profile,
        failure=failure,
        stage_seconds=pmap(seconds),
        validation=facts.validation,
        artifact=facts.artifact,
        stopped_early=None if profile is None else profile.stopped_early,
    )


def _failure(event: Profiled) -> BackendFailure | None:
    """The build's failure (``None`` when it succeeded)."""
    return event.result.failure() if isinstance(event.result, Failure) else None


def _rounds_share(session: Session) -> float:
    """Each final rounds participant's share of their seconds."""
    timed = next(
        (e for e in session.events if isinstance(e, Timed) and e.purpose == "rounds"), None
    )
    if timed is None or not session.rounded:
        return 0.0
    return timed.seconds / len(session.rounded)


__all__ = ["INTERRUPTED", "RecordEnv", "built_rows", "plan_options", "record_of"]
