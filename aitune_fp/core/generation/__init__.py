"""Generation workloads as values: per-candidate phase timings, strategies and the pick."""

from aitune_fp.core.generation.build_policy import TuneClock, build_id, skip_reason
from aitune_fp.core.generation.records import GenerationResult, tokens_per_second
from aitune_fp.core.generation.strategies import (
    GenerationPick,
    GenerationStrategy,
    generation_budget,
    max_tokens_per_s,
    min_itl,
    min_ttft,
    pick,
)

__all__ = [
    "GenerationPick",
    "GenerationResult",
    "GenerationStrategy",
    "TuneClock",
    "build_id",
    "generation_budget",
    "max_tokens_per_s",
    "min_itl",
    "min_ttft",
    "pick",
    "skip_reason",
    "tokens_per_second",
]
