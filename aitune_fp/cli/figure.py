"""The parts every plot of a run shares: a bare Agg figure and the failed backends' line.

Rules: matplotlib is imported only when a figure is made (``ImportError`` with
:data:`INSTALL_HINT` without it); a figure never touches ``pyplot`` or the user's backend.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.core.report.tables import backend_rows
from aitune_fp.effects.atomic import write_bytes

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


def finished(figure: Any, record: RunRecord, path: str | Path) -> Path:
    """``figure`` titled with the run (model, device, strategy), its failed backends under
    it, written to the PNG ``path`` atomically; the path."""
    title = record.strategy.get("title", record.strategy.get("strategy", ""))
    figure.suptitle(f"{record.model} on {record.device} — {title}")
    note = failure_note(record)
    if note:
        figure.supxlabel(f"failed: {note}", fontsize="small", color="tab:red")
    buffer = io.BytesIO()
    figure.savefig(buffer, dpi=100, format="png")
    return write_bytes(Path(path), buffer.getvalue())
