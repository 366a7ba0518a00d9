"""``tune`` and ``demo`` end to end: files written, exit codes, one-line failures."""

from __future__ import annotations

from pathlib import Path

import pytest

from aitune_fp.cli.main import main
from aitune_fp.core.record.run_record import loads
from aitune_fp.effects.machine.capabilities import NEEDS_BF16, missing

MODEL = """
import torch

def build():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))

def with_samples():
    return build(), [torch.randn(3, 4) for _ in range(2)]

def not_a_module():
    return 42

def broken():
    raise RuntimeError("weights not found")
"""


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    """A user's model file with several factories."""
    path = tmp_path / "my_model.py"
    path.write_text(MODEL)
    return path


def _tune(tmp_path: Path, target: str, *extra: str) -> int:
    return main(
        [
            "tune",
            target,
            "--backends",
            "eager",
            "--max-batch-size",
            "2",
            "--out",
            str(tmp_path / "out"),
            "--cache-dir",
            str(tmp_path / "cache"),
            *extra,
        ]
    )


def test_tune_writes_the_run_and_saves_the_module(
    model_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """tune selects, exits 0, writes run.json/report.md/plot.png and the saved module."""
    code = _tune(
        tmp_path, f"{model_file}:build", "--input-shape", "2x4", "--save", str(tmp_path / "s")
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "Selected eager" in out
    for name in ["run.json", "report.md", "plot.png"]:
        assert (tmp_path / "out" / name).is_file()
    record = loads((tmp_path / "out" / "run.json").read_text())
    assert record.model == "build" and record.selection is not None
    assert (tmp_path / "s" / "manifest.json").is_file()
    assert main(["reselect", str(tmp_path / "out" / "run.json"), "--strategy", "min-latency"]) == 0


def test_factory_samples_need_no_input_shape(
    model_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A factory returning (module, samples) needs no --input-shape."""
    assert _tune(tmp_path, f"{model_file}:with_samples", "--no-plot") == 0
    assert not (tmp_path / "out" / "plot.png").exists()
    spec = loads((tmp_path / "out" / "run.json").read_text()).input_spec
    assert "row_shapes" in spec or "tensors" in spec


@pytest.mark.parametrize(
    ("factory", "extra", "message"),
    [
        ("build", [], "pass --input-shape"),
        ("missing", ["--input-shape", "2x4"], "has no callable 'missing'"),
        ("not_a_module", ["--input-shape", "2x4"], "must return an nn.Module"),
        ("broken", ["--input-shape", "2x4"], "broken() raised RuntimeError: weights not found"),
        ("build", ["--input-shape", "2x4", "--dtype", "float32", "--dtype", "int64"], "--dtype"),
    ],
)
def test_factory_problems_are_one_line_errors(
    factory: str,
    extra: list[str],
    message: str,
    model_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Every factory problem exits 1 with one 'aitune-fp: error:' line, no traceback."""
    code = _tune(tmp_path, f"{model_file}:{factory}", *extra)
    err = capsys.readouterr().err
    assert code == 1
    lines = [line for line in err.splitlines() if line.startswith("aitune-fp: error:")]
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in err


def test_missing_model_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A model file that does not exist is named in the error."""
    assert _tune(tmp_path, f"{tmp_path}/nope.py:build", "--input-shape", "2x4") == 1
    assert "does not exist" in capsys.readouterr().err


def test_unknown_backend_is_a_usage_error(
    model_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--backends with an unknown name exits 2 listing the known ones."""
    with pytest.raises(SystemExit) as exit_info:
        main(["tune", f"{model_file}:build", "--backends", "onnx"])
    assert exit_info.value.code == 2
    assert "unknown backend 'onnx'" in capsys.readouterr().err


def test_a_run_without_selection_exits_1_but_keeps_its_files(
    model_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A budget nobody meets: exit 1 with the reason, run.json still written for reselect."""
    code = _tune(
        tmp_path,
        f"{model_file}:build",
        "--input-shape",
        "2x4",
        "--no-plot",
        "--strategy",
        "latency-budget=1us",
    )
    err = capsys.readouterr().err
    assert code == 1
    assert "aitune-fp: error: build: no backend meets the latency budget of 0.001 ms" in err
    assert loads((tmp_path / "out" / "run.json").read_text()).error is not None


@pytest.mark.heavy
def test_demo_runs_end_to_end_on_cpu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The README's demo on the MLP tries every CPU candidate of the default search (fp32
    backends, then the bf16 and int8 variants; the bf16 ones left out, named in the record,
    where this CPU has no native bf16) and writes the three files."""
    code = main(
        [
            "demo",
            "--model",
            "mlp",
            "--max-batch-size",
            "8",
            "--out",
            str(tmp_path / "demo"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--verify-seconds",  # still verified, in a shorter budget than the default 3 s
            "0.5",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    for name in ["run.json", "report.md", "plot.png"]:
        assert (tmp_path / "demo" / "mlp" / name).is_file()
    record = loads((tmp_path / "demo" / "mlp" / "run.json").read_text())
    bf16 = [
        "eager(precision='bfloat16')",
        "inductor(precision='bfloat16', freezing=True)",
        "openvino(precision='bfloat16')",
    ]
    left = [x.backend for x in record.left_out]
    assert left == ([] if missing(NEEDS_BF16) is None else bf16)
    default = [
        "inductor",
        "aot_inductor",
        "onnxruntime",
        "openvino",
        "eager(precision='bfloat16')",
        "inductor(precision='bfloat16', freezing=True)",
        "onnxruntime(precision='int8-dynamic')",
        "onnxruntime(graph_optimization='basic')",
        "openvino(precision='bfloat16')",
        "openvino(quantization='int8')",
    ]
    assert [c.backend for c in record.candidates] == [n for n in default if n not in left]
    assert "Selected" in out
