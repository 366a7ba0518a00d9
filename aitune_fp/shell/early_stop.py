"""Stop clear losers early, for one candidate of a run: the rule, and whom it is judged against.

Rules:
- a candidate built after others is judged against the current best, as the early-stop
  rule's doc says (:mod:`aitune_fp.core.measure.early_stop`): the fold's leader so far,
  or the baseline while there is no leader; the rule is the strategy's own
  (:func:`~aitune_fp.core.measure.early_stop.early_stop_for`), with its compare and the
  noise model its confident comparison uses;
- no early stop for the baseline (it is built without one), with
  ``ProfileSettings(early_stop=False)``, for a strategy whose metric has no interval, or
  before anything was measured;
- what goes to the candidate (in this process or in its worker) is a plain value: the
  rule and its start state (:class:`~aitune_fp.effects.profiler.EarlyStop`).

>>> from aitune_fp.core.records import Profile, Scored, TuneState
>>> from aitune_fp.core.strategies import min_latency
>>> best = Scored("ort", min_latency.measure(Profile("ort", {1: [1.0, 1.1]})).unwrap())
>>> early_stop(min_latency, ProfileSettings(), TuneState(best=best)).state.best_name
'ort'
>>> early_stop(min_latency, ProfileSettings(), TuneState()) is None
True
>>> early_stop(min_latency, ProfileSettings(early_stop=False), TuneState(best=best)) is None
True
"""

from __future__ import annotations

from aitune_fp.core.measure.early_stop import early_stop_for
from aitune_fp.core.records import Scored, TuneState
from aitune_fp.core.strategy import Strategy
from aitune_fp.effects.profiler import EarlyStop, ProfileSettings


def current_best(state: TuneState) -> Scored | None:
    """Whom a candidate is judged against: the fold's leader so far, else the baseline."""
    return state.best if state.best is not None else state.baseline


def early_stop(strategy: Strategy, settings: ProfileSettings, state: TuneState) -> EarlyStop | None:
    """The early stop for the next candidate after ``state`` (``None``: it runs in full)."""
    if not settings.early_stop:
        return None
    rule = early_stop_for(strategy)
    best = current_best(state)
    if rule is None or best is None:
        return None
    return EarlyStop(rule, rule.start(best.backend, best.result, baseline=False))
