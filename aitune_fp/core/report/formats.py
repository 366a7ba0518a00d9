"""How a stored run's figures are written: the metric with its unit, a speedup, peak memory.

Rules: a metric is ``format(value, fmt) + " " + unit`` with the run's stored format
(``.3f`` for ms, ``.2f`` otherwise when none is stored); a speedup is ``1.23×``; a missing
value is ``—``; nothing here computes a figure.
"""

from __future__ import annotations

from aitune_fp.core.record.run_record import RunRecord


def value_format(record: RunRecord) -> str:
    """The format spec for the run's metric: ``.3f`` for ms, ``.2f`` otherwise.

    >>> value_format(RunRecord("m", "cpu", {"metric_unit": "ms"}, None, (), None, None,
    ...                        {}, {}, None))
    '.3f'
    """
    stored = record.strategy.get("value_fmt")
    if isinstance(stored, str):
        return stored
    return ".3f" if record.strategy.get("metric_unit") == "ms" else ".2f"


def format_metric(record: RunRecord, value: float | None) -> str:
    """``value`` with the run's unit (``12.34 samples/s``), or ``—`` for no value."""
    if value is None:
        return "—"
    unit = record.strategy.get("metric_unit", "")
    return f"{format(value, value_format(record))} {unit}".rstrip()


def format_speedup(value: float | None) -> str:
    """A speedup cell: ``1.23×``, ``—`` when there is none.

    >>> format_speedup(1.234), format_speedup(None)
    ('1.23×', '—')
    """
    return "—" if value is None else f"{value:.2f}×"


def format_peak_mb(value: float | None) -> str:
    """A peak-memory cell: MiB with one decimal, ``—`` when unknown.

    >>> format_peak_mb(812.44), format_peak_mb(None)
    ('812.4', '—')
    """
    return "—" if value is None else f"{value:.1f}"
