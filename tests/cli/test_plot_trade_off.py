"""The plot's speed/accuracy panel: the front drawn, the dominated points marked."""

from __future__ import annotations

from pathlib import Path

import pytest

from aitune_fp.cli.plot import plot_run
from aitune_fp.cli.trade_off_plot import trade_off_panel
from aitune_fp.core.strategies import max_throughput, within_accuracy
from tests.core.test_pareto import _run

pytest.importorskip("matplotlib")


def test_panel_draws_the_front_and_crosses_the_dominated() -> None:
    """The front's line goes through the front members; dominated points are crosses."""
    from matplotlib.figure import Figure

    axes = Figure().subplots()
    trade_off_panel(axes, _run())
    lines = {line.get_label(): line for line in axes.get_lines()}
    front = lines["front"]
    assert sorted(front.get_ydata()) == pytest.approx([2.0, 4.0])  # onnxruntime, int8
    crossed = lines["dominated"]
    assert crossed.get_marker() == "x"
    assert sorted(crossed.get_ydata()) == pytest.approx([1.0, 4.0 / 3.0])  # eager, inductor
    labels = {t.get_text() for t in axes.texts}
    assert {"eager (baseline)", "inductor", "onnxruntime"} <= labels


def test_plot_with_the_panel_is_a_png(tmp_path: Path) -> None:
    """The whole figure, four panels, is still written as a PNG."""
    path = plot_run(_run(), tmp_path / "p.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_candidate_over_the_drop_bound_is_ringed() -> None:
    """Under within_accuracy the refused int8 is drawn, ringed as over max_drop."""
    from matplotlib.figure import Figure

    axes = Figure().subplots()
    trade_off_panel(axes, _run(within_accuracy(0.01, max_throughput)))
    lines = {line.get_label(): line for line in axes.get_lines()}
    ring = lines["refused: over max_drop"]
    assert list(ring.get_ydata()) == pytest.approx([4.0])
