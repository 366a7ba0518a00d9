"""The ``Law`` record and material implication, the two building blocks of every law.

Rules:
- a law is a name, a one-sentence statement and a pure predicate that is ``True`` when the
  law holds for the given inputs;
- a law whose premise does not apply to its inputs holds vacuously (``implies``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, ParamSpec

P = ParamSpec("P")


@dataclass(frozen=True, slots=True)
class Law(Generic[P]):
    """A named rule with a pure predicate that is ``True`` when the rule holds.

    >>> law = Law("positive", "the number is > 0", lambda x: x > 0)
    >>> law.holds(3), law.holds(-1)
    (True, False)
    """

    name: str
    description: str
    holds: Callable[P, bool]


def implies(premise: bool, conclusion: bool) -> bool:
    """Material implication: a law with a false premise holds vacuously.

    >>> implies(False, False), implies(True, False)
    (True, False)
    """
    return not premise or conclusion
