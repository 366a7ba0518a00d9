"""A stored run as a PNG: throughput per batch size, and the latency spread per backend.

Rules:
- matplotlib is optional (the ``cli`` extra) and imported only when a plot is drawn; without
  it :func:`plot_run` raises ``ImportError`` saying how to install it;
- drawing never uses ``pyplot`` nor switches the user's matplotlib backend: a bare
  ``Figure`` is rendered by its own Agg canvas;
- left panel: mean sweep throughput (samples/s) against batch size (log2 axis) for every
  profiled backend, the baseline dashed and black, the winner thicker; a star at the
  decision account's figure (:func:`~aitune_fp.core.report.plot_data.star`: the table's
  selected row, its source and speedup, the same as the decision lines), and hollow
  diamonds at every row's figure measured after the sweep
  (:func:`~aitune_fp.core.report.plot_data.marks`), so a sweep curve that the
  verification contradicts is shown beside the figure the decision rests on;
- right panel: a box per profiled backend of the samples its table row's figures come
  from (:func:`~aitune_fp.core.report.plot_data.spread`: sweep, final rounds or
  verification, named under the box), the baseline's box grey and its median a dashed
  line; log scale when the spread is wide;
- third panel: a stacked horizontal bar per backend of where its tune time went
  (:func:`~aitune_fp.core.report.stages.stage_segments`: export, compile, cache, the rest
  of the build, worker start, validate, profile, final rounds);
- fourth panel: speed against accuracy, the Pareto front
  (:mod:`aitune_fp.cli.trade_off_plot`);
- failed backends are listed under the plots with their stage.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

from aitune_fp.cli.figure import finished, new_figure
from aitune_fp.cli.trade_off_plot import trade_off_panel
from aitune_fp.core.record.run_record import BackendOutcome, RunRecord
from aitune_fp.core.report.plot_data import marks, spread, star
from aitune_fp.core.report.stages import SEGMENTS, stage_segments
from aitune_fp.core.report.tables import backend_rows
from aitune_fp.core.stats.statistics import mean, median

MARKS: Final[dict[str, dict[str, Any]]] = {
    "star":  {"linestyle": "none", "marker": "*", "markersize": 16},
    "later": {"linestyle": "none", "marker": "D", "markerfacecolor": "none", "color": "tab:purple"},
}  # fmt: skip


def _winner(record: RunRecord) -> BackendOutcome | None:
    rows = backend_rows(record)
    for row, outcome in zip(rows, record.outcomes, strict=True):
        if row.status == "selected":
            return outcome
    return None


def _star(axes: Any, record: RunRecord, colour: Any) -> None:
    """The selection's star at the decision account's figure, and the figures measured
    after the sweep as hollow diamonds (:mod:`~aitune_fp.core.report.plot_data`)."""
    chosen = star(record)
    if chosen is not None:
        at = ([chosen.batch_size], [chosen.rate])
        axes.plot(*at, color=colour, label=chosen.label, **MARKS["star"])
    later = marks(record)
    if later:
        at = ([m.batch_size for m in later], [m.rate for m in later])
        axes.plot(*at, label="the table's figures, measured after the sweep", **MARKS["later"])


def _throughput_panel(axes: Any, record: RunRecord) -> None:
    """Each profiled backend's sweep throughput by batch size, the winner bold and starred."""
    winner = _winner(record)
    for outcome in record.outcomes:
        if outcome.profile is not None:
            _throughput_line(axes, record, outcome, winner)
    _batch_axis(axes, record)
    axes.set_ylabel("throughput (samples/s, sweep mean)")
    axes.set_title("Throughput by batch size")
    axes.grid(True, which="both", alpha=0.3)
    if axes.get_legend_handles_labels()[0]:
        axes.legend(fontsize="small")


def _throughput_line(
    axes: Any, record: RunRecord, outcome: BackendOutcome, winner: BackendOutcome | None
) -> None:
    """One profiled backend's line: the baseline dashed black, the winner's bold with its star."""
    assert outcome.profile is not None
    sizes = outcome.profile.batch_sizes
    rates = [bs * 1000.0 / mean(outcome.profile.samples(bs)) for bs in sizes]
    is_base = outcome is record.baseline
    label = f"{outcome.backend} (baseline)" if is_base else outcome.backend
    style: dict[str, Any] = {"linestyle": "--", "color": "black"} if is_base else {}
    width = 3.0 if outcome is winner else 1.5
    (line,) = axes.plot(sizes, rates, marker="o", linewidth=width, label=label, **style)
    if outcome is winner:
        _star(axes, record, line.get_color())


def _batch_axis(axes: Any, record: RunRecord) -> None:
    """A base-2 batch-size axis ticked at every size some backend was profiled at."""
    sizes_seen = sorted({bs for o in record.outcomes if o.profile for bs in o.profile.batch_sizes})
    axes.set_xscale("log", base=2)
    if sizes_seen:
        axes.set_xticks(sizes_seen, [str(bs) for bs in sizes_seen])
    axes.set_xlabel("batch size")


def _spread_panel(axes: Any, record: RunRecord) -> None:
    """Each row's latency figures as a box, the baseline's grey with its median as a line."""
    boxes, labels, is_base = _spreads(record)
    if not boxes:
        axes.text(0.5, 0.5, "no backend was profiled", ha="center", transform=axes.transAxes)
        return
    parts = axes.boxplot(boxes, patch_artist=True, showfliers=True)
    for patch, base in zip(parts["boxes"], is_base, strict=True):
        patch.set_facecolor("lightgrey" if base else "tab:blue")
        patch.set_alpha(0.6)
    for box, base in zip(boxes, is_base, strict=True):
        if base:
            axes.axhline(median(box), color="black", linestyle="--", linewidth=1)
    axes.set_xticks(range(1, len(labels) + 1), labels, fontsize="small", rotation=20)
    _latency_axis(axes, boxes)
    axes.set_title("Latency spread of each row's figures")
    axes.grid(True, axis="y", alpha=0.3)


def _latency_axis(axes: Any, boxes: list[list[float]]) -> None:
    """The latency axis: logarithmic when the figures span more than 20×."""
    if max(max(b) for b in boxes) > 20 * min(min(b) for b in boxes):
        axes.set_yscale("log")
    axes.set_ylabel("latency per call (ms)")


def _spreads(record: RunRecord) -> tuple[list[list[float]], list[str], list[bool]]:
    """The rows with figures: their values, their tick labels, whether each is the baseline."""
    boxes, labels, is_base = [], [], []
    for row, outcome in zip(backend_rows(record), record.outcomes, strict=True):
        bs, values, source = spread(record, row, outcome)
        if not values:
            continue
        boxes.append(list(values))
        labels.append(f"{outcome.backend}\n(bs {bs}, {source})")
        is_base.append(outcome is record.baseline)
    return boxes, labels, is_base


def _stage_bar(
    axes: Any, row: int, segments: Iterable[tuple[str, float]], labelled: set[str]
) -> None:
    """One backend's stacked bar; each stage is labelled once over all bars."""
    colours = {name: f"C{i}" for i, name in enumerate(SEGMENTS)}
    left = 0.0
    for name, seconds in segments:
        label = None if name in labelled else name
        labelled.add(name)
        axes.barh(row, seconds, left=left, color=colours[name], label=label)
        left += seconds


def _stages_panel(axes: Any, record: RunRecord) -> None:
    """One stacked bar per backend: its stage seconds as disjoint parts."""
    outcomes = [o for o in record.outcomes if o.stage_seconds]
    if not outcomes:
        axes.text(0.5, 0.5, "no stage times recorded", ha="center", transform=axes.transAxes)
        return
    labelled: set[str] = set()
    for row, outcome in enumerate(outcomes):
        _stage_bar(axes, row, stage_segments(outcome.stage_seconds), labelled)
    axes.set_yticks(range(len(outcomes)), [o.backend for o in outcomes], fontsize="small")
    axes.invert_yaxis()
    axes.set_xlabel("seconds")
    axes.set_title("Where the tune time went")
    axes.grid(True, axis="x", alpha=0.3)
    axes.legend(fontsize="small")


def plot_run(record: RunRecord, path: str | Path) -> Path:
    """Draw ``record`` to the PNG ``path`` (parent folders created) and return the path (a
    generation tune's: :mod:`aitune_fp.cli.generation_plot`)."""
    from aitune_fp.core.report.generation_plot_data import is_generation

    if is_generation(record):
        from aitune_fp.cli.generation_plot import plot_generation

        return plot_generation(record, path)
    figure = new_figure()
    left, right, stages, trade = figure.subplots(1, 4)
    _throughput_panel(left, record)
    _spread_panel(right, record)
    _stages_panel(stages, record)
    trade_off_panel(trade, record)
    return finished(figure, record, path)
