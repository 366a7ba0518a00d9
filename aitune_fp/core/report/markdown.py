"""A stored run as a Markdown report: the decision, every backend, the raw statistics.

Rules:
- pure: a :class:`~aitune_fp.core.record.run_record.RunRecord` in, a string out;
- sections in order: title, decision, backends (status, metric, batch size, speedup, where
  the figures were measured, peak memory in MiB, why it failed), latency per batch size
  (samples, mean, median, p90, p99, CV, throughput) per backend, validation errors, stage
  times, strategy, environment; after the backends, the candidates the plan left out as
  not native on the machine (one line, only when there are any); the session's notes
  (:mod:`.notes`) after the accuracy, when it said any;
- a ``|`` in any cell is escaped, so a failure message never breaks a table;
- maps are rendered with sorted keys, so equal records give identical reports.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from aitune_fp.core.accuracy.reach import left_out_line
from aitune_fp.core.record.max_batch import max_batch_line
from aitune_fp.core.record.run_record import BackendOutcome, RunRecord
from aitune_fp.core.record.stages import STAGES
from aitune_fp.core.record.values import thaw_json
from aitune_fp.core.report.accuracy import accuracy_section
from aitune_fp.core.report.columns import headers, table_cells
from aitune_fp.core.report.decision import decision_lines
from aitune_fp.core.report.notes import note_lines
from aitune_fp.core.report.stages import total_seconds, wall_summary
from aitune_fp.core.stats.summary import SampleSummary, summarize


def _cell(value: Any) -> str:
    """A table cell: ``—`` for ``None``, ``|`` escaped, newlines flattened."""
    if value is None or value == "":
        return "—"
    return str(value).replace("|", "\\|").replace("\n", " ")


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A Markdown table.

    >>> print(table(["a", "b"], [[1, "x|y"]]))
    | a | b |
    |---|---|
    | 1 | x\\|y |
    """
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *("| " + " | ".join(_cell(v) for v in row) + " |" for row in rows),
    ]
    return "\n".join(lines)


def backends_section(record: RunRecord) -> str:
    """The per-backend table: the columns of :data:`~aitune_fp.core.report.columns.COLUMNS`."""
    return table(headers(), (cells for _, cells in table_cells(record)))


def stopped_early_section(record: RunRecord) -> str | None:
    """The candidates that stopped early at some batch sizes (clear losers there after a
    short probe) and why, one line each; ``None`` when none did.

    >>> o = BackendOutcome("ort", "onnxruntime", "k", {}, stopped_early="batch size 1: ...")
    >>> r = RunRecord("m", "cpu", {}, None, (o,), None, None, {}, {}, None)
    >>> stopped_early_section(r)
    '- ort: batch size 1: ...'
    """
    lines = [f"- {o.backend}: {o.stopped_early}" for o in record.outcomes if o.stopped_early]
    return "\n".join(lines) if lines else None


def latency_rows(outcome: BackendOutcome) -> list[tuple[Any, ...]]:
    """Statistics of every measured batch size of one backend, ascending."""
    profile = outcome.profile
    if profile is None:
        return []
    return [_latency_row(bs, summarize(profile.samples(bs))) for bs in profile.batch_sizes]


def _latency_row(bs: int, s: SampleSummary) -> tuple[Any, ...]:
    """One batch size's row: samples, mean, median, p90, p99, CV and samples/s."""
    return (
        bs,
        s.count,
        f"{s.mean:.3f}",
        f"{s.median:.3f}",
        f"{s.p90:.3f}",
        f"{s.p99:.3f}",
        f"{s.cv:.1%}",
        f"{bs * 1000.0 / s.mean:.2f}",
    )


def latency_section(record: RunRecord) -> str:
    """One statistics table per profiled backend, with why its sweep ended."""
    header = [
        "batch size",
        "samples",
        "mean ms",
        "median ms",
        "p90 ms",
        "p99 ms",
        "CV",
        "samples/s",
    ]
    parts = []
    for o in record.outcomes:
        if o.profile is None:
            continue
        parts.append(
            f"### {o.backend}\n\nSweep ended: {o.profile.sweep_stop}; inputs: "
            f"{o.profile.input_mode}.\n\n{table(header, latency_rows(o))}"
        )
    return "\n\n".join(parts) if parts else "No backend was profiled."


def _number_table(record: RunRecord, field: str, key_header: str, fmt: str) -> str:
    outcomes = [o for o in record.outcomes if getattr(o, field)]
    keys = sorted({k for o in outcomes for k in getattr(o, field)})
    if not keys:
        return f"No {key_header} recorded."
    rows = [(o.backend, *(_fmt(getattr(o, field).get(k), fmt) for k in keys)) for o in outcomes]
    return table(["backend", *keys], rows)


def _stage_row(o: BackendOutcome, keys: list[str]) -> tuple[str | None, ...]:
    """One backend's stage seconds in ``keys`` order (blank where a part did not run)."""
    cells = (_fmt(o.stage_seconds.get(k), ".3f") for k in keys)
    return (o.backend, *cells, format(total_seconds(o.stage_seconds), ".3f"))


def stage_section(record: RunRecord) -> str:
    """Stage seconds per backend, pinned stages first (``export``, ``compile`` and ``cache``
    are parts of ``build``), a blank cell where a part did not run, and the total.

    >>> from aitune_fp.core.record.run_record import BackendOutcome
    >>> o = BackendOutcome("aot", "aot_inductor", "k", {}, stage_seconds={"build": 2.0,
    ...                    "export": 0.5})
    >>> r = RunRecord("m", "cpu", {}, None, (o,), None, None, {}, {}, None)
    >>> stage_section(r).splitlines()[0].split("|")[2:5]
    [' build ', ' validate ', ' profile ']
    """
    outcomes = [o for o in record.outcomes if o.stage_seconds]
    if not outcomes:
        return "No stage times recorded."
    extra = sorted({k for o in outcomes for k in o.stage_seconds} - set(STAGES))
    keys = [*STAGES, *extra]
    rows = [_stage_row(o, keys) for o in outcomes]
    return table(["backend", *keys, "total"], rows)


def _fmt(value: float | None, fmt: str) -> str | None:
    return None if value is None else format(value, fmt)


def map_section(values: Mapping[str, Any]) -> str:
    """A sorted key/value table of a free-form map (nested values as compact JSON)."""
    if not values:
        return "Nothing recorded."

    def show(v: Any) -> Any:
        plain = thaw_json(v)
        return json.dumps(plain, sort_keys=True) if isinstance(plain, dict | list) else plain

    return table(["key", "value"], [(k, show(values[k])) for k in sorted(values)])


def _notes(record: RunRecord) -> str:
    """The session's notes as a Markdown list ("" when it said none)."""
    return "\n".join(f"- {line}" for line in note_lines(record.notes))


def render_markdown(record: RunRecord) -> str:
    """The whole report as Markdown text (ends with a newline).

    >>> r = RunRecord("mlp", "cpu", {"title": "Max throughput"}, None, (), None, None,
    ...               {}, {}, None)
    >>> render_markdown(r).splitlines()[0]
    '# aitune_fp run: mlp on cpu'
    """
    title = record.strategy.get("title", record.strategy.get("strategy", "unknown strategy"))
    decision = "\n".join(f"- {line}" for line in decision_lines(record))
    stopped = stopped_early_section(record)
    largest = max_batch_line(record.max_batch_size, record.max_batch_search)
    largest = largest or f"max batch size: {record.max_batch_size or '—'}"
    accuracy = accuracy_section(record)
    sections = [
        f"# aitune_fp run: {record.model} on {record.device}",
        f"Strategy: **{title}**; {largest}.",
        f"## Decision\n\n{decision}",
        f"## Backends\n\n{backends_section(record)}",
        *([f"## Left out\n\n{left}"] if (left := left_out_line(record.left_out)) else []),
        *([f"## Stopped early\n\n{stopped}"] if stopped else []),
        *([f"## Accuracy against eager\n\n{accuracy}"] if accuracy else []),
        *([f"## Notes\n\n{notes}"] if (notes := _notes(record)) else []),
        f"## Latency per batch size\n\n{latency_section(record)}",
        "## Validation (max error against eager)\n\n"
        + _number_table(record, "validation", "validation errors", ".3g"),
        f"## Stage times (s)\n\n{stage_section(record)}",
        *([f"## Wall time\n\n{wall}"] if (wall := wall_summary(record)) else []),
        f"## Strategy configuration\n\n{map_section(record.strategy)}",
        f"## Input spec\n\n{map_section(record.input_spec)}",
        f"## Environment\n\n{map_section(record.environment)}",
    ]
    return "\n\n".join(sections) + "\n"
