"""Which sample rows calibrate and which judge: the held-out split (pure).

Rules (:func:`split_rows`, a function of the row count alone, so a build and its
validation, in any process, agree on it without talking):
- with at least ``MIN_ROWS`` rows, the rows alternate: even rows (0, 2, 4, …) are the
  *seen* part (what a calibrating backend, static int8, calibrates on), odd rows the
  *held-out* part the accuracy verdict is taken on; the parts are disjoint, cover every
  row, keep the samples' order and differ in size by at most one, and interleaving
  (rather than cutting the list in two) gives both parts every kind of input a user's
  sorted samples hold;
- with fewer rows there is nothing to hold out: every row is seen (calibration uses them
  all) and the verdict is taken on ``FRESH_BATCHES`` batches drawn fresh from the
  samples' envelope (the shell draws them: :mod:`aitune_fp.effects.checks.held_out`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

MIN_ROWS: Final = 4
"""The fewest rows that are split; fewer are all seen and the verdict uses fresh draws."""

FRESH_BATCHES: Final = 4
"""How many batches are drawn fresh when the samples are too few to split."""


@dataclass(frozen=True, slots=True)
class RowSplit:
    """The rows (indices into the samples' rows, in order) of each part, and how many
    fresh batches stand in for the held-out part (0 when rows are held out).

    >>> RowSplit((0, 2), (1, 3), 0).describe()
    '2 seen rows, 2 held-out rows'
    >>> RowSplit((0,), (), 4).describe()
    '1 seen row, 4 fresh batches'
    """

    seen: tuple[int, ...]
    held_out: tuple[int, ...]
    fresh: int

    def describe(self) -> str:
        """The split in words."""
        seen = f"{len(self.seen)} seen row{'s' if len(self.seen) != 1 else ''}"
        if self.fresh:
            return f"{seen}, {self.fresh} fresh batches"
        return f"{seen}, {len(self.held_out)} held-out rows"


def split_rows(rows: int) -> RowSplit:
    """The split of ``rows`` sample rows (see the module rules).

    >>> split_rows(5)
    RowSplit(seen=(0, 2, 4), held_out=(1, 3), fresh=0)
    >>> split_rows(2)
    RowSplit(seen=(0, 1), held_out=(), fresh=4)
    """
    if rows < 1:
        raise ValueError(f"rows must be >= 1, got {rows}")
    if rows < MIN_ROWS:
        return RowSplit(tuple(range(rows)), (), FRESH_BATCHES)
    return RowSplit(tuple(range(0, rows, 2)), tuple(range(1, rows, 2)), 0)
