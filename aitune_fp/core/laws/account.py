"""Report laws: every figure shown for a run's selection comes from its decision account.

Every law here takes ``(record,)``: a stored :class:`~aitune_fp.core.record.run_record.RunRecord`
(with or without final rounds and a verification). A run without a selection holds
vacuously.
"""

from __future__ import annotations

import math

from aitune_fp.core.laws.law import Law, implies
from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.core.report.account import DecisionAccount, decision_account, participants
from aitune_fp.core.report.columns import headers, table_cells
from aitune_fp.core.report.decision import decision_lines
from aitune_fp.core.report.formats import format_metric, format_speedup
from aitune_fp.core.report.gap import gaps
from aitune_fp.core.report.markdown import render_markdown
from aitune_fp.core.report.sources import (
    ROUNDS,
    SWEEP,
    VERIFICATION,
    Figure,
    metric_kind,
    sweep_figure,
    verification_samples,
)
from aitune_fp.core.report.tables import BackendRow, backend_rows
from aitune_fp.core.verification.judge import MIN_ROUNDS

TOLERANCE = 1e-9


def _account(record: RunRecord) -> DecisionAccount | None:
    return decision_account(record) if record.selection is not None else None


def _selected_row_is_the_account(record: RunRecord) -> bool:
    account = _account(record)
    rows = [r for r in backend_rows(record) if r.status == "selected"]
    if account is None:
        return rows == [] or all(r.metric is None for r in rows)
    shown = account.selected
    return len(rows) == 1 and (
        rows[0].metric,
        rows[0].batch_size,
        rows[0].speedup,
        rows[0].source,
    ) == (shown.value, shown.batch_size, account.speedup, shown.source)


def _speedup_is_the_ratio(record: RunRecord) -> bool:
    account, kind = _account(record), metric_kind(record)
    if account is None or account.baseline is None or account.speedup is None or kind is None:
        return True
    sel, base = account.selected, account.baseline
    ratio = sel.value / base.value if kind == "throughput" else base.value / sel.value
    same = sel.source == base.source
    return same and math.isclose(account.speedup, ratio, rel_tol=TOLERANCE)


def _values(record: RunRecord, f: Figure) -> tuple[float, ...]:
    """The metric over ``f``'s source samples (empty for the sweep)."""
    if f.source == ROUNDS:
        found = [o.profile for o in record.outcomes if o.backend == f.backend and o.profile]
        samples = tuple(found[0].rounds_ms.get(f.batch_size, ())) if found else ()
    elif f.source == VERIFICATION and record.verification is not None:
        samples = tuple(verification_samples(record.verification, f.backend, f.batch_size))
    else:
        return ()
    if metric_kind(record) == "throughput":
        return tuple(f.batch_size * 1000.0 / s for s in samples)
    return samples


def _measured_there(record: RunRecord, f: Figure) -> bool:
    if f.source == SWEEP:
        found = sweep_figure(record, f.backend, f.batch_size)
        return found is not None and found.value == f.value
    values = _values(record, f)
    slack = TOLERANCE * max(values, default=0.0)
    return bool(values) and min(values) - slack <= f.value <= max(values) + slack


def _figures_are_measured_there(record: RunRecord) -> bool:
    account = _account(record)
    if account is None:
        return True
    shown = (account.selected, *(() if account.baseline is None else (account.baseline,)))
    return all(_measured_there(record, f) for f in shown)


def _pick_is_the_decision(record: RunRecord) -> bool:
    account, found, v = _account(record), participants(record), record.verification
    if account is None or found is None:
        return True
    pick = (account.selected.backend, account.selected.batch_size)
    base = (
        None
        if account.baseline is None
        else (account.baseline.backend, account.baseline.batch_size)
    )
    agrees = implies(v is not None, v is None or (v.selected, v.selected_batch_size) == pick)
    return pick == found[0] and base == found[1] and agrees


def _lines_agree(record: RunRecord) -> bool:
    account = _account(record)
    if account is None:
        return True
    lines, sel = decision_lines(record), account.selected
    head = f"Selected {sel.backend} (batch size {sel.batch_size}): "
    first = lines[0].startswith(head) and f" {format_metric(record, sel.value)}," in lines[0]
    if account.baseline is None:
        return first and not any(line.startswith("Speedup:") for line in lines)
    return first and lines[1].startswith(f"Speedup: {_speedup_text(record, account)}")


def _speedup_text(record: RunRecord, account: DecisionAccount) -> str:
    """The account's speedup as the decision's second line states it."""
    assert account.baseline is not None
    base, sel = account.baseline.value, account.selected.value
    speedup = f"{format_metric(record, base)} → {format_metric(record, sel)}"
    if account.speedup is not None:
        speedup += f" ({format_speedup(account.speedup)})"
    return speedup


def _lower_speedup_is_explained(record: RunRecord) -> bool:
    account = _account(record)
    if account is None or account.speedup is None or account.baseline is None:
        return True
    explained = any(line.startswith("Why below 1.00×") for line in decision_lines(record))
    return implies(account.speedup < 1.0 and account.baseline != account.selected, explained)


def _verification_names_batch_sizes(record: RunRecord) -> bool:
    v, sel = record.verification, record.selection
    if v is None or sel is None or v.reason not in sel.notes:
        return True
    pick = f"{v.winner}@{v.winner_batch_size}"
    other = f"{v.challenger}@{v.challenger_batch_size}"
    line = [x for x in decision_lines(record) if x.startswith("verification")]
    return len(line) == 1 and pick in line[0] and (other in line[0] or v.rounds < MIN_ROUNDS)


def _reference_value(row: BackendRow, base_rows: list[BackendRow]) -> float | None:
    """The baseline figure a row's speedup is over: its reference, else the baseline row's."""
    ref = row.reference.value if row.reference is not None else None
    return ref if ref is not None else (base_rows[0].metric if base_rows else None)


def _rows_agree(record: RunRecord) -> bool:
    """Each row's speedup is its metric over the baseline figure it names (its reference,
    else the baseline row's), in the metric's direction."""
    kind, rows = metric_kind(record), backend_rows(record)
    base_rows = [r for r in rows if r.role == "baseline" and r.metric is not None]
    for row in rows:
        if row.metric is None or row.speedup is None or kind is None:
            continue
        ref = _reference_value(row, base_rows)
        if ref is None:
            continue
        ratio = row.metric / ref if kind == "throughput" else ref / row.metric
        if not math.isclose(row.speedup, ratio, rel_tol=TOLERANCE):
            return False
    return True


def _disagreement_is_stated(record: RunRecord) -> bool:
    """Every pair whose earlier ratio lies outside the verification's interval is named,
    both participants, on a decision line saying they disagree beyond noise and that the
    pick rests on the verification."""
    said = [x for x in decision_lines(record) if "disagree beyond noise" in x]
    for gap in (g for g in gaps(record) if g.beyond_noise):
        named = (f"{gap.pick[0]}@{gap.pick[1]}", f"{gap.other[0]}@{gap.other[1]}")
        if not any(all(n in x for n in named) and "rests on the verification" in x for x in said):
            return False
    return True


def _markdown_shows_the_same(record: RunRecord) -> bool:
    text = render_markdown(record)
    lines = all(f"- {line}" in text for line in decision_lines(record))
    status = headers().index("status")
    rows = [cells for _, cells in table_cells(record) if cells[status] == "selected"]
    shown = all(" | ".join(c or "—" for c in cells) in text.replace("\\|", "|") for cells in rows)
    return lines and shown


ACCOUNT_LAWS: tuple[Law[[RunRecord]], ...] = (
    Law(
        "account_selected_row",
        "the table's selected row shows the account's figure, batch size, speedup and source",
        _selected_row_is_the_account,
    ),
    Law(
        "account_speedup_is_the_ratio",
        "the selection's speedup is the ratio of its figure and the "
        "baseline's, in the metric's direction, both from one measurement",
        _speedup_is_the_ratio,
    ),
    Law(
        "account_figures_measured_there",
        "each figure of the account lies among its source's measurements at its batch size",
        _figures_are_measured_there,
    ),
    Law(
        "account_pick_is_the_decision",
        "the account shows the selection's backend and batch size "
        "(the verification's pick when one ran) against the baseline's",
        _pick_is_the_decision,
    ),
    Law(
        "account_lines_agree",
        "the Selected and Speedup lines show the account's figures and ratio",
        _lines_agree,
    ),
    Law(
        "account_lower_speedup_explained",
        "a selected candidate shown below 1.00× comes with a line saying why",
        _lower_speedup_is_explained,
    ),
    Law(
        "account_verification_names_batch_sizes",
        "the verification line names the pick and the challenger as backend@batch",
        _verification_names_batch_sizes,
    ),
    Law(
        "account_rows_agree",
        "every row's speedup is its metric over the baseline figure the table shows for it",
        _rows_agree,
    ),
    Law(
        "account_disagreement_stated",
        "a pair the sweep (or the final rounds) and the verification disagree on beyond "
        "noise is named on a line saying so and that the pick rests on the verification",
        _disagreement_is_stated,
    ),
    Law(
        "account_markdown_shows_the_same",
        "the Markdown report holds the same decision lines and selected row",
        _markdown_shows_the_same,
    ),
)
