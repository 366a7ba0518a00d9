"""The one registry of shipped strategies: the specs users type, the configs runs store.

The registry declares nothing itself: every module of :mod:`aitune_fp.core.strategies`
that ships a strategy or combinator ends with a ``DECLARED`` tuple
(:mod:`aitune_fp.core.strategies.declared`), and the tables below are derived from those
declarations, so adding a strategy is one module.

Rules:
- a strategy spec is a shipped strategy's spec (``max-throughput``, ``min-latency``,
  ``latency-budget=BUDGET`` …), optionally prefixed by combinators' specs
  (``confident:``, ``within-memory=SIZE:``, ``first-wins:`` …, see :data:`STRATEGY_SPECS`);
  names are case-insensitive and ``_`` may replace ``-``; budgets and sizes are read by
  :mod:`aitune_fp.core.parse` (ms and MiB);
- :data:`STRATEGY_SPECS` lists the specs for the CLI's help and the docs;
- :func:`strategy_config` writes a strategy as the JSON-able dict a run record stores, and
  :func:`strategy_from_config` gives the shipped strategy back from it
  (``validate_performance`` included, and the stored final-rounds plan's budgets and
  members for a strategy that plans rounds: they decide which rounds a replayed session
  asks for; the burst shape is not stored), restoring a combinator's inner strategy first;
- every malformed spec or config is a ``ValueError`` whose message says what is accepted.
"""

from __future__ import annotations

import dataclasses
import pkgutil
from collections.abc import Mapping, Sequence
from importlib import import_module
from typing import Any, Final

from pyrsistent import PMap, pmap

from aitune_fp.core import strategies as _package
from aitune_fp.core.measure.stop_rules import CallRule
from aitune_fp.core.rounds.rounds_plan import RoundsPlan
from aitune_fp.core.strategies.declared import Combinator, Declaration, Shipped
from aitune_fp.core.strategy import ProfilingPlan, Strategy


def _declarations() -> tuple[Declaration, ...]:
    """Every ``DECLARED`` value of the package's modules, in their help order."""
    found: list[Declaration] = []
    for module in sorted(m.name for m in pkgutil.iter_modules(_package.__path__)):
        declared = vars(import_module(f"{_package.__name__}.{module}")).get("DECLARED", ())
        if not isinstance(declared, tuple) or not all(
            isinstance(d, Shipped | Combinator) for d in declared
        ):
            raise TypeError(f"{module}.DECLARED must be a tuple of Shipped or Combinator")
        found.extend(declared)
    for seen in ([d.name for d in found], [d.spec for d in found if d.spec]):
        if len(set(seen)) != len(seen):
            raise ValueError(f"two declared strategies share a name or spec: {sorted(seen)}")
    return tuple(sorted(found, key=lambda d: (d.rank, d.name)))


DECLARATIONS: Final = _declarations()
RESTORERS: Final[PMap[str, Declaration]] = pmap({d.name: d for d in DECLARATIONS})
_BY_SPEC: Final[PMap[str, Declaration]] = pmap({d.spec: d for d in DECLARATIONS if d.spec})
STRATEGY_SPECS: Final = tuple(d.example for d in DECLARATIONS if d.example)


def _key(keyword: str) -> str:
    return keyword.strip().lower().replace("_", "-")


def _unknown(spec: str) -> ValueError:
    listed = ", ".join(STRATEGY_SPECS[:-1])
    return ValueError(f"unknown strategy {spec!r}; use {listed} or {STRATEGY_SPECS[-1]}")


def parse_strategy(spec: str) -> Strategy:
    """The shipped strategy a spec names.

    >>> parse_strategy("max-throughput").name, parse_strategy("MIN_LATENCY").name
    ('max_throughput', 'min_latency')
    >>> parse_strategy("latency-budget=5ms").params["budget_ms"]
    5.0
    >>> parse_strategy("confident:min-latency").name
    'confident(min_latency)'
    >>> parse_strategy("within-memory=1GiB,strict:max-throughput").params["budget_mb"]
    1024.0
    >>> parse_strategy("first-wins:min-speedup=1.1:one-backend=ort:min-latency").name
    'first_wins(with_min_speedup(one_backend(min_latency)))'
    >>> parse_strategy("fastest")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown strategy 'fastest'; use max-throughput, min-latency, ... or confident:<spec>
    """
    head, colon, rest = spec.strip().partition(":")
    keyword, eq, arg = (head if colon else spec.strip()).partition("=")
    found = _BY_SPEC.get(_key(keyword))
    if colon and isinstance(found, Combinator) and found.parse is not None:
        if not rest.strip():
            shown = (found.example or "").replace("<spec>", "min-latency")
            raise ValueError(f"{found.spec} needs a strategy after it, e.g. {shown}")
        return found.parse(arg if eq else None, parse_strategy(rest))
    if not colon and isinstance(found, Shipped) and found.parse is not None:
        return found.parse(arg if eq else None)
    raise _unknown(spec)


def strategy_from_config(config: Mapping[str, Any]) -> Strategy:
    """The shipped strategy a stored configuration describes.

    >>> from aitune_fp.core.strategies.latency_budget import latency_budget
    >>> strategy_from_config(strategy_config(latency_budget(2.0))).title
    'Latency budget (2 ms)'
    >>> strategy_from_config({"strategy": "first_wins(mine)"})
    Traceback (most recent call last):
    ...
    ValueError: stored strategy 'mine' is not a shipped strategy
    """
    params = config.get("parameters") or {}
    strategy = _with_stored_rounds(_restore(config.get("strategy"), params), config)
    validate = config.get("validate_performance", True)
    return dataclasses.replace(strategy, validate_performance=bool(validate))


_ROUNDS_FIELDS: Final = frozenset(f.name for f in dataclasses.fields(RoundsPlan)) - {"burst"}


def _with_stored_rounds(strategy: Strategy, config: Mapping[str, Any]) -> Strategy:
    """``strategy`` with the final-rounds plan ``config`` stores (none planned or none
    stored: as it is).

    >>> from aitune_fp.core.strategies.confident import confident
    >>> from aitune_fp.core.strategies.min_latency import min_latency
    >>> s = confident(min_latency, rounds=RoundsPlan(contenders=2, max_seconds=4.0))
    >>> again = strategy_from_config(strategy_config(s)).plan.rounds
    >>> again.contenders, again.max_seconds
    (2, 4.0)
    """
    profiling = config.get("profiling")
    stored = profiling.get("rounds") if isinstance(profiling, Mapping) else None
    planned = strategy.plan.rounds
    if planned is None or not isinstance(stored, Mapping):
        return strategy
    rounds = dataclasses.replace(
        planned, **{k: v for k, v in stored.items() if k in _ROUNDS_FIELDS}
    )
    return dataclasses.replace(strategy, plan=dataclasses.replace(strategy.plan, rounds=rounds))


def _restore(name: object, params: Mapping[str, Any]) -> Strategy:
    """The strategy stored as ``name`` with the flat ``params`` of all its layers."""
    head, paren, inner = name.partition("(") if isinstance(name, str) else ("", "", "")
    found = RESTORERS.get(head)
    if paren and inner.endswith(")") and isinstance(found, Combinator):
        kept = {k: v for k, v in params.items() if k not in found.own}
        return found.restore(params, _restore(inner[:-1], kept))
    if not paren and isinstance(found, Shipped):
        return found.restore(params)
    raise ValueError(f"stored strategy {name!r} is not a shipped strategy")


def call_rule_config(rule: CallRule) -> dict[str, Any]:
    """A call rule as a JSON-able dict."""
    return {
        "name": rule.name,
        "warmup": rule.warmup,
        "min_samples": rule.min_samples,
        "max_samples": rule.max_samples,
    }


def plan_config(plan: ProfilingPlan) -> dict[str, Any]:
    """A profiling plan as a JSON-able dict.

    >>> plan_config(ProfilingPlan(batching=False))["call_rule"]["warmup"]
    10
    """
    rounds = plan.rounds
    return {
        "batching": plan.batching,
        "max_batch_size": plan.max_batch_size,
        "call_rule": call_rule_config(plan.call_rule),
        "sweep_rule": plan.sweep_rule.name,
        "rounds": None
        if rounds is None
        else {
            "contenders": rounds.contenders,
            "min_rounds": rounds.min_rounds,
            "max_rounds": rounds.max_rounds,
            "max_seconds": rounds.max_seconds,
            "warmup_calls": rounds.warmup_calls,
            "judge_every": rounds.judge_every,
            "settled_speedup": rounds.settled_speedup,
            "sweep_share": rounds.sweep_share,
        },
    }


def strategy_config(strategy: Strategy, backends: Sequence[str] = ()) -> dict[str, Any]:
    """The strategy's configuration as a JSON-able dict (keys sorted when serialised).

    >>> from aitune_fp import latency_budget
    >>> strategy_config(latency_budget(2.5))["parameters"]
    {'budget_ms': 2.5}
    """
    return {
        "strategy": strategy.name,
        "title": strategy.title,
        "metric_label": strategy.metric_label,
        "metric_unit": strategy.metric_unit,
        "validate_performance": strategy.validate_performance,
        "backends": list(backends),
        "profiling": plan_config(strategy.plan),
        "parameters": {k: strategy.params[k] for k in sorted(strategy.params)},
    }
