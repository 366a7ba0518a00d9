"""The CLI shows the speed/accuracy trade-off: report and reselect print the front and
the winner's precision line, offline from run.json."""

from __future__ import annotations

from pathlib import Path

import pytest

from aitune_fp.cli.main import main
from aitune_fp.core.record.run_record import dumps
from tests.core.test_pareto import _run


@pytest.fixture
def run_json(tmp_path: Path) -> Path:
    """The stored run of the Pareto tests: int8 fastest at 98 % top-1, fp32 ORT next."""
    path = tmp_path / "run.json"
    path.write_text(dumps(_run()))
    return path


def test_report_prints_the_front_and_marks_rows(
    run_json: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``report`` marks front members and names the front and the dominated in a line."""
    assert main(["report", str(run_json)]) == 0
    out = capsys.readouterr().out
    assert "fp32 1e-07 100% · front" in out and "int8 0.017 98% · front" in out
    assert "Precision: int8; against eager: rel RMS 0.017" in out
    assert "Speed/accuracy front: onnxruntime(precision='int8-dynamic') (4.00×" in out
    assert "; dominated by onnxruntime: eager (baseline), inductor" in out


def test_reselect_with_a_drop_bound_keeps_the_front_and_prints_the_new_precision(
    run_json: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Refusing int8 offline: the pick is fp32, its precision line says so, and the
    refused int8 stays on the front with its unbounded speedup: the trade given up."""
    assert main(["reselect", str(run_json), "--max-drop", "1%"]) == 0
    out = capsys.readouterr().out
    assert "Selected onnxruntime (batch size" in out
    assert "Precision: float32; against eager: rel RMS 1e-07" in out
    front = next(line for line in out.splitlines() if line.startswith("Speed/accuracy front"))
    int8 = "onnxruntime(precision='int8-dynamic')"
    assert front.startswith(f"Speed/accuracy front: {int8} (4.00×, drop 0.02, over max_drop)")
    assert "onnxruntime (2.00×, drop 0)" in front
