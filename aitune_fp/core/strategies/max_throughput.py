"""Max throughput: the highest samples/s at the best batch size of a sweep.

Rule: throughput at a batch size is ``batch_size * 1000 / mean latency (ms)``; the
backend's metric is the best over its measured batch sizes (ties to the smaller batch);
higher is better; speedup is ``metric / baseline``. The sweep covers powers of two up to
the max batch size and stops once throughput saturates (5 %, backoff 2).

>>> from aitune_fp.core.records import Profile
>>> max_throughput.measure(Profile("x", {1: [2.0], 2: [2.0]})).unwrap().metric
1000.0
"""

from __future__ import annotations

from returns.result import Failure, Result, Success

from aitune_fp.core.records import BackendFailure, BackendProfilingResult, Profile
from aitune_fp.core.strategies.declared import Params, Shipped, no_argument
from aitune_fp.core.strategies.metrics import best_throughput, higher_is_better, higher_speedup
from aitune_fp.core.strategy import THROUGHPUT, ProfilingPlan, Strategy


def measure_max_throughput(
    profile: Profile, statistic: str = "mean"
) -> Result[BackendProfilingResult, BackendFailure]:
    """The best throughput over every measured batch size of ``profile`` (latency by
    ``statistic``: the reference's mean unless named)."""
    best = best_throughput(profile, profile.batch_sizes, statistic)
    if best is None:  # pragma: no cover - a Profile is never empty
        return Failure(BackendFailure(profile.backend, "measure", "no batch size measured"))
    return Success(best)


max_throughput = Strategy(
    name="max_throughput",
    title="Max throughput",
    description="Selects the backend with the highest samples/s at its best batch size.",
    metric=THROUGHPUT,
    measure=measure_max_throughput,
    compare=higher_is_better,
    speedup=higher_speedup,
    plan=ProfilingPlan(batching=True),
)


def _parse(arg: str | None) -> Strategy:
    no_argument("max-throughput", arg)
    return max_throughput


def _restore(_params: Params) -> Strategy:
    return max_throughput


DECLARED = (
    Shipped(
        "max_throughput",
        _restore,
        spec="max-throughput",
        parse=_parse,
        example="max-throughput",
        rank=10,
    ),
)
