"""A generation tune's run as a PNG: tokens/s by batch size, and TTFT by prompt length.

Rules: drawn as :mod:`aitune_fp.cli.plot` draws (a bare Agg ``Figure``, matplotlib
optional); the curves are :func:`~aitune_fp.core.report.generation_plot_data.
generation_curves`' (each profiled backend's sweep points; the baseline, HF ``generate``,
dashed and black, the selected backend bold); failed backends are listed under the plots.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aitune_fp.cli.figure import finished, new_figure
from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.core.report.generation_plot_data import GenerationCurves, generation_curves


def _line(
    axes: Any, points: tuple[tuple[int, float], ...], c: GenerationCurves, picked: str
) -> None:
    """One backend's curve on ``axes``."""
    style: dict[str, Any] = {"linestyle": "--", "color": "black"} if c.baseline else {}
    label = f"{c.backend} (baseline)" if c.baseline else c.backend
    width = 3.0 if c.backend == picked else 1.5
    axes.plot(
        [x for x, _ in points],
        [y for _, y in points],
        marker="o",
        linewidth=width,
        label=label,
        **style,
    )


def _panel(axes: Any, curves: tuple[GenerationCurves, ...], picked: str, tokens: bool) -> None:
    """The tokens/s-by-batch panel (``tokens``), else the TTFT-by-length panel."""
    for c in curves:
        _line(axes, c.tokens_by_batch if tokens else c.ttft_by_length, c, picked)
    if tokens:
        sizes = sorted({x for c in curves for x, _ in c.tokens_by_batch})
        axes.set_xscale("log", base=2)
        axes.set_xticks(sizes, [str(s) for s in sizes])
    axes.set_xlabel("batch size" if tokens else "prompt length (tokens)")
    axes.set_ylabel("tokens/s (sweep)" if tokens else "TTFT (ms, sweep median)")
    axes.set_title("Tokens/s by batch size" if tokens else "Time to first token by prompt length")
    axes.grid(True, which="both", alpha=0.3)
    if axes.get_legend_handles_labels()[0]:
        axes.legend(fontsize="small")


def plot_generation(record: RunRecord, path: str | Path) -> Path:
    """Draw the generation ``record`` to the PNG ``path`` and return the path."""
    figure = new_figure()
    figure.set_size_inches(14, 5)
    left, right = figure.subplots(1, 2)
    curves = generation_curves(record)
    picked = record.selection.backend if record.selection is not None else ""
    _panel(left, curves, picked, tokens=True)
    _panel(right, curves, picked, tokens=False)
    return finished(figure, record, path)
