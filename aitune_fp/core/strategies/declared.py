"""How a shipped strategy or combinator declares its CLI spec and its stored config.

Every module of :mod:`aitune_fp.core.strategies` that ships a strategy ends with a
``DECLARED`` tuple of :class:`Shipped` (a strategy that stands alone) or
:class:`Combinator` (one that wraps another) values; the registry
(:mod:`aitune_fp.core.strategies.registry`) derives the spec parser, :data:`STRATEGY_SPECS`
and the restorers from them, so a new strategy is one module.

Rules of the stored config (the ``parameters`` of a run record's strategy):
- a strategy's parameters are one flat mapping: each layer adds its ``own`` keys to the
  parameters of the strategy it wraps (``confident(latency_budget)`` stores
  ``budget_ms`` beside ``confidence``); restoring a combinator hands the inner strategy
  the parameters without its own keys;
- the stored name is the layers' names nested: ``confident(within_memory(min_latency))``;
  a combinator's name is its ``name`` followed by the inner name in parentheses;
- a combinator applied twice to one stack stores its parameters once (the outer layer's),
  so only stacks that use each combinator at most once restore exactly;
- a missing or ill-typed parameter is a ``ValueError`` naming the layer and the key.

Rules of the CLI spec: a shipped strategy is ``KEYWORD`` or ``KEYWORD=ARG``; a combinator
is ``KEYWORD:<spec>`` or ``KEYWORD=ARG:<spec>``. ``parse`` gets the text after ``=``
(``None`` without one) and, for a combinator, the strategy ``<spec>`` names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aitune_fp.core.strategy import Strategy

Params = Mapping[str, Any]
RestoreShipped = Callable[[Params], Strategy]
RestoreWrapped = Callable[[Params, Strategy], Strategy]
ParseShipped = Callable[[str | None], Strategy]
ParseWrapped = Callable[[str | None, Strategy], Strategy]


@dataclass(frozen=True, slots=True)
class Shipped:
    """A strategy that stands alone: its stored ``name``, restorer and CLI spec.

    ``own`` lists the parameter keys it writes; ``spec`` is its CLI keyword (``None``:
    the CLI cannot name it), ``parse`` reads the text after ``=``, ``example`` is the spec
    listed in the help, and ``rank`` orders that list.
    """

    name: str
    restore: RestoreShipped
    own: tuple[str, ...] = ()
    spec: str | None = None
    parse: ParseShipped | None = None
    example: str | None = None
    rank: int = 50


@dataclass(frozen=True, slots=True)
class Combinator:
    """A strategy that wraps another: like :class:`Shipped`, with an inner strategy."""

    name: str
    restore: RestoreWrapped
    own: tuple[str, ...] = ()
    spec: str | None = None
    parse: ParseWrapped | None = None
    example: str | None = None
    rank: int = 150


Declaration = Shipped | Combinator


def number(params: Params, key: str, who: str) -> float:
    """The numeric parameter ``key`` of layer ``who`` (a ``ValueError`` when not a number).

    >>> number({"budget_ms": 2}, "budget_ms", "latency_budget")
    2.0
    >>> number({}, "budget_ms", "latency_budget")
    Traceback (most recent call last):
    ...
    ValueError: latency_budget config needs a numeric budget_ms, got None
    """
    value = params.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{who} config needs a numeric {key}, got {value!r}")
    return float(value)


def text(params: Params, key: str, who: str) -> str:
    """The string parameter ``key`` of layer ``who`` (a ``ValueError`` when not a string).

    >>> text({"backend": "ort"}, "backend", "one_backend")
    'ort'
    """
    value = params.get(key)
    if not isinstance(value, str):
        raise ValueError(f"{who} config needs a string {key}, got {value!r}")
    return value


def no_argument(keyword: str, arg: str | None) -> None:
    """Refuse ``KEYWORD=ARG`` for a spec that takes no parameter.

    >>> no_argument("first-wins", "3")
    Traceback (most recent call last):
    ...
    ValueError: strategy first-wins takes no parameter, got first-wins=3
    """
    if arg is not None:
        raise ValueError(f"strategy {keyword} takes no parameter, got {keyword}={arg}")


def needs_argument(keyword: str, arg: str | None, example: str) -> str:
    """The non-blank ``ARG`` of ``KEYWORD=ARG`` (a ``ValueError`` naming ``example``).

    >>> needs_argument("one-backend", " ", "one-backend=onnxruntime:<spec>")
    Traceback (most recent call last):
    ...
    ValueError: one-backend needs a value, e.g. one-backend=onnxruntime:<spec>
    """
    if arg is None or not arg.strip():
        raise ValueError(f"{keyword} needs a value, e.g. {example}")
    return arg.strip()
