"""The session's plan as the run record keeps it: one value, the strategy aside (pure).

Rules: a :class:`PlanRecord` holds every field of the
:class:`~aitune_fp.core.session.state.SessionPlan` but its strategy (the candidates, the
baseline's name, early stop, the verification's seconds, a reused baseline's profile,
the variants' bases, the builds ahead and how many at once, the race ladder), field for
field and under the same names; the strategy is the record's own ``strategy`` key
(:func:`~aitune_fp.core.strategies.registry.strategy_config`, as before), so a record
stays readable whatever strategy wrote it; :func:`session_plan` puts the two back
together into the plan the run was decided by.

>>> from aitune_fp.core.strategies import min_latency
>>> plan = SessionPlan(min_latency, ("a", "b"), verify_seconds=2.0, ladder=(1, 8))
>>> session_plan(plan_record(plan), min_latency) == plan
True
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from pyrsistent import PMap, pmap

from aitune_fp.core.records import Profile
from aitune_fp.core.session.state import SessionPlan
from aitune_fp.core.strategy import Strategy


@dataclass(frozen=True, slots=True)
class PlanRecord:
    """A :class:`~aitune_fp.core.session.state.SessionPlan` without its strategy."""

    candidates: tuple[str, ...]
    baseline: str = "eager"
    early_stop: bool = True
    verify_seconds: float | None = None
    reused_baseline: Profile | None = None
    variant_of: PMap[str, str] = field(default_factory=pmap)
    ahead: tuple[str, ...] = ()
    parallel: int = 0
    ladder: tuple[int, ...] = ()


def plan_record(plan: SessionPlan) -> PlanRecord:
    """``plan`` as the record keeps it (every field but the strategy)."""
    return PlanRecord(**{f.name: getattr(plan, f.name) for f in fields(PlanRecord)})


def session_plan(recorded: PlanRecord, strategy: Strategy) -> SessionPlan:
    """The plan ``recorded`` with ``strategy``."""
    return SessionPlan(strategy, **{f.name: getattr(recorded, f.name) for f in fields(PlanRecord)})
