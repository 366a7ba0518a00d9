"""Latency budget: the highest throughput among batch sizes whose latency fits a budget.

Rule: only batch sizes with mean latency ``<= budget_ms`` (inclusive) count; among them the
highest throughput wins (ties to the smaller batch); a backend with none fails at stage
``measure``. If no candidate meets the budget, tuning fails naming the budget, even when
the baseline would meet it. The sweep stops at the first batch size over budget. A
non-positive or non-finite budget is refused at construction. With ``percentile=q`` the
budget applies to the q-th percentile latency instead of the mean (``latency_budget(5.0,
percentile=99)``: p99 within 5 ms); the metric stays the mean-based throughput, and the
sweep still stops at the first batch size whose mean is over budget. Under
``confident(...)`` a mean budget is applied to the confident rule's statistic instead (the
trimmed mean by default), in the fit, the choice and the sweep's stop alike
(:func:`~aitune_fp.core.strategies.robust.robust`): one stalled call in a short sweep must
not push a batch size over the budget. CLI spec: ``latency-budget=5ms``, or
``latency-budget=5ms,p99`` for a percentile budget.

>>> from aitune_fp.core.records import Profile
>>> s = latency_budget(5.0)
>>> s.measure(Profile("x", {1: [1.0], 8: [5.0], 16: [9.0]})).unwrap().selected_batch_size
8
>>> p = Profile("x", {1: [1.0, 1.0, 1.0, 9.0], 8: [4.0, 4.0, 4.0, 4.0]})
>>> latency_budget(5.0, percentile=99).measure(p).unwrap().selected_batch_size
8
>>> latency_budget(0)
Traceback (most recent call last):
...
ValueError: budget_ms must be a finite number > 0, got 0
"""

from __future__ import annotations

import math

from pyrsistent import pmap
from returns.result import Failure, Result, Success

from aitune_fp.core.bound import bind
from aitune_fp.core.measure.stop_rules import any_of, latency_budget_sweep, throughput_saturation
from aitune_fp.core.parse import parse_budget_ms
from aitune_fp.core.records import BackendFailure, BackendProfilingResult, Profile
from aitune_fp.core.stats.statistics import mean, percentile, statistic_value
from aitune_fp.core.strategies.declared import Params, Shipped, number
from aitune_fp.core.strategies.latency_percentile import check_percentile, parse_percentile
from aitune_fp.core.strategies.metrics import best_throughput, higher_is_better, higher_speedup
from aitune_fp.core.strategy import THROUGHPUT, ProfilingPlan, Strategy


def budget_latency(samples: tuple[float, ...], q: float | None, statistic: str = "mean") -> float:
    """The latency the budget applies to: ``statistic`` (the mean), or the ``q``-th
    percentile."""
    if q is not None:
        return percentile(samples, q)
    return mean(samples) if statistic == "mean" else statistic_value(statistic, samples)


def measure_within_budget(
    budget_ms: float, profile: Profile, q: float | None = None, statistic: str = "mean"
) -> Result[BackendProfilingResult, BackendFailure]:
    """The best throughput among the batch sizes of ``profile`` within ``budget_ms``
    (the budget applied to each batch size's ``statistic``, or its ``q``-th percentile)."""
    fitting = [
        bs
        for bs in profile.batch_sizes
        if budget_latency(profile.samples(bs), q, statistic) <= budget_ms
    ]
    best = best_throughput(profile, fitting, statistic)
    if best is None:
        fastest = min(
            budget_latency(profile.samples(bs), q, statistic) for bs in profile.batch_sizes
        )
        which = ("" if statistic == "mean" else f"{statistic} ") if q is None else f"p{q:g} "
        return Failure(
            BackendFailure(
                profile.backend,
                "measure",
                f"no batch size meets the {which}latency budget of {budget_ms:g} ms "
                f"(fastest: {fastest:.3f} ms)",
            )
        )
    return Success(best)


def latency_budget(budget_ms: float, percentile: float | None = None) -> Strategy:
    """The latency-budget strategy for ``budget_ms`` (ms per call, inclusive).

    ``percentile=None`` budgets the mean latency (the reference); a number in ``(0, 100]``
    budgets that percentile instead.
    """
    if (
        isinstance(budget_ms, bool)
        or not isinstance(budget_ms, int | float)
        or not math.isfinite(budget_ms)
        or budget_ms <= 0
    ):
        raise ValueError(f"budget_ms must be a finite number > 0, got {budget_ms!r}")
    budget = float(budget_ms)
    q = None if percentile is None else check_percentile(percentile)
    which = "mean" if q is None else f"p{q:g}"
    params: dict[str, float] = {"budget_ms": budget}
    if q is not None:
        params["percentile"] = q
    prefix = "" if q is None else f"p{q:g} "
    return Strategy(
        name="latency_budget",
        title=f"Latency budget ({prefix}{budget:g} ms)",
        description=(
            f"Selects the backend with the highest samples/s among batch sizes whose {which} "
            f"latency is at most {budget:g} ms."
        ),
        metric=THROUGHPUT,
        measure=bind(measure_within_budget, budget, q=q),
        compare=higher_is_better,
        speedup=higher_speedup,
        plan=ProfilingPlan(
            batching=True,
            sweep_rule=any_of(latency_budget_sweep(budget), throughput_saturation()),
        ),
        params=pmap(params),
        no_winner_message=f"no backend meets the {prefix}latency budget of {budget:g} ms",
    )


def _parse(arg: str | None) -> Strategy:
    if arg is None or not arg.strip():
        raise ValueError("latency-budget needs a budget, e.g. latency-budget=5ms")
    budget, comma, q = arg.partition(",")
    return latency_budget(parse_budget_ms(budget), parse_percentile(q) if comma else None)


def _restore(params: Params) -> Strategy:
    q = None if params.get("percentile") is None else number(params, "percentile", "latency_budget")
    return latency_budget(number(params, "budget_ms", "latency_budget"), q)


DECLARED = (
    Shipped(
        "latency_budget",
        _restore,
        own=("budget_ms", "percentile"),
        spec="latency-budget",
        parse=_parse,
        example="latency-budget=5ms",
        rank=30,
    ),
)
