"""Property-test helpers: Hypothesis generators and ``check_all_laws`` for your strategies.

This package imports ``hypothesis``, which is a test-extra dependency
(``pip install aitune_fp[test]``); nothing else in aitune_fp imports it, and importing
``aitune_fp`` does not import this package.

Check that a strategy of your own keeps every law of :mod:`aitune_fp.core.laws`:

>>> import dataclasses
>>> from hypothesis import settings
>>> from aitune_fp import max_throughput
>>> from aitune_fp.testing import check_all_laws
>>> mine = dataclasses.replace(max_throughput, name="mine", title="Mine")
>>> check_all_laws(mine, hypothesis_settings=settings(max_examples=5, deadline=None))
"""

from aitune_fp.testing.check import check_all_laws, law_checks
from aitune_fp.testing.composed import base_strategies, composed_strategies
from aitune_fp.testing.decided import Timings, decide, decided_runs
from aitune_fp.testing.generators import (
    BASELINE_NAME,
    SHIPPED,
    backend_name,
    baselines,
    batch_sizes,
    budgets,
    candidate_lists,
    candidates,
    failures,
    fold_cases,
    generation_points,
    generation_profiles,
    latencies,
    measured_results,
    near_one,
    nudged,
    peak_memories,
    profiles,
    profiling_results,
    result_triples,
    results_for,
    shipped_strategies,
)
from aitune_fp.testing.rule_generators import (
    backoffs,
    call_latencies,
    call_rules,
    saturation_ratios,
    sweep_paths,
    sweep_points,
    sweep_rules,
)

__all__ = [
    "BASELINE_NAME",
    "SHIPPED",
    "Timings",
    "backend_name",
    "backoffs",
    "base_strategies",
    "baselines",
    "batch_sizes",
    "budgets",
    "call_latencies",
    "call_rules",
    "candidate_lists",
    "candidates",
    "check_all_laws",
    "composed_strategies",
    "decide",
    "decided_runs",
    "failures",
    "fold_cases",
    "generation_points",
    "generation_profiles",
    "latencies",
    "law_checks",
    "measured_results",
    "near_one",
    "nudged",
    "peak_memories",
    "profiles",
    "profiling_results",
    "result_triples",
    "results_for",
    "saturation_ratios",
    "shipped_strategies",
    "sweep_paths",
    "sweep_points",
    "sweep_rules",
]
