"""The accuracy policy of a generation candidate, with its evidence (pure).

Rules:
- a float32 candidate with full weights is an exactness check: its teacher-forced top-1
  agreement (the share of held-out positions whose argmax is eager fp32's) must reach
  ``min_top1`` and its RMS relative error stay within ``max_rms_rel``, as measured;
- a reduced candidate (bf16 compute, or int8/int4 weights) is judged on evidence of what it
  changes, not on argmax flips where eager fp32 itself is undecided (a random-weight model's
  next-token logits are near ties across the vocabulary, and any numeric change flips some):
  1. its RMS relative error stays within ``max_rms_rel``;
  2. the mean KL divergence of its next-token distributions from eager fp32's stays within
     ``max_kl`` (:data:`MAX_KL`): how far the distribution a sampler draws from moved;
  3. on the *clear* positions — eager fp32's top-1 logit at least :data:`CLEAR_MARGIN` above
     its second — the argmax must be kept: the one-sided 95 % Clopper–Pearson lower bound of
     the agreement there (:func:`~aitune_fp.core.accuracy.bounds.agreement_lower`) must
     reach ``min_top1`` when the clear positions are enough for a bound to reach it (299 for
     0.99); with fewer, every clear position must agree (a flip there is a real error, and
     none may be excused on too little evidence), and the verdict says a bound would need
     more (``needed``).
  The all-position top-1 and its bound are reported beside, never judged.
- :data:`POSITIONS` held-out positions are drawn for a tune with a reduced candidate
  (:func:`held_out_rows` rows of the teacher's continuation); two rows otherwise.

The defaults come from evidence (``benchmarks/accuracy_quantized.py``, docs/generation.md):
on a 0.5B-sized model, bf16 and int8 weights move the distributions by under :data:`MAX_KL`
and keep every clear argmax, while int4 weights (groups of 128, data-free) fail all three
rules, on a random-weight model and on the same model with logits peaked like a trained
one's.

>>> v = teacher_verdict(Figures(0.94, 0.02, kl=0.001, clear=40, clear_top1=1.0), "int8",
...                     Limits(0.99, 0.1))
>>> v.accurate, v.lower, v.needed
(True, None, 299)
>>> teacher_verdict(Figures(0.94, 0.02, kl=0.2, clear=0), "int4", Limits(0.99, 0.1)).accurate
False
>>> teacher_verdict(Figures(1.0, 0.0), "float32", Limits(0.99, 0.1)).accurate
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
CLEAR_MARGIN: Final = 1.0
"""Eager fp32's top-1 over top-2 logit (nats) from which a position's argmax is clear: the
winner at least e ≈ 2.7 times as likely as the runner-up."""
MAX_KL: Final = 0.05
"""The largest mean KL divergence (nats per position) a reduced candidate may show. Measured
on a 0.5B-sized model (docs/generation.md): int8 weights 0.0005 (random weights) and
0.024–0.029 (logits peaked ×8), bf16 0.00007 and 0.0045, int4 weights 0.060 and 3.4."""


@dataclass(frozen=True, slots=True)
class Limits:
    """The policy's limits: top-1 (all positions for float32, clear ones for reduced), RMS
    relative error and mean KL divergence."""

    min_top1: float
    max_rms: float
    max_kl: float = MAX_KL


@dataclass(frozen=True, slots=True)
class Figures:
    """The teacher-forced figures a verdict reads: top-1 and RMS relative error over
    ``positions`` positions, mean KL, and the ``clear`` positions with their agreement."""

    top1: float
    rms_rel: float
    positions: int = 0
    kl: float | None = None
    clear: int = 0
    clear_top1: float | None = None


@dataclass(frozen=True, slots=True)
class TeacherVerdict:
    """Whether the policy admits the candidate; the clear agreement's lower bound (``None``:
    no bound judged) and the clear positions a bound would need (``None``: not short)."""

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


def teacher_verdict(figures: Figures, precision: str, limits: Limits) -> TeacherVerdict:
    """The policy's verdict on a candidate's teacher-forced figures (module rules)."""
    within = figures.rms_rel <= limits.max_rms
    if precision == "float32":
        return TeacherVerdict(figures.top1 >= limits.min_top1 and within)
    close = figures.kl is not None and figures.kl <= limits.max_kl
    clear, share = figures.clear, figures.clear_top1 if figures.clear_top1 is not None else 1.0
    agree = round(share * clear)
    enough = rows_needed(0, limits.min_top1)
    if enough is not None and clear >= enough:
        lower = agreement_lower(agree, clear, CONFIDENCE)
        return TeacherVerdict(within and close and lower >= limits.min_top1, lower)
    return TeacherVerdict(within and close and agree == clear, None, enough)
