"""Min latency: the lowest mean latency at batch size 1.

Rule: the metric is the mean per-call latency in ms at batch size 1 (other batch sizes
are ignored; a profile without batch size 1 fails at stage ``measure``); lower is better;
speedup is ``baseline / metric``. Only batch size 1 is profiled, with no max-batch search.

>>> from aitune_fp.core.records import Profile
>>> min_latency.measure(Profile("x", {1: [1.0, 3.0]})).unwrap().metric
2.0
"""

from __future__ import annotations

from returns.result import Failure, Result, Success

from aitune_fp.core.records import BackendFailure, BackendProfilingResult, Profile
from aitune_fp.core.strategies.declared import Params, Shipped, no_argument
from aitune_fp.core.strategies.metrics import latency_of, lower_is_better, lower_speedup, result_at
from aitune_fp.core.strategy import LATENCY, ProfilingPlan, Strategy


def measure_min_latency(profile: Profile) -> Result[BackendProfilingResult, BackendFailure]:
    """The mean latency at batch size 1."""
    if 1 not in profile.latencies_ms:
        return Failure(BackendFailure(profile.backend, "measure", "batch size 1 was not measured"))
    return Success(result_at(profile, 1, latency_of))


min_latency = Strategy(
    name="min_latency",
    title="Min latency",
    description="Selects the backend with the lowest mean latency at batch size 1.",
    metric=LATENCY,
    measure=measure_min_latency,
    compare=lower_is_better,
    speedup=lower_speedup,
    plan=ProfilingPlan(batching=False),
)


def _parse(arg: str | None) -> Strategy:
    no_argument("min-latency", arg)
    return min_latency


def _restore(_params: Params) -> Strategy:
    return min_latency


DECLARED = (
    Shipped(
        "min_latency", _restore, spec="min-latency", parse=_parse, example="min-latency", rank=20
    ),
)
