"""A stored run's session: its plan rebuilt from ``run.json``, its replay, the lines a
user reads (pure; the ``replay`` verb prints them).

Rules: the plan is the record's ``plan``, read back as one value
(:mod:`aitune_fp.core.record.plan_record`), with the record's strategy (rebuilt by the
registry, with its stored final-rounds plan; ``strategy`` replaces it); a record written
before the plan was kept whole (no ``plan``) gives its candidates' names, its early-stop,
verification, variant and build-ahead options (``prebuild``: the names that could be
built ahead and how many at once; absent in older records: none), the ladder its
candidates raced on (``race_ladder``; absent: no race), and its baseline
profile when that was reused from another run; the replay answers from the record's
event log (:mod:`aitune_fp.core.session.replay`); a record without a log (written
before it was kept) cannot be replayed, a ``ValueError`` saying so.
"""

from __future__ import annotations

from pyrsistent import pmap

from aitune_fp.core.record.plan_record import session_plan
from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.core.session.replay import Replayed, replay
from aitune_fp.core.session.state import SessionPlan
from aitune_fp.core.strategies.registry import strategy_from_config
from aitune_fp.core.strategy import Strategy


def recorded_plan(record: RunRecord, strategy: Strategy | None = None) -> SessionPlan:
    """The plan the record's run was decided by (``strategy`` instead of its own; the
    stored strategy is rebuilt by the registry, with its stored final-rounds plan)."""
    if strategy is None:
        strategy = strategy_from_config(record.strategy)
    if record.plan is not None:
        return session_plan(record.plan, strategy)
    return _pieced(record, strategy)


def _pieced(record: RunRecord, strategy: Strategy) -> SessionPlan:
    """An older record's plan, put together from its options (see the module's rules)."""
    options, base = record.options, record.baseline
    seconds = options.get("verify_seconds")
    reused = base.profile if base is not None and record.provenance.baseline_reused_from else None
    ahead = options.get("prebuild") or {}
    variants = {str(k): str(v) for k, v in (options.get("variants") or {}).items()}
    return SessionPlan(
        strategy,
        tuple(str(n) for n in record.strategy.get("backends", ())),
        base.backend if base is not None else "eager",
        bool(options.get("early_stop", True)),
        float(seconds) if isinstance(seconds, int | float) else None,
        reused,
        pmap(variants),
        tuple(str(n) for n in ahead.get("names", ())),
        int(ahead.get("parallel", 0)),
        tuple(int(b) for b in options.get("race_ladder") or ()),
    )


def replay_record(record: RunRecord, strategy: Strategy | None = None) -> Replayed:
    """The record's run replayed from its event log (under ``strategy`` when given)."""
    if not record.events:
        raise ValueError("this run.json keeps no event log (written before aitune_fp kept one)")
    recorded = recorded_plan(record)
    return replay(
        recorded, record.events, None if strategy is None else recorded_plan(record, strategy)
    )


def replay_lines(record: RunRecord, replayed: Replayed, spec: str | None = None) -> tuple[str, ...]:
    """What a replay found: its selection against the run's, and where it diverged."""
    picked = replayed.done.selection.map(lambda s: s.backend).value_or(None)
    ran = record.selection.backend if record.selection is not None else None
    under = f"under {spec}" if spec else "under the recorded strategy"
    lines = [
        f"replayed {len(record.events)} events {under}: "
        + (f"selects {picked}" if picked else "selects nothing")
    ]
    lines.append(f"the run selected {ran or 'nothing'}" + (": the same" if picked == ran else ""))
    d = replayed.diverged
    if d is None:
        lines.append("every decision is the recorded one")
    else:
        lines.append(
            f"first divergence at decision {d.index + 1}: the run: {d.recorded}; "
            f"the replay: {d.replayed}"
        )
    return tuple(lines)
