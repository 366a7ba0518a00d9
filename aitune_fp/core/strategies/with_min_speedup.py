"""With min speedup: a candidate must beat the other by at least a given factor.

Rule: ``with_min_speedup(strategy, ratio)`` keeps measure and speedup, and
``compare(a, b)`` holds only when ``strategy.compare(a, b)`` holds and
``strategy.speedup(a, b) > ratio`` (``ratio >= 1``; ``1.05`` asks for 5 % faster).
With ``ratio == 1`` it is the strategy itself. Otherwise ties are no longer transitive
(a semiorder): the fold keeps the baseline, then the earlier candidate, on a tie.
CLI spec: ``min-speedup=1.1:<spec>`` (``1.1x`` and ``10%`` say the same).

>>> from aitune_fp.core.records import BackendProfilingResult as R
>>> from aitune_fp.core.strategies.min_latency import min_latency
>>> s = with_min_speedup(min_latency, 1.1)
>>> s.compare(R(1.0, 1, 1.0, 1000.0), R(1.05, 1, 1.05, 952.4))
False
>>> s.compare(R(1.0, 1, 1.0, 1000.0), R(1.2, 1, 1.2, 833.3))
True
"""

from __future__ import annotations

import math
from dataclasses import replace

from aitune_fp.core.bound import bind
from aitune_fp.core.records import BackendProfilingResult
from aitune_fp.core.strategies.declared import Combinator, Params, needs_argument, number
from aitune_fp.core.strategy import Compare, Speedup, Strategy


def _compare(
    compare: Compare,
    speedup: Speedup,
    ratio: float,
    a: BackendProfilingResult,
    b: BackendProfilingResult,
) -> bool:
    return compare(a, b) and speedup(a, b) > ratio


def with_min_speedup(strategy: Strategy, ratio: float) -> Strategy:
    """``strategy`` whose wins need a speedup above ``ratio`` (see the module rule)."""
    if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not math.isfinite(ratio):
        raise ValueError(f"ratio must be a finite number >= 1, got {ratio!r}")
    if ratio < 1.0:
        raise ValueError(
            f"ratio is a speedup factor >= 1 (1.05 asks for 5 % faster), got {ratio!r}"
        )
    if ratio == 1.0:
        return strategy
    return replace(
        strategy,
        name=f"with_min_speedup({strategy.name})",
        title=f"{strategy.title}, at least {ratio:g}×",
        description=f"{strategy.description} A win needs a speedup above {ratio:g}×.",
        compare=bind(_compare, strategy.compare, strategy.speedup, float(ratio)),
        params=strategy.params.set("min_speedup_ratio", float(ratio)),
    )


def parse_ratio(text: str) -> float:
    """``1.1``, ``1.1x`` or ``10%`` (10 % faster) as a speedup factor.

    >>> parse_ratio("1.1x"), parse_ratio("5%"), parse_ratio(" 2 ")
    (1.1, 1.05, 2.0)
    >>> parse_ratio("fast")
    Traceback (most recent call last):
    ...
    ValueError: min-speedup is a factor such as 1.1, 1.1x or 10%, got 'fast'
    """
    raw = text.strip().lower()
    try:
        if raw.endswith("%"):
            return 1.0 + float(raw[:-1]) / 100.0
        return float(raw.removesuffix("x").removesuffix("×"))
    except ValueError:
        raise ValueError(
            f"min-speedup is a factor such as 1.1, 1.1x or 10%, got {text!r}"
        ) from None


def _parse(arg: str | None, inner: Strategy) -> Strategy:
    ratio = parse_ratio(needs_argument("min-speedup", arg, "min-speedup=1.1:<spec>"))
    return with_min_speedup(inner, ratio)


def _restore(params: Params, inner: Strategy) -> Strategy:
    return with_min_speedup(inner, number(params, "min_speedup_ratio", "with_min_speedup"))


DECLARED = (
    Combinator(
        "with_min_speedup",
        _restore,
        own=("min_speedup_ratio",),
        spec="min-speedup",
        parse=_parse,
        example="min-speedup=1.1:<spec>",
        rank=700,
    ),
)
