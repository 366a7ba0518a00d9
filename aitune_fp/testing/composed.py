"""Hypothesis generators of composed shipped strategies: a base strategy under combinators.

Rules:
- the base is any shipped strategy (``max_throughput``, ``min_latency``, ``min_latency_at``
  at a drawn percentile, ``latency_budget`` with a mean or a percentile budget);
- up to ``max_layers`` distinct combinators wrap it, in any order, each with drawn
  parameters (a combinator used twice on one stack stores its parameters once, see
  :mod:`aitune_fp.core.strategies.declared`);
- ``confident`` draws small resample counts, so laws that call its ``compare`` stay quick;
- ``validate_performance`` is drawn (``None``), or fixed.

>>> from hypothesis import find
>>> find(composed_strategies(), lambda s: s.name.count("(") >= 2).name.count("(")
2
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from hypothesis import strategies as st

from aitune_fp.core.strategies import (
    confident,
    first_wins,
    latency_budget,
    max_throughput,
    min_latency,
    min_latency_at,
    one_backend,
    with_min_speedup,
    within_accuracy,
    within_memory,
)
from aitune_fp.core.strategies.robust import robust
from aitune_fp.core.strategy import Strategy
from aitune_fp.testing.generators import BACKEND_NAMES, MEMORY_POOL, budgets

Wrap = Callable[[Strategy], Strategy]
STATISTICS = ("trimmed", "median", "mean", "p90")
COMBINATORS = (
    "confident",
    "first_wins",
    "one_backend",
    "robust",
    "with_min_speedup",
    "within_accuracy",
    "within_memory",
)


def percentiles() -> st.SearchStrategy[float]:
    """Percentiles within ``(0, 100]``: round ones often, any others sometimes."""
    return st.one_of(
        st.sampled_from((50.0, 90.0, 99.0, 100.0)), st.floats(min_value=0.5, max_value=100.0)
    )


def base_strategies() -> st.SearchStrategy[Strategy]:
    """Every shipped strategy that stands alone, with drawn parameters."""
    return st.one_of(
        st.just(max_throughput),
        st.just(min_latency),
        percentiles().map(min_latency_at),
        st.builds(latency_budget, budgets(), st.one_of(st.none(), percentiles())),
    )


@st.composite
def _confident(draw: st.DrawFn) -> Wrap:
    statistic = draw(st.one_of(st.none(), st.sampled_from(STATISTICS)))
    paired = draw(st.one_of(st.none(), st.sampled_from(STATISTICS)))
    confidence = draw(st.sampled_from((0.8, 0.9, 0.95)))
    margin = draw(st.sampled_from((0.0, 0.01, 0.05)))
    resamples, seed = draw(st.integers(20, 60)), draw(st.integers(0, 2**16))
    robust_batches = draw(st.booleans())
    return lambda s: confident(
        s,
        confidence=confidence,
        min_speedup=margin,
        resamples=resamples,
        seed=seed,
        statistic=statistic,
        paired_statistic=paired,
        robust_batches=robust_batches,
    )


@st.composite
def _within_memory(draw: st.DrawFn) -> Wrap:
    sizes = st.one_of(st.sampled_from(MEMORY_POOL[1:]), st.floats(min_value=1.0, max_value=1e5))
    budget, strict = draw(sizes), draw(st.booleans())
    baseline = draw(st.sampled_from(("eager", "eager", BACKEND_NAMES[0])))
    return lambda s: within_memory(s, budget, strict=strict, baseline=baseline)


@st.composite
def _within_accuracy(draw: st.DrawFn) -> Wrap:
    drops = st.one_of(st.sampled_from((0.0, 0.005, 0.02)), st.floats(min_value=0.0, max_value=1.0))
    drop, strict = draw(drops), draw(st.booleans())
    return lambda s: within_accuracy(drop, s, strict=strict)


@st.composite
def _one_backend(draw: st.DrawFn) -> Wrap:
    name = draw(st.sampled_from(BACKEND_NAMES))
    return lambda s: one_backend(s, name)


@st.composite
def _with_min_speedup(draw: st.DrawFn) -> Wrap:
    ratios = st.one_of(st.sampled_from((1.0, 1.05, 1.1)), st.floats(min_value=1.0, max_value=2.0))
    ratio = draw(ratios)
    return lambda s: with_min_speedup(s, ratio)


@st.composite
def _robust(draw: st.DrawFn) -> Wrap:
    statistic = draw(st.sampled_from(STATISTICS))
    return lambda s: robust(s, statistic)


def wrappers(combinator: str) -> st.SearchStrategy[Wrap]:
    """The named combinator (one of :data:`COMBINATORS`) with drawn parameters."""
    drawn: dict[str, st.SearchStrategy[Wrap]] = {
        "confident": _confident(),
        "first_wins": st.just(first_wins),
        "one_backend": _one_backend(),
        "robust": _robust(),
        "with_min_speedup": _with_min_speedup(),
        "within_accuracy": _within_accuracy(),
        "within_memory": _within_memory(),
    }
    if combinator not in drawn:
        raise ValueError(f"combinator must be one of {COMBINATORS}, got {combinator!r}")
    return drawn[combinator]


@st.composite
def composed_strategies(
    draw: st.DrawFn,
    *,
    validate_performance: bool | None = None,
    max_layers: int = 3,
    outer: str | None = None,
) -> Strategy:
    """A shipped strategy under up to ``max_layers`` distinct combinators.

    ``outer``, when given, names the combinator applied last (so it is always present).
    """
    layers = draw(st.lists(st.sampled_from(COMBINATORS), unique=True, max_size=max_layers))
    if outer is not None:
        layers = [*(c for c in layers if c != outer), outer]
    strategy = draw(base_strategies())
    for combinator in layers:
        strategy = draw(wrappers(combinator))(strategy)
    flag = draw(st.booleans()) if validate_performance is None else validate_performance
    return replace(strategy, validate_performance=flag)
