"""The pure core: records, strategies, stop rules, statistics, the fold, reports as data.

Nothing under ``aitune_fp.core`` imports torch, an inference SDK, ``time`` or ``random``;
an import-linter contract keeps it so.
"""

from aitune_fp.core.fold import TuneState, finish, start, step, tune
from aitune_fp.core.records import (
    BackendFailure,
    BackendPerfResult,
    BackendProfilingResult,
    Profile,
    Selection,
    TuneError,
)
from aitune_fp.core.strategies import (
    confident,
    first_wins,
    latency_budget,
    max_throughput,
    min_latency,
    min_latency_at,
    one_backend,
    with_min_speedup,
    within_memory,
)
from aitune_fp.core.strategy import ProfilingPlan, Strategy

__all__ = [
    "BackendFailure",
    "BackendPerfResult",
    "BackendProfilingResult",
    "Profile",
    "ProfilingPlan",
    "Selection",
    "Strategy",
    "TuneError",
    "TuneState",
    "confident",
    "finish",
    "first_wins",
    "latency_budget",
    "max_throughput",
    "min_latency",
    "min_latency_at",
    "one_backend",
    "start",
    "step",
    "tune",
    "with_min_speedup",
    "within_memory",
]
