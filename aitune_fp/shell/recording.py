"""What only the shell knows of a run, for its record: each build's facts and the env.

Rules: the record itself is derived from the session
(:func:`~aitune_fp.core.record.derive.record_of`: its rows, strategy, selection and
options); the shell adds, for each build, its :class:`~aitune_fp.core.session.BuildFacts`
(:func:`facts_of`: its config, a dataclass config as its fields, else its name, with
where an outside backend comes from; stage times; validation errors; artifact), sent in
the build's ``Profiled`` event, and once per record its
:class:`~aitune_fp.core.record.derive.RecordEnv` (:func:`env_of`: the model's name, the
device, the environment fingerprint of the backends built so far, the inputs, the max
batch size and its search, the wall, the status, the provenance, isolation and its
timeouts).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pyrsistent import freeze, pmap

from aitune_fp.core.record.derive import RecordEnv
from aitune_fp.core.record.provenance import Provenance
from aitune_fp.core.record.wall import WallAccount
from aitune_fp.core.records import TuneError
from aitune_fp.core.session import BuildFacts, SessionPlan
from aitune_fp.effects.backends.base import Backend
from aitune_fp.effects.backends.registry import source_of
from aitune_fp.effects.candidate import CandidateRun
from aitune_fp.effects.inputs.dynamic import dynamic_to_json
from aitune_fp.effects.machine.environment import environment_fingerprint
from aitune_fp.shell.setup import Setup


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
        device=str(setup.request.device),
        environment=freeze(environment_fingerprint(setup.request.device, configs)),
        input_spec=freeze(input_spec_of(setup)),
        max_batch_size=setup.max_batch_size,
        max_batch_search=setup.max_batch_search,
        wall=wall,
        status=status,
        provenance=heading.provenance,
        options=freeze(isolation_options(setup)),
        unmade=unmade,
        left_out=setup.left_out,
    )


def isolation_options(setup: Setup) -> dict[str, Any]:
    """The record's options the setup fixes: isolation and its timeouts."""
    timeouts = setup.timeouts
    return {
        "isolation": setup.isolation,
        "build_timeout_s": timeouts.build,
        "call_timeout_s": timeouts.call,
    }


def input_spec_of(setup: Setup) -> dict[str, Any]:
    """The run's inputs as the record stores them: names, row shapes, dtypes, axes."""
    spec = setup.request.samples.spec
    return {
        "names": list(spec.names),
        "row_shapes": [list(t.row_shape) for t in spec.tensors],
        "dtypes": [t.dtype for t in spec.tensors],
        "batch_axis": spec.batch_axis,
        "batched": setup.request.samples.batched,
        "dynamic": dynamic_to_json(spec),
    }
