"""The shipped strategies and combinators, one per module, each a value."""

from aitune_fp.core.strategies.confident import confident
from aitune_fp.core.strategies.first_wins import first_wins
from aitune_fp.core.strategies.latency_budget import latency_budget
from aitune_fp.core.strategies.latency_percentile import min_latency_at
from aitune_fp.core.strategies.max_throughput import max_throughput
from aitune_fp.core.strategies.memory import within_memory
from aitune_fp.core.strategies.min_latency import min_latency
from aitune_fp.core.strategies.one_backend import one_backend
from aitune_fp.core.strategies.robust import robust
from aitune_fp.core.strategies.with_min_speedup import with_min_speedup
from aitune_fp.core.strategies.within_accuracy import within_accuracy

__all__ = [
    "confident",
    "first_wins",
    "latency_budget",
    "max_throughput",
    "min_latency",
    "min_latency_at",
    "one_backend",
    "robust",
    "with_min_speedup",
    "within_accuracy",
    "within_memory",
]
