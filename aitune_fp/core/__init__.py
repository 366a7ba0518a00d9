"""The pure core: records, strategies, the fold; stats/, measure/, record/, report/, laws/.

Nothing under ``aitune_fp.core`` imports torch, an inference SDK, ``time`` or ``random``;
an import-linter contract keeps it so.
"""

from aitune_fp.core.fold import TuneState, finish, fold_all, fold_states, start, step, tune
from aitune_fp.core.records import (
    BackendFailure,
    BackendPerfResult,
    BackendProfilingResult,
    Candidate,
    Profile,
    Scored,
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
    "Candidate",
    "Profile",
    "ProfilingPlan",
    "Scored",
    "Selection",
    "Strategy",
    "TuneError",
    "TuneState",
    "confident",
    "finish",
    "first_wins",
    "fold_all",
    "fold_states",
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
