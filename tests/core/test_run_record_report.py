"""The table rows and the Markdown report derived from a stored run."""

from __future__ import annotations

from typing import Any

from hypothesis import given

from aitune_fp import max_throughput, min_latency
from aitune_fp.core.record.run_record import (
    BackendOutcome,
    RunRecord,
    decode,
    encode,
    with_strategy,
)
from aitune_fp.core.records import BackendFailure, Profile
from aitune_fp.core.report.markdown import render_markdown
from aitune_fp.core.report.tables import backend_rows, decision_lines
from tests.core.run_record_strategies import run_records


def _ok(name: str, latencies: dict[int, list[float]], **kw: Any) -> BackendOutcome:
    return BackendOutcome(name, name, "k", {}, profile=Profile(name, latencies), **kw)


def _run() -> RunRecord:
    """eager baseline; 'wide' wins on throughput, 'quick' on latency; 'trt' failed to build."""
    base = _ok("eager", {1: [5.0, 5.0], 8: [40.0]})
    wide = _ok("wide", {1: [4.0], 8: [8.0]}, validation={"max_abs_error": 1e-6})
    quick = _ok("quick", {1: [1.0], 8: [16.0]}, stage_seconds={"build": 2.5})
    trt = BackendOutcome(
        "trt", "tensorrt", "k", {}, failure=BackendFailure("trt", "build", "needs a | GPU")
    )
    rec = RunRecord("mlp", "cpu", {}, base, (wide, quick, trt), None, None, {}, {}, 8)
    return with_strategy(rec, max_throughput)


def test_rows_say_who_won_who_lost_and_why() -> None:
    """Baseline first, then candidates; the winner is selected, failures carry their reason."""
    rows = {r.backend: r for r in backend_rows(_run())}
    assert [r.backend for r in backend_rows(_run())] == ["eager", "wide", "quick", "trt"]
    assert rows["eager"].status == "baseline" and rows["eager"].speedup == 1.0
    assert rows["wide"].status == "selected" and rows["wide"].batch_size == 8
    assert rows["wide"].speedup == 5.0
    assert rows["quick"].status == "profiled"
    assert rows["trt"].status == "failed (build)" and rows["trt"].reason == "needs a | GPU"


def test_fallback_marks_the_baseline_selected() -> None:
    """When no candidate beats the baseline, the baseline row is the selected one."""
    base = _ok("eager", {1: [0.5]})
    slow = _ok("slow", {1: [1.0]})
    rec = with_strategy(
        RunRecord("m", "cpu", {}, base, (slow,), None, None, {}, {}, 1), min_latency
    )
    statuses = {r.backend: r.status for r in backend_rows(rec)}
    assert statuses == {"eager": "selected", "slow": "profiled"}
    assert any("baseline eager was selected" in line for line in decision_lines(rec))


def test_measure_failures_show_as_failed_rows() -> None:
    """A profiled backend whose measure failed (budget missed) is a failed row at measure."""
    from aitune_fp import latency_budget

    rec = with_strategy(_run(), latency_budget(0.5))
    rows = {r.backend: r for r in backend_rows(rec)}
    assert rows["wide"].status == "failed (measure)"
    assert decision_lines(rec)[0].startswith("Tuning failed: no backend meets")


def test_markdown_has_every_section_and_escapes_pipes() -> None:
    """The report names the decision, every backend, statistics, and escapes table pipes."""
    text = render_markdown(_run())
    for heading in ["## Decision", "## Backends", "## Latency per batch size", "## Environment"]:
        assert heading in text
    assert "Selected wide (batch size 8): throughput 1000.00 samples/s" in text
    assert "Speedup: 200.00 samples/s → 1000.00 samples/s (5.00×)" in text
    assert "needs a \\| GPU" in text
    assert "### quick" in text and "| 8 | 1 | 16.000 |" in text


@given(run_records())
def test_every_backend_gets_exactly_one_row_and_one_winner_at_most(record: RunRecord) -> None:
    """One row per outcome; exactly one selected row when a selection exists, else none."""
    rows = backend_rows(record)
    assert len(rows) == len(record.outcomes)
    selected = [r for r in rows if r.status == "selected"]
    assert len(selected) == (1 if record.selection is not None else 0)


@given(run_records())
def test_markdown_is_a_function_of_the_record(record: RunRecord) -> None:
    """Equal records (here: one decoded from the other's JSON) render identical reports."""
    assert render_markdown(decode(encode(record))) == render_markdown(record)


def test_every_pinned_stage_is_in_the_json_with_null_where_it_did_not_run() -> None:
    """encode writes each pinned stage name (null when absent) and stopped_early; decode
    drops the nulls, so a round trip gives the same outcome."""
    from aitune_fp.core.record.run_record import decode_outcome, encode_outcome
    from aitune_fp.core.record.stages import STAGES

    outcome = _ok("quick", {1: [1.0]}, stage_seconds={"build": 2.5, "export": 1.0})
    doc = encode_outcome(outcome)
    assert list(doc["stage_seconds"])[: len(STAGES)] == list(STAGES)
    assert doc["stage_seconds"]["export"] == 1.0 and doc["stage_seconds"]["compile"] is None
    assert doc["stopped_early"] is None
    assert decode_outcome(doc) == outcome
