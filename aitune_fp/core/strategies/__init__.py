"""The shipped strategies, one per module, each a value."""

from aitune_fp.core.strategies.latency_budget import latency_budget
from aitune_fp.core.strategies.max_throughput import max_throughput
from aitune_fp.core.strategies.min_latency import min_latency

__all__ = ["latency_budget", "max_throughput", "min_latency"]
