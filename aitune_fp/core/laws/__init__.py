"""Laws as values: the rules every strategy, the fold and the stop rules must obey.

A :class:`Law` is a name, a one-sentence statement and a pure predicate ``holds(...)``
that returns ``True`` when the law holds for the given inputs. Laws are grouped by what
they govern, one module a group, and every law of a group takes the same arguments:

- ``STRATEGY_LAWS`` (:mod:`.strategy`): ``holds(strategy, a, b, c)`` over three profiling
  results; ``compare`` is a strict weak order and ``speedup`` agrees with it;
- ``MEASURE_LAWS`` (:mod:`.measure`): ``holds(strategy, profile)``;
- ``FOLD_LAWS`` (:mod:`.fold`): ``holds(strategy, case)`` over a :class:`FoldCase`; the
  fold's winner is a success (or the baseline) that nothing strictly beats, and the fold
  agrees with :func:`reference_tune` (:mod:`.reference`), a naive re-statement of
  BEHAVIOUR.md §3;
- ``CALL_RULE_LAWS`` (:mod:`.call_rules`): ``holds(rule, latencies)``;
  ``SWEEP_RULE_LAWS``: ``holds(rule, points, point)``; ``SATURATION_LAWS``:
  ``holds(ratio, backoff, points)``; ``BUDGET_SWEEP_LAWS``: ``holds(budget_ms, points)``
  (all three in :mod:`.sweep_rules`).

A law whose premise does not apply to its inputs holds vacuously. This package is pure and
imports no test library; ``aitune_fp.testing`` checks the laws with Hypothesis.

>>> from aitune_fp import BackendProfilingResult, max_throughput
>>> r = BackendProfilingResult(10.0, 1, 100.0, 10.0)
>>> all(law.holds(max_throughput, r, r, r) for law in STRATEGY_LAWS)
True
"""

from aitune_fp.core.laws.call_rules import CALL_RULE_LAWS, drive_call_rule
from aitune_fp.core.laws.fold import FOLD_LAWS
from aitune_fp.core.laws.fold_case import FoldCase
from aitune_fp.core.laws.law import Law, implies
from aitune_fp.core.laws.measure import MEASURE_LAWS
from aitune_fp.core.laws.outcomes import Outcome, Scored, name_of, winner
from aitune_fp.core.laws.reference import MODELLED, NO_CORRECT_BACKEND, reference_tune
from aitune_fp.core.laws.strategy import STRATEGY_LAWS, incomparable
from aitune_fp.core.laws.sweep_rules import (
    BUDGET_SWEEP_LAWS,
    SATURATION_LAWS,
    SWEEP_RULE_LAWS,
    Points,
)
from aitune_fp.core.laws.trace import consumed_run, traced_tune

__all__ = [
    "BUDGET_SWEEP_LAWS",
    "CALL_RULE_LAWS",
    "FOLD_LAWS",
    "MEASURE_LAWS",
    "MODELLED",
    "NO_CORRECT_BACKEND",
    "SATURATION_LAWS",
    "STRATEGY_LAWS",
    "SWEEP_RULE_LAWS",
    "FoldCase",
    "Law",
    "Outcome",
    "Points",
    "Scored",
    "consumed_run",
    "drive_call_rule",
    "implies",
    "incomparable",
    "name_of",
    "reference_tune",
    "traced_tune",
    "winner",
]
