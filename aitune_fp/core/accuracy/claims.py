"""What an accuracy figure claims: its one-sided confidence bound, when one was recorded.

Rules:
- a bounded figure (:data:`BOUNDED`) may be recorded with its two one-sided bounds beside
  it, ``<figure>_lower`` and ``<figure>_upper`` (:mod:`.bounds`, at
  ``bound_confidence``), over ``judged_rows`` rows;
- the *claim* the policy judges is the pessimistic bound (:func:`claimed`): the lower
  one of an agreement or a cosine (higher is better), the upper one of an RMS error
  (lower is better); a record without bounds (a full-precision candidate, whose
  element-wise check is its evidence, or a run older than the bounds) claims its point
  estimate;
- :func:`optimistic` swaps each pessimistic bound for the other side: the policy admitting
  those figures while refusing the claims means the rows were too few to decide;
- the words (:func:`claim_text`, :func:`evidence_text`) state the claim, not the estimate:
  ``top-1 ≥ 99.1% (95% bound) on 600 held-out rows`` (top-1 when there is one, else the
  RMS error).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

BOUNDED: Final = {
    "top1_agreement": "lower",
    "cosine": "lower",
    "rms_rel_error": "upper",
    "fp64_rms_rel_error": "upper",
}
"""Each bounded figure and the side of it the policy reads (its pessimistic side)."""

OTHER: Final = {"lower": "upper", "upper": "lower"}


def claimed(figures: Mapping[str, float], name: str) -> float | None:
    """The value the policy reads for ``name`` (see the module rules).

    >>> claimed({"top1_agreement": 1.0, "top1_agreement_lower": 0.995}, "top1_agreement")
    0.995
    >>> claimed({"rms_rel_error": 0.02}, "rms_rel_error"), claimed({}, "cosine")
    (0.02, None)
    """
    side = BOUNDED.get(name)
    bound = figures.get(f"{name}_{side}") if side is not None else None
    return bound if bound is not None else figures.get(name)


def optimistic(figures: Mapping[str, float]) -> dict[str, float]:
    """``figures`` with each pessimistic bound replaced by its optimistic side.

    >>> optimistic({"top1_agreement_lower": 0.7, "top1_agreement_upper": 1.0})
    {'top1_agreement_lower': 1.0, 'top1_agreement_upper': 1.0}
    """
    out = dict(figures)
    for name, side in BOUNDED.items():
        other = figures.get(f"{name}_{OTHER[side]}")
        if f"{name}_{side}" in figures and other is not None:
            out[f"{name}_{side}"] = other
    return out


def bounded(figures: Mapping[str, float]) -> bool:
    """Whether ``figures`` carry any bound."""
    return any(f"{name}_{side}" in figures for name, side in BOUNDED.items())


def claim_text(figures: Mapping[str, float], name: str, fmt: str) -> str:
    """``≥ 99.1% (95% bound)`` for a bounded figure, its value alone without a bound.

    >>> claim_text({"top1_agreement": 1.0, "top1_agreement_lower": 0.99123,
    ...             "bound_confidence": 0.95}, "top1_agreement", ".1%")
    '≥ 99.1% (95% bound)'
    >>> claim_text({"rms_rel_error": 0.02}, "rms_rel_error", ".3g")
    '0.02'
    """
    side = BOUNDED.get(name)
    bound = figures.get(f"{name}_{side}") if side is not None else None
    if bound is None:
        return format(figures[name], fmt)
    sign = "≥" if side == "lower" else "≤"
    level = figures.get("bound_confidence", 0.95)
    return f"{sign} {format(bound, fmt)} ({level:.0%} bound)"


def evidence_text(figures: Mapping[str, float]) -> str:
    """What a bounded verdict showed, in one phrase (empty without bounds).

    >>> evidence_text({"top1_agreement": 1.0, "top1_agreement_lower": 0.99123,
    ...                "bound_confidence": 0.95, "judged_rows": 600.0})
    'top-1 ≥ 99.1% (95% bound) on 600 held-out rows'
    >>> evidence_text({"rms_rel_error": 0.02, "rms_rel_error_upper": 0.025,
    ...                "bound_confidence": 0.95, "judged_rows": 64.0})
    'rel RMS ≤ 0.025 (95% bound) on 64 held-out rows'
    """
    if not bounded(figures) or "judged_rows" not in figures:
        return ""
    name, label, fmt = ("top1_agreement", "top-1", ".1%")
    if f"{name}_lower" not in figures:
        name, label, fmt = ("rms_rel_error", "rel RMS", ".3g")
    if name not in figures:
        return ""
    claim = claim_text(figures, name, fmt)
    return f"{label} {claim} on {figures['judged_rows']:g} held-out rows"
