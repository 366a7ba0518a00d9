"""The decider above the session: a stored decision is re-checked, stands, or gives way to
a full tune. Pure: the shell reads the stored decision and runs the sessions it is told to.

Rules:
- :func:`first`: with ``skip`` (``--fresh``, a reused baseline, no cache folder), or with
  no stored decision, or with a stored pick that is not among this run's candidates, the
  run is :class:`Full` (its line: the keys that changed since the label's last stored
  decision, else ``"full tune"``); otherwise it is a :class:`Recheck` of the stored pick
  against its runner-up (the pick first), at the batch size the stored run selected it
  at, with no final rounds and a short verification (:data:`SHORT_VERIFY` seconds, or the
  plan's when shorter), under :func:`~aitune_fp.core.strategies.incumbent.incumbent` when
  there is a runner-up (only the paired rounds move the pick) and against the stored
  run's baseline (not profiled again) when there is none;
- :func:`after`: a re-check that selected the stored pick :class:`Stand`\\ s, with the
  hit's line; any other outcome is a :class:`Full` tune that says so;
- every :class:`Full` tune races its candidates over the plan's batch sizes unless the
  plan says ``race=False`` (then each sweeps the whole ladder).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Final

from pyrsistent import PMap, pmap

from aitune_fp.core.record.decisions import (
    FULL,
    cached_line,
    missed_line,
    recorded_sizes,
    retuned_line,
)
from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.core.strategies.incumbent import incumbent
from aitune_fp.core.strategy import Strategy

SHORT_VERIFY: Final = 0.5
"""The longest verification a re-check runs (seconds)."""


@dataclass(frozen=True, slots=True)
class Stored:
    """A stored decision that may stand for this run: where it was read, its record, its
    pick and the pick's runner-up."""

    where: str
    record: RunRecord
    pick: str
    runner_up: str | None


@dataclass(frozen=True, slots=True)
class ProgramPlan:
    """What the decider needs of this run: its candidates' names, strategy, batch sizes,
    verification seconds, the baseline's name, whether candidates race, ``skip`` (never
    the stored decision) and the keys its decision is stored under."""

    names: tuple[str, ...]
    strategy: Strategy
    batch_sizes: tuple[int, ...]
    verify_seconds: float | None
    baseline: str = "eager"
    race: bool = True
    skip: bool = False
    keys: PMap[str, str] = field(default_factory=pmap)

    @property
    def ladder(self) -> tuple[int, ...]:
        """The sizes a full tune races over (none: no race)."""
        return self.batch_sizes if self.race else ()


@dataclass(frozen=True, slots=True)
class Recheck:
    """A short session: ``pair`` (the stored pick first) at ``sizes`` under ``strategy``,
    verified for ``verify_seconds``; ``stored_baseline``: compare with the stored run's
    baseline profile (no runner-up) instead of profiling one."""

    pair: tuple[str, ...]
    sizes: tuple[int, ...]
    strategy: Strategy
    verify_seconds: float
    stored_baseline: bool
    line: str


@dataclass(frozen=True, slots=True)
class Full:
    """A full session over every candidate, racing over ``ladder`` (none: no race)."""

    line: str
    ladder: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Stand:
    """The stored decision stands; ``line`` is the record's decision line."""

    line: str


def first(stored: Stored | None, plan: ProgramPlan, last: object = None) -> Recheck | Full:
    """What to run first (module rules); ``last``: the label's last stored keys, as read
    (anything unreadable: none)."""
    if plan.skip:
        return Full(FULL, plan.ladder)
    if stored is None:
        return Full(missed_line(plan.keys, last), plan.ladder)
    if stored.pick not in plan.names:
        return Full(FULL, plan.ladder)
    return _recheck(stored, plan)


def _recheck(stored: Stored, plan: ProgramPlan) -> Recheck:
    runner = stored.runner_up if stored.runner_up in plan.names else None
    pair = (stored.pick,) if runner is None else (stored.pick, runner)
    alone = runner is not None  # the pick against its runner-up, no baseline
    kept = incumbent(plan.strategy) if alone else plan.strategy
    strategy = replace(kept, plan=replace(kept.plan, rounds=None))
    seconds = min(plan.verify_seconds or SHORT_VERIFY, SHORT_VERIFY)
    sizes = recorded_sizes(stored.record) or plan.batch_sizes
    from_store = plan.strategy.validate_performance and not alone
    line = cached_line(stored.where, stored.pick, stored.runner_up)
    return Recheck(pair, sizes, strategy, seconds, from_store, line)


def after(picked: str, stored: Stored, recheck: Recheck, plan: ProgramPlan) -> Stand | Full:
    """What follows a re-check that selected ``picked`` (module rules)."""
    if picked == stored.pick:
        return Stand(recheck.line)
    return Full(retuned_line(stored.pick, picked), plan.ladder)
