"""The fleet summary on disk: ``summary.json``, ``summary.md`` and one plot per target.

Rules:
- the rows come from ``OUT/fleet.json`` and each job's ``run.json``
  (:mod:`aitune_fp.core.fleet.summary`); a missing or damaged run only empties its row;
- ``summary-<target>.png`` draws, per target, a horizontal bar per job (``model ·
  strategy``) at its speedup over the baseline, with the interval as an error bar where the
  strategy gives one, a line at 1×, and the selected backend written on the bar (a log
  axis when the speedups span more than 10×); a job without a speedup is a labelled
  empty row;
- matplotlib is optional: without it no plot is drawn and the page says so; drawing uses
  a bare Agg ``Figure`` (no pyplot);
- every file is replaced when it exists; written paths are returned.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aitune_fp.core.fleet.index import FleetIndex
from aitune_fp.core.fleet.plan import safe_name
from aitune_fp.core.fleet.summary import FleetRow, fleet_rows, summary_json, summary_markdown
from aitune_fp.shell.fleet.store import read_index, read_run


@dataclass(frozen=True, slots=True)
class Summary:
    """The index, its rows and the files written."""

    index: FleetIndex
    rows: tuple[FleetRow, ...]
    written: tuple[Path, ...]


def _load_rows(out: Path, index: FleetIndex) -> tuple[FleetRow, ...]:
    """Every job's row, reading the runs the index points at."""
    records = {e.job: read_run(out / e.run) if e.run else None for e in index.entries}
    return fleet_rows(index, records)


def _error_bars(rows: Sequence[FleetRow]) -> list[list[float]]:
    """Each row's distance from its speedup down to its low and up to its high (0: none).

    >>> row = FleetRow("j", "mlp", "cpu", "min-latency", "complete", speedup=2.0, low=1.5)
    >>> _error_bars([row])
    [[0.5], [0.0]]
    """
    return [
        [max(r.speedup - r.low, 0.0) if r.speedup and r.low else 0.0 for r in rows],
        [max(r.high - r.speedup, 0.0) if r.speedup and r.high else 0.0 for r in rows],
    ]


def _bars(axes: Any, rows: Sequence[FleetRow]) -> None:
    """One bar per row at its speedup, the interval where known, the backend written on it."""
    positions = list(range(len(rows)))
    values = [r.speedup or 0.0 for r in rows]
    errors = _error_bars(rows) if any(r.low is not None for r in rows) else None
    axes.barh(positions, values, xerr=errors, color="tab:blue", capsize=3)
    shown = [v for v in values if v > 0]
    if shown and max(shown) / min(shown) > 10:
        axes.set_xscale("log")
    for y, row in zip(positions, rows, strict=True):
        note = row.backend if row.speedup else row.status
        axes.text(max(row.speedup or 0.0, 0.0), y, f" {note}", va="center", fontsize=8)
    axes.set_yticks(positions, [f"{r.model} · {r.strategy}" for r in rows])


def _plot_target(rows: Sequence[FleetRow], target: str, path: Path) -> Path:
    """Draw the speedups of ``target``'s jobs to ``path``; ``ImportError`` without matplotlib."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    mine = [r for r in rows if r.target == target]
    figure = Figure(figsize=(8, 1.2 + 0.45 * len(mine)), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    _bars(axes, mine)
    axes.axvline(1.0, color="black", linestyle="--", linewidth=1)
    axes.invert_yaxis()
    axes.set_xlabel("speedup over the eager baseline (×)")
    axes.set_title(f"{target}: selected backend per model and strategy")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    return path


def _plots(rows: Sequence[FleetRow], folder: Path) -> tuple[dict[str, str], list[Path]]:
    """Each target's plot file name and the plots written (none without matplotlib)."""
    plots: dict[str, str] = {}
    written: list[Path] = []
    for target in dict.fromkeys(r.target for r in rows):
        name = f"summary-{safe_name(target)}.png"
        try:
            written.append(_plot_target(rows, target, folder / name))
        except ImportError:
            continue
        plots[target] = name
    return plots, written


def write_summary(out: str | Path, index: FleetIndex | None = None) -> Summary:
    """Write the summary files of the fleet in ``out``; ``ValueError`` without an index.

    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp())
    >>> write_summary(out)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: no readable .../fleet.json: run `aitune-fp fleet run` first
    >>> [p.name for p in write_summary(out, FleetIndex(())).written]
    ['summary.json', 'summary.md']
    """
    folder = Path(out)
    index = index or read_index(folder)
    if index is None:
        raise ValueError(f"no readable {folder / 'fleet.json'}: run `aitune-fp fleet run` first")
    rows = _load_rows(folder, index)
    plots, written = _plots(rows, folder)
    page = folder / "summary.md"
    page.write_text(summary_markdown(index, rows, plots), encoding="utf-8")
    data = folder / "summary.json"
    data.write_text(json.dumps(summary_json(index, rows), indent=1) + "\n", encoding="utf-8")
    return Summary(index, rows, (data, page, *written))
