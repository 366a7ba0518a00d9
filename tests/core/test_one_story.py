"""One story per report (issue 32 §3): the demo transformer's case replayed, where the
sweep says A (eager bf16, 2.79×) and the verification says B (inductor bf16 freezing,
1.045× faster than A in paired rounds); every line of the report is read: the table, the
decision lines, the front, the Markdown report and the plot's data.

Two records: ``demo_case()`` as a tune writes it now (the baseline takes part in the
verification, so every figure can come from it) and ``older_case()`` as a record made
before that (the verification timed only A and B)."""

from __future__ import annotations

from returns.result import Success

from aitune_fp import Profile, max_throughput
from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.core.report.account import decision_account
from aitune_fp.core.report.decision import decision_lines
from aitune_fp.core.report.formats import format_speedup
from aitune_fp.core.report.markdown import render_markdown
from aitune_fp.core.report.pareto import front_line, trade_off
from aitune_fp.core.report.plot_data import marks, spread, star
from aitune_fp.core.report.tables import backend_rows
from aitune_fp.testing import Timings, decide

A, B, BASE = "eager(precision='bfloat16')", "inductor(precision='bfloat16', freezing=True)", "eager"
BS = 8
WIGGLE = (1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99, 1.0, 1.02)


def _profile(name: str, speedup: float) -> Profile:
    ms = [BS * 1.0 / speedup * w for w in WIGGLE]
    return Profile(name, {BS: ms}, accuracy={"rms_rel_error": 0.004, "cosine": 0.9999})


def _case(base_ms: float | None, rounds: int = len(WIGGLE)) -> RunRecord:
    """Sweep: A at 2.79×, B at 2.44× over eager; verification (``rounds`` paired rounds):
    B 1.045× faster than A, and (``base_ms``) the baseline at that many times B's time."""
    given = [Success(_profile(A, 2.79)), Success(_profile(B, 2.44))]
    base = Success(_profile(BASE, 1.0))
    wiggle = WIGGLE[:rounds]
    paired = {(A, BS): tuple(1.045 * w for w in wiggle), (B, BS): wiggle}
    if base_ms is not None:
        paired[(BASE, BS)] = tuple(base_ms * w for w in wiggle)
    return decide(max_throughput, given, base, Timings(verification=paired))


def demo_case() -> RunRecord:
    """The case as a tune records it now: the baseline at 2.3× B's time in the paired rounds."""
    return _case(2.3)


def older_case() -> RunRecord:
    """The case as recorded before the baseline took part in the verification."""
    return _case(None)


def _everything(record: RunRecord) -> list[str]:
    return [*decision_lines(record), front_line(record) or "", render_markdown(record)]


def test_the_verification_moves_the_pick_in_the_replayed_case() -> None:
    """Both replayed records select B after the verification overturned A."""
    for record in (demo_case(), older_case()):
        assert record.selection is not None and record.selection.backend == B
        assert record.verification is not None and not record.verification.holds


def test_every_row_and_the_decision_lines_rest_on_the_verification() -> None:
    """With the baseline in the paired rounds, every table row, the Selected and Speedup
    lines give the verification's figures, no row shows A faster than B, and no Why-not
    line argues from the sweep."""
    record = demo_case()
    rows = {row.backend: row for row in backend_rows(record)}
    assert {row.source for row in rows.values()} == {"verification"}
    assert rows[B].status == "selected" and rows[A].status == "profiled"
    assert rows[A].speedup is not None and rows[B].speedup is not None
    assert rows[A].speedup < rows[B].speedup
    assert abs(rows[B].speedup / rows[A].speedup - 1.045) < 1e-9
    lines = decision_lines(record)
    assert lines[0].startswith(f"Selected {B} (batch size {BS})")
    assert lines[0].endswith("measured in the verification (median of 10 paired rounds)")
    assert lines[1].startswith("Speedup:") and f"({format_speedup(rows[B].speedup)})" in lines[1]
    assert lines[1].endswith("both measured in the verification")
    assert not any(line.startswith("Why not") for line in lines), lines


def test_the_report_says_the_sweep_and_the_verification_disagree_and_which_holds() -> None:
    """One line names the pairs whose sweep ratio lies outside the verification's interval
    (B over A: 0.875× against 1.045×; B over eager: 2.44× against 2.30×) and says the
    pick rests on the verification; the Markdown report carries it too."""
    record = demo_case()
    gap = [line for line in decision_lines(record) if "disagree beyond noise" in line]
    assert len(gap) == 1, decision_lines(record)
    assert f"{B}@{BS} over {A}@{BS}: 0.875× in the sweep, 1.045×" in gap[0]
    assert f"{B}@{BS} over {BASE}@{BS}: 2.440× in the sweep, 2.300×" in gap[0]
    assert "The pick rests on the verification" in gap[0] and "which moved it" in gap[0]
    assert f"- {gap[0]}" in render_markdown(record)


def test_the_front_and_the_plot_show_the_verification_figures() -> None:
    """The front places B ahead of A by the rows' own speedups; the plot's star is the
    table's selected row (figure, source, speedup), its marks are the rows' figures, and
    every box holds the samples its row's figure comes from."""
    record = demo_case()
    rows = {row.backend: row for row in backend_rows(record)}
    points = {p.name: p.speed for p in trade_off(record)[0]}
    assert points[A] == rows[A].speedup and points[B] == rows[B].speedup
    account = decision_account(record)
    assert account is not None and points[B] == account.speedup  # the Speedup line's figure
    front = front_line(record)
    assert front is not None and f"dominated by {B}: {A}" in front
    mark = star(record)
    assert mark is not None and mark.rate == rows[B].metric
    assert mark.label.endswith(f"(verification), {format_speedup(rows[B].speedup)}")
    assert {(m.backend, m.rate) for m in marks(record)} == {(n, r.metric) for n, r in rows.items()}
    shown = [
        spread(record, row, o) for row, o in zip(backend_rows(record), record.outcomes, strict=True)
    ]
    assert [source for _, _, source in shown] == ["verification"] * 3
    assert shown[2][1] == record.verification.samples_ms[B]  # type: ignore[union-attr]


def test_no_line_of_an_older_record_tells_the_sweep_story_against_the_pick() -> None:
    """In a record whose verification did not time the baseline, no line says A dominates
    the pick or that a tie kept the pick; the Why-not line gives the verification's figure,
    says the two measurements disagree beyond noise and that the pick rests on the
    verification; the disagreement is not said twice; the plot's star is the account's."""
    record = older_case()
    lines = decision_lines(record)
    front = front_line(record)
    everything = _everything(record)
    assert lines[0].startswith(f"Selected {B} (batch size {BS})")
    why_not = [line for line in lines if line.startswith("Why not")]
    assert len(why_not) == 1, lines
    assert f"Why not {A}@{BS}" in why_not[0] and "disagree beyond noise" in why_not[0]
    assert "1.045×" in why_not[0] and "rests on the verification" in why_not[0]
    assert sum("disagree beyond noise" in line for line in lines) == 1, lines
    assert not any("a tie keeps the pick" in text for text in everything), everything
    assert front is not None and f"by {A}:" not in front, front
    assert f"dominated by {A}" not in front
    assert why_not[0] in render_markdown(record)
    account, mark = decision_account(record), star(record)
    assert account is not None and mark is not None and mark.rate == account.selected.value


def test_a_verification_too_short_to_judge_is_not_what_the_report_rests_on() -> None:
    """With 2 paired rounds (too few to judge) the pick A stays, every row and line shows
    the sweep's figures, and no line says the pick rests on the verification."""
    record = _case(2.3, rounds=2)
    assert record.selection is not None and record.selection.backend == A
    assert {row.source for row in backend_rows(record)} == {"sweep"}
    lines = decision_lines(record)
    assert lines[0].endswith("measured in the sweep"), lines
    assert not any("rests on the verification" in line for line in lines), lines
    assert any("too few rounds to judge" in line for line in lines), lines
