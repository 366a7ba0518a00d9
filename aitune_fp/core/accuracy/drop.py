"""The accuracy drop: the one figure a strategy trades speed against.

Rule: a candidate's drop is, from its recorded figures, the user metric's drop when one
was computed (``metric_eager − metric_candidate``, relative when the figures say so);
else ``1 − top1_agreement`` when its outputs are classifier-like; else its RMS relative
error against eager. ``None`` when the record holds none of these (a run older than the
figures, or the baseline itself).
"""

from __future__ import annotations

from collections.abc import Mapping


def accuracy_drop(figures: Mapping[str, float]) -> float | None:
    """The drop read from ``figures`` (see the module rule).

    >>> accuracy_drop({"top1_agreement": 0.995, "rms_rel_error": 0.02})
    0.0050000000000000044
    >>> accuracy_drop({"rms_rel_error": 0.02}), accuracy_drop({})
    (0.02, None)
    >>> accuracy_drop({"metric_eager": 0.9, "metric_candidate": 0.85, "top1_agreement": 1.0})
    0.050000000000000044
    """
    eager, got = figures.get("metric_eager"), figures.get("metric_candidate")
    if eager is not None and got is not None:
        drop = eager - got
        if figures.get("metric_relative", 0.0) and eager != 0:
            return drop / abs(eager)
        return drop
    top1 = figures.get("top1_agreement")
    if top1 is not None:
        return 1.0 - top1
    return figures.get("rms_rel_error")
