"""Parsing what users type: quantities with units, input shapes, name lists.

Rules:
- a quantity is a positive finite number with an optional unit from a fixed table; a
  latency budget's units are ``ms`` (the default), ``us``/``µs`` or ``s`` and it is stored
  in ms; a memory size's units are ``MiB`` (the default) or ``GiB`` and it is stored in MiB;
- an input shape is ``8x3x64x64`` (``x``, ``×`` or ``,`` between positive integers);
- a name list is comma-separated names, blanks dropped, order kept;
- every malformed input is a ``ValueError`` whose message says what is accepted.

Strategy specs are read by :mod:`aitune_fp.core.strategies.registry`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Final

_NUMBER: Final = r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([^\s0-9.]*)\s*$"
_QUANTITY: Final = re.compile(_NUMBER, re.I)
TIME_UNITS_MS: Final = {"": 1.0, "ms": 1.0, "us": 1e-3, "µs": 1e-3, "s": 1e3}
MEMORY_UNITS_MIB: Final = {"": 1.0, "mib": 1.0, "gib": 1024.0}


def parse_quantity(text: str, units: Mapping[str, float], what: str) -> float:
    """A number > 0 with an optional unit from ``units`` (lower-case keys), scaled by it.

    ``what`` names the quantity and its accepted units in the error message.

    >>> parse_quantity("1.5GiB", MEMORY_UNITS_MIB, "memory budget")
    1536.0
    >>> parse_quantity("2 parsecs", TIME_UNITS_MS, "budget")
    Traceback (most recent call last):
    ...
    ValueError: budget must be a number > 0 with an optional unit, got '2 parsecs'
    """
    match = _QUANTITY.match(text)
    unit = (match.group(2) or "").lower() if match else ""
    value = float(match.group(1)) * units[unit] if match and unit in units else 0.0
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{what} must be a number > 0 with an optional unit, got {text!r}")
    return value


def parse_budget_ms(text: str) -> float:
    """A latency budget in ms from ``5``, ``5ms``, ``500us`` or ``0.005s``.

    >>> parse_budget_ms("5"), parse_budget_ms("2.5ms"), parse_budget_ms("500us")
    (5.0, 2.5, 0.5)
    >>> parse_budget_ms("0")
    Traceback (most recent call last):
    ...
    ValueError: latency budget must be a number > 0 with an optional unit ms, us or s, got '0'
    """
    try:
        return parse_quantity(text, TIME_UNITS_MS, "latency budget")
    except ValueError:
        raise ValueError(
            f"latency budget must be a number > 0 with an optional unit ms, us or s, got {text!r}"
        ) from None


def parse_memory_mb(text: str) -> float:
    """A memory size in MiB from ``512``, ``512MiB`` or ``1.5GiB``.

    >>> parse_memory_mb("512"), parse_memory_mb("512 MiB"), parse_memory_mb("1.5GiB")
    (512.0, 512.0, 1536.0)
    >>> parse_memory_mb("0")
    Traceback (most recent call last):
    ...
    ValueError: memory budget must be a number > 0 with an optional unit MiB or GiB, got '0'
    """
    try:
        return parse_quantity(text, MEMORY_UNITS_MIB, "memory budget")
    except ValueError:
        raise ValueError(
            f"memory budget must be a number > 0 with an optional unit MiB or GiB, got {text!r}"
        ) from None


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
