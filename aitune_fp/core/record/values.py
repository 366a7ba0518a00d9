"""JSON-able values made immutable and back, canonically.

Rules:
- :func:`freeze_json`: mappings become pyrsistent maps with ``str`` keys, lists, tuples and
  pyrsistent vectors become tuples, ``None``/``bool``/``int``/``str`` and finite floats stay,
  a non-finite float becomes its JSON-safe name (``"NaN"``, ``"Infinity"``,
  ``"-Infinity"``), any other leaf becomes ``str(leaf)``;
- :func:`thaw_json` is its inverse on frozen values: pmaps to dicts, tuples to lists, so
  ``freeze_json(thaw_json(freeze_json(x))) == freeze_json(x)`` always;
- typed float fields use :func:`encode_float` / :func:`decode_float`, which keep
  non-finite floats as those names so the JSON text stays strict.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pyrsistent import PMap, pmap

NON_FINITE: Final = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def encode_float(value: float) -> float | str:
    """A float for strict JSON: itself when finite, else ``"NaN"``/``"Infinity"``/…

    >>> encode_float(1.5), encode_float(float("-inf"))
    (1.5, '-Infinity')
    """
    if math.isfinite(value):
        return float(value)
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def decode_float(value: Any) -> float | None:
    """The float :func:`encode_float` wrote, or ``None`` when ``value`` is not one.

    >>> decode_float(2), decode_float("Infinity"), decode_float(True), decode_float("x")
    (2.0, inf, None, None)
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and value in NON_FINITE:
        return NON_FINITE[value]
    return None


def freeze_json(value: Any) -> Any:
    """``value`` as an immutable, canonical JSON-able value (see the module rules).

    >>> freeze_json({"a": [1, {"b": (2.0, float("nan"))}], 3: object}) == pmap(
    ...     {"a": (1, pmap({"b": (2.0, "NaN")})), "3": "<class 'object'>"})
    True
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return encode_float(value)
    if isinstance(value, Mapping):
        return pmap({str(k): freeze_json(v) for k, v in value.items()})
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        return tuple(freeze_json(v) for v in value)
    return str(value)


def thaw_json(value: Any) -> Any:
    """A frozen JSON-able value as plain dicts and lists, ready for ``json.dumps``.

    >>> thaw_json(pmap({"a": (1, pmap({"b": "c"}))}))
    {'a': [1, {'b': 'c'}]}
    """
    if isinstance(value, Mapping):
        return {str(k): thaw_json(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [thaw_json(v) for v in value]
    return value


def freeze_numbers(values: Mapping[str, float]) -> PMap[str, float]:
    """A ``str → float`` map, frozen; a key that is not a string or a value that is not a
    number is a ``ValueError``.

    >>> freeze_numbers({"build": 1})["build"]
    1.0
    """
    out: dict[str, float] = {}
    for key, raw in dict(values).items():
        number = raw if isinstance(raw, float) else decode_float(raw)
        if not isinstance(key, str) or number is None:
            raise ValueError(f"expected a map of str to float, got {key!r}: {raw!r}")
        out[key] = float(number)
    return pmap(out)
