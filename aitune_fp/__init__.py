"""aitune_fp: find the fastest correct way to run a PyTorch model for inference, and prove it.

The pure core (strategies, the ``tune`` fold, records) is importable without touching a
device; the core and the shell (``tune_module``, ``TunedModule``, ``save``/``load``) are
loaded lazily on first use so that ``import aitune_fp`` imports nothing else: never an
inference SDK, and not the core before the command line attaches to its service.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aitune_fp.core import (
        BackendFailure,
        BackendPerfResult,
        BackendProfilingResult,
        Profile,
        ProfilingPlan,
        Selection,
        Strategy,
        TuneError,
        confident,
        first_wins,
        latency_budget,
        max_throughput,
        min_latency,
        min_latency_at,
        one_backend,
        tune,
        with_min_speedup,
        within_memory,
    )
    from aitune_fp.core.accuracy import AccuracyPolicy, ErrorBound, Search, metric
    from aitune_fp.core.generation import (
        generation_budget,
        max_tokens_per_s,
        min_itl,
        min_ttft,
    )
    from aitune_fp.core.strategies.within_accuracy import within_accuracy

__version__ = "0.1.0"

_CORE = {
    **dict.fromkeys(
        ("BackendFailure", "BackendPerfResult", "BackendProfilingResult", "Profile",
         "ProfilingPlan", "Selection", "Strategy", "TuneError", "confident", "first_wins",
         "latency_budget", "max_throughput", "min_latency", "min_latency_at", "one_backend",
         "tune", "with_min_speedup", "within_memory"),
        "aitune_fp.core",
    ),
    **dict.fromkeys(("AccuracyPolicy", "ErrorBound", "Search", "metric"),
                    "aitune_fp.core.accuracy"),
    **dict.fromkeys(("generation_budget", "max_tokens_per_s", "min_itl", "min_ttft"),
                    "aitune_fp.core.generation"),
    "within_accuracy": "aitune_fp.core.strategies.within_accuracy",
}  # fmt: skip
"""The pure core's names, imported on first access too: ``python -m aitune_fp`` then
imports nothing of the package before a ``tune`` attaches to the tuning service (the
client's start-up, :mod:`aitune_fp.cli.entry`)."""
_LAZY = {
    "tune_module": "aitune_fp.shell.tune_module",
    "TunedModule": "aitune_fp.shell.tuned_module",
    "save": "aitune_fp.shell.saves",
    "load": "aitune_fp.shell.saves",
    "capture": "aitune_fp.shell.capture",
    "swap": "aitune_fp.shell.swap",
    "serve": "aitune_fp.shell.serving.api",
    "tune_generate": "aitune_fp.shell.generation.tune_generate",
    "TunedGenerator": "aitune_fp.shell.generation.tuned_generator",
}


def __getattr__(name: str) -> Any:
    """Load core and shell objects on first access (keeps ``import aitune_fp`` light)."""
    if name in _LAZY or name in _CORE:
        return getattr(import_module(_LAZY.get(name) or _CORE[name]), name)
    raise AttributeError(f"module 'aitune_fp' has no attribute {name!r}")


__all__ = [
    "AccuracyPolicy",
    "BackendFailure",
    "BackendPerfResult",
    "BackendProfilingResult",
    "ErrorBound",
    "Profile",
    "ProfilingPlan",
    "Search",
    "Selection",
    "Strategy",
    "TuneError",
    "TunedGenerator",
    "TunedModule",
    "capture",
    "confident",
    "first_wins",
    "generation_budget",
    "latency_budget",
    "load",
    "max_throughput",
    "max_tokens_per_s",
    "metric",
    "min_itl",
    "min_latency",
    "min_latency_at",
    "min_ttft",
    "one_backend",
    "save",
    "serve",
    "swap",
    "tune",
    "tune_generate",
    "tune_module",
    "with_min_speedup",
    "within_accuracy",
    "within_memory",
]
