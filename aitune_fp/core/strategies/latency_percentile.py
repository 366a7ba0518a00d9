"""Min latency at a percentile: the lowest p-th percentile latency at batch size 1.

Rule: the metric is the ``percentile``-th percentile (linear interpolation between
closest ranks) of the per-call latencies in ms at batch size 1; lower is better; speedup
is ``baseline / metric``. Only batch size 1 is profiled. A profile without batch size 1
fails at stage ``measure``; a percentile outside ``(0, 100]`` is refused at construction.
``min_latency`` (the mean) stays the reference's strategy. CLI spec:
``min-latency-at=p99`` (``p`` optional; ``min-latency-at`` alone is p99).

>>> from aitune_fp.core.records import Profile
>>> s = min_latency_at(percentile=50)
>>> s.measure(Profile("x", {1: [1.0, 2.0, 9.0]})).unwrap().metric
2.0
>>> min_latency_at(percentile=0)
Traceback (most recent call last):
...
ValueError: percentile must be a finite number within (0, 100], got 0
"""

from __future__ import annotations

import math

from pyrsistent import pmap
from returns.result import Failure, Result, Success

from aitune_fp.core.bound import bind
from aitune_fp.core.records import BackendFailure, BackendProfilingResult, Profile
from aitune_fp.core.stats.statistics import percentile as percentile_value
from aitune_fp.core.strategies.declared import Params, Shipped, number
from aitune_fp.core.strategies.metrics import lower_is_better, lower_speedup, result_at
from aitune_fp.core.strategy import LATENCY, ProfilingPlan, Strategy


def check_percentile(percentile: float) -> float:
    """``percentile`` as a float when it is finite and within ``(0, 100]``."""
    if (
        isinstance(percentile, bool)
        or not isinstance(percentile, int | float)
        or not math.isfinite(percentile)
        or not 0 < percentile <= 100
    ):
        raise ValueError(f"percentile must be a finite number within (0, 100], got {percentile!r}")
    return float(percentile)


def measure_latency_at(
    percentile: float, profile: Profile
) -> Result[BackendProfilingResult, BackendFailure]:
    """The ``percentile``-th percentile latency at batch size 1."""
    if 1 not in profile.latencies_ms:
        return Failure(BackendFailure(profile.backend, "measure", "batch size 1 was not measured"))
    samples = profile.samples(1)
    return Success(result_at(profile, 1, lambda _bs, _ms: percentile_value(samples, percentile)))


def min_latency_at(percentile: float = 99.0) -> Strategy:
    """The min-latency strategy on the ``percentile``-th percentile (p99 by default)."""
    q = check_percentile(percentile)
    return Strategy(
        name="min_latency_at",
        title=f"Min p{q:g} latency",
        description=f"Selects the backend with the lowest p{q:g} latency at batch size 1.",
        metric=LATENCY,
        measure=bind(measure_latency_at, q),
        compare=lower_is_better,
        speedup=lower_speedup,
        plan=ProfilingPlan(batching=False),
        params=pmap({"percentile": q}),
    )


def parse_percentile(text: str) -> float:
    """``p99``, ``P99.9`` or ``99`` as a checked percentile.

    >>> parse_percentile("p99.9"), parse_percentile(" 50 ")
    (99.9, 50.0)
    >>> parse_percentile("fast")
    Traceback (most recent call last):
    ...
    ValueError: a percentile is p<q> or <q> with 0 < q <= 100, e.g. p99, got 'fast'
    """
    raw = text.strip().lower().removeprefix("p")
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not 0 < value <= 100:
        raise ValueError(f"a percentile is p<q> or <q> with 0 < q <= 100, e.g. p99, got {text!r}")
    return check_percentile(value)


def _parse(arg: str | None) -> Strategy:
    return min_latency_at() if arg is None else min_latency_at(parse_percentile(arg))


def _restore(params: Params) -> Strategy:
    return min_latency_at(number(params, "percentile", "min_latency_at"))


DECLARED = (
    Shipped(
        "min_latency_at",
        _restore,
        own=("percentile",),
        spec="min-latency-at",
        parse=_parse,
        example="min-latency-at=p99",
        rank=35,
    ),
)
