"""One backend: only the named backend competes (against the baseline, if validating).

Rule: ``one_backend(strategy, name)`` admits the single backend whose name is ``name``
(exact match on the candidate's backend name): the fold records any other candidate as a
failure at stage ``measure`` ("not admitted"), drivers are told not to build the others
(``admits``), and the fold stops once the named backend has been consumed. The baseline is
not a candidate and is never filtered. Performance validation is kept as the
strategy says: with it on, the named backend must still beat the baseline; turn it off
(``dataclasses.replace(s, validate_performance=False)``) to deploy it regardless of speed.
CLI spec: ``one-backend=NAME:<spec>``.

>>> from returns.result import Success
>>> from aitune_fp.core.fold import tune
>>> from aitune_fp.core.records import Profile
>>> from aitune_fp.core.strategies.min_latency import min_latency
>>> cands = [Success(Profile("a", {1: [1.0]})), Success(Profile("b", {1: [2.0]}))]
>>> tune(one_backend(min_latency, "b"), cands).unwrap().backend
'b'
"""

from __future__ import annotations

from dataclasses import replace

from aitune_fp.core.bound import bind
from aitune_fp.core.records import TuneState
from aitune_fp.core.strategies.declared import Combinator, Params, needs_argument, text
from aitune_fp.core.strategy import Strategy


def is_named(name: str, candidate: str) -> bool:
    """Whether ``candidate`` is the chosen backend ``name``."""
    return candidate == name


def consumed(name: str, state: TuneState) -> bool:
    """The named backend has been folded in (success or failure)."""
    return name in state.considered


def one_backend(strategy: Strategy, name: str) -> Strategy:
    """``strategy`` restricted to the backend called ``name`` (see the module rule)."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"one_backend needs a non-empty backend name, got {name!r}")
    return replace(
        strategy,
        name=f"one_backend({strategy.name})",
        title=f"{strategy.title}, {name} only",
        description=f"{strategy.description} Only {name} competes.",
        settled=bind(consumed, name),
        admits=bind(is_named, name),
        params=strategy.params.set("backend", name),
    )


def _parse(arg: str | None, inner: Strategy) -> Strategy:
    return one_backend(inner, needs_argument("one-backend", arg, "one-backend=onnxruntime:<spec>"))


def _restore(params: Params, inner: Strategy) -> Strategy:
    return one_backend(inner, text(params, "backend", "one_backend"))


DECLARED = (
    Combinator(
        "one_backend",
        _restore,
        own=("backend",),
        spec="one-backend",
        parse=_parse,
        example="one-backend=onnxruntime:<spec>",
        rank=600,
    ),
)
