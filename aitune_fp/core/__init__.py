"""The pure core: records, strategies, the fold; stats/, measure/, record/, report/, laws/.

Nothing under ``aitune_fp.core`` imports torch, an inference SDK, ``time`` or ``random``;
an import-linter contract keeps it so. The names below load on first access, so that a
light submodule (the tuning service's wire messages, the record codec) is imported
without the fold and the strategies: the command line attaches to its service first.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_FOLD = ("TuneState", "finish", "fold_all", "fold_states", "start", "step", "tune")
_RECORDS = ("BackendFailure", "BackendPerfResult", "BackendProfilingResult", "Candidate",
            "Profile", "Scored", "Selection", "TuneError")  # fmt: skip
_STRATEGIES = ("confident", "first_wins", "latency_budget", "max_throughput", "min_latency",
               "min_latency_at", "one_backend", "with_min_speedup", "within_memory")  # fmt: skip
_HOMES = {
    **dict.fromkeys(_FOLD, "aitune_fp.core.fold"),
    **dict.fromkeys(_RECORDS, "aitune_fp.core.records"),
    **dict.fromkeys(_STRATEGIES, "aitune_fp.core.strategies"),
    **dict.fromkeys(("ProfilingPlan", "Strategy"), "aitune_fp.core.strategy"),
}


def __getattr__(name: str) -> Any:
    """Load the core's public names on first access (keeps ``import aitune_fp.core`` light)."""
    if name in _HOMES:
        return getattr(import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'aitune_fp.core' has no attribute {name!r}")


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
