"""``--verify-seconds`` on ``tune`` and ``demo``: parsed, defaulted, passed to the tuning."""

from __future__ import annotations

from pathlib import Path

import pytest

from aitune_fp.cli.main import main
from aitune_fp.cli.parser import DEFAULT_VERIFY_SECONDS, build_parser
from aitune_fp.core.record.run_record import loads


@pytest.mark.parametrize("command", [["demo"], ["tune", "m.py:build"]])
def test_verify_seconds_defaults_to_a_few_seconds(command: list[str]) -> None:
    """Without the flag tune and demo verify for the default (a few seconds, not off)."""
    args = build_parser().parse_args(command)
    assert args.verify_seconds == DEFAULT_VERIFY_SECONDS and 1.0 <= DEFAULT_VERIFY_SECONDS <= 10.0


@pytest.mark.parametrize("command", [["demo"], ["tune", "m.py:build"]])
@pytest.mark.parametrize(("text", "value"), [("2.5", 2.5), ("0", 0.0), ("10", 10.0)])
def test_verify_seconds_parses_numbers(command: list[str], text: str, value: float) -> None:
    """--verify-seconds N takes any finite number of seconds >= 0 (0 turns it off)."""
    assert build_parser().parse_args([*command, "--verify-seconds", text]).verify_seconds == value


@pytest.mark.parametrize("text", ["-1", "nan", "inf", "soon"])
def test_verify_seconds_rejects_bad_values(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A negative, non-finite or non-numeric value is a usage error (exit 2) naming the flag."""
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["demo", "--verify-seconds", text])
    assert exit_info.value.code == 2 and "--verify-seconds" in capsys.readouterr().err


def test_tune_records_the_verification(tmp_path: Path) -> None:
    """``tune --verify-seconds`` records a verification object in run.json; 0 records null."""
    factory = tmp_path / "model.py"
    factory.write_text(
        "import torch\ndef build():\n    return torch.nn.Linear(4, 2), torch.randn(2, 4)\n"
    )
    common = [
        *("tune", f"{factory}:build", "--backends", "eager,eager", "--max-batch-size", "2"),
        *("--strategy", "min-latency", "--no-plot", "--cache-dir", str(tmp_path / "c")),
    ]
    assert main([*common, "--out", str(tmp_path / "on"), "--verify-seconds", "0.5"]) == 0
    record = loads((tmp_path / "on" / "run.json").read_text())
    assert record.verification is not None and record.verification.seconds > 0.0
    assert main([*common, "--out", str(tmp_path / "off"), "--verify-seconds", "0"]) == 0
    assert loads((tmp_path / "off" / "run.json").read_text()).verification is None
