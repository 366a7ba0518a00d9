"""The precision options on the command line: reselect --max-drop offline, the accuracy
column and precision line, and usage errors for bad spellings."""

from __future__ import annotations

from pathlib import Path

import pytest

from aitune_fp import max_throughput
from aitune_fp.cli.main import main
from aitune_fp.cli.parser import build_parser
from aitune_fp.core.record.run_record import BackendOutcome, RunRecord, dumps, with_strategy
from aitune_fp.core.records import Profile


def _ok(name: str, ms: float, config: dict[str, object], top1: float | None) -> BackendOutcome:
    acc = {} if top1 is None else {"top1_agreement": top1, "rms_rel_error": 0.02, "cosine": 0.999}
    profile = Profile(name, {8: [ms, ms]}, accuracy=acc)
    return BackendOutcome(name, name.split("(")[0], "k", config, profile=profile)


@pytest.fixture
def run_json(tmp_path: Path) -> Path:
    """A stored run: int8 is fastest at 99 % top-1 agreement, fp32 ONNX Runtime next."""
    int8 = "onnxruntime(precision='int8-dynamic')"
    record = RunRecord(
        "bert",
        "cpu",
        {},
        _ok("eager", 40.0, {}, None),
        (
            _ok("onnxruntime", 20.0, {"precision": "float32"}, 1.0),
            _ok(int8, 10.0, {"precision": "int8-dynamic"}, 0.99),
        ),
        None,
        None,
        {"torch": "2.x"},
        {},
        8,
    )
    path = tmp_path / "run.json"
    path.write_text(dumps(with_strategy(record, max_throughput)))
    return path


def test_reselect_with_max_drop_changes_the_pick_from_the_recorded_figures(
    run_json: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """--max-drop 0.5% refuses the int8 pick (1 % drop) offline and picks fp32 ONNX Runtime."""
    assert main(["reselect", str(run_json), "--strategy", "max-throughput"]) == 0
    out = capsys.readouterr().out
    assert "Selected onnxruntime(precision='int8-dynamic')" in out
    assert "Precision: int8; against eager: rel RMS 0.02" in out and "top-1 99.0%" in out
    target = tmp_path / "new.json"
    assert main(["reselect", str(run_json), "--max-drop", "0.5%", "--out", str(target)]) == 0
    out = capsys.readouterr().out
    assert "Selected onnxruntime (batch size 8)" in out
    assert "accuracy drop" in out and "Precision: float32" in out
    assert '"max_drop": 0.005' in target.read_text()
    assert main(["reselect", str(run_json), "--max-drop", "2%"]) == 0
    assert "Selected onnxruntime(precision='int8-dynamic')" in capsys.readouterr().out


def test_the_table_has_an_accuracy_column(
    run_json: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """report shows each backend's precision and headline figures in its own column."""
    assert main(["report", str(run_json)]) == 0
    out = capsys.readouterr().out
    assert "precision, rel RMS, top-1" in out and "int8 0.02 99%" in out and "fp32 0.02 100%" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["demo", "--precision", "fp8"],
        ["demo", "--search", "huge"],
        ["demo", "--max-drop", "lots"],
        ["reselect", "RUN"],
    ],
)
def test_bad_precision_options_are_usage_errors(
    argv: list[str], run_json: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bad --precision/--search/--max-drop spellings exit 2 with argparse's usage."""
    with pytest.raises(SystemExit) as exit_info:
        main([str(run_json) if a == "RUN" else a for a in argv])
    assert exit_info.value.code == 2
    assert "usage:" in capsys.readouterr().err


def test_the_options_reach_the_search_value() -> None:
    """--search wide --precision bf16,int8 become Search("wide", {bfloat16, int8})."""
    from aitune_fp.cli.precision_options import search_of

    args = build_parser().parse_args(["demo", "--search", "wide", "--precision", "bf16,int8"])
    search = search_of(args)["search"]
    assert search.level == "wide" and search.precisions == frozenset({"bfloat16", "int8"})
    assert search_of(build_parser().parse_args(["demo"]))["search"].level == "default"
    loose = search_of(build_parser().parse_args(["demo", "--min-top1", "97%"]))
    assert loose["accuracy"].min_top1 == pytest.approx(0.97)
    assert "accuracy" not in search_of(build_parser().parse_args(["demo"]))


def test_the_markdown_report_has_an_accuracy_section(
    run_json: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """report --markdown lists each backend's precision and figures and the winner's line."""
    assert main(["report", str(run_json), "--markdown"]) == 0
    out = capsys.readouterr().out
    assert "## Accuracy against eager" in out
    assert "| onnxruntime(precision='int8-dynamic') | int8 | 0.02 | 0.999 | 99.0% | — |" in out
    assert "Precision: int8; against eager" in out
