"""Records as JSON by msgspec: the rules below are ours, the rest is msgspec's (pure).

Rules:
- :func:`to_json` is msgspec's ``to_builtins`` of a value: a frozen dataclass is an object
  holding every field (in definition order), a map's keys are sorted and written as
  strings (integer keys as decimals), a persistent map is an object and a persistent
  vector an array; then each non-finite float is written as its name (``"NaN"``,
  ``"Infinity"``, ``"-Infinity"``: :func:`~aitune_fp.core.record.values.encode_float`),
  so the text is strict JSON (msgspec alone would write ``null``);
- :func:`from_json` is msgspec's strict conversion into the given type (no coercion: a
  string is never a number, a number never a boolean; decimal keys become integer keys):
  where the type has a float, a non-finite name reads back as that float; a persistent
  map or vector is read as its ``dict``/``list`` type and frozen (the only decode hook);
  the type's own ``__post_init__`` checks run; an absent field with a default reads as it;
- a failure is one ``ValueError`` line, ``<where><path>: <what>``, in JSON's words
  (``run record.candidates[0].profile.backend: expected a string, got an integer``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import MISSING, fields
from functools import cache
from types import GenericAlias
from typing import Any, TypeVar, get_args, get_origin, get_type_hints, overload

import msgspec
import msgspec.inspect as mi
from pyrsistent import PMap, PVector, pmap, pvector

from aitune_fp.core.record.values import NON_FINITE, encode_float

T = TypeVar("T")
_AT = re.compile(r" - at `(?:(key)` in `)?(\$[^`]*)`")
_WORDS = {"str": "a string", "int": "an integer", "float": "a number", "bool": "a boolean",
          "object": "an object", "array": "an array", "null": "null"}  # fmt: skip


def _enc_hook(value: Any) -> Any:
    """A persistent map as a dict, a persistent vector as a list."""
    if isinstance(value, PMap):
        return dict(value)
    if isinstance(value, PVector):
        return list(value)
    raise NotImplementedError(f"no JSON form for {type(value).__name__}")


def _named(tree: Any) -> Any:
    """``tree`` with every non-finite float replaced by its name."""
    if isinstance(tree, float):
        return encode_float(tree)
    if isinstance(tree, dict):
        return {k: _named(v) for k, v in tree.items()}
    if isinstance(tree, list | tuple):
        return [_named(v) for v in tree]
    return tree


def to_json(value: Any) -> Any:
    """``value`` as JSON-able builtins (see the module rules).

    >>> from aitune_fp.core.records import Profile
    >>> to_json(Profile("eager", {2: [1.5], 10: [3.0]}, accuracy={"e": float("inf")}))["accuracy"]
    {'e': 'Infinity'}
    >>> to_json(Profile("eager", {2: [1.5], 10: [3.0]}))["latencies_ms"]
    {'10': [3.0], '2': [1.5]}
    """
    tree = msgspec.to_builtins(value, str_keys=True, enc_hook=_enc_hook, order="deterministic")
    return _named(tree)


def _in_words(kinds: str) -> str:
    """msgspec's ``str | null`` as ``a string or null``."""
    return " or ".join(_WORDS.get(k, k) for k in kinds.split(" | "))


def _kind(value: Any) -> str:
    """The JSON name of a decoded value's type, in words.

    >>> _kind([]), _kind(None), _kind(True)
    ('an array', 'null', 'a boolean')
    """
    names = {list: "array", dict: "object", type(None): "null"}
    return _in_words(names.get(type(value), type(value).__name__))


def _message(text: str) -> str:
    """msgspec's wording in JSON's words."""
    text = text.replace("Object missing required field `", "missing field `")
    text = re.sub(r"^Expected `(\w+)` of", lambda m: f"expected {_in_words(m[1])} of", text)
    found = re.match(r"Expected `([^`]*)`, got `([^`]*)`(.*)", text)
    if found:
        text = f"expected {_in_words(found[1])}, got {_in_words(found[2])}{found[3]}"
    return text.replace("`", "'")


def one_line(error: Exception, where: str) -> ValueError:
    """msgspec's error (paths of nested hooks joined, outermost first) as our one line.

    >>> one_line(msgspec.ValidationError("Expected `str`, got `int` - at `$.a[0]`"), "doc")
    ValueError('doc.a[0]: expected a string, got an integer')
    >>> one_line(ValueError("x - at `$[...]` - at `$.m`"), "doc")
    ValueError('doc.m[...]: x')
    """
    text = str(error)
    found = list(_AT.finditer(text))
    path = "".join(m[2][1:] for m in reversed(found))
    message = _message(text[: found[0].start()] if found else text)
    key = "a key: " if any(m[1] for m in found) else ""
    return ValueError(f"{where}{path}: {key}{message}")


def _float_names(data: Any, kind: mi.Type) -> Any:
    """``data`` with each non-finite name read as its float where ``kind`` has a float."""
    if isinstance(kind, mi.UnionType):
        return _float_names(data, _member(data, kind.types))
    if isinstance(data, str):
        known = data in NON_FINITE and isinstance(kind, mi.FloatType)
        return NON_FINITE[data] if known else data
    if isinstance(data, list):
        return _items(data, kind)
    if isinstance(data, dict):
        return _fields(data, kind)
    return data


def _member(data: Any, kinds: tuple[mi.Type, ...]) -> mi.Type:
    """The member of a union that a JSON value of ``data``'s kind can be."""
    wanted: dict[type, tuple[type, ...]] = {
        str: (mi.FloatType,),
        list: (mi.ListType, mi.VarTupleType, mi.TupleType),
        dict: (mi.DataclassType, mi.DictType),
    }
    shapes = wanted.get(type(data), ())
    return next((k for k in kinds if isinstance(k, shapes)), mi.AnyType())


def _items(data: list[Any], kind: mi.Type) -> list[Any]:
    """An array's items, each by its item type (by position for a fixed tuple)."""
    if isinstance(kind, mi.TupleType):
        return [_float_names(v, k) for v, k in zip(data, kind.item_types, strict=False)]
    if isinstance(kind, mi.ListType | mi.VarTupleType):
        return [_float_names(v, kind.item_type) for v in data]
    return data


def _fields(data: dict[str, Any], kind: mi.Type) -> dict[str, Any]:
    """An object's values, each by its field's or the map's value type."""
    if isinstance(kind, mi.DictType):
        return {k: _float_names(v, kind.value_type) for k, v in data.items()}
    if isinstance(kind, mi.DataclassType):
        types = {f.encode_name: f.type for f in kind.fields}
        return {k: _float_names(v, types[k]) if k in types else v for k, v in data.items()}
    return data


@cache
def _hints(kind: type) -> dict[str, Any]:
    """A dataclass's resolved field types (cached)."""
    return get_type_hints(kind)


@cache
def _info(kind: Any) -> mi.Type:
    """msgspec's view of a type (cached: a record type is inspected once)."""
    return mi.type_info(kind)


def _dec_hook(kind: Any, data: Any) -> Any:
    """A persistent map or vector from its ``dict``/``list`` type, any value for ``object``
    (see the module rules)."""
    origin, args = get_origin(kind) or kind, get_args(kind)
    if origin is object:  # any JSON value, as decoded
        return data
    if origin is PMap:
        return pmap(_convert(data, GenericAlias(dict, args) if args else dict))
    if origin is PVector:
        return pvector(_convert(data, GenericAlias(list, args) if args else list))
    raise TypeError(f"no JSON form for {kind!r}")


def _convert(data: Any, kind: Any) -> Any:
    """msgspec's strict conversion, after the non-finite names (inner errors as ValueError,
    so msgspec prefixes the path of the field holding them)."""
    try:
        named = _float_names(data, _info(kind))
        return msgspec.convert(named, kind, strict=True, str_keys=True, dec_hook=_dec_hook)
    except msgspec.ValidationError as error:
        raise ValueError(str(error)) from None


@overload
def from_json(data: Any, kind: type[T], where: str) -> T: ...


@overload
def from_json(data: Any, kind: Any, where: str) -> Any: ...


def from_json(data: Any, kind: Any, where: str) -> Any:
    """A ``kind`` from :func:`to_json`'s output; ``ValueError`` naming the bad path.

    >>> from aitune_fp.core.records import BackendFailure
    >>> from_json({"backend": "a", "stage": "build", "message": 3}, BackendFailure, "f")
    Traceback (most recent call last):
    ...
    ValueError: f.message: expected a string, got an integer
    """
    try:
        return _convert(data, kind)
    except (ValueError, TypeError) as error:
        raise one_line(error, where) from None


def decoded_fields(data: Any, kind: type[T], where: str, own: Mapping[str, Any]) -> T:
    """A ``kind`` decoded field by field (for a type msgspec cannot take whole): each field
    of ``own`` is given, the others decoded by :func:`from_json`; the type checks the rest.
    """
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected an object, got {_kind(data)}")
    hints, values = _hints(kind), dict(own)  # type: ignore[arg-type]
    for f in fields(kind):  # type: ignore[arg-type]
        if f.name in data and f.name not in own:
            values[f.name] = from_json(data[f.name], hints[f.name], f"{where}.{f.name}")
        elif f.name not in values and f.default is MISSING and f.default_factory is MISSING:
            raise ValueError(f"{where}: missing field '{f.name}'")
    try:
        return kind(**values)
    except (ValueError, TypeError) as error:
        raise ValueError(f"{where}: {error}") from None


def decoded_list(data: Any, where: str, what: str, item: Callable[[Any, str], T]) -> tuple[T, ...]:
    """A JSON array decoded item by item by ``item(value, path)`` (``null``, as in older
    records: empty); anything else is a ``ValueError`` naming ``where`` and ``what`` it
    holds.

    >>> double = lambda value, _path: value * 2
    >>> decoded_list([1, 2], "xs", "numbers", double), decoded_list(None, "xs", "numbers", str)
    ((2, 4), ())
    >>> decoded_list({}, "run record.xs", "numbers", str)
    Traceback (most recent call last):
    ...
    ValueError: run record.xs: expected an array of numbers
    """
    if data is None:
        return ()
    if not isinstance(data, list):
        raise ValueError(f"{where}: expected an array of {what}")
    return tuple(item(value, f"{where}[{i}]") for i, value in enumerate(data))
