"""Checked reading of decoded JSON: typed fields, with the path of a bad value in the error.

Rules: every accessor checks the JSON type of one field and raises ``ValueError`` naming
its path (``run record.candidates[2].profile: missing field 'backend'``); ``bool`` is never
accepted as a number; a field is required unless a non-``None`` ``default`` is given (the
``*_or_none`` accessors read an absent field as null); record constructors run
through :meth:`Reader.build`, so their own invariant errors carry the path too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from aitune_fp.core.record.values import decode_float

T = TypeVar("T")
_MISSING: Any = object()


def _kind(value: Any) -> str:
    """The JSON name of a Python value's type, for error messages."""
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "a number"
    return names.get(type(value), type(value).__name__)


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_bool(v: Any) -> bool:
    return isinstance(v, bool)


def _is_dict(v: Any) -> bool:
    return isinstance(v, dict)


def _is_list(v: Any) -> bool:
    return isinstance(v, list)


def _number(value: Any, path: str) -> float:
    """``value`` as a float, or a ``ValueError`` naming ``path``."""
    number = decode_float(value)
    if number is None:
        raise ValueError(f"{path}: expected a number, got {_kind(value)}")
    return number


class Reader:
    """One JSON object under decoding and its path.

    >>> Reader({"a": 1}, "doc").text("a")
    Traceback (most recent call last):
    ...
    ValueError: doc.a: expected a string, got a number
    """

    __slots__ = ("data", "path")

    def __init__(self, data: Any, path: str) -> None:
        if not isinstance(data, dict):
            raise ValueError(f"{path}: expected an object, got {_kind(data)}")
        self.data: dict[str, Any] = data
        self.path = path

    def at(self, key: str) -> str:
        """The path of field ``key``."""
        return f"{self.path}.{key}"

    def raw(self, key: str, default: Any = _MISSING) -> Any:
        """Field ``key`` as decoded (``default`` when absent, if one is given)."""
        if key in self.data:
            return self.data[key]
        if default is _MISSING:
            raise ValueError(f"{self.path}: missing field {key!r}")
        return default

    def _typed(self, key: str, ok: Callable[[Any], bool], what: str, default: Any) -> Any:
        """Field ``key`` checked by ``ok``; ``default=None`` means the field is required."""
        if default is not None and key not in self.data:
            return default
        value = self.raw(key)
        if not ok(value):
            raise ValueError(f"{self.at(key)}: expected {what}, got {_kind(value)}")
        return value

    def text(self, key: str, default: str | None = None) -> str:
        """A string field (required unless ``default`` is given)."""
        return str(self._typed(key, _is_str, "a string", default))

    def text_or_none(self, key: str) -> str | None:
        """A string or null field (absent reads as null)."""
        value = self.raw(key, None)
        return None if value is None else self.text(key)

    def integer(self, key: str, default: int | None = None) -> int:
        """An integer field, never a boolean (required unless ``default`` is given)."""
        return int(self._typed(key, _is_int, "an integer", default))

    def integer_or_none(self, key: str) -> int | None:
        """An integer or null field (absent reads as null)."""
        value = self.raw(key, None)
        return None if value is None else self.integer(key)

    def flag(self, key: str, default: bool | None = None) -> bool:
        """A boolean field (required unless ``default`` is given)."""
        return bool(self._typed(key, _is_bool, "a boolean", default))

    def number(self, key: str) -> float:
        """A number field (``"NaN"``, ``"Infinity"`` and ``"-Infinity"`` accepted)."""
        return _number(self.raw(key), self.at(key))

    def number_or_none(self, key: str) -> float | None:
        """A number or null field (absent reads as null).

        >>> Reader({"a": None}, "doc").number_or_none("a"), Reader({}, "doc").number_or_none("a")
        (None, None)
        """
        value = self.raw(key, None)
        return None if value is None else self.number(key)

    def obj(self, key: str, default: dict[str, Any] | None = None) -> dict[str, Any]:
        """An object field, as a dict (required unless ``default`` is given)."""
        return dict(self._typed(key, _is_dict, "an object", default))

    def array(self, key: str, default: list[Any] | None = None) -> list[Any]:
        """An array field, as a list (required unless ``default`` is given)."""
        return list(self._typed(key, _is_list, "an array", default))

    def child(self, key: str) -> Reader:
        """An object field as a :class:`Reader`."""
        return Reader(self.raw(key), self.at(key))

    def child_or_none(self, key: str) -> Reader | None:
        """An object or null field (absent reads as null)."""
        value = self.raw(key, None)
        return None if value is None else Reader(value, self.at(key))

    def decoded_or_none(self, key: str, decode: Callable[[Reader], T]) -> T | None:
        """An object or null field decoded by ``decode`` (absent reads as null).

        >>> Reader({"a": {"b": "x"}}, "doc").decoded_or_none("a", lambda r: r.text("b"))
        'x'
        """
        child = self.child_or_none(key)
        return None if child is None else decode(child)

    def children(self, key: str, default: list[Any] | None = None) -> tuple[Reader, ...]:
        """An array of objects, each as a :class:`Reader`."""
        items = self.array(key, default)
        return tuple(Reader(v, f"{self.at(key)}[{i}]") for i, v in enumerate(items))

    def texts(self, key: str, default: list[Any] | None = None) -> tuple[str, ...]:
        """An array of strings."""
        items = self.array(key, default)
        for i, v in enumerate(items):
            if not isinstance(v, str):
                raise ValueError(f"{self.at(key)}[{i}]: expected a string, got {_kind(v)}")
        return tuple(items)

    def numbers(self, key: str, default: list[Any] | None = None) -> tuple[float, ...]:
        """An array of numbers."""
        items = self.array(key, default)
        return tuple(_number(v, f"{self.at(key)}[{i}]") for i, v in enumerate(items))

    def number_map(self, key: str, default: dict[str, Any] | None = None) -> dict[str, float]:
        """An object whose values are all numbers."""
        items = self.obj(key, default)
        return {k: _number(v, f"{self.at(key)}.{k}") for k, v in items.items()}

    def build(self, constructor: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``constructor(*args, **kwargs)``, its ``ValueError``/``TypeError`` prefixed by
        this object's path."""
        try:
            return constructor(*args, **kwargs)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{self.path}: {exc}") from None
