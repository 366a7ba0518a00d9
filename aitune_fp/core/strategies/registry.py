"""The one registry of shipped strategies: the specs users type, the configs runs store.

Rules:
- a strategy spec is ``max-throughput``, ``min-latency`` or ``latency-budget=BUDGET``,
  optionally prefixed ``confident:`` for the statistical decision rule or
  ``within-memory=SIZE:`` (``within-memory=SIZE,strict:``) for a peak-memory budget;
  names are case-insensitive and ``_`` may replace ``-``; budgets and sizes are read by
  :mod:`aitune_fp.core.parse` (ms and MiB);
- :data:`STRATEGY_SPECS` lists the specs for the CLI's help and the docs;
- :func:`strategy_config` writes a strategy as the JSON-able dict a run record stores, and
  :func:`strategy_from_config` gives the shipped strategy back from it
  (``validate_performance`` included; the rounds plan is not needed offline);
- every malformed spec or config is a ``ValueError`` whose message says what is accepted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Final

from aitune_fp.core.measure.stop_rules import CallRule
from aitune_fp.core.parse import parse_budget_ms, parse_memory_mb
from aitune_fp.core.strategies.confident import confident
from aitune_fp.core.strategies.latency_budget import latency_budget
from aitune_fp.core.strategies.max_throughput import max_throughput
from aitune_fp.core.strategies.memory import within_memory
from aitune_fp.core.strategies.min_latency import min_latency
from aitune_fp.core.strategies.within_accuracy import parse_max_drop, within_accuracy
from aitune_fp.core.strategy import ProfilingPlan, Strategy

STRATEGY_SPECS: Final = (
    "max-throughput",
    "min-latency",
    "latency-budget=5ms",
    "within-memory=512MiB:<spec>",
    "within-accuracy=0.5%:<spec>",
    "confident:<spec>",
)


def _within_memory_spec(arg: str, inner: str) -> Strategy:
    """``within-memory=SIZE[,strict]:<spec>``: ``inner`` under a peak-memory budget."""
    size, comma, flag = arg.partition(",")
    if comma and flag.strip().lower() != "strict":
        raise ValueError(f"within-memory takes SIZE or SIZE,strict, got {arg!r}")
    if not inner.strip():
        raise ValueError(
            "within-memory needs a strategy after it, e.g. within-memory=512:min-latency"
        )
    return within_memory(parse_strategy(inner), parse_memory_mb(size), strict=bool(comma))


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
    >>> parse_strategy("fastest")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown strategy 'fastest'; use max-throughput, min-latency, ... or confident:<spec>
    """
    head, colon, rest = spec.strip().partition(":")
    if colon and head.strip().lower() == "confident":
        return confident(parse_strategy(rest))
    prefix, _, size = head.partition("=")
    if colon and prefix.strip().lower().replace("_", "-") == "within-memory":
        return _within_memory_spec(size, rest)
    if colon and prefix.strip().lower().replace("_", "-") == "within-accuracy":
        return within_accuracy(parse_max_drop(size), parse_strategy(rest))
    name, _, arg = spec.strip().partition("=")
    key = name.strip().lower().replace("_", "-")
    if key == "latency-budget":
        if not arg.strip():
            raise ValueError("latency-budget needs a budget, e.g. latency-budget=5ms")
        return latency_budget(parse_budget_ms(arg))
    shipped = {"max-throughput": max_throughput, "min-latency": min_latency}
    if key in shipped and not arg:
        return shipped[key]
    if key in shipped:
        raise ValueError(f"strategy {key} takes no parameter, got {spec!r}")
    raise ValueError(
        f"unknown strategy {spec!r}; use {', '.join(STRATEGY_SPECS[:-1])} or {STRATEGY_SPECS[-1]}"
    )


def strategy_from_config(config: Mapping[str, Any]) -> Strategy:
    """The shipped strategy a stored configuration describes.

    >>> strategy_from_config(strategy_config(latency_budget(2.0))).title
    'Latency budget (2 ms)'
    """
    name = config.get("strategy")
    params = config.get("parameters") or {}
    if isinstance(name, str) and name.startswith("confident(") and name.endswith(")"):
        return _confident_from_config(config, name[len("confident(") : -1], params)
    if isinstance(name, str) and name.startswith("within_memory(") and name.endswith(")"):
        return _memory_from_config(config, name[len("within_memory(") : -1], params)
    if isinstance(name, str) and name.startswith("within_accuracy(") and name.endswith(")"):
        base = _inner_strategy(config, name[16:-1], params, ("max_drop", "strict_accuracy"))
        drop = params.get("max_drop")
        if isinstance(drop, bool) or not isinstance(drop, int | float):
            raise ValueError(f"within_accuracy config needs a numeric max_drop, got {drop!r}")
        return within_accuracy(float(drop), base, strict=bool(params.get("strict_accuracy")))
    if name == "latency_budget":
        budget = params.get("budget_ms")
        if isinstance(budget, bool) or not isinstance(budget, int | float):
            raise ValueError(f"latency_budget config needs a numeric budget_ms, got {budget!r}")
        strategy = latency_budget(float(budget))
    elif name == "max_throughput":
        strategy = max_throughput
    elif name == "min_latency":
        strategy = min_latency
    else:
        raise ValueError(f"stored strategy {name!r} is not a shipped strategy")
    validate = config.get("validate_performance", True)
    return dataclasses.replace(strategy, validate_performance=bool(validate))


def _inner_strategy(
    config: Mapping[str, Any], inner: str, params: Mapping[str, Any], own: tuple[str, ...]
) -> Strategy:
    """The strategy a combinator wraps: ``inner`` with the parameters not in ``own``."""
    kept = {k: v for k, v in params.items() if k not in own}
    return strategy_from_config({**config, "strategy": inner, "parameters": kept})


_CONFIDENCE_KEYS: Final = ("confidence", "min_speedup", "resamples", "seed", "statistic")


def _confident_from_config(
    config: Mapping[str, Any], inner: str, params: Mapping[str, Any]
) -> Strategy:
    """``confident(inner)`` with its stored rule (the rounds plan is not needed offline)."""
    base = _inner_strategy(config, inner, params, (*_CONFIDENCE_KEYS, "paired_statistic"))
    missing = [k for k in _CONFIDENCE_KEYS if k not in params]
    if missing:
        raise ValueError(f"confident config lacks {', '.join(missing)}")
    return confident(
        base,
        confidence=float(params["confidence"]),
        min_speedup=float(params["min_speedup"]),
        resamples=int(params["resamples"]),
        seed=int(params["seed"]),
        statistic=str(params["statistic"]),
        # records from before paired rounds had their own statistic used the same one
        paired_statistic=str(params.get("paired_statistic", params["statistic"])),
    )


_MEMORY_KEYS: Final = ("budget_mb", "strict_memory", "memory_baseline")


def _memory_from_config(
    config: Mapping[str, Any], inner: str, params: Mapping[str, Any]
) -> Strategy:
    """``within_memory(inner)`` with its stored budget, strictness and baseline name."""
    base = _inner_strategy(config, inner, params, _MEMORY_KEYS)
    budget = params.get("budget_mb")
    if isinstance(budget, bool) or not isinstance(budget, int | float):
        raise ValueError(f"within_memory config needs a numeric budget_mb, got {budget!r}")
    return within_memory(
        base,
        float(budget),
        strict=bool(params.get("strict_memory", False)),
        baseline=str(params.get("memory_baseline", "eager")),
    )


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
