"""A function with leading arguments bound, as a value: what a strategy's rules are made of.

Rules: :func:`bind` is :func:`functools.partial` that compares as data: two bound
functions are equal when they bind the same function to equal arguments, so two
strategies built alike (``confident(min_latency)`` twice, or a stored strategy rebuilt by
the registry) compare equal, and so do the judges and early stops that carry them; a
call passes the bound arguments first, then the caller's (keywords merged, the caller's
winning).

>>> from operator import add
>>> bind(add, 1)(2), bind(add, 1) == bind(add, 1), bind(add, 1) == bind(add, 2)
(3, True, False)
>>> bind(round, ndigits=1)(2.345), bind(round, ndigits=1)(2.345, ndigits=2)
(2.3, 2.35)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Bound:
    """``func`` with ``args`` and ``keywords`` (name, value pairs, sorted by name) bound
    (see the module's rules)."""

    func: Callable[..., Any]
    args: tuple[Any, ...]
    keywords: tuple[tuple[str, Any], ...] = ()

    def __call__(self, *more: Any, **keywords: Any) -> Any:
        """``func(*args, *more, **keywords)``, the bound keywords overridden by the given."""
        if self.keywords:
            keywords = {**dict(self.keywords), **keywords}
        return self.func(*self.args, *more, **keywords)


def bind(func: Callable[..., Any], /, *args: Any, **keywords: Any) -> Bound:
    """``func`` with ``args`` and ``keywords`` bound, as a comparable value."""
    return Bound(func, args, tuple(sorted(keywords.items())))
