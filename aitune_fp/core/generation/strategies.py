"""Generation strategies: ``Strategy`` values over a generation profile's primary point.

Rules: each measures the primary point of ``profile.generation`` (the first batch size with
the first prompt); a profile without a generation profile fails at stage ``measure``.
``max_tokens_per_s`` maximises tokens/s, ``min_itl`` minimises the inter-token latency (a
point of one new token has none and fails at ``measure``), ``min_ttft`` minimises the time to
first token. ``generation_budget(ttft_ms=…, itl_ms=…)`` maximises tokens/s among points within
its TTFT and/or ITL budget (inclusive); a point over it fails at ``measure`` saying by how
much, and when no candidate is within, the fold fails with the strategy's
``no_winner_message`` (``budget … unreachable``). A result's ``selected_batch_size`` is the
point's batch, its ``latency`` the whole run (ms), its ``throughput`` tokens/s and its
``samples_ms`` the profile's samples at that batch. They are selected by the one fold
(:func:`aitune_fp.core.fold.tune`) and keep every law of :mod:`aitune_fp.core.laws`.

>>> from aitune_fp.core.measure.generation_profile import GenerationPoint, GenerationProfile
>>> from aitune_fp.core.records import Profile
>>> point = GenerationPoint(1, 8, 3, 10.0, 5.0)
>>> p = Profile("x", {1: [20.0]}, generation=GenerationProfile((point,)))
>>> max_tokens_per_s.measure(p).unwrap().metric, min_ttft.measure(p).unwrap().metric
(150.0, 10.0)
>>> generation_budget(ttft_ms=5.0).measure(p).failure().message
'TTFT 10.000 ms is over the budget of 5 ms'
"""

from __future__ import annotations

import math
from typing import Final

from pyrsistent import pmap
from returns.result import Failure, Result, Success

from aitune_fp.core.bound import bind
from aitune_fp.core.measure.generation_profile import GenerationPoint
from aitune_fp.core.records import BackendFailure, BackendProfilingResult, Profile
from aitune_fp.core.strategies.metrics import (
    higher_is_better,
    higher_speedup,
    lower_is_better,
    lower_speedup,
)
from aitune_fp.core.strategy import Metric, ProfilingPlan, Strategy

Measured = Result[BackendProfilingResult, BackendFailure]

TOKENS_PER_S: Final = Metric("tokens/s", "tokens/s", ".1f")
TTFT: Final = Metric("ttft", "ms", ".3f")
ITL: Final = Metric("itl", "ms", ".3f")
_PLAN: Final = ProfilingPlan(batching=False)


def _failed(profile: Profile, why: str) -> Measured:
    return Failure(BackendFailure(profile.backend, "measure", why))


def _scored(profile: Profile, point: GenerationPoint, what: str, value: float) -> Measured:
    """The result at ``point`` with ``value`` as its metric (finite and > 0, else a failure)."""
    if not math.isfinite(value) or value <= 0:
        return _failed(profile, f"{what} is {value!r}: nothing to compare")
    samples = profile.samples(point.batch)
    result = BackendProfilingResult(
        value, point.batch, point.total_ms, point.tokens_per_s, samples_ms=samples
    )
    return Success(result)


def _primary(profile: Profile) -> Result[GenerationPoint, BackendFailure]:
    if profile.generation is None:
        why = "no generation profile (TTFT, ITL) was measured"
        return Failure(BackendFailure(profile.backend, "measure", why))
    return Success(profile.generation.primary)


def measure_tokens_per_s(profile: Profile) -> Measured:
    """Tokens/s at the primary point."""
    return _primary(profile).bind(lambda p: _scored(profile, p, "tokens/s", p.tokens_per_s))


def measure_ttft(profile: Profile) -> Measured:
    """The time to first token (ms) at the primary point."""
    return _primary(profile).bind(lambda p: _scored(profile, p, "TTFT", p.ttft_ms))


def measure_itl(profile: Profile) -> Measured:
    """The inter-token latency (ms) at the primary point."""
    return _primary(profile).bind(lambda p: _scored(profile, p, "ITL", p.itl_ms))


def _generation_strategy(name: str, title: str, metric: Metric, higher: bool) -> Strategy:
    measures = {"tokens/s": measure_tokens_per_s, "ttft": measure_ttft, "itl": measure_itl}
    return Strategy(
        name=name,
        title=title,
        description=f"Selects the generation candidate with the {title.lower()}.",
        metric=metric,
        measure=measures[metric.label],
        compare=higher_is_better if higher else lower_is_better,
        speedup=higher_speedup if higher else lower_speedup,
        plan=_PLAN,
    )


max_tokens_per_s: Final = _generation_strategy(
    "max_tokens_per_s", "Most tokens/s", TOKENS_PER_S, True
)
min_itl: Final = _generation_strategy("min_itl", "Lowest inter-token latency", ITL, False)
min_ttft: Final = _generation_strategy("min_ttft", "Lowest time to first token", TTFT, False)


def _over(point: GenerationPoint, ttft_ms: float | None, itl_ms: float | None) -> list[str]:
    over = []
    if ttft_ms is not None and point.ttft_ms > ttft_ms:
        over.append(f"TTFT {point.ttft_ms:.3f} ms is over the budget of {ttft_ms:g} ms")
    if itl_ms is not None and point.itl_ms > itl_ms:
        over.append(f"ITL {point.itl_ms:.3f} ms is over the budget of {itl_ms:g} ms")
    return over


def measure_within_generation_budget(
    ttft_ms: float | None, itl_ms: float | None, profile: Profile
) -> Measured:
    """Tokens/s at the primary point when it is within both budgets, else why not."""

    def within(point: GenerationPoint) -> Measured:
        over = _over(point, ttft_ms, itl_ms)
        if over:
            return _failed(profile, "; ".join(over))
        return _scored(profile, point, "tokens/s", point.tokens_per_s)

    return _primary(profile).bind(within)


def _check_budget(name: str, value: float | None) -> float | None:
    if value is None:
        return None
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be None or a finite number > 0, got {value!r}")
    return float(value)


def budget_label(ttft_ms: float | None, itl_ms: float | None) -> str:
    """The budget as reasons show it.

    >>> budget_label(50.0, None), budget_label(None, 5)
    ('ttft<=50.0ms', 'itl<=5ms')
    """
    parts = [f"{n}<={v}ms" for n, v in (("ttft", ttft_ms), ("itl", itl_ms)) if v is not None]
    return ", ".join(parts)


def generation_budget(*, ttft_ms: float | None = None, itl_ms: float | None = None) -> Strategy:
    """Max tokens/s among candidates with TTFT <= ``ttft_ms`` and ITL <= ``itl_ms``.

    >>> generation_budget(ttft_ms=50.0).title
    'Generation budget (ttft<=50.0ms)'
    >>> generation_budget()
    Traceback (most recent call last):
    ...
    ValueError: generation_budget needs ttft_ms and/or itl_ms
    """
    ttft, itl = _check_budget("ttft_ms", ttft_ms), _check_budget("itl_ms", itl_ms)
    if ttft is None and itl is None:
        raise ValueError("generation_budget needs ttft_ms and/or itl_ms")
    label = budget_label(ttft, itl)
    params = {k: v for k, v in (("ttft_ms", ttft), ("itl_ms", itl)) if v is not None}
    return Strategy(
        name="generation_budget",
        title=f"Generation budget ({label})",
        description=f"Selects the most tokens/s among candidates within {label}.",
        metric=TOKENS_PER_S,
        measure=bind(measure_within_generation_budget, ttft, itl),
        compare=higher_is_better,
        speedup=higher_speedup,
        plan=_PLAN,
        params=pmap(params),
        no_winner_message=f"budget {label} unreachable",
    )
