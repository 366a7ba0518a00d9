"""First wins: the first candidate that passes is selected; later ones are never built.

Rule: ``first_wins(strategy)`` keeps the strategy's measure and compare; the fold stops
consuming candidates as soon as its leader passes: it beats the baseline by ``compare``
when there is a baseline, or simply succeeded when there is none (validation off, or a
failed baseline). Candidates after it are never pulled from the (lazy) candidate list, so
the shell never builds them. When nobody passes, every candidate is tried and the plain
rule applies (best candidate vs baseline). CLI spec: ``first-wins:<spec>``.

>>> from returns.result import Success
>>> from aitune_fp.core.fold import tune
>>> from aitune_fp.core.records import Profile
>>> from aitune_fp.core.strategies.min_latency import min_latency
>>> pulled = []
>>> def candidates():
...     for name, ms in (("a", 3.0), ("b", 1.5), ("c", 1.0)):
...         pulled.append(name)
...         yield Success(Profile(name, {1: [ms]}))
>>> base = Success(Profile("eager", {1: [2.0]}))
>>> tune(first_wins(min_latency), candidates(), baseline=base).unwrap().backend, pulled
('b', ['a', 'b'])
"""

from __future__ import annotations

from dataclasses import replace

from aitune_fp.core.bound import bind
from aitune_fp.core.records import TuneState
from aitune_fp.core.strategies.declared import Combinator, Params, no_argument
from aitune_fp.core.strategy import Compare, Strategy


def leader_passes(compare: Compare, state: TuneState) -> bool:
    """The leader exists and beats the baseline (or there is no baseline to beat)."""
    if state.best is None:
        return False
    return state.baseline is None or compare(state.best.result, state.baseline.result)


def first_wins(strategy: Strategy) -> Strategy:
    """``strategy`` that stops at the first candidate that passes (see the module rule)."""
    return replace(
        strategy,
        name=f"first_wins({strategy.name})",
        title=f"{strategy.title}, first that passes",
        description=(
            f"{strategy.description} Candidates are tried in order and the first that "
            "passes wins; later ones are not built."
        ),
        settled=bind(leader_passes, strategy.compare),
        params=strategy.params.set("first_wins", True),
    )


def _parse(arg: str | None, inner: Strategy) -> Strategy:
    no_argument("first-wins", arg)
    return first_wins(inner)


def _restore(_params: Params, inner: Strategy) -> Strategy:
    return first_wins(inner)


DECLARED = (
    Combinator(
        "first_wins",
        _restore,
        own=("first_wins",),
        spec="first-wins",
        parse=_parse,
        example="first-wins:<spec>",
        rank=500,
    ),
)
