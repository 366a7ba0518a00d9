"""What an interval of a speedup says about a comparison, against a margin (pure).

Rules (``[low, high]`` is the interval of ``a``'s speedup over ``b``, ``m`` the margin):
- ``win``: the whole interval lies above ``1 + m`` (``a`` is faster beyond the margin);
- ``loss``: the whole interval lies below ``1 / (1 + m)`` (``b`` is faster beyond it);
- ``equivalent``: the whole interval lies within ``[1 / (1 + m), 1 + m]`` (an equivalence
  test in the manner of TOST: neither is faster by more than the margin);
- ``undecided``: anything else; the interval straddles a margin;
- the verdicts are symmetric: the inverse interval (``b`` over ``a``) swaps ``win`` and
  ``loss`` and keeps the other two, so the rule is the same whichever side is named first;
- a comparison is *decided* when it is a win, a loss or an equivalence; ``b`` *can still
  win* while ``low < 1 / (1 + m)`` and it is not already a loss.

>>> verdict(1.05, 1.11, 0.01), verdict(0.85, 0.98, 0.01), verdict(0.995, 1.008, 0.01)
('win', 'loss', 'equivalent')
>>> verdict(0.97, 1.10, 0.01)
'undecided'
"""

from __future__ import annotations

from typing import Literal

Verdict = Literal["win", "loss", "equivalent", "undecided"]
DECIDED: tuple[Verdict, ...] = ("win", "loss", "equivalent")


def verdict(low: float, high: float, margin: float) -> Verdict:
    """The verdict of ``[low, high]`` (``a``'s speedup over ``b``) against ``margin``."""
    if low > 1.0 + margin:
        return "win"
    if high < 1.0 / (1.0 + margin):
        return "loss"
    if low >= 1.0 / (1.0 + margin) and high <= 1.0 + margin:
        return "equivalent"
    return "undecided"


def flipped(v: Verdict) -> Verdict:
    """The verdict seen from the other side.

    >>> flipped("win"), flipped("equivalent")
    ('loss', 'equivalent')
    """
    return "loss" if v == "win" else "win" if v == "loss" else v


def can_still_win(low: float, high: float, margin: float) -> bool:
    """Whether ``b`` may still prove faster than ``a`` beyond the margin with more rounds.

    >>> can_still_win(0.97, 1.10, 0.01), can_still_win(0.995, 1.10, 0.01)
    (True, False)
    """
    return low < 1.0 / (1.0 + margin) <= high


def described(point: float, low: float, high: float) -> str:
    """``1.083× [1.050, 1.110]``: a speedup and its interval, as the lines print them."""
    return f"{point:.3f}× [{low:.3f}, {high:.3f}]"
