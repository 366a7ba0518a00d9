"""Parsing what users type: strategy specs, input shapes, backend lists.

Rules:
- a strategy spec is ``max-throughput``, ``min-latency`` or ``latency-budget=BUDGET``,
  optionally prefixed ``confident:`` for the statistical decision rule (issue 5) or
  ``within-memory=SIZE:`` (``within-memory=SIZE,strict:``) for a peak-memory budget;
  names are case-insensitive and ``_`` may replace ``-``; a budget is a positive number
  with an optional unit ``ms`` (the default), ``us``/``µs`` or ``s``, and is stored in ms;
  a memory size is a positive number with an optional unit ``MiB`` (the default) or
  ``GiB``, and is stored in MiB;
- a stored strategy configuration (``strategy_config``'s dict) names a shipped strategy
  and its parameters, and gives that strategy back (``validate_performance`` included);
- an input shape is ``8x3x64x64`` (``x``, ``×`` or ``,`` between positive integers);
- a backend list is comma-separated names, blanks dropped, order kept;
- every malformed input is a ``ValueError`` whose message says what is accepted.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from typing import Any, Final

from aitune_fp.core.strategies import (
    confident,
    latency_budget,
    max_throughput,
    min_latency,
    within_memory,
)
from aitune_fp.core.strategy import Strategy

STRATEGY_SPECS: Final = (
    "max-throughput",
    "min-latency",
    "latency-budget=5ms",
    "within-memory=512MiB:<spec>",
    "confident:<spec>",
)
_UNITS: Final = {"": 1.0, "ms": 1.0, "us": 1e-3, "µs": 1e-3, "s": 1e3}
_BUDGET: Final = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*(ms|us|µs|s)?\s*$", re.I)
_MEMORY_UNITS: Final = {"": 1.0, "mib": 1.0, "gib": 1024.0}
_MEMORY: Final = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*(mib|gib)?\s*$", re.I)


def parse_budget_ms(text: str) -> float:
    """A latency budget in ms from ``5``, ``5ms``, ``500us`` or ``0.005s``.

    >>> parse_budget_ms("5"), parse_budget_ms("2.5ms"), parse_budget_ms("500us")
    (5.0, 2.5, 0.5)
    >>> parse_budget_ms("0")
    Traceback (most recent call last):
    ...
    ValueError: latency budget must be a number > 0 with an optional unit ms, us or s, got '0'
    """
    match = _BUDGET.match(text)
    value = float(match.group(1)) * _UNITS[(match.group(2) or "").lower()] if match else 0.0
    if not match or not math.isfinite(value) or value <= 0:
        raise ValueError(
            f"latency budget must be a number > 0 with an optional unit ms, us or s, got {text!r}"
        )
    return value


def parse_memory_mb(text: str) -> float:
    """A memory size in MiB from ``512``, ``512MiB`` or ``1.5GiB``.

    >>> parse_memory_mb("512"), parse_memory_mb("512 MiB"), parse_memory_mb("1.5GiB")
    (512.0, 512.0, 1536.0)
    >>> parse_memory_mb("0")
    Traceback (most recent call last):
    ...
    ValueError: memory budget must be a number > 0 with an optional unit MiB or GiB, got '0'
    """
    match = _MEMORY.match(text)
    value = float(match.group(1)) * _MEMORY_UNITS[(match.group(2) or "").lower()] if match else 0.0
    if not match or not math.isfinite(value) or value <= 0:
        raise ValueError(
            f"memory budget must be a number > 0 with an optional unit MiB or GiB, got {text!r}"
        )
    return value


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

    >>> from aitune_fp.core.report import strategy_config
    >>> strategy_from_config(strategy_config(latency_budget(2.0))).title
    'Latency budget (2 ms)'
    """
    name = config.get("strategy")
    params = config.get("parameters") or {}
    if isinstance(name, str) and name.startswith("confident(") and name.endswith(")"):
        return _confident_from_config(config, name[len("confident(") : -1], params)
    if isinstance(name, str) and name.startswith("within_memory(") and name.endswith(")"):
        return _memory_from_config(config, name[len("within_memory(") : -1], params)
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


def parse_shape(text: str) -> tuple[int, ...]:
    """An input shape from ``8x3x64x64`` (also ``8×3×64×64`` or ``8,3,64,64``).

    >>> parse_shape("8x3x64x64")
    (8, 3, 64, 64)
    >>> parse_shape("8x0")
    Traceback (most recent call last):
    ...
    ValueError: input shape must be positive integers joined by 'x', e.g. 8x3x64x64; got '8x0'
    """
    parts = re.split(r"[x×,]", text.strip().lower())
    if not all(p.strip().isdigit() and int(p) > 0 for p in parts):
        raise ValueError(
            f"input shape must be positive integers joined by 'x', e.g. 8x3x64x64; got {text!r}"
        )
    return tuple(int(p) for p in parts)


def parse_names(text: str) -> tuple[str, ...]:
    """Comma-separated names, stripped, blanks dropped, order kept.

    >>> parse_names("onnxruntime, inductor_aot,,")
    ('onnxruntime', 'inductor_aot')
    """
    return tuple(n.strip() for n in text.split(",") if n.strip())
