"""Where a candidate's tune time went: its stage seconds as disjoint parts, for a chart.

Rules: ``export``, ``compile`` and ``cache`` are parts of ``build``; what remains of
``build`` after them is ``build (rest)`` (never below zero); ``worker_start``,
``validate``, ``profile`` and ``rounds`` are parts of their own. The parts are in
:data:`SEGMENTS` order and a part that did not run is left out, so the parts sum to the
candidate's total tune time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.core.record.wall import wall_line

SEGMENTS: Final = (
    "worker_start",
    "export",
    "compile",
    "cache",
    "build (rest)",
    "validate",
    "profile",
    "rounds",
)
_INSIDE_BUILD: Final = ("export", "compile", "cache")


def stage_segments(stages: Mapping[str, float]) -> tuple[tuple[str, float], ...]:
    """The disjoint parts of ``stages`` in :data:`SEGMENTS` order.

    >>> stage_segments({"build": 3.0, "export": 1.0, "compile": 1.5, "profile": 2.0})
    (('export', 1.0), ('compile', 1.5), ('build (rest)', 0.5), ('profile', 2.0))
    >>> stage_segments({"build": 1.0, "cache": 2.0})
    (('cache', 2.0), ('build (rest)', 0.0))
    """
    parts = {k: float(v) for k, v in stages.items() if k in SEGMENTS}
    if "build" in stages:
        inside = sum(float(stages.get(k, 0.0)) for k in _INSIDE_BUILD)
        parts["build (rest)"] = max(0.0, float(stages["build"]) - inside)
    return tuple((k, parts[k]) for k in SEGMENTS if k in parts)


def total_seconds(stages: Mapping[str, float]) -> float:
    """The candidate's tune time: the sum of its disjoint parts.

    >>> total_seconds({"build": 3.0, "export": 1.0, "validate": 0.5})
    3.5
    """
    return sum(seconds for _, seconds in stage_segments(stages))


def wall_summary(record: RunRecord) -> str | None:
    """The run's wall account in one line (:func:`~aitune_fp.core.record.wall.wall_line`),
    ``candidates`` split by each backend's own recorded stages (without its final rounds,
    which are their own top-level stage); ``None`` when the record has no wall account.

    >>> from aitune_fp.core.record.wall import WallAccount
    >>> r = RunRecord("m", "cpu", {}, None, (), None, None, {}, {}, None,
    ...               wall=WallAccount(2.0, (("candidates", 2.0),)))
    >>> wall_summary(r)
    'wall 2.0 s: candidates 2.0 s (backends 0.0 s, between 2.0 s), unaccounted 0.0 s (0.0 %)'
    """
    own = (
        total_seconds({k: v for k, v in o.stage_seconds.items() if k != "rounds"})
        for o in record.outcomes
    )
    return wall_line(record.wall, own)
