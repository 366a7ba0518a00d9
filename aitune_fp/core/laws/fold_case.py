"""``FoldCase``: the inputs every fold law takes besides the strategy.

Rules: ``position`` lies within ``[0, len(candidates)]`` and ``order``, when given, is a
permutation of the candidates' indices; both are checked once, at construction.
"""

from __future__ import annotations

from dataclasses import dataclass

from aitune_fp.core.records import Candidate


@dataclass(frozen=True, slots=True)
class FoldCase:
    """Inputs for the fold laws: candidates, a baseline, one extra candidate, an order.

    ``extra`` is inserted at ``position`` by the "adding a candidate" laws; ``order`` is a
    permutation of the candidates' indices (reversed when ``None``).

    >>> FoldCase((), position=1)
    Traceback (most recent call last):
    ...
    ValueError: position must be within [0, 0], got 1
    """

    candidates: tuple[Candidate, ...]
    baseline: Candidate | None = None
    extra: Candidate | None = None
    position: int = 0
    order: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        n = len(self.candidates)
        if not 0 <= self.position <= n:
            raise ValueError(f"position must be within [0, {n}], got {self.position}")
        if self.order is not None and sorted(self.order) != list(range(n)):
            raise ValueError(f"order must be a permutation of range({n}), got {self.order}")

    def reordered(self) -> tuple[Candidate, ...]:
        """The candidates in ``order`` (reversed when no order was given).

        >>> from returns.result import Success
        >>> from aitune_fp import Profile
        >>> a, b = Success(Profile("a", {1: [1.0]})), Success(Profile("b", {1: [1.0]}))
        >>> FoldCase((a, b)).reordered() == (b, a)
        True
        """
        order = self.order if self.order is not None else range(len(self.candidates) - 1, -1, -1)
        return tuple(self.candidates[i] for i in order)

    def with_extra(self, extra: Candidate) -> tuple[Candidate, ...]:
        """The candidates with ``extra`` inserted at ``position``."""
        return (*self.candidates[: self.position], extra, *self.candidates[self.position :])
