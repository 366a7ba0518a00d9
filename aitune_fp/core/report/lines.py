"""Reports as data: pure functions from strategies and selections to text and JSON-able dicts.

Rules:
- a metric is written ``format(value, strategy.value_fmt) + " " + unit``;
- the speedup line reads ``baseline → metric (x.xx×)``;
- when the baseline was selected the report says so explicitly;
- nothing here prints or logs: the shell decides where text goes;
- these lines describe a bare :class:`Selection` (its own results, no run record); every
  report of a run — console, Markdown, plot, the tune's log — shows the decision account
  instead (:mod:`aitune_fp.core.report.decision`: figures by source and batch size).
"""

from __future__ import annotations

from collections.abc import Sequence

from aitune_fp.core.records import Selection
from aitune_fp.core.strategy import Strategy


def describe_parts(strategy: Strategy, backends: Sequence[str] = ()) -> tuple[str, ...]:
    """The parts of a strategy's description: title, rule, backends, parameters.

    >>> from aitune_fp import latency_budget
    >>> describe_parts(latency_budget(5.0), ["eager", "onnxruntime"])[-1]
    'parameters: budget_ms=5.0, validate_performance=True'
    """
    params = {**dict(strategy.params), "validate_performance": strategy.validate_performance}
    rendered = ", ".join(f"{k}={params[k]}" for k in sorted(params))
    return (
        strategy.title,
        strategy.description,
        "backends: " + (", ".join(backends) if backends else "default for the device"),
        f"parameters: {rendered}",
    )


def describe(strategy: Strategy, backends: Sequence[str] = ()) -> str:
    """The strategy's description as one multi-line string."""
    return "\n".join(describe_parts(strategy, backends))


def selected_line(strategy: Strategy, selection: Selection) -> str:
    """One line naming the selected backend, its batch size and its metric.

    >>> from aitune_fp import BackendProfilingResult, Selection, max_throughput
    >>> r = BackendProfilingResult(1234.5, 8, 6.48, 1234.5)
    >>> selected_line(max_throughput, Selection("onnxruntime", r, False))
    'Selected onnxruntime (batch size 8): throughput 1234.50 samples/s'
    """
    r = selection.result
    return (
        f"Selected {selection.backend} (batch size {r.selected_batch_size}): "
        f"{strategy.metric_label} {strategy.fmt(r.metric)}"
    )


def speedup_line(strategy: Strategy, selection: Selection) -> str | None:
    """``baseline → metric (x.xx×)`` against the baseline, or ``None`` without one.

    >>> from aitune_fp import BackendProfilingResult, Selection, max_throughput
    >>> from aitune_fp.core.records import Scored
    >>> base = Scored("eager", BackendProfilingResult(100.0, 1, 10.0, 100.0))
    >>> win = BackendProfilingResult(150.0, 1, 6.6, 150.0)
    >>> speedup_line(max_throughput, Selection("x", win, False, baseline=base))
    'Speedup: 100.00 samples/s → 150.00 samples/s (1.50×)'
    """
    if selection.baseline is None:
        return None
    base = selection.baseline.result
    ratio = strategy.speedup(selection.result, base)
    return (
        f"Speedup: {strategy.fmt(base.metric)} → {strategy.fmt(selection.result.metric)} "
        f"({ratio:.2f}×)"
    )


def baseline_selected_line(selection: Selection) -> str | None:
    """The explicit "baseline was selected" line, or ``None`` when a candidate won."""
    if not selection.fell_back_to_baseline:
        return None
    return f"The baseline {selection.backend} was selected: no candidate was strictly better"


def summary_lines(strategy: Strategy, selection: Selection) -> tuple[str, ...]:
    """Every line a user sees after selection, in order, without ``None``s."""
    lines = (
        selected_line(strategy, selection),
        speedup_line(strategy, selection),
        baseline_selected_line(selection),
        *(f.describe() for f in selection.failures),
        *selection.notes,
    )
    return tuple(line for line in lines if line is not None)
