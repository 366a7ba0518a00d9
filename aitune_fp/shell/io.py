"""The one place effects are unwrapped.

Rules: an effect of the library is an ``IOResult[value, error]``; :func:`perform` turns it
into the plain ``Result[value, error]`` its caller decides on. No other module of the
package imports ``returns.unsafe`` (an import-linter contract keeps it so); the shell,
the CLI and the benchmarks call :func:`perform`.
"""

from __future__ import annotations

from typing import TypeVar

from returns.io import IOResult, IOSuccess
from returns.result import Failure, Result, Success
from returns.unsafe import unsafe_perform_io

_V = TypeVar("_V")
_E = TypeVar("_E")

__all__ = ["perform"]


def perform(io: IOResult[_V, _E]) -> Result[_V, _E]:
    """The pure view of an effect's result: its value or its error, out of ``IO``.

    >>> from returns.io import IOFailure, IOSuccess
    >>> perform(IOSuccess(3)), perform(IOFailure("no"))
    (<Success: 3>, <Failure: no>)
    """
    if isinstance(io, IOSuccess):
        return Success(unsafe_perform_io(io.unwrap()))
    return Failure(unsafe_perform_io(io.failure()))
