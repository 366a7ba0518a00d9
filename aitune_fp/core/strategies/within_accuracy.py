"""Within accuracy: the fastest candidate whose accuracy drop is at most ``max_drop``.

Rule: ``within_accuracy(max_drop, strategy)`` keeps the strategy's metric, ``compare``
and ``speedup``; its ``measure`` refuses, with a ``BackendFailure`` at stage ``measure``
naming the figure, a profile whose recorded accuracy drop
(:func:`~aitune_fp.core.accuracy.accuracy_drop`) exceeds ``max_drop`` (inclusive: a drop
equal to it is admitted), and measures every other profile as the strategy does. It is
a composition, so "fastest within 0.5 %" is ``within_accuracy(0.005, max_throughput)``.

- The baseline (the profile named ``eager``) is never refused: it is the reference the
  drop is measured against.
- A profile with no figures (a run recorded before them) is admitted by default and
  refused with ``strict=True``.
- Wrapping twice keeps both bounds: the tighter one decides.
- CLI spec: ``within-accuracy=0.5%:<spec>`` (a fraction or a percentage).

>>> from returns.result import Success
>>> from aitune_fp.core.fold import tune
>>> from aitune_fp.core.records import Profile
>>> from aitune_fp.core.strategies.min_latency import min_latency
>>> int8 = Profile("ort-int8", {1: [1.0]}, accuracy={"top1_agreement": 0.98})
>>> fp32 = Profile("ort", {1: [1.5]}, accuracy={"top1_agreement": 1.0})
>>> s = within_accuracy(0.005, min_latency)
>>> s.measure(int8).failure().message
'accuracy drop 0.02 exceeds max_drop 0.005'
>>> tune(s, [Success(int8), Success(fp32)]).unwrap().backend
'ort'
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Final

from returns.result import Failure, Result

from aitune_fp.core.accuracy.drop import accuracy_drop
from aitune_fp.core.bound import bind
from aitune_fp.core.records import BackendFailure, BackendProfilingResult, Profile
from aitune_fp.core.strategies.declared import Combinator, Params, needs_argument, number
from aitune_fp.core.strategy import Measure, Strategy

BASELINE: Final = "eager"


def accuracy_refusal(max_drop: float, strict: bool, profile: Profile) -> BackendFailure | None:
    """Why ``profile`` is refused by the bound, or ``None`` when it is admitted."""
    if profile.backend == BASELINE:
        return None
    drop = accuracy_drop(profile.accuracy)
    if drop is None:
        if not strict:
            return None
        why = f"no accuracy figures recorded; max_drop {max_drop:g} needs them (strict)"
        return BackendFailure(profile.backend, "measure", why)
    if drop > max_drop:
        why = f"accuracy drop {drop:.4g} exceeds max_drop {max_drop:g}"
        return BackendFailure(profile.backend, "measure", why)
    return None


def _measure(
    inner: Measure, max_drop: float, strict: bool, profile: Profile
) -> Result[BackendProfilingResult, BackendFailure]:
    refused = accuracy_refusal(max_drop, strict, profile)
    return inner(profile) if refused is None else Failure(refused)


def within_accuracy(max_drop: float, strategy: Strategy, *, strict: bool = False) -> Strategy:
    """``strategy`` restricted to candidates whose accuracy drop is at most ``max_drop``
    (a fraction: 0.005 is 0.5 %)."""
    if (
        isinstance(max_drop, bool)
        or not isinstance(max_drop, int | float)
        or not math.isfinite(max_drop)
        or max_drop < 0
    ):
        raise ValueError(f"max_drop must be a finite number >= 0, got {max_drop!r}")
    bound = float(max_drop)
    previous = strategy.params.get("max_drop")
    tighter = min(bound, float(previous)) if isinstance(previous, int | float) else bound
    params = strategy.params.set("max_drop", tighter)
    wrapped = "max_drop" in strategy.params
    return replace(
        strategy,
        name=strategy.name if wrapped else f"within_accuracy({strategy.name})",
        title=f"{strategy.title}, accuracy drop ≤ {bound:.3g}",
        description=(
            f"{strategy.description} A candidate whose accuracy drop against eager exceeds "
            f"{bound:g} is refused (the baseline never is)."
        ),
        measure=bind(_measure, strategy.measure, bound, bool(strict)),
        params=params.set("strict_accuracy", bool(strict)),
    )


def parse_max_drop(text: str) -> float:
    """``0.5%`` → 0.005; ``0.01`` → 0.01 (a fraction).

    >>> parse_max_drop("0.5%"), parse_max_drop("0.02")
    (0.005, 0.02)
    >>> parse_max_drop("lots")
    Traceback (most recent call last):
    ...
    ValueError: max drop must be a number or a percentage such as 0.5%, got 'lots'
    """
    raw = text.strip()
    scale = 100.0 if raw.endswith("%") else 1.0
    try:
        value = float(raw.removesuffix("%")) / scale
    except ValueError:
        raise ValueError(
            f"max drop must be a number or a percentage such as 0.5%, got {text!r}"
        ) from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"max drop must be >= 0, got {text!r}")
    return value


def _parse(arg: str | None, inner: Strategy) -> Strategy:
    drop = needs_argument("within-accuracy", arg, "within-accuracy=0.5%:<spec>")
    return within_accuracy(parse_max_drop(drop), inner)


def _restore(params: Params, inner: Strategy) -> Strategy:
    drop = number(params, "max_drop", "within_accuracy")
    return within_accuracy(drop, inner, strict=bool(params.get("strict_accuracy")))


DECLARED = (
    Combinator(
        "within_accuracy",
        _restore,
        own=("max_drop", "strict_accuracy"),
        spec="within-accuracy",
        parse=_parse,
        example="within-accuracy=0.5%:<spec>",
        rank=400,
    ),
)
