"""The verification's one line as reports show it: every backend named with its batch size.

Rules:
- a participant is written ``backend@batch`` (``onnxruntime@16 holds against
  onnxruntime@8``), so the winner at a neighbouring batch size is never confused with
  itself;
- a record that says how its pick stands (``outcome``: written since verification decides
  on evidence) already carries that line, written by the verification's own line
  functions with ``backend@batch`` participants and the evidence word (``clear``,
  ``settled``, ``budget spent``): it is shown as it is;
- an older record's line is rendered from the :class:`~aitune_fp.core.measure.
  verification.Verification` record alone: what held or changed, the deciding comparison
  (the pick's paired speedup over the challenger with its 95 % interval), then the other
  comparisons' points;
- it replaces the stored one-line ``reason`` among the selection's notes
  (:func:`shown_notes`), every other note is kept as it is, in order.

>>> from aitune_fp.core.verification.judge import Comparison
>>> v = Verification(True, "onnxruntime", "onnxruntime", 1.061, (1.02, 1.1), 3.0, 16, 8, 10,
...                  comparisons=(Comparison("onnxruntime", 8, 1.061, (1.02, 1.1), False),))
>>> verification_line(v).split(": ", 1)[1]
'onnxruntime@16 holds against onnxruntime@8: 1.061× [1.020, 1.100], 95 %'
"""

from __future__ import annotations

from collections.abc import Sequence

from aitune_fp.core.verification.judge import MIN_ROUNDS, Comparison, Verification


def _ci(speedup: float, ci95: tuple[float, float]) -> str:
    return f"{speedup:.3f}× [{ci95[0]:.3f}, {ci95[1]:.3f}], 95 %"


def _decisive(v: Verification) -> Comparison | None:
    target = (v.challenger, v.challenger_batch_size)
    found = [c for c in v.comparisons if (c.challenger, c.batch_size) == target]
    return found[0] if found else None


def _others(v: Verification) -> str:
    """The other comparisons' points: ``; also against inductor@32: 1.213×``."""
    decisive = _decisive(v)
    rest = [
        f"{c.challenger}@{c.batch_size}: {c.speedup:.3f}×"
        for c in v.comparisons
        if c is not decisive
    ]
    return f"; also against {', '.join(rest)}" if rest else ""


def verification_line(v: Verification) -> str:
    """The verification's line with ``backend@batch`` participants (see the module's rules)."""
    if v.outcome and v.reason:
        return v.reason
    head = f"verification ({v.rounds} paired rounds, {v.seconds:.1f} s)"
    pick = f"{v.winner}@{v.winner_batch_size}"
    other = f"{v.challenger}@{v.challenger_batch_size}"
    new = f"{v.selected}@{v.selected_batch_size}"
    ci = _ci(v.speedup, v.ci95)
    if not v.holds:
        decisive = _decisive(v)
        overturned = decisive.overturns if decisive is not None else v.selected != v.winner
        if overturned:
            return (
                f"{head}: the pick {pick} does not hold: {other} is faster ({pick}'s speedup "
                f"over it {ci}); selected {new} instead{_others(v)}"
            )
        return (
            f"{head}: the pick moves from {pick} to {new}, measured faster there ({pick}'s "
            f"speedup over it {ci}; a paired estimate beyond the margin, the backend "
            f"stays){_others(v)}"
        )
    if v.rounds < MIN_ROUNDS:
        return f"{head}: too few rounds to judge (< {MIN_ROUNDS}); the pick {pick} stays"
    return f"{head}: {pick} holds against {other}: {ci}{_others(v)}"


def shown_notes(notes: Sequence[str], v: Verification | None) -> tuple[str, ...]:
    """``notes`` with the verification's stored line replaced by :func:`verification_line`.

    >>> shown_notes(("a", "b"), None)
    ('a', 'b')
    """
    if v is None:
        return tuple(notes)
    line = verification_line(v)
    shown = tuple(line if note == v.reason else note for note in notes)
    return shown if line in shown or not v.reason else (*shown, line)
