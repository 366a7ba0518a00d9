"""Robust variants of the reference strategies: the same rule, on a robust statistic.

The reference strategies judge a batch size by its *mean* latency: the batch size a
throughput strategy picks, whether a batch size fits a latency budget, and the points the
sweep's stop rules see. In a short sweep (``confident`` times 5 calls per batch size, then
spends interleaved rounds on the leaders) one stalled call moves a mean by tens of percent:
it ends a sweep early ("saturated", "over budget") or sends the pick to a smaller batch.
:func:`robust` restates those rules on another statistic (``confident`` passes its own: the
trimmed mean by default), leaving everything else as it is.

Rules:
- ``max_throughput``: the batch size is chosen by throughput at the statistic's latency;
- ``latency_budget`` with a mean budget: the budget applies to the statistic's latency, in
  the fit and the choice; a percentile budget (``percentile=q``) is already robust and is
  kept as it is;
- every strategy's sweep rule makes its points with the statistic
  (:attr:`~aitune_fp.core.measure.stop_rules.SweepRule.statistic`);
- any other strategy's ``measure`` is unchanged; the reference values themselves
  (``max_throughput``, ``latency_budget(...)``) are never changed: this makes new values;
- :func:`robust` names its result ``robust(<name>)`` and stores the statistic as the
  parameter ``batch_statistic``, so a run restores it; :func:`judged_by` is the same rule
  without a name of its own (``confident`` applies it and names the result itself).
  CLI spec: ``robust:<spec>`` (the trimmed mean) or ``robust=median:<spec>``.

>>> from aitune_fp.core.records import Profile
>>> from aitune_fp.core.strategies.latency_budget import latency_budget
>>> p = Profile("x", {1: [1.0] * 5, 8: [4.0, 4.0, 4.0, 4.0, 40.0]})
>>> latency_budget(5.0).measure(p).unwrap().selected_batch_size
1
>>> robust(latency_budget(5.0), "median").measure(p).unwrap().selected_batch_size
8
>>> robust(max_throughput, "median").measure(p).unwrap().selected_batch_size
8
"""

from __future__ import annotations

from dataclasses import replace

from aitune_fp.core.bound import bind
from aitune_fp.core.stats.statistics import sorted_statistic
from aitune_fp.core.strategies.declared import Combinator, Params, text
from aitune_fp.core.strategies.latency_budget import measure_within_budget
from aitune_fp.core.strategies.max_throughput import max_throughput, measure_max_throughput
from aitune_fp.core.strategy import Strategy


def judged_by(strategy: Strategy, statistic: str) -> Strategy:
    """``strategy`` judging batch sizes by ``statistic`` instead of the mean, name and
    parameters unchanged (the module rules)."""
    plan = replace(strategy.plan, sweep_rule=replace(strategy.plan.sweep_rule, statistic=statistic))
    measure = strategy.measure
    if strategy.name == max_throughput.name:
        measure = bind(measure_max_throughput, statistic=statistic)
    elif strategy.name == "latency_budget" and "percentile" not in strategy.params:
        budget = float(strategy.params["budget_ms"])
        measure = bind(measure_within_budget, budget, statistic=statistic)
    return replace(strategy, measure=measure, plan=plan)


def robust(strategy: Strategy, statistic: str = "trimmed") -> Strategy:
    """``strategy`` judging batch sizes by ``statistic``, named ``robust(<name>)``.

    >>> s = robust(max_throughput, "median")
    >>> s.name, s.title
    ('robust(max_throughput)', 'Max throughput, batch sizes by median')
    >>> dict(s.params)
    {'batch_statistic': 'median'}
    """
    sorted_statistic(statistic)  # refuse an unknown statistic early
    judged = judged_by(strategy, statistic)
    return replace(
        judged,
        name=f"robust({strategy.name})",
        title=f"{strategy.title}, batch sizes by {statistic}",
        description=f"{strategy.description} Batch sizes are judged by the {statistic} latency.",
        params=strategy.params.set("batch_statistic", statistic),
    )


def _restore(params: Params, inner: Strategy) -> Strategy:
    return robust(inner, text(params, "batch_statistic", "robust"))


def _parse(arg: str | None, inner: Strategy) -> Strategy:
    return robust(inner) if arg is None else robust(inner, arg.strip().lower())


DECLARED = (
    Combinator(
        "robust",
        _restore,
        own=("batch_statistic",),
        spec="robust",
        parse=_parse,
        example="robust=median:<spec>",
        rank=800,
    ),
)
