"""``aitune-fp check`` from the command line: the verdict, the exit code and the CI files."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from pathlib import Path

import pytest
from returns.unsafe import unsafe_perform_io

from aitune_fp import min_latency
from aitune_fp.cli.main import main
from aitune_fp.core.measure.stop_rules import fixed_steps
from aitune_fp.core.strategy import ProfilingPlan
from aitune_fp.shell.tune_module import TuneOptions, run_tuning

MODEL = textwrap.dedent(
    """
    import time
    import torch

    class Sleepy(torch.nn.Module):
        def __init__(self, seconds):
            super().__init__()
            torch.manual_seed(0)
            self.fc = torch.nn.Linear(8, 4)
            self.seconds = seconds

        def forward(self, x):
            time.sleep(self.seconds)
            return self.fc(x)

    def samples():
        g = torch.Generator().manual_seed(1)
        return [torch.randn(2, 8, generator=g) for _ in range(2)]

    def same():
        return Sleepy(0.050), samples()

    def slower():
        return Sleepy(0.060), samples()  # a planted 20 % slowdown
    """
)


@pytest.fixture(scope="module")
def run_json(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The factory file and the run.json of one eager-only tune of its ``same`` model."""
    folder = tmp_path_factory.mktemp("cli-check")
    factory = folder / "model.py"
    factory.write_text(MODEL)
    from importlib.util import module_from_spec, spec_from_file_location

    spec = spec_from_file_location("cli_check_model", factory)
    assert spec is not None and spec.loader is not None
    made = module_from_spec(spec)
    spec.loader.exec_module(made)
    module, samples = made.same()
    plan = ProfilingPlan(call_rule=fixed_steps(warmup=2, steps=30), batching=False)
    strategy = dataclasses.replace(min_latency, plan=plan, validate_performance=False)
    options = TuneOptions(cache_dir=folder / "c", isolation=False, record_path=folder / "run.json")
    unsafe_perform_io(run_tuning(module.eval(), samples, strategy, ["eager"], options)).unwrap()
    return factory, folder / "run.json"


def test_an_unchanged_model_passes_with_exit_0_and_a_passing_junit_case(
    run_json: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same model: exit 0, the verdict line says passed, JUnit has no failure, the JSON
    holds the figures."""
    factory, record = run_json
    junit, figures = tmp_path / "check.xml", tmp_path / "check.json"
    argv = ["check", str(record), "--module", f"{factory}:same", "--calls", "30",
            "--junit", str(junit), "--json", str(figures)]  # fmt: skip
    assert main(argv) == 0
    assert capsys.readouterr().out.startswith("check passed: eager at batch 1")
    assert 'failures="0"' in junit.read_text() and "<failure" not in junit.read_text()
    doc = json.loads(figures.read_text())
    assert doc["passed"] and len(doc["now_ms"]) == 30 and doc["recorded_ms"]


def test_a_planted_slowdown_exits_1_with_a_failed_verdict_and_junit_failure(
    run_json: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The model sleeping 20 % longer: exit 1, the line says FAILED and slower beyond the
    margin, the JUnit case carries a failure."""
    factory, record = run_json
    junit = tmp_path / "check.xml"
    argv = ["check", str(record), "--module", f"{factory}:slower", "--calls", "30",
            "--margin", "10%", "--junit", str(junit)]  # fmt: skip
    assert main(argv) == 1
    line = capsys.readouterr().out
    assert line.startswith("check FAILED: eager at batch 1 is slower than recorded")
    assert "<failure message=" in junit.read_text()


def test_a_folder_without_a_save_is_an_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A target that is no save: exit 1 and one error line, no verdict."""
    assert main(["check", str(tmp_path)]) == 1
    assert "error:" in capsys.readouterr().err
