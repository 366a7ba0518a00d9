"""The request payload's schema: each input's name, dtype and dims, and the checks a payload
must pass before it reaches a model.

Rules:
- a :class:`TensorSig` gives a tensor's dims with the batch axis included; ``-1`` marks an
  axis whose size may vary (the batch axis, a dynamic axis); every other axis must have its
  exact size;
- a payload is *malformed* (HTTP 400) when it is not what the format says (not JSON, no
  ``inputs`` object, an unknown or missing input name, a ragged array); it is *wrongly
  typed or shaped* (HTTP 422) when an input's dtype, rank or a fixed axis differs from its
  signature, or a JSON number does not fit the dtype (a fraction for an integer input, a
  number for a bool);
- every problem is one line naming the input; :func:`check_json_array` walks a JSON array
  no deeper than the signature's rank, so a deeply nested body costs nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

INTEGER_DTYPES = frozenset({"int8", "int16", "int32", "int64", "uint8"})
FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64"})


@dataclass(frozen=True, slots=True)
class TensorSig:
    """One input or output: its name, dtype (torch's name, ``"float32"``) and dims, the
    batch axis included, ``-1`` for an axis that may vary."""

    name: str
    dtype: str
    dims: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PayloadError:
    """Why a request's payload was refused: the HTTP status (4xx) and one line."""

    status: int
    reason: str

    def __post_init__(self) -> None:
        if not 400 <= self.status < 500:
            raise ValueError(f"a payload error is a 4xx status, got {self.status}")
        object.__setattr__(self, "reason", " ".join(self.reason.split()))


def shape_problem(sig: TensorSig, shape: Sequence[int]) -> str | None:
    """Why ``shape`` does not fit ``sig`` (rank, a fixed axis), ``None`` when it does.

    >>> s = TensorSig("x", "float32", (-1, 4))
    >>> shape_problem(s, (3, 4)) is None, shape_problem(s, (3, 5)), shape_problem(s, (4,))
    (True, 'x axis 1 is 5, expected 4', 'x has shape (4,), expected 2 dimensions')
    """
    if len(shape) != len(sig.dims):
        return f"{sig.name} has shape {tuple(shape)}, expected {len(sig.dims)} dimensions"
    for axis, (size, want) in enumerate(zip(shape, sig.dims, strict=True)):
        if size < 1:
            return f"{sig.name} axis {axis} is empty"
        if want != -1 and size != want:
            return f"{sig.name} axis {axis} is {size}, expected {want}"
    return None


def dtype_problem(sig: TensorSig, dtype: str) -> str | None:
    """Why an array of ``dtype`` cannot be ``sig``'s input, ``None`` when it is its dtype."""
    return None if dtype == sig.dtype else f"{sig.name} is {dtype}, expected {sig.dtype}"


def _leaf_problem(sig: TensorSig, value: Any) -> str | None:
    if sig.dtype == "bool":
        return None if isinstance(value, bool) else "holds a non-boolean value"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"holds a {type(value).__name__} where a number is expected"
    if sig.dtype in INTEGER_DTYPES and not isinstance(value, int):
        return f"holds {value!r}, not an integer"
    return None


def check_json_array(sig: TensorSig, value: Any) -> tuple[int, ...] | PayloadError:
    """The shape of the JSON array ``value`` for input ``sig``, or why it is refused.

    >>> s = TensorSig("ids", "int64", (-1, 3))
    >>> check_json_array(s, [[1, 2, 3], [4, 5, 6]])
    (2, 3)
    >>> check_json_array(s, [[1, 2, 3], [4, 5]]).reason
    'ids is a ragged array: axis 1 has sizes 3 and 2'
    >>> check_json_array(s, [[1, 2, 3.5]]).reason
    'ids (int64) holds 3.5, not an integer'
    """
    rank = len(sig.dims)
    shape: list[int] = []
    level: list[Any] = [value]
    for axis in range(rank):
        sizes = set()
        nested: list[Any] = []
        for item in level:
            if not isinstance(item, list):
                return PayloadError(
                    422, f"{sig.name} has {axis} dimensions, expected {rank} (a {sig.dtype} array)"
                )
            sizes.add(len(item))
            nested.extend(item)
        if len(sizes) > 1:
            a, b = sorted(sizes, reverse=True)[:2]
            return PayloadError(
                400, f"{sig.name} is a ragged array: axis {axis} has sizes {a} and {b}"
            )
        shape.append(sizes.pop() if sizes else 0)
        level = nested
    problem = shape_problem(sig, shape)
    if problem is not None:
        return PayloadError(422, problem)
    for leaf in level:
        if isinstance(leaf, list):
            return PayloadError(422, f"{sig.name} has more than {rank} dimensions")
        why = _leaf_problem(sig, leaf)
        if why is not None:
            return PayloadError(422, f"{sig.name} ({sig.dtype}) {why}")
    return tuple(shape)


def check_names(sigs: Sequence[TensorSig], given: Sequence[str]) -> PayloadError | None:
    """A 400 when the payload's input names are not exactly the model's, else ``None``.

    >>> sigs = (TensorSig("a", "float32", (-1,)), TensorSig("b", "int64", (-1,)))
    >>> check_names(sigs, ["a"]).reason
    "missing input 'b'; the model takes a, b"
    """
    want = [s.name for s in sigs]
    unknown = [n for n in given if n not in want]
    if unknown:
        return PayloadError(400, f"unknown input {unknown[0]!r}; the model takes {', '.join(want)}")
    missing = [n for n in want if n not in given]
    if missing:
        return PayloadError(400, f"missing input {missing[0]!r}; the model takes {', '.join(want)}")
    return None
