"""Speed against accuracy: the Pareto front of a run's candidates (pure).

Rules:
- a :class:`TradePoint` is a backend's *speed* (higher is better: the strategy's own
  speedup over the baseline, so a throughput and a latency read the same way) and its
  *error* (lower is better: the accuracy drop the policy and ``within_accuracy`` read,
  :func:`~aitune_fp.core.accuracy.drop.accuracy_drop`: the user metric's drop, else
  ``1 − top1_agreement``, else the RMS relative error against eager);
- ``a`` *dominates* ``b`` when it is at least as fast and at most as far off, and
  strictly better in one of the two; equal points dominate neither;
- the *front* is every point no other point dominates; each other point is listed with
  the front members that dominate it (never empty: dominance is a strict order, so a
  dominated point is dominated by a maximal one); the result is sorted (fastest first,
  then least error, then name), so it does not depend on the order of the points;
- in a stored run (:func:`trade_off`) the points are the backends whose table row shows
  a speedup and whose profile carries accuracy figures; the baseline is the reference
  (error 0, speedup 1), named ``<backend> (baseline)`` as in the table (a candidate may
  share its backend's name). A candidate refused only by ``within_accuracy``'s bound (a
  ``measure`` failure ``accuracy drop … exceeds max_drop``) is a point too, the trade
  it stands for: its speed is the stored strategy without the bound, measured on its
  sweep, over the baseline's sweep. Any other candidate without a speedup (failed,
  refused, never run) or without figures (a run recorded before them) is not a point;
- when the verification moved the pick, a candidate it compared with the moved pick has
  the speed the verification measured relative to the pick
  (:func:`~aitune_fp.core.report.rival.verified_speeds`), so the front and the decision
  lines never tell the sweep's story against the verification's.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable
from dataclasses import dataclass

from pyrsistent import PMap, pmap

from aitune_fp.core.accuracy.claims import evidence_text
from aitune_fp.core.accuracy.drop import accuracy_drop
from aitune_fp.core.record.run_record import BackendOutcome, RunRecord
from aitune_fp.core.report.account import decision_account
from aitune_fp.core.report.rival import verified_speeds
from aitune_fp.core.report.tables import BackendRow, backend_rows
from aitune_fp.core.strategies.registry import strategy_from_config

REFUSED_FOR_DROP = "accuracy drop "


@dataclass(frozen=True, slots=True)
class TradePoint:
    """A backend's speed (higher is better) and error (lower is better), both finite."""

    name: str
    speed: float
    error: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.speed) and math.isfinite(self.error)):
            raise ValueError(
                f"{self.name}: speed and error must be finite, got {self.speed!r}, {self.error!r}"
            )


@dataclass(frozen=True, slots=True)
class ParetoFront:
    """The front (fastest first) and each dominated point's dominators on the front."""

    front: tuple[TradePoint, ...]
    dominated_by: PMap[str, tuple[str, ...]]

    def on_front(self, name: str) -> bool:
        """Whether ``name`` is a front member."""
        return any(p.name == name for p in self.front)


def dominates(a: TradePoint, b: TradePoint) -> bool:
    """``a`` is at least as good on both axes and better on one.

    >>> dominates(TradePoint("a", 2.0, 0.01), TradePoint("b", 1.5, 0.01))
    True
    >>> dominates(TradePoint("a", 2.0, 0.02), TradePoint("b", 1.5, 0.01))
    False
    """
    at_least = a.speed >= b.speed and a.error <= b.error
    return at_least and (a.speed > b.speed or a.error < b.error)


def _order(p: TradePoint) -> tuple[float, float, str]:
    return (-p.speed, p.error, p.name)


def pareto_front(points: Iterable[TradePoint]) -> ParetoFront:
    """The Pareto front of ``points`` (names must be unique).

    >>> pts = [TradePoint("eager", 1.0, 0.0), TradePoint("ort", 1.2, 0.0),
    ...        TradePoint("int8", 2.0, 0.017), TradePoint("bf16", 1.5, 0.03)]
    >>> found = pareto_front(pts)
    >>> [p.name for p in found.front], sorted(found.dominated_by.items())
    (['int8', 'ort'], [('bf16', ('int8',)), ('eager', ('ort',))])
    """
    pts = sorted(points, key=_order)
    names = [p.name for p in pts]
    if len(set(names)) != len(names):
        raise ValueError(f"point names must be unique, got {names}")
    front = tuple(p for p in pts if not any(dominates(q, p) for q in pts))
    dominated = {
        p.name: tuple(q.name for q in front if dominates(q, p)) for p in pts if p not in front
    }
    return ParetoFront(front, pmap(dominated))


def point_name(row: BackendRow) -> str:
    """The name a table row's point has: its backend, ``(baseline)`` for the baseline."""
    return row.backend + (" (baseline)" if row.role == "baseline" else "")


def unbounded_speedup(record: RunRecord, outcome: BackendOutcome) -> float | None:
    """``outcome``'s speedup over the baseline by the stored strategy without its
    accuracy bound, from the sweeps (``None``: no bound stored, or not measurable)."""
    params = dict(record.strategy.get("parameters") or {})
    base = record.baseline
    if "max_drop" not in params or base is None or base.profile is None:
        return None
    params["max_drop"] = sys.float_info.max  # admits every finite drop
    try:
        strategy = strategy_from_config({**record.strategy, "parameters": params})
    except (ValueError, KeyError, TypeError):
        return None
    if outcome.profile is None:
        return None
    mine, theirs = strategy.measure(outcome.profile), strategy.measure(base.profile)
    both = mine.value_or(None), theirs.value_or(None)
    if both[0] is None or both[1] is None:
        return None
    return strategy.speedup(both[0], both[1])


def _speed(record: RunRecord, row: BackendRow, outcome: BackendOutcome) -> float | None:
    """The row's speedup, or for a candidate refused by the accuracy bound its unbounded
    one (see the module's rules)."""
    if row.speedup is not None:
        return row.speedup
    if row.status == "failed (measure)" and row.reason.startswith(REFUSED_FOR_DROP):
        return unbounded_speedup(record, outcome)
    return None


def _speeds(
    record: RunRecord, pairs: tuple[tuple[BackendRow, BackendOutcome], ...]
) -> dict[int, float]:
    """Each outcome's speed by ``id``: the row's (:func:`_speed`); the pick's is the
    decision account's speedup (the Speedup line's figure); through the verification for a
    candidate it compared with a moved pick (:func:`verified_speeds`)."""
    own = {id(o): s for row, o in pairs for s in (_speed(record, row, o),) if s is not None}
    named = {
        row.backend: own[id(o)] for row, o in pairs if o is not record.baseline and id(o) in own
    }
    account, sel = decision_account(record), record.selection
    if (
        account is not None
        and account.speedup is not None
        and sel is not None
        and sel.backend in named
    ):
        named[sel.backend] = account.speedup  # the pick at the figure its Speedup line shows
    verified = verified_speeds(record, named)
    return {
        id(o): verified.get(row.backend, own[id(o)]) if o is not record.baseline else own[id(o)]
        for row, o in pairs
        if id(o) in own
    }


def trade_off(record: RunRecord) -> tuple[tuple[TradePoint, ...], ParetoFront]:
    """The run's points (see the module's rules) and their front.

    >>> from aitune_fp.core.record.run_record import BackendOutcome
    >>> from aitune_fp.core.records import Profile
    >>> trade_off(RunRecord("m", "cpu", {}, None, (), None, None, {}, {}, None))[0]
    ()
    """
    pairs = tuple(zip(backend_rows(record), record.outcomes, strict=True))
    speeds = _speeds(record, pairs)
    points = []
    for row, outcome in pairs:
        speed = speeds.get(id(outcome))
        if speed is None or not math.isfinite(speed) or outcome.profile is None:
            continue
        base = outcome is record.baseline
        error = 0.0 if base else accuracy_drop(outcome.profile.accuracy)
        if error is not None and math.isfinite(error):
            points.append(TradePoint(point_name(row), speed, error))
    return tuple(points), pareto_front(points)


def over_bound(record: RunRecord) -> frozenset[str]:
    """The points of candidates the accuracy bound refused (their speed is unbounded)."""
    return frozenset(
        point_name(row)
        for row in backend_rows(record)
        if row.speedup is None and row.reason.startswith(REFUSED_FOR_DROP)
    )


def front_cell(record: RunRecord, row: BackendRow) -> str:
    """The table's cell: ``front`` for a front member, ``dominated`` for another point,
    ``—`` for a row that is not a point (:func:`front_line` names the dominators)."""
    points, found = trade_off(record)
    name = point_name(row)
    if not any(p.name == name for p in points):
        return "—"
    return "front" if found.on_front(name) else "dominated"


def _evidence(record: RunRecord, name: str) -> str:
    """``; `` and what the point's accuracy verdict showed
    (:func:`~aitune_fp.core.accuracy.claims.evidence_text`), empty without a bound."""
    for row, outcome in zip(backend_rows(record), record.outcomes, strict=True):
        if point_name(row) == name and outcome.profile is not None:
            shown = evidence_text(outcome.profile.accuracy)
            return f"; {shown}" if shown else ""
    return ""


def front_line(record: RunRecord) -> str | None:
    """``Speed/accuracy front: a (1.52×, drop 0.017), b (1.20×, drop 0); dominated by a:
    c, d; by a, b: e``, or ``None`` when fewer than two backends are points; a member
    the accuracy bound refused says so (``drop 0.02, over max_drop``), a member whose
    verdict carries a confidence bound says what it showed (``drop 0; top-1 ≥ 99.1%
    (95% bound) on 600 held-out rows``)."""
    points, found = trade_off(record)
    if len(points) < 2:
        return None
    over = over_bound(record)
    notes = {
        p.name: ", over max_drop" if p.name in over else _evidence(record, p.name)
        for p in found.front
    }
    members = ", ".join(
        f"{p.name} ({p.speed:.2f}×, drop {p.error:.3g}{notes[p.name]})" for p in found.front
    )
    line = f"Speed/accuracy front: {members}"
    groups: dict[tuple[str, ...], list[str]] = {}
    for name, by in sorted(found.dominated_by.items()):
        groups.setdefault(by, []).append(name)
    if groups:
        parts = [f"by {', '.join(by)}: {', '.join(names)}" for by, names in groups.items()]
        line += f"; dominated {'; '.join(parts)}"
    return line
