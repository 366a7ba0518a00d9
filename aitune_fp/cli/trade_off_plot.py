"""The fourth panel of a run's plot: speed against accuracy (the Pareto front).

Rules:
- each backend with a speedup and accuracy figures is a point
  (:func:`~aitune_fp.core.report.pareto.trade_off`): its speedup over the baseline against
  its accuracy drop, labelled by name;
- the Pareto front is drawn as filled dots joined by a step line, the dominated points as
  grey crosses, and a candidate the accuracy bound refused (``--max-drop``) ringed in red;
  the three looks are the rows of :data:`STYLES`;
- the accuracy-drop axis is linear near 0 and logarithmic from the smallest drop on; one
  column at 0 when every point is as accurate as eager;
- a run without accuracy figures gets a panel that says so.
"""

from __future__ import annotations

from typing import Any, Final

from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.core.report.pareto import TradePoint, over_bound, trade_off

STYLES: Final[dict[str, dict[str, Any]]] = {
    "front":     {"drawstyle": "steps-post", "color": "tab:green", "linewidth": 1.5,
                  "marker": "o", "markersize": 8},
    "dominated": {"linestyle": "none", "color": "grey",
                  "marker": "x", "markersize": 8},
    "refused":   {"linestyle": "none", "color": "tab:red", "markerfacecolor": "none",
                  "marker": "o", "markersize": 14},
}  # fmt: skip
LABELS: Final = {"front": "front", "dominated": "dominated", "refused": "refused: over max_drop"}


def trade_off_panel(axes: Any, record: RunRecord) -> None:
    """Speedup against accuracy drop: the front joined and filled, the dominated crossed."""
    points, found = trade_off(record)
    axes.set_title("Speed against accuracy (Pareto front)")
    if not points:
        axes.text(0.5, 0.5, "no accuracy figures recorded", ha="center", transform=axes.transAxes)
        return
    over = over_bound(record)
    _points(axes, "front", sorted(found.front, key=lambda p: p.error))
    _points(axes, "dominated", [p for p in points if not found.on_front(p.name)])
    _points(axes, "refused", [p for p in points if p.name in over])
    for p in points:
        at = {"textcoords": "offset points", "xytext": (4, 4)}
        axes.annotate(p.name, (p.error, p.speed), fontsize="x-small", **at)
    _drop_axis(axes, [p.error for p in points if p.error > 0])
    axes.set_ylabel("speedup over the baseline")
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize="small")


def _points(axes: Any, look: str, points: list[TradePoint]) -> None:
    """``points`` drawn in the ``look`` row of :data:`STYLES` (nothing when there are none)."""
    if points:
        xs, ys = [p.error for p in points], [p.speed for p in points]
        axes.plot(xs, ys, label=LABELS[look], **STYLES[look])


def _drop_axis(axes: Any, positive: list[float]) -> None:
    """The accuracy-drop axis: linear near 0, logarithmic from the smallest drop on, with
    room for the labels; one column at 0 when every point is as accurate as eager."""
    if positive:
        axes.set_xscale("symlog", linthresh=min(positive))
        axes.set_xlim(-min(positive) / 2, max(positive) * 3)
    else:
        axes.set_xlim(-0.01, 0.05)
    axes.set_xlabel("accuracy drop against eager (top-1 disagreement, else rel RMS)")
