"""Generation workloads as values: per-candidate phase timings, the generation strategies
(``Strategy`` values over a generation profile) and the pick the one fold makes."""

from aitune_fp.core.generation.build_policy import TuneClock, build_id, skip_reason
from aitune_fp.core.generation.choose import GenerationPick, candidate_of, choose
from aitune_fp.core.generation.records import GenerationResult
from aitune_fp.core.generation.strategies import (
    generation_budget,
    max_tokens_per_s,
    min_itl,
    min_ttft,
)
from aitune_fp.core.measure.generation_profile import tokens_per_second

__all__ = [
    "GenerationPick",
    "GenerationResult",
    "TuneClock",
    "build_id",
    "candidate_of",
    "choose",
    "generation_budget",
    "max_tokens_per_s",
    "min_itl",
    "min_ttft",
    "skip_reason",
    "tokens_per_second",
]
