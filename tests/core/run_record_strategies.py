"""Hypothesis generators of run records, shared by the run-record tests.

Records are built the way the shell builds them: generated candidates and a baseline (from
``aitune_fp.testing``) are folded by a generated shipped strategy, so selections and errors
are the real fold's; configs, environment and input spec are arbitrary JSON values.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import strategies as st
from returns.result import Success

from aitune_fp.core.fold import tune
from aitune_fp.core.record.provenance import Provenance
from aitune_fp.core.record.run_record import BackendOutcome, RunRecord
from aitune_fp.core.records import Candidate, Profile
from aitune_fp.core.strategies.registry import strategy_config
from aitune_fp.core.strategy import Strategy
from aitune_fp.testing import baselines, candidate_lists, shipped_strategies

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**60), 2**60),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.tuples(inner, inner),
        st.dictionaries(st.text(max_size=6), inner, max_size=3),
    ),
    max_leaves=8,
)
json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=4)
seconds = st.dictionaries(
    st.sampled_from(["build", "validate", "profile", "export", "compile", "rounds", "other"]),
    st.floats(min_value=0.0, max_value=1e4, allow_infinity=False),
    max_size=5,
)
errors = st.dictionaries(
    st.sampled_from(["max_abs_error", "max_rel_error"]),
    st.one_of(st.floats(min_value=0.0, max_value=1e6), st.just(float("inf"))),
    max_size=2,
)


@st.composite
def outcomes(draw: st.DrawFn, candidate: Candidate | None, name: str) -> BackendOutcome:
    """The outcome of one backend: its profile, its failure, or neither (never run)."""
    profile = failure = None
    if isinstance(candidate, Success):
        profile = candidate.unwrap()
    elif candidate is not None:
        failure = candidate.failure()
    return BackendOutcome(
        backend=name,
        kind=draw(st.sampled_from(["onnxruntime", "inductor_aot", "eager", "tensorrt"])),
        key=draw(st.text("0123456789abcdef", min_size=16, max_size=16)),
        config=draw(json_objects),
        profile=profile,
        failure=failure,
        stage_seconds=draw(seconds),
        validation=draw(errors),
        artifact=draw(st.one_of(st.none(), st.text(min_size=1, max_size=12))),
        stopped_early=draw(st.one_of(st.none(), st.text(min_size=1, max_size=40))),
    )


@st.composite
def with_rounds(draw: st.DrawFn, candidate: Candidate) -> Candidate:
    """``candidate``, its profile sometimes given interleaved-round samples."""
    if not isinstance(candidate, Success) or not draw(st.booleans()):
        return candidate
    profile: Profile = candidate.unwrap()
    rounds = st.lists(st.floats(min_value=1e-3, max_value=1e4), min_size=1, max_size=4)
    picked = draw(st.lists(st.sampled_from(profile.batch_sizes), min_size=1, unique=True))
    return Success(replace(profile, rounds_ms={bs: draw(rounds) for bs in picked}))


def _name(candidate: Candidate) -> str:
    return str(
        candidate.unwrap().backend
        if isinstance(candidate, Success)
        else candidate.failure().backend
    )


@st.composite
def run_records(draw: st.DrawFn, strategy: Strategy | None = None) -> RunRecord:
    """A run record as the shell would write it, with the fold's real selection or error."""
    chosen = (
        strategy if strategy is not None else draw(shipped_strategies(validate_performance=None))
    )
    given = tuple(draw(with_rounds(c)) for c in draw(candidate_lists(max_size=5)))
    base = draw(baselines()) if chosen.validate_performance else None
    base = None if base is None else draw(with_rounds(base))
    result = tune(chosen, given, base)
    cands = tuple(draw(outcomes(c, _name(c))) for c in given)
    never_run = draw(st.booleans())
    if never_run:
        cands = (*cands, draw(outcomes(None, "never_run")))
    baseline = None if base is None else draw(outcomes(base, "eager"))
    extra: dict[str, Any] = draw(json_objects)
    return RunRecord(
        model=draw(st.text(min_size=1, max_size=10)),
        device=draw(st.sampled_from(["cpu", "cuda", "cuda:1"])),
        strategy={**extra, **strategy_config(chosen, [c.backend for c in cands])},
        baseline=baseline,
        candidates=cands,
        selection=result.value_or(None),
        error=result.swap().value_or(None),
        environment=draw(json_objects),
        input_spec=draw(json_objects),
        max_batch_size=draw(st.one_of(st.none(), st.integers(1, 4096))),
        status=draw(st.sampled_from(["complete", "interrupted"])),
        options=draw(json_objects),
        provenance=Provenance(
            draw(st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=4)),
            draw(st.one_of(st.none(), st.text(max_size=12))),
        ),
    )
