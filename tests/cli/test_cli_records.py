"""The ``report`` and ``reselect`` commands on a stored run, and usage errors."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from aitune_fp import max_throughput
from aitune_fp.cli.main import main
from aitune_fp.core.record.run_record import BackendOutcome, RunRecord, dumps, loads, with_strategy
from aitune_fp.core.records import BackendFailure, Profile
from aitune_fp.core.session.notes import BuildAheadFailed, Skipped


def _ok(name: str, latencies: dict[int, list[float]]) -> BackendOutcome:
    return BackendOutcome(name, name, "k", {}, profile=Profile(name, latencies))


@pytest.fixture
def run_json(tmp_path: Path) -> Path:
    """A stored run: 'wide' wins on throughput, 'quick' on latency, 'trt' failed to build."""
    trt = BackendOutcome(
        "trt", "tensorrt", "k", {}, failure=BackendFailure("trt", "build", "needs a GPU")
    )
    record = RunRecord(
        "mlp",
        "cpu",
        {},
        _ok("eager", {1: [5.0, 5.0], 8: [40.0]}),
        (_ok("wide", {1: [4.0], 8: [8.0]}), _ok("quick", {1: [1.0], 8: [16.0]}), trt),
        None,
        None,
        {"torch": "2.x"},
        {},
        8,
    )
    path = tmp_path / "run.json"
    path.write_text(dumps(with_strategy(record, max_throughput)))
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_report_shows_every_backend_and_the_decision(
    run_json: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """report prints one row per backend, the failure reason and the selected line."""
    code, out, _ = _run(capsys, "report", str(run_json))
    assert code == 0
    for text in ["eager (baseline)", "wide", "quick", "needs a GPU", "Selected wide"]:
        assert text in out


def test_report_shows_what_the_session_said(
    run_json: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """report ends with the run's notes, one line each, a warning marked; --markdown has
    them in its Notes section."""
    noted = replace(loads(run_json.read_text()), notes=(Skipped("trt", "not admitted"),
                    BuildAheadFailed("wide", "worker died")))  # fmt: skip
    run_json.write_text(dumps(noted))
    _, out, _ = _run(capsys, "report", str(run_json))
    assert out.splitlines()[-3:] == [
        "Notes:",
        "skipping trt: not admitted",
        "warning: building wide ahead failed (its own build follows): worker died",
    ]
    _, markdown, _ = _run(capsys, "report", str(run_json), "--markdown")
    assert "## Notes\n\n- skipping trt: not admitted\n" in markdown


def test_report_markdown_and_plot(
    run_json: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--markdown prints the Markdown report; --plot writes a PNG file."""
    png = tmp_path / "plots" / "run.png"
    code, out, err = _run(capsys, "report", str(run_json), "--markdown", "--plot", str(png))
    assert code == 0
    assert out.startswith("# aitune_fp run: mlp on cpu")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert str(png) in err


def test_report_stats_prints_the_noise_report(
    run_json: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--stats adds the decision's interval line and one statistics line per measured backend."""
    code, out, _ = _run(capsys, "report", str(run_json), "--stats")
    assert code == 0
    lines = out.splitlines()
    assert any(line.startswith("wide beats eager by the reference rule") for line in lines)
    for head in ["eager (baseline), batch size 1: median", "wide, batch size 8: median"]:
        assert any(line.startswith(head) and "speedup" in line for line in lines), head


def test_reselect_prints_the_new_selection_and_stores_it(
    run_json: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """reselect with min-latency selects the low-latency backend and can store the new run."""
    new = tmp_path / "new.json"
    code, out, _ = _run(
        capsys, "reselect", str(run_json), "--strategy", "min-latency", "--out", str(new)
    )
    assert code == 0
    assert "Selected quick (batch size 1): latency 1.000 ms" in out
    stored = loads(new.read_text())
    assert stored.selection is not None and stored.selection.backend == "quick"
    assert stored.strategy["strategy"] == "min_latency"


def test_reselect_without_a_winner_exits_1_with_one_line(
    run_json: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A budget nobody meets exits 1 with a single error line naming the budget."""
    code, _, err = _run(capsys, "reselect", str(run_json), "--strategy", "latency-budget=0.5ms")
    assert code == 1
    assert err.strip().splitlines() == [
        "aitune-fp: error: no backend meets the latency budget of 0.5 ms"
    ]


@pytest.mark.parametrize(
    "argv",
    [
        ["reselect", "RUN", "--strategy", "fastest"],
        ["reselect", "RUN"],
        ["report"],
        ["demo", "--model", "resnet"],
        ["tune", "model.py", "--input-shape", "8x3"],
        ["tune", "m.py:f", "--input-shape", "8xx3"],
        ["tune", "m.py:f", "--dtype", "float33"],
        ["demo", "--device", "tpu"],
        ["demo", "--max-batch-size", "0"],
        ["nothing"],
    ],
)
def test_bad_arguments_are_usage_errors(
    argv: list[str], run_json: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bad arguments exit 2 with argparse's usage message and no traceback."""
    with pytest.raises(SystemExit) as exit_info:
        main([str(run_json) if a == "RUN" else a for a in argv])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert "usage:" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read"),
        ("{", "not valid JSON"),
        (json.dumps({"schema_version": 7}), "schema_version 7 is not supported"),
        (json.dumps({"schema_version": 1, "model": 3}), "run record.model: expected a string"),
    ],
)
def test_unreadable_runs_exit_1_with_one_line(
    content: Any, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A missing, malformed or foreign run file is one error line, exit 1."""
    path = tmp_path / "run.json"
    if content is not None:
        path.write_text(content)
    code, _, err = _run(capsys, "report", str(path))
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("aitune-fp: error:") and message in lines[0]


def test_reselect_touches_no_model_and_no_torch(run_json: Path) -> None:
    """reselect in a fresh interpreter never imports torch (no model, no device)."""
    code = (
        "import sys; from aitune_fp.cli.main import main; "
        f"rc = main(['reselect', {str(run_json)!r}, '--strategy', 'min-latency']); "
        "print('TORCH', 'torch' in sys.modules); sys.exit(rc)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "TORCH False" in done.stdout and "Selected quick" in done.stdout


def test_python_dash_m_runs_the_cli(run_json: Path) -> None:
    """python -m aitune_fp is the same command line."""
    done = subprocess.run(
        [sys.executable, "-m", "aitune_fp", "report", str(run_json)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Selected wide" in done.stdout


@pytest.mark.parametrize(
    ("spec", "name", "winner"),
    [
        ("first-wins:max-throughput", "first_wins(max_throughput)", "wide"),
        ("one-backend=quick:max-throughput", "one_backend(max_throughput)", "quick"),
        ("min-speedup=1.5:min-latency", "with_min_speedup(min_latency)", "quick"),
        ("robust=median:max-throughput", "robust(max_throughput)", "wide"),
        ("within-memory=512:min-latency", "within_memory(min_latency)", "quick"),
        ("within-accuracy=1%:min-latency", "within_accuracy(min_latency)", "quick"),
        ("confident:min-latency-at=p90", "confident(min_latency_at)", None),
        ("latency-budget=10ms,p99", "latency_budget", "wide"),
    ],
)
def test_a_run_reselected_with_a_combinator_is_stored_and_restored(
    spec: str,
    name: str,
    winner: str | None,
    run_json: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """reselect --strategy SPEC stores the combinator; reselect and report --stats rebuild it."""
    new = tmp_path / "new.json"
    code, _, _ = _run(capsys, "reselect", str(run_json), "--strategy", spec, "--out", str(new))
    stored = loads(new.read_text())
    assert code == 0 and stored.strategy["strategy"] == name
    assert winner is None or (stored.selection is not None and stored.selection.backend == winner)
    again = tmp_path / "again.json"
    code, _, err = _run(capsys, "reselect", str(new), "--max-drop", "100%", "--out", str(again))
    assert code == 0, err
    before, after = stored.selection, loads(again.read_text()).selection
    assert (after and after.backend, after and after.result) == (
        before and before.backend,
        before and before.result,
    )
    code, _, err = _run(capsys, "report", str(new), "--stats")
    assert code == 0 and "cannot" not in err, err
