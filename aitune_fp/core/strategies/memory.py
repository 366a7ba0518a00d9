"""Within memory: a candidate whose peak memory exceeds a budget is refused.

Rule: ``within_memory(strategy, budget_mb)`` keeps the strategy's metric, ``compare`` and
``speedup``; its ``measure`` refuses a profile whose ``peak_memory_mb`` is above
``budget_mb`` (inclusive budget: a peak equal to it is admitted) with a
``BackendFailure`` at stage ``measure``, and measures every other profile as the strategy
does. The figure is the one the effect layer recorded (:mod:`aitune_fp.effects.measure.memory`):
the peak during the backend's profiled calls minus the level before it was built, in MiB.

- Unknown memory (``peak_memory_mb is None``: not measured, e.g. no ``/proc`` or a stored
  run older than the field) is admitted by default and refused with ``strict=True``;
  a budget that must hold for sure asks for ``strict``.
- The baseline is never refused: the profile named ``baseline`` (``"eager"``, the name
  ``tune_module`` and the law generators give it) is measured as the strategy does. The
  fold reads a baseline whose ``measure`` fails as "no performance check" (BEHAVIOUR.md
  §3.6), which would let a candidate slower than eager win; exempting it keeps the
  fallback of §3.4: when every candidate is over budget or slower, eager is selected.
  A candidate given the baseline's name is the same eager module, so it is exempt too.
- A budget must be a finite number > 0; a strategy already bounded by ``within_memory``
  is refused (wrap once, with the tighter budget).
- CLI spec: ``within-memory=SIZE:<spec>`` or ``within-memory=SIZE,strict:<spec>`` (MiB
  unless a unit is given).

>>> from returns.result import Success
>>> from aitune_fp.core.fold import tune
>>> from aitune_fp.core.records import Profile
>>> from aitune_fp.core.strategies.min_latency import min_latency
>>> s = within_memory(min_latency, 512)
>>> big = Profile("onnxruntime", {1: [1.0]}, peak_memory_mb=812.4)
>>> s.measure(big).failure().message
'peak memory 812.4 MiB exceeds the budget of 512 MiB'
>>> small = Profile("inductor", {1: [1.5]}, peak_memory_mb=300.0)
>>> eager = Profile("eager", {1: [2.0]}, peak_memory_mb=900.0)
>>> tune(s, [Success(big), Success(small)], baseline=Success(eager)).unwrap().backend
'inductor'
>>> within_memory(min_latency, 0)
Traceback (most recent call last):
...
ValueError: budget_mb must be a finite number > 0 (MiB), got 0
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Final

from returns.result import Failure, Result

from aitune_fp.core.bound import bind
from aitune_fp.core.parse import parse_memory_mb
from aitune_fp.core.records import BackendFailure, BackendProfilingResult, Profile
from aitune_fp.core.strategies.declared import Combinator, Params, needs_argument, number, text
from aitune_fp.core.strategy import Measure, Strategy

BASELINE: Final = "eager"


def memory_refusal(
    budget_mb: float, strict: bool, baseline: str, profile: Profile
) -> BackendFailure | None:
    """Why ``profile`` is refused by the memory budget, or ``None`` when it is admitted.

    >>> memory_refusal(100.0, True, "eager", Profile("ort", {1: [1.0]})).message
    'peak memory was not measured; the budget of 100 MiB needs it (strict)'
    >>> memory_refusal(100.0, False, "eager", Profile("ort", {1: [1.0]})) is None
    True
    """
    peak = profile.peak_memory_mb
    if profile.backend == baseline:
        return None
    if peak is None:
        if not strict:
            return None
        reason = f"peak memory was not measured; the budget of {budget_mb:g} MiB needs it (strict)"
        return BackendFailure(profile.backend, "measure", reason)
    if peak > budget_mb:
        reason = f"peak memory {peak:.1f} MiB exceeds the budget of {budget_mb:g} MiB"
        return BackendFailure(profile.backend, "measure", reason)
    return None


def _measure(
    inner: Measure, budget_mb: float, strict: bool, baseline: str, profile: Profile
) -> Result[BackendProfilingResult, BackendFailure]:
    refused = memory_refusal(budget_mb, strict, baseline, profile)
    return inner(profile) if refused is None else Failure(refused)


def check_budget_mb(budget_mb: float) -> float:
    """``budget_mb`` as a float when it is a finite number > 0."""
    if (
        isinstance(budget_mb, bool)
        or not isinstance(budget_mb, int | float)
        or not math.isfinite(budget_mb)
        or budget_mb <= 0
    ):
        raise ValueError(f"budget_mb must be a finite number > 0 (MiB), got {budget_mb!r}")
    return float(budget_mb)


def within_memory(
    strategy: Strategy, budget_mb: float, *, strict: bool = False, baseline: str = BASELINE
) -> Strategy:
    """``strategy`` that refuses candidates above ``budget_mb`` MiB of peak memory.

    ``strict=True`` also refuses candidates whose memory is unknown; ``baseline`` names
    the profile that is never refused (see the module rule).
    """
    budget = check_budget_mb(budget_mb)
    if "budget_mb" in strategy.params:
        raise ValueError(
            f"{strategy.name} already has a memory budget; wrap once, with the tighter budget"
        )
    if not isinstance(baseline, str) or not baseline:
        raise ValueError(f"baseline must be a non-empty backend name, got {baseline!r}")
    params = strategy.params.update({"budget_mb": budget, "strict_memory": bool(strict)})
    if baseline != BASELINE:
        params = params.set("memory_baseline", baseline)
    unknown = "refused" if strict else "admitted"
    return replace(
        strategy,
        name=f"within_memory({strategy.name})",
        title=f"{strategy.title}, peak memory ≤ {budget:g} MiB",
        description=(
            f"{strategy.description} A candidate whose peak memory exceeds {budget:g} MiB "
            f"is refused (unknown memory: {unknown}; the baseline is never refused)."
        ),
        measure=bind(_measure, strategy.measure, budget, bool(strict), baseline),
        params=params,
    )


def _parse(arg: str | None, inner: Strategy) -> Strategy:
    size, comma, flag = needs_argument("within-memory", arg, "within-memory=512:<spec>").partition(
        ","
    )
    if comma and flag.strip().lower() != "strict":
        raise ValueError(f"within-memory takes SIZE or SIZE,strict, got {arg!r}")
    return within_memory(inner, parse_memory_mb(size), strict=bool(comma))


def _restore(params: Params, inner: Strategy) -> Strategy:
    baseline = (
        text(params, "memory_baseline", "within_memory")
        if "memory_baseline" in params
        else BASELINE
    )
    return within_memory(
        inner,
        number(params, "budget_mb", "within_memory"),
        strict=bool(params.get("strict_memory", False)),
        baseline=baseline,
    )


DECLARED = (
    Combinator(
        "within_memory",
        _restore,
        own=("budget_mb", "strict_memory", "memory_baseline"),
        spec="within-memory",
        parse=_parse,
        example="within-memory=512MiB:<spec>",
        rank=300,
    ),
)
