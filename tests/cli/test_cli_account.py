"""The console's table, decision lines and plot of a run decided through final rounds and a
verification show the decision account's figures."""

from __future__ import annotations

from pathlib import Path

import pytest
from returns.result import Success

from aitune_fp import Profile, confident, max_throughput
from aitune_fp.cli.main import main
from aitune_fp.core.record.run_record import dumps
from aitune_fp.core.report.account import decision_account
from aitune_fp.core.report.formats import format_metric, format_speedup
from aitune_fp.testing import Timings, decide

DRIFT = (1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99)


def test_report_prints_the_account_in_the_row_and_the_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``report`` on a run whose verification moved the pick shows the moved batch size, the
    account's figure and speedup in the selected row and lines, and backend@batch names."""
    eager = Success(Profile("eager", {1: [1.0] * 5, 16: [1.72] * 5}))
    aot = Success(Profile("aot_inductor", {1: [0.5] * 5, 32: [3.2] * 5, 64: [9.3] * 5}))
    timings = Timings(
        rounds={"eager": tuple(1.72 * k for k in DRIFT[:6]),
                "aot_inductor": tuple(3.0 * k for k in DRIFT[:6])},
        verification={("aot_inductor", 32): tuple(3.0 * k for k in DRIFT),
                      ("aot_inductor", 64): tuple(5.6 * k for k in DRIFT)},
    )  # fmt: skip
    record = decide(confident(max_throughput, resamples=200), [aot], eager, timings)
    account = decision_account(record)
    assert account is not None
    path = tmp_path / "run.json"
    path.write_text(dumps(record))
    assert main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if "aot_inductor" in line and "selected" in line)
    shown = format_metric(record, account.selected.value)
    assert shown in row and " 64 " in row and format_speedup(account.speedup) in row
    assert f"Selected aot_inductor (batch size 64): throughput {shown}" in out
    assert "aot_inductor@32 does not hold: aot_inductor@64 is faster" in out
    assert "measured in" in out and "Why below 1.00×" in out
    pytest.importorskip("matplotlib")
    assert main(["report", str(path), "--plot", str(tmp_path / "p.png")]) == 0
    assert (tmp_path / "p.png").stat().st_size > 0
