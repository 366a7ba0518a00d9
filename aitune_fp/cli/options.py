"""Argument types for the command line: each turns text into a value or a usage error.

Rule: a type function raises ``argparse.ArgumentTypeError`` with the parser's own message,
so a bad argument ends as argparse's usage error (exit code 2), never a traceback.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from typing import TypeVar

from aitune_fp.core import parse
from aitune_fp.core.strategies import registry
from aitune_fp.core.strategy import Strategy

T = TypeVar("T")
DTYPES = (
    "float32",
    "float16",
    "bfloat16",
    "float64",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint8",
    "bool",
)


def _usage(fn: Callable[[str], T]) -> Callable[[str], T]:
    """``fn`` with its ``ValueError`` turned into an argparse usage error."""

    def convert(text: str) -> T:
        try:
            return fn(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    convert.__name__ = fn.__name__
    return convert


strategy_arg: Callable[[str], Strategy] = _usage(registry.parse_strategy)
shape_arg: Callable[[str], tuple[int, ...]] = _usage(parse.parse_shape)
names_arg: Callable[[str], tuple[str, ...]] = _usage(parse.parse_names)


def _device(text: str) -> str:
    """``cpu``, ``cuda`` or ``cuda:N``.

    >>> _device("cuda:1")
    'cuda:1'
    """
    value = text.strip().lower()
    if not re.fullmatch(r"cpu|cuda(:[0-9]+)?", value):
        raise ValueError(f"device must be cpu, cuda or cuda:N, got {text!r}")
    return value


def _positive(text: str) -> int:
    """A positive integer."""
    if not text.strip().isdigit() or int(text) < 1:
        raise ValueError(f"expected an integer >= 1, got {text!r}")
    return int(text)


def _seconds(text: str) -> float:
    """A positive number of seconds.

    >>> _seconds("1.5")
    1.5
    """
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise ValueError(f"expected a number of seconds > 0, got {text!r}")
    return value


def _off_or_seconds(text: str) -> float:
    """A finite number of seconds >= 0 (0: off).

    >>> _off_or_seconds("2.5"), _off_or_seconds("0")
    (2.5, 0.0)
    """
    try:
        zero = float(text) == 0.0
    except ValueError:
        zero = False
    return 0.0 if zero else _seconds(text)


def _dtype(text: str) -> str:
    """A torch dtype name from :data:`DTYPES` (``torch.`` prefix allowed)."""
    value = text.strip().lower().removeprefix("torch.")
    if value not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}; got {text!r}")
    return value


def _factory(text: str) -> str:
    """``path/to/file.py:factory`` or ``package.module:factory``."""
    source, sep, name = text.rpartition(":")
    if not sep or not source or not name.isidentifier():
        raise ValueError(
            f"expected path/to/file.py:factory or package.module:factory, got {text!r}"
        )
    return text


_AXIS = re.compile(r"\s*(\d+)\s*=\s*(\d+)\s*\.\.\s*(\d+)\s*")


def _dynamic(text: str) -> tuple[str | int, dict[int, tuple[int, int]]]:
    """``INPUT:AXIS=MIN..MAX[,AXIS=MIN..MAX…]``: one input's dynamic axes.

    ``INPUT`` is a keyword-input name or a positional index; ranges are inclusive.

    >>> _dynamic("input_ids:1=8..64")
    ('input_ids', {1: (8, 64)})
    >>> _dynamic("0:2=16..64,3=16..64")
    (0, {2: (16, 64), 3: (16, 64)})
    >>> _dynamic("ids:1=64..8")
    Traceback (most recent call last):
    ...
    ValueError: dynamic axis 'ids:1=64..8': need 1 <= MIN <= MAX
    """
    name, sep, axes_text = text.partition(":")
    name = name.strip()
    if not sep or not name or not (name.isdigit() or name.isidentifier()):
        raise ValueError(
            f"dynamic axes must be INPUT:AXIS=MIN..MAX[,AXIS=MIN..MAX], e.g. "
            f"input_ids:1=8..64 or 0:2=16..64, got {text!r}"
        )
    axes: dict[int, tuple[int, int]] = {}
    for part in axes_text.split(","):
        axis, lo, hi = _axis_range(text, part)
        if axis in axes:
            raise ValueError(f"dynamic axis {text!r}: axis {axis} given twice")
        axes[axis] = (lo, hi)
    return (int(name) if name.isdigit() else name), axes


def _axis_range(text: str, part: str) -> tuple[int, int, int]:
    """``(axis, min, max)`` of one ``AXIS=MIN..MAX`` part of the option ``text``.

    >>> _axis_range("ids:1=8..64", " 1 = 8..64")
    (1, 8, 64)
    """
    match = _AXIS.fullmatch(part)
    if match is None:
        raise ValueError(
            f"dynamic axis {text!r}: {part.strip()!r} is not AXIS=MIN..MAX (e.g. 1=8..64)"
        )
    axis, lo, hi = (int(g) for g in match.groups())
    if not 1 <= lo <= hi:
        raise ValueError(f"dynamic axis {text!r}: need 1 <= MIN <= MAX")
    return axis, lo, hi


def merge_dynamic(
    specs: list[tuple[str | int, dict[int, tuple[int, int]]]] | None,
) -> dict[str | int, dict[int, tuple[int, int]]] | None:
    """The repeated ``--dynamic`` values as one ``dynamic_axes`` mapping (``None`` if none).

    >>> merge_dynamic([("ids", {1: (8, 64)}), ("mask", {1: (8, 64)})])
    {'ids': {1: (8, 64)}, 'mask': {1: (8, 64)}}
    """
    if not specs:
        return None
    merged: dict[str | int, dict[int, tuple[int, int]]] = {}
    for name, axes in specs:
        merged.setdefault(name, {}).update(axes)
    return merged


device_arg: Callable[[str], str] = _usage(_device)
dynamic_arg: Callable[[str], tuple[str | int, dict[int, tuple[int, int]]]] = _usage(_dynamic)
positive_arg: Callable[[str], int] = _usage(_positive)
seconds_arg: Callable[[str], float] = _usage(_seconds)
off_or_seconds_arg: Callable[[str], float] = _usage(_off_or_seconds)
dtype_arg: Callable[[str], str] = _usage(_dtype)
factory_arg: Callable[[str], str] = _usage(_factory)
