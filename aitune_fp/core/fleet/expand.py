"""A plan's jobs and back: ``expand`` is model × target × strategy, ``collapse`` undoes it.

Rules:
- :func:`expand` gives one :class:`~aitune_fp.core.fleet.plan.Job` per model, target and
  strategy, in that nesting order (all strategies of a target together, all targets of a
  model together), every job carrying the plan's settings;
- :func:`collapse` rebuilds the plan from its jobs: the distinct models, targets and
  strategies in first-seen order and the shared settings; it refuses jobs that are not a
  full product or that disagree on settings;
- for every valid plan (unique entries), ``collapse(expand(plan)) == plan``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from aitune_fp.core.fleet.plan import Job, Plan

T = TypeVar("T")


def expand(plan: Plan) -> tuple[Job, ...]:
    """Every job of ``plan``.

    >>> from aitune_fp.core.fleet.plan import ModelEntry, TargetEntry
    >>> plan = Plan(("max-throughput", "min-latency"), (ModelEntry("mlp"), ModelEntry("cnn")),
    ...             (TargetEntry("cpu"),))
    >>> [j.job_id for j in expand(plan)]  # doctest: +NORMALIZE_WHITESPACE
    ['mlp/cpu/max-throughput', 'mlp/cpu/min-latency', 'cnn/cpu/max-throughput',
     'cnn/cpu/min-latency']
    >>> collapse(expand(plan)) == plan
    True
    """
    return tuple(
        Job(model, target, strategy, plan.settings)
        for model in plan.models
        for target in plan.targets
        for strategy in plan.strategies
    )


def _distinct(items: Sequence[T]) -> tuple[T, ...]:
    return tuple(dict.fromkeys(items))


def collapse(jobs: Sequence[Job]) -> Plan:
    """The plan whose expansion is ``jobs``; ``ValueError`` when there is none."""
    if not jobs:
        raise ValueError("no jobs: a plan has at least one model, target and strategy")
    plan = Plan(
        strategies=_distinct([j.strategy for j in jobs]),
        models=_distinct([j.model for j in jobs]),
        targets=_distinct([j.target for j in jobs]),
        settings=jobs[0].settings,
    )
    if tuple(jobs) != expand(plan):
        raise ValueError("the jobs are not the expansion of one plan")
    return plan
