"""Hypothesis generators for the profiler's stop rules: call rules, call latencies, sweep points.

Rules: every generator is a function returning a ``SearchStrategy``; bounds are
keyword-only; latencies, batch sizes and budgets are those of :mod:`.generators` (ties and
near-ties come up often); every shipped rule kind is drawn, with drawn bounds.
"""

from __future__ import annotations

from hypothesis import strategies as st

from aitune_fp.core.measure.stop_rules import (
    CallRule,
    SweepPoint,
    SweepRule,
    all_samples,
    any_of,
    fixed_steps,
    latency_budget_sweep,
    never_stop,
    stable_window,
    throughput_saturation,
)
from aitune_fp.testing.generators import batch_sizes, budgets, latencies


@st.composite
def call_rules(draw: st.DrawFn) -> CallRule:
    """A shipped call rule (fixed steps, all samples, stable window) with drawn bounds."""
    warmup = draw(st.integers(0, 12))
    kind = draw(st.sampled_from(("fixed", "all", "stable")))
    if kind == "fixed":
        return fixed_steps(warmup=warmup, steps=draw(st.integers(1, 25)))
    if kind == "all":
        return all_samples(draw(st.integers(1, 10)), warmup=warmup)
    window = draw(st.integers(1, 10))
    return stable_window(
        warmup=warmup,
        window=window,
        max_cv=draw(st.floats(min_value=1e-3, max_value=1.0)),
        max_samples=draw(st.integers(window, 40)),
    )


def call_latencies() -> st.SearchStrategy[tuple[float, ...]]:
    """Per-call latencies to feed a call rule (cycled by the laws when too short)."""
    return st.lists(latencies(), min_size=1, max_size=30).map(tuple)


def saturation_ratios() -> st.SearchStrategy[float]:
    """Valid saturation ratios in ``[0, 0.5]``."""
    return st.one_of(st.just(0.05), st.floats(min_value=0.0, max_value=0.5))


def backoffs() -> st.SearchStrategy[int]:
    """Valid saturation backoffs."""
    return st.integers(0, 4)


def sweep_points() -> st.SearchStrategy[SweepPoint]:
    """One measured batch size of a sweep."""
    return st.builds(SweepPoint, batch_sizes(), latencies())


def sweep_paths(*, max_size: int = 8) -> st.SearchStrategy[tuple[SweepPoint, ...]]:
    """Points of a sweep so far, in order."""
    return st.lists(sweep_points(), max_size=max_size).map(tuple)


def sweep_rules() -> st.SearchStrategy[SweepRule]:
    """A shipped sweep rule, or several combined with ``any_of``."""
    single = st.one_of(
        st.builds(
            lambda r, b: throughput_saturation(ratio=r, backoff=b), saturation_ratios(), backoffs()
        ),
        budgets().map(latency_budget_sweep),
        st.just(never_stop()),
    )
    return st.one_of(single, st.lists(single, min_size=1, max_size=3).map(lambda rs: any_of(*rs)))
