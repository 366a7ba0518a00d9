"""The speed/accuracy Pareto front: its laws, and how a stored run shows it."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.record.run_record import BackendOutcome, RunRecord, with_strategy
from aitune_fp.core.records import BackendFailure, Profile
from aitune_fp.core.report.accuracy import ACCURACY_HEADER, accuracy_section
from aitune_fp.core.report.columns import headers, table_cells
from aitune_fp.core.report.markdown import render_markdown
from aitune_fp.core.report.pareto import (
    TradePoint,
    dominates,
    front_cell,
    front_line,
    pareto_front,
    trade_off,
)
from aitune_fp.core.report.tables import backend_rows
from aitune_fp.core.strategies import max_throughput, min_latency, within_accuracy

# few distinct values, so ties (equal speed or equal error) are common
speeds = st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0])
errors = st.sampled_from([0.0, 0.001, 0.01, 0.1])
clouds = st.lists(st.tuples(speeds, errors), max_size=8).map(
    lambda pairs: [TradePoint(f"b{i}", s, e) for i, (s, e) in enumerate(pairs)]
)


@given(clouds)
def test_front_is_not_empty_when_there_is_a_point(points: list[TradePoint]) -> None:
    """Any non-empty set of points has at least one front member."""
    found = pareto_front(points)
    assert bool(found.front) == bool(points)


@given(clouds)
def test_no_front_member_is_dominated(points: list[TradePoint]) -> None:
    """No point dominates a front member."""
    found = pareto_front(points)
    assert not any(dominates(q, p) for p in found.front for q in points)


@given(clouds)
def test_every_other_point_is_dominated_by_a_front_member(points: list[TradePoint]) -> None:
    """Each point off the front is listed, with front members that really dominate it."""
    found = pareto_front(points)
    by_name = {p.name: p for p in points}
    off = {p.name for p in points} - {p.name for p in found.front}
    assert set(found.dominated_by) == off
    for name, dominators in found.dominated_by.items():
        assert dominators
        assert all(found.on_front(d) and dominates(by_name[d], by_name[name]) for d in dominators)


@given(clouds, st.randoms(use_true_random=False))
def test_front_does_not_depend_on_input_order(points: list[TradePoint], rnd: object) -> None:
    """Shuffling the points gives the same front and the same dominators."""
    shuffled = list(points)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert pareto_front(shuffled) == pareto_front(points)


def test_equal_points_are_both_on_the_front() -> None:
    """Two identical figures dominate neither other."""
    found = pareto_front([TradePoint("a", 1.0, 0.1), TradePoint("b", 1.0, 0.1)])
    assert [p.name for p in found.front] == ["a", "b"]


def test_repeated_names_and_non_finite_figures_are_refused() -> None:
    """Names must be unique and figures finite."""
    with pytest.raises(ValueError, match="unique"):
        pareto_front([TradePoint("a", 1.0, 0.1), TradePoint("a", 2.0, 0.1)])
    with pytest.raises(ValueError, match="finite"):
        TradePoint("a", float("nan"), 0.1)


def _outcome(name: str, ms: float, config: dict[str, object], **figures: float) -> BackendOutcome:
    profile = Profile(name, {1: [ms, ms], 8: [8 * ms, 8 * ms]}, accuracy=figures)
    return BackendOutcome(name, name.split("(")[0], "k", config, profile=profile)


def _run(strategy: object = max_throughput) -> RunRecord:
    eager = _outcome("eager", 4.0, {})
    ort = _outcome("onnxruntime", 2.0, {}, rms_rel_error=1e-7, top1_agreement=1.0)
    int8 = _outcome(
        "onnxruntime(precision='int8-dynamic')",
        1.0,
        {"precision": "int8-dynamic"},
        rms_rel_error=0.017,
        top1_agreement=0.98,
    )
    slow = _outcome("inductor", 3.0, {}, rms_rel_error=1e-7, top1_agreement=1.0)
    trt = BackendOutcome(
        "tensorrt",
        "tensorrt",
        "k",
        {},
        failure=BackendFailure("tensorrt", "build", "needs a CUDA device"),
    )
    record = RunRecord("m", "cpu", {}, eager, (ort, int8, slow, trt), None, None, {}, {}, 8)
    return with_strategy(record, strategy)  # type: ignore[arg-type]


@pytest.mark.parametrize("strategy", [max_throughput, min_latency])
def test_run_points_use_the_strategy_speedup_and_the_accuracy_drop(strategy: object) -> None:
    """Speed is the row's speedup (either metric direction), error the policy's drop."""
    points, found = trade_off(_run(strategy))
    by = {p.name: p for p in points}
    assert set(by) == {"eager (baseline)", "onnxruntime", "onnxruntime(precision='int8-dynamic')",
                       "inductor"}  # fmt: skip
    assert by["eager (baseline)"].speed == 1.0 and by["eager (baseline)"].error == 0.0
    assert by["onnxruntime(precision='int8-dynamic')"].speed == pytest.approx(4.0)
    assert by["onnxruntime(precision='int8-dynamic')"].error == pytest.approx(0.02)
    assert {p.name for p in found.front} == {"onnxruntime", "onnxruntime(precision='int8-dynamic')"}
    assert found.dominated_by["inductor"] == ("onnxruntime",)


def test_table_marks_the_front_and_the_dominated() -> None:
    """The accuracy column marks the front's rows; dominated rows and failures have none."""
    record = _run()
    at = headers().index(ACCURACY_HEADER)
    cells = {row.backend: cells[at] for row, cells in table_cells(record)}
    assert cells["onnxruntime"] == "fp32 1e-07 100% · front"
    assert cells["onnxruntime(precision='int8-dynamic')"] == "int8 0.017 98% · front"
    assert cells["eager"] == "reference"
    assert cells["inductor"] == "fp32 1e-07 100%"
    assert cells["tensorrt"] == "—"
    assert front_cell(record, dataclasses.replace(backend_rows(record)[1], backend="x")) == "—"


def test_report_shows_the_front_line_and_the_winner_precision() -> None:
    """The Markdown report's accuracy section lists the front and the winner's precision."""
    record = _run()
    line = front_line(record)
    assert line is not None and line.startswith("Speed/accuracy front: onnxruntime(precision=")
    assert "; dominated by onnxruntime: eager (baseline), inductor" in line
    section = accuracy_section(record)
    assert section is not None and line in section
    assert "Precision: int8; against eager: rel RMS 0.017" in section
    assert "| int8 0.017 98% · front |" in render_markdown(record)


def test_a_candidate_named_like_the_baseline_is_its_own_point() -> None:
    """A candidate ``eager`` beside the ``eager`` baseline: two points, no name clash (the
    CLI's ``--backends eager`` makes such a run)."""
    base = _outcome("eager", 4.0, {})
    twin = _outcome("eager", 2.0, {}, rms_rel_error=0.0)
    record = with_strategy(
        RunRecord("m", "cpu", {}, base, (twin,), None, None, {}, {}, 8), max_throughput
    )
    points, found = trade_off(record)
    assert {p.name for p in points} == {"eager", "eager (baseline)"}
    assert found.front and front_line(record) is not None


@pytest.mark.parametrize("inner", [max_throughput, min_latency])
def test_a_candidate_refused_by_the_drop_bound_stays_a_point(inner: object) -> None:
    """Under within_accuracy the refused int8 keeps its place: its speedup by the stored
    strategy without the bound (4× either way), and it is still on the front."""
    record = _run(within_accuracy(0.01, inner))  # type: ignore[arg-type]
    int8 = "onnxruntime(precision='int8-dynamic')"
    assert record.selection is not None and record.selection.backend == "onnxruntime"
    points, found = trade_off(record)
    by = {p.name: p for p in points}
    assert by[int8].speed == pytest.approx(4.0) and found.on_front(int8)
