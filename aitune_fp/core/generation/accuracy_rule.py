"""The accuracy policy of a generation candidate, with its evidence (pure).

Rules (issue 49's rule for teacher-forced agreement, positions as rows):
- a float32 candidate is an exactness check: its teacher-forced top-1 agreement (the share
  of held-out positions whose argmax is eager fp32's) must reach ``min_top1`` and its RMS
  relative error stay within ``max_rms_rel``, as measured;
- a reduced-precision candidate (bf16) is judged on evidence: the one-sided 95 %
  Clopper–Pearson lower bound of its agreement over the positions it was judged on
  (:func:`~aitune_fp.core.accuracy.bounds.agreement_lower`) must reach ``min_top1``; when
  the observed agreement reaches it but the bound does not, the positions were too few and
  the verdict says how many it would need (:func:`~aitune_fp.core.accuracy.bounds.
  rows_needed`) — it is refused, never passed on a point estimate;
- :data:`POSITIONS` held-out positions are drawn for a tune with a reduced-precision
  candidate (:func:`held_out_rows` rows of the teacher's continuation), enough for a 99 %
  rule with no disagreement; two rows otherwise.

>>> v = teacher_verdict(1.0, 32, 0.001, "bfloat16", 0.99, 0.1)
>>> v.accurate, round(v.lower or 0, 3), v.needed
(False, 0.911, 299)
>>> teacher_verdict(1.0, 32, 0.001, "float32", 0.99, 0.1).accurate
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from aitune_fp.core.accuracy.bounds import CONFIDENCE, agreement_lower, rows_needed

POSITIONS: Final = 320
"""Held-out positions for a reduced-precision judgement (a 99 % bound needs 299 agreeing)."""
MAX_ROWS: Final = 80
"""The most held-out rows drawn (the cap on the teacher's batch)."""


@dataclass(frozen=True, slots=True)
class TeacherVerdict:
    """Whether the policy admits the candidate; the agreement's lower bound (``None``: an
    exactness check) and the positions a bound would need (``None``: not short of them)."""

    accurate: bool
    lower: float | None = None
    needed: int | None = None


def held_out_rows(new: int, reduced: bool) -> int:
    """Held-out rows for ``new`` teacher-forced positions each (see the module's rules).

    >>> held_out_rows(16, True), held_out_rows(16, False), held_out_rows(4, True)
    (20, 2, 80)
    """
    if not reduced:
        return 2
    return min(MAX_ROWS, math.ceil(POSITIONS / max(new, 1)))


def teacher_verdict(
    top1: float, positions: int, rms_rel: float, dtype: str, min_top1: float, max_rms: float
) -> TeacherVerdict:
    """The policy's verdict on a candidate's teacher-forced figures (module rules)."""
    within = rms_rel <= max_rms
    if dtype == "float32" or positions <= 0:
        return TeacherVerdict(top1 >= min_top1 and within)
    agree = round(top1 * positions)
    lower = agreement_lower(agree, positions, CONFIDENCE)
    short = top1 >= min_top1 and lower < min_top1
    needed = rows_needed(positions - agree, min_top1) if short else None
    return TeacherVerdict(lower >= min_top1 and within, lower, needed)
