"""The finished run as data: every backend's outcome and the decision in a ``RunRecord``.

Rules: the record holds every run's config (a dataclass config as its fields, else its
name), profile or failure, stage times, validation errors and artifact; the baseline is
the first run when the strategy validates performance; a candidate refused before it was
built (not admitted, or a pruned variant) is a failure row with its reason, and once
the run has ended one it never reached is a ``not run`` row
(:mod:`aitune_fp.core.record.unbuilt`); the strategy is stored by
:func:`~aitune_fp.core.strategies.registry.strategy_config` with the candidates' names;
a candidate's ``stopped_early`` is its profile's (the early-stop rule's line), also on
the outcome, where ``run.json`` pins it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pyrsistent import freeze, pmap
from returns.result import Failure, Result

from aitune_fp.core.record.derive import RecordEnv
from aitune_fp.core.record.provenance import Provenance
from aitune_fp.core.record.run_record import BackendOutcome, RunRecord
from aitune_fp.core.record.unbuilt import with_unbuilt
from aitune_fp.core.record.wall import WallAccount
from aitune_fp.core.records import BackendFailure, Selection, TuneError
from aitune_fp.core.session import BuildFacts, SessionPlan
from aitune_fp.core.strategies.registry import strategy_config
from aitune_fp.core.verification.judge import Verification
from aitune_fp.effects.backends.base import Backend
from aitune_fp.effects.backends.registry import source_of
from aitune_fp.effects.candidate import CandidateRun
from aitune_fp.effects.inputs.dynamic import dynamic_to_json
from aitune_fp.effects.machine.environment import environment_fingerprint
from aitune_fp.shell.setup import RunState, Setup, as_result


def outcome_of(run: CandidateRun) -> BackendOutcome:
    """One backend's outcome: its config, and its profile or its failure."""
    result = as_result(run)
    profile = result.value_or(None)
    return BackendOutcome(
        backend=run.name,
        kind=run.backend.name,
        key=run.backend.key(),
        config=freeze(config_dict(run.backend)),
        profile=profile,
        failure=result.failure() if profile is None else None,
        stage_seconds=pmap(run.stage_seconds),
        validation=pmap(run.validation),
        artifact=str(run.built.artifact) if run.built and run.built.artifact else None,
        stopped_early=None if profile is None else profile.stopped_early,
    )


def facts_of(run: CandidateRun) -> BuildFacts:
    """What the record keeps of one build besides its profile: its config as data, its
    stage seconds and validation figures, its artifact (path, and sha256 when known)."""
    built = run.built
    artifact = built.artifact if built is not None else None
    sha = built.info.get("artifact_sha256") if built is not None else None
    return BuildFacts(
        kind=run.backend.name,
        key=run.backend.key(),
        config=freeze(config_dict(run.backend)),
        stage_seconds=pmap(run.stage_seconds),
        validation=pmap(run.validation),
        artifact=str(artifact) if artifact else None,
        artifact_sha256=sha if isinstance(sha, str) else None,
    )


def config_dict(backend: Backend) -> dict[str, Any]:
    """A backend config as a dict: its fields when it is a dataclass, else its name; a
    backend from outside aitune_fp also says where it comes from (``source``:
    ``module:ClassName``, so a saved run can find it again) and what it computes in
    (``computes_in``, which the report reads, since its fields are its own)."""
    fields = (
        dataclasses.asdict(backend)
        if dataclasses.is_dataclass(backend) and not isinstance(backend, type)
        else {"name": backend.name}
    )
    source = source_of(backend)
    if source.startswith("aitune_fp."):
        return fields
    return {"source": source, "computes_in": backend.computes_in, **fields}


@dataclass(frozen=True, slots=True)
class Heading:
    """What every record of one session shares: the plan it was started with (the
    candidates' names in the user's order, the verification's seconds), the model's name,
    and the baseline's keys with where a reused one came from (``provenance``)."""

    plan: SessionPlan
    model_name: str
    provenance: Provenance = field(default_factory=Provenance)


def run_record(
    setup: Setup,
    run: RunState,
    outcome: Result[Selection, TuneError],
    heading: Heading,
    status: str = "complete",
    verification: Verification | None = None,
    wall: WallAccount | None = None,
) -> RunRecord:
    """The whole run as a record (``status="interrupted"`` while the run is going);
    ``wall``: where the run's wall time went so far."""
    outcomes = [outcome_of(r) for r in run.runs]
    has_baseline = setup.strategy.validate_performance
    names = heading.plan.candidates
    return RunRecord(
        model=heading.model_name,
        device=str(setup.device),
        strategy=freeze(strategy_config(setup.strategy, list(names))),
        baseline=outcomes[0] if has_baseline and outcomes else None,
        candidates=with_unbuilt(
            outcomes[1:] if has_baseline else outcomes, names, _refused(run), run.done is not None
        ),
        selection=outcome.value_or(None),
        error=outcome.failure() if isinstance(outcome, Failure) else None,
        environment=freeze(environment_fingerprint(setup.device, (r.backend for r in run.runs))),
        input_spec=freeze(input_spec_of(setup)),
        max_batch_size=setup.max_batch_size,
        max_batch_search=setup.max_batch_search,
        wall=wall,
        status=status,
        verification=verification,
        provenance=heading.provenance,
        events=run.session.events if run.session is not None else (),
        options=freeze(
            {
                **options_of(setup, heading.plan),
                "variants": _variants(run),
                "prebuild": _prebuild(run),
                "race_ladder": _ladder(run),
            }
        ),
    )


def env_of(
    setup: Setup,
    heading: Heading,
    configs: Iterable[Backend],
    status: str = "complete",
    wall: WallAccount | None = None,
    unmade: TuneError | None = None,
) -> RecordEnv:
    """What the record needs that the session cannot know (``configs``: the backends built
    so far, whose libraries the environment fingerprint names)."""
    return RecordEnv(
        model=heading.model_name,
        device=str(setup.device),
        environment=freeze(environment_fingerprint(setup.device, configs)),
        input_spec=freeze(input_spec_of(setup)),
        max_batch_size=setup.max_batch_size,
        max_batch_search=setup.max_batch_search,
        wall=wall,
        status=status,
        provenance=heading.provenance,
        options=freeze(isolation_options(setup)),
        unmade=unmade,
    )


def isolation_options(setup: Setup) -> dict[str, Any]:
    """The record's options the setup fixes: isolation and its timeouts."""
    timeouts = setup.timeouts
    return {"isolation": setup.isolation, "build_timeout_s": timeouts.build,
            "call_timeout_s": timeouts.call}  # fmt: skip


def _refused(run: RunState) -> tuple[BackendFailure, ...]:
    """The failures the session folded in, those of candidates never built among them
    (the record gives those a failure row: :mod:`aitune_fp.core.record.unbuilt`)."""
    fed = run.session.fed if run.session is not None else ()
    return tuple(c.failure() for c in fed if isinstance(c, Failure))


def _variants(run: RunState) -> dict[str, str]:
    """Each variant's base, as the session pruned by (replay reads it back)."""
    return dict(run.session.plan.variant_of) if run.session is not None else {}


def _ladder(run: RunState) -> list[int]:
    """The batch sizes the session's candidates raced on (replay reads it back)."""
    return list(run.session.plan.ladder) if run.session is not None else []


def _prebuild(run: RunState) -> dict[str, Any]:
    """What the session could build ahead and how many at once (replay reads it back)."""
    if run.session is None:
        return {"names": [], "parallel": 0}
    plan = run.session.plan
    return {"names": list(plan.ahead), "parallel": plan.parallel}


def input_spec_of(setup: Setup) -> dict[str, Any]:
    """The run's inputs as the record stores them: names, row shapes, dtypes, axes."""
    spec = setup.samples.spec
    return {
        "names": list(spec.names),
        "row_shapes": [list(t.row_shape) for t in spec.tensors],
        "dtypes": [t.dtype for t in spec.tensors],
        "batch_axis": spec.batch_axis,
        "batched": setup.samples.batched,
        "dynamic": dynamic_to_json(spec),
    }


def options_of(setup: Setup, plan: SessionPlan) -> dict[str, Any]:
    """The run's options as the record stores them (replay reads early stop and the
    verification's seconds, the ``plan``'s, back)."""
    return {
        "isolation": setup.isolation,
        "build_timeout_s": setup.timeouts.build,
        "call_timeout_s": setup.timeouts.call,
        "early_stop": setup.settings.early_stop,
        "verify_seconds": plan.verify_seconds,
    }
