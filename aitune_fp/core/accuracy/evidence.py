"""Enough held-out rows to decide: when a reduced-precision verdict needs more rows, how
many, and the refusal at the cap (pure).

Rules:
- a verdict is *undecided* when the policy refuses a candidate's claims (its pessimistic
  bounds, :mod:`.claims`) but admits their optimistic side: more rows could still go
  either way; full-precision candidates are never undecided (their element-wise check is
  their evidence), nor are figures without bounds;
- an undecided verdict on ``rows`` rows asks for more, up to the cap ``MAX_HELD_OUT_ROWS``:
  when top-1 agreement is what is undecided, the fewest rows on which the disagreements
  seen so far (and every further row agreeing) would meet ``min_top1``
  (:func:`~aitune_fp.core.accuracy.bounds.rows_needed`), else four times the rows; never
  fewer than half as many again, nor than ``MIN_STEP`` more (so a few rounds reach the cap);
- at the cap an undecided candidate is refused (:func:`undecided_reason`) with the rows it
  would need: at its observed agreement rate, the fewest rows whose lower bound reaches
  ``min_top1``; "no count of rows" when that rate is not above it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Final

from aitune_fp.core.accuracy.bounds import CONFIDENCE, agreement_lower, rows_needed
from aitune_fp.core.accuracy.claims import bounded, claimed, optimistic
from aitune_fp.core.accuracy.policy import REDUCED, AccuracyPolicy, judge

MAX_HELD_OUT_ROWS: Final = 1024
"""The most held-out rows a verdict is taken on, fresh draws included."""

MIN_STEP: Final = 64
"""The fewest rows one more draw adds."""


def undecided(policy: AccuracyPolicy, precision: str | None, f: Mapping[str, float]) -> bool:
    """Whether more rows could change the verdict (see the module rules).

    >>> f = {"top1_agreement": 1.0, "top1_agreement_lower": 0.69, "top1_agreement_upper": 1.0,
    ...      "fp64_rms_rel_error": 0.01, "eager_fp64_rms_rel_error": 1e-7}
    >>> undecided(AccuracyPolicy(), "int8", f), undecided(AccuracyPolicy(), "float32", f)
    (True, False)
    """
    if precision not in REDUCED or not bounded(f):
        return False
    return (
        judge(policy, precision, f) is not None and judge(policy, precision, optimistic(f)) is None
    )


def _top1_undecided(policy: AccuracyPolicy, f: Mapping[str, float]) -> bool:
    low, high = claimed(f, "top1_agreement"), f.get("top1_agreement_upper")
    return low is not None and high is not None and low < policy.min_top1 <= high


def _disagreeing(f: Mapping[str, float]) -> int:
    return round((1.0 - f.get("top1_agreement", 1.0)) * f.get("top1_rows", 0.0))


def rows_wanted(policy: AccuracyPolicy, precision: str | None, f: Mapping[str, float]) -> int:
    """How many held-out rows the verdict should be taken on next (``judged_rows`` when
    it is decided or at the cap; see the module rules).

    >>> f = {"top1_agreement": 1.0, "top1_agreement_lower": 0.69, "top1_agreement_upper": 1.0,
    ...      "top1_rows": 8.0, "judged_rows": 8.0, "fp64_rms_rel_error": 0.01,
    ...      "eager_fp64_rms_rel_error": 1e-7}
    >>> rows_wanted(AccuracyPolicy(), "int8", f), rows_wanted(AccuracyPolicy(), "float32", f)
    (299, 8)
    """
    rows = int(f.get("judged_rows", 0.0))
    if rows >= MAX_HELD_OUT_ROWS or not undecided(policy, precision, f):
        return rows
    if _top1_undecided(policy, f):
        return _grown(rows, rows_needed(_disagreeing(f), policy.min_top1))
    return _grown(rows, 4 * rows)


def top1_wanted(policy: AccuracyPolicy, precision: str | None, f: Mapping[str, float]) -> int:
    """:func:`rows_wanted` reading top-1 agreement alone: its figures are cheap, so rows
    are drawn on them before the other figures (an fp64 run) are taken.

    >>> f = {"top1_agreement": 1.0, "top1_agreement_lower": 0.69, "top1_agreement_upper": 1.0,
    ...      "top1_rows": 8.0, "judged_rows": 8.0}
    >>> top1_wanted(AccuracyPolicy(), "int8", f), top1_wanted(AccuracyPolicy(), "float32", f)
    (299, 8)
    """
    rows = int(f.get("judged_rows", 0.0))
    if precision not in REDUCED or rows >= MAX_HELD_OUT_ROWS or not _top1_undecided(policy, f):
        return rows
    return _grown(rows, rows_needed(_disagreeing(f), policy.min_top1))


def _grown(rows: int, target: int | None) -> int:
    """``target`` rows (the cap when ``None``), at least half as many again as ``rows``
    and ``MIN_STEP`` more, at most the cap."""
    wanted = MAX_HELD_OUT_ROWS if target is None else target
    return min(MAX_HELD_OUT_ROWS, max(wanted, rows + rows // 2, rows + MIN_STEP))


def _rows_at_rate(rate: float, floor: float) -> int | None:
    """The fewest rows whose lower bound, at agreement ``rate``, reaches ``floor``."""
    if rate <= floor:
        return None

    def enough(n: int) -> bool:
        return agreement_lower(math.floor(rate * n), n, CONFIDENCE) >= floor

    lo = hi = rows_needed(0, floor) or 1
    while not enough(hi):
        lo, hi = hi, hi * 2
        if hi > 1 << 30:
            return None
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if not enough(mid) else (lo, mid)
    return lo


def undecided_reason(policy: AccuracyPolicy, f: Mapping[str, float]) -> str:
    """Why a candidate still undecided at the cap is refused, with the rows it would need.

    >>> f = {"top1_agreement": 0.995, "top1_agreement_lower": 0.9895,
    ...      "top1_agreement_upper": 0.998, "top1_rows": 1024.0, "judged_rows": 1024.0}
    >>> for part in undecided_reason(AccuracyPolicy(), f).split(": "):
    ...     print(part)
    undecided on 1024 held-out rows (the cap)
    at 99.5% agreement it would need about 1182 rows
    """
    rows = f.get("judged_rows", math.nan)
    head = f"undecided on {rows:g} held-out rows (the cap)"
    if not _top1_undecided(policy, f):
        return f"{head}: its error's {CONFIDENCE:.0%} bound is beyond the rule, its estimate within"
    rate = f.get("top1_agreement", 1.0)
    need = _rows_at_rate(rate, policy.min_top1)
    if need is None:
        return f"{head}: at {rate:.1%} agreement no count of rows shows {policy.min_top1:.1%}"
    return f"{head}: at {rate:.1%} agreement it would need about {need} rows"
