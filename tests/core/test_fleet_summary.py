"""Fleet summary rows: selected backend, speedup, and its interval for confident strategies."""

from __future__ import annotations

from aitune_fp import Profile, confident, max_throughput, min_latency
from aitune_fp.core.fleet.index import FleetIndex, JobEntry
from aitune_fp.core.fleet.summary import fleet_row, fleet_rows, summary_json, summary_markdown
from aitune_fp.core.record.run_record import BackendOutcome, RunRecord, with_strategy
from aitune_fp.core.strategy import Strategy


def _measured(name: str, scale: float) -> BackendOutcome:
    samples = {1: [scale * (1 + 0.01 * i) for i in range(12)],
               8: [8 * scale * (1 + 0.01 * i) for i in range(12)]}  # fmt: skip
    return BackendOutcome(name, name, "k", {}, profile=Profile(name, samples))


def _record(strategy: Strategy) -> RunRecord:
    bare = RunRecord(
        model="mlp", device="cpu", strategy={}, baseline=_measured("eager", 4.0),
        candidates=(_measured("onnxruntime", 1.0),), selection=None, error=None,
        environment={}, input_spec={}, max_batch_size=8,
    )  # fmt: skip
    return with_strategy(bare, strategy)


ENTRY = JobEntry("mlp/cpu/s", "mlp", "cpu", "s", "cpu", "complete", "k", "mlp/cpu/s/run.json")


def test_plain_strategies_give_a_point_speedup() -> None:
    """A reference-rule strategy's row has the winner and its speedup, no interval."""
    row = fleet_row(ENTRY, _record(min_latency))
    assert row.backend == "onnxruntime" and row.speedup is not None and row.speedup > 3.5
    assert (row.low, row.high) == (None, None) and row.speedup_text.endswith("×")


def test_confident_strategies_give_the_interval_around_the_speedup() -> None:
    """A confident strategy's row carries its bootstrap interval, containing the point."""
    row = fleet_row(ENTRY, _record(confident(max_throughput)))
    assert row.low is not None and row.high is not None and row.speedup is not None
    assert row.low <= row.speedup <= row.high and row.confidence == 0.9
    assert "[" in row.speedup_text and "90 %" in row.speedup_text


def test_missing_runs_leave_the_status_and_message() -> None:
    """A failed job without a readable run keeps its status and message; every row shows."""
    failed = JobEntry("cnn/cpu/s", "cnn", "cpu", "s", "cpu", "failed", "k", message="boom")
    index = FleetIndex((ENTRY, failed))
    rows = fleet_rows(index, {ENTRY.job: _record(min_latency)})
    assert [(r.status, r.backend, r.message) for r in rows] == [
        ("complete", "onnxruntime", ""),
        ("failed", None, "boom"),
    ]
    assert summary_json(index, rows)["statuses"]["failed"] == 1
    page = summary_markdown(index, rows, {"cpu": "summary-cpu.png"})
    assert page.count("| mlp |") == 1 and "| failed | boom |" in page
    assert "![speedups on cpu](summary-cpu.png)" in page
