"""The parts every plot of a run shares: a bare Agg figure and the failed backends' line.

Rules: matplotlib is imported only when a figure is made (``ImportError`` with
:data:`INSTALL_HINT` without it); a figure never touches ``pyplot`` or the user's backend.
"""

from __future__ import annotations

from typing import Any

from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.core.report.tables import backend_rows

INSTALL_HINT = "drawing plots needs matplotlib: pip install 'aitune_fp[cli]'"


def new_figure() -> Any:
    """A new Agg-backed ``Figure`` (no pyplot state)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as error:
        raise ImportError(INSTALL_HINT) from error
    figure = Figure(figsize=(24, 5), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def failure_note(record: RunRecord) -> str:
    """The failed backends with their stage, for the line under a plot."""
    failed = [r for r in backend_rows(record) if r.status.startswith("failed")]
    return "; ".join(f"{r.backend} ({r.status.removeprefix('failed (')}" for r in failed)
