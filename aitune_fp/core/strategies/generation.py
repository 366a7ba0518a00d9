"""The generation strategies' declarations: their specs and their config round trip.

The strategies are :mod:`aitune_fp.core.generation.strategies`' (``Strategy`` values over a
generation profile); this module only declares them to the one registry, so a run record
restores them and a spec names them: ``max-tokens-per-s``, ``min-itl``, ``min-ttft`` and
``generation-budget=ttft=50ms,itl=10ms`` (either bound, or both). They are not listed in the
help of ``tune`` (a forward-call tune has no generation profile: every candidate would fail
at ``measure``). The strategies are imported when first used, as that module imports the
strategies package's metrics.

>>> from aitune_fp.core.strategies.registry import parse_strategy, strategy_from_config
>>> parse_strategy("generation-budget=ttft=50ms").params["ttft_ms"]
50.0
>>> strategy_from_config({"strategy": "min_ttft"}).title
'Lowest time to first token'
"""

from __future__ import annotations

from aitune_fp.core.parse import parse_budget_ms
from aitune_fp.core.strategies.declared import Params, Shipped, no_argument, number
from aitune_fp.core.strategy import Strategy


def _named(name: str) -> Strategy:
    from aitune_fp.core.generation import strategies

    found: Strategy = getattr(strategies, name)
    return found


def _plain(name: str, spec: str) -> Shipped:
    def parse(arg: str | None) -> Strategy:
        no_argument(spec, arg)
        return _named(name)

    return Shipped(name, lambda _params: _named(name), spec=spec, parse=parse, rank=90)


def _parse_budget(arg: str | None) -> Strategy:
    from aitune_fp.core.generation.strategies import generation_budget

    bounds: dict[str, float] = {}
    for part in (arg or "").split(","):
        key, eq, value = part.strip().partition("=")
        if not eq or key.strip().lower() not in ("ttft", "itl"):
            raise ValueError(
                f"generation-budget takes ttft=MS and/or itl=MS, e.g. generation-budget="
                f"ttft=50ms,itl=10ms; got {arg!r}"
            )
        bounds[f"{key.strip().lower()}_ms"] = parse_budget_ms(value)
    return generation_budget(**bounds)


def _restore_budget(params: Params) -> Strategy:
    from aitune_fp.core.generation.strategies import generation_budget

    ttft = number(params, "ttft_ms", "generation_budget") if "ttft_ms" in params else None
    itl = number(params, "itl_ms", "generation_budget") if "itl_ms" in params else None
    return generation_budget(ttft_ms=ttft, itl_ms=itl)


DECLARED = (
    _plain("max_tokens_per_s", "max-tokens-per-s"),
    _plain("min_itl", "min-itl"),
    _plain("min_ttft", "min-ttft"),
    Shipped(
        "generation_budget",
        _restore_budget,
        own=("ttft_ms", "itl_ms"),
        spec="generation-budget",
        parse=_parse_budget,
        rank=90,
    ),
)
