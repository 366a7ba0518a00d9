"""The baseline's config: named by the plan, looked up by the interpreter like any other.

Rules: the baseline is the backend the plan names (``SessionPlan.baseline``); the
interpreter builds it from the config it holds under that name, as it builds every
candidate (no backend is implied). A plan that builds a baseline (its strategy validates
performance) whose name the interpreter holds no config for is refused before anything
runs: the session is finished at once with a ``TuneError`` naming the baseline and the
configs there are. A plan without a baseline build is never refused for it.

>>> from aitune_fp.core.strategies import max_throughput
>>> plan = SessionPlan(max_throughput, ("a",), baseline="eager")
>>> refused(plan, {"eager", "a"}) is None
True
>>> session, done = refused(plan, {"a"})
>>> session.phase_name, done.selection.failure().message
('done', "the baseline 'eager' names no backend of this run (it has: a)")
"""

from __future__ import annotations

from collections.abc import Collection

from returns.result import Failure

from aitune_fp.core.records import TuneError
from aitune_fp.core.session.commands import Done
from aitune_fp.core.session.phase import Finished
from aitune_fp.core.session.state import Session, SessionPlan


def refused(plan: SessionPlan, configs: Collection[str]) -> tuple[Session, Done] | None:
    """``plan``'s session finished at once when its baseline names none of ``configs``
    (the names the interpreter holds a config for); ``None``: it can start."""
    if not plan.strategy.validate_performance or plan.baseline in configs:
        return None
    has = ", ".join(sorted(configs)) or "none"
    why = f"the baseline {plan.baseline!r} names no backend of this run (it has: {has})"
    done = Done(Failure(TuneError(why)))
    return Session(plan, phase=Finished(done.selection)), done
