"""A backend defined in one file outside the package (tests/effects/onefile_backend.py)
takes part in a tune, is reported, saved and loaded, and the SDK contract sees it — with
no other file naming it."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

import aitune_fp
from aitune_fp.core.report.markdown import render_markdown
from aitune_fp.effects.backends.registry import backend_by_name, sdk_owners, source_of
from aitune_fp.effects.cache.artifacts import backend_from_config
from aitune_fp.shell.io import unsafe_perform_io
from aitune_fp.shell.tune_module import TuneOptions, TuningRun, run_tuning
from tests.effects.onefile_backend import TorchScript
from tests.shell.test_tune_module_fakes import quick

# grimp (import-linter's graph) is a test tool, not carried to a lent GPU machine, where
# `pytest -m gpu tests` still imports this module: skip it there, with the reason.
grimp = pytest.importorskip("grimp", reason="grimp (import-linter) is not installed")

from aitune_fp.testing.contracts import DeclaredSdkContract  # noqa: E402 (needs grimp)

ROOT = Path(__file__).resolve().parents[2]
BACKEND_FILE = Path(__file__).with_name("onefile_backend.py")
SOURCE = "tests.effects.onefile_backend:TorchScript"
ALONE = dataclasses.replace(quick(aitune_fp.max_throughput), validate_performance=False)
"""A quick plan with no eager baseline, so the only candidate is the one selected."""


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


def _samples() -> list[torch.Tensor]:
    torch.manual_seed(1)
    return [torch.randn(1, 8) for _ in range(3)]


def _tune(tmp_path: Path, backends: list[Any], isolation: bool = False) -> TuningRun:
    run = run_tuning(
        _model(),
        _samples(),
        ALONE,
        backends,
        TuneOptions(cache_dir=tmp_path / "cache", max_batch_size=2, isolation=isolation),
    )
    result: TuningRun = unsafe_perform_io(run.unwrap())
    return result


@pytest.fixture(scope="module")
def tuned_run(tmp_path_factory: pytest.TempPathFactory) -> TuningRun:
    """One in-process tune with the one-file backend as the only candidate."""
    return _tune(tmp_path_factory.mktemp("onefile"), [TorchScript()])


def test_it_takes_part_in_a_tune_and_is_recorded_with_its_source(tuned_run: TuningRun) -> None:
    """The candidate is profiled and selected; the record names its kind and its module."""
    record = tuned_run.record
    (outcome,) = record.candidates
    assert outcome.kind == "torchscript" and outcome.profile is not None
    assert outcome.config["source"] == SOURCE and outcome.config["computes_in"] == "float32"
    assert tuned_run.tuned is not None and tuned_run.tuned.backend == "torchscript"
    assert "torchscript" in render_markdown(record)


def test_the_environment_reports_the_versions_it_declares(tuned_run: TuningRun) -> None:
    """The run's environment lists the library its declaration names (TorchScript: torch)."""
    environment = tuned_run.record.environment
    assert environment["torchscript"] == environment["torch"] is not None


def test_it_is_saved_as_its_own_artifact_and_loaded_back(
    tuned_run: TuningRun, tmp_path: Path
) -> None:
    """Saving stores model.ts and the backend's source; load finds the loader from it and
    gives the same outputs without the module."""
    tuned = tuned_run.tuned
    assert tuned is not None
    folder = aitune_fp.save(tuned, tmp_path / "saved")
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["mode"] == "artifact" and manifest["artifact"] == "model.ts"
    assert manifest["backend"]["source"] == SOURCE
    loaded = aitune_fp.load(folder)
    x = torch.randn(2, 8)
    with torch.inference_mode():
        assert torch.allclose(loaded(x), _model()(x), atol=1e-5)
    assert isinstance(loaded.backend_config, TorchScript)
    loaded.close()


def test_it_runs_isolated_even_from_a_file_no_worker_can_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An isolated tune runs the backend in a worker also when its file was loaded under a
    name no fresh process can import (a user's script): its module travels by value."""
    spec = importlib.util.spec_from_file_location("onefile_user_copy", BACKEND_FILE)
    assert spec is not None and spec.loader is not None
    copy = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "onefile_user_copy", copy)
    spec.loader.exec_module(copy)
    run = _tune(tmp_path, [copy.TorchScript()], isolation=True)
    (outcome,) = run.record.candidates
    assert outcome.profile is not None, outcome.failure
    assert outcome.config["source"] == "onefile_user_copy:TorchScript"
    assert run.tuned is not None and run.tuned.backend == "torchscript"


def test_it_is_named_by_module_and_class_and_restored_from_a_record() -> None:
    """``module:Class`` names it on the command line; a stored source restores it."""
    backend = backend_by_name(SOURCE, check_trace=True)
    assert backend == TorchScript(check_trace=True) and source_of(backend) == SOURCE
    assert backend_from_config("torchscript", {"check_trace": True}, SOURCE) == backend
    with pytest.raises(ValueError, match="unknown backend"):
        backend_from_config("torchscript", {})


def test_the_sdk_contract_reads_its_declaration() -> None:
    """The contract, told about the module, lets only it import the SDK it declares."""
    assert sdk_owners([TorchScript])["torch.jit"] == {"tests.effects.onefile_backend"}
    graph = grimp.ImportGraph()
    for name in ("tests.effects.onefile_backend", "aitune_fp.shell.sneaky", "torch.jit"):
        graph.add_module(name, is_squashed=name == "torch.jit")
    for importer in ("tests.effects.onefile_backend", "aitune_fp.shell.sneaky"):
        graph.add_import(
            importer=importer, imported="torch.jit", line_number=7, line_contents="import torch.jit"
        )
    contract = DeclaredSdkContract(
        name="sdks",
        session_options={"root_packages": ["aitune_fp"]},
        contract_options={"backends": ["tests.effects.onefile_backend"]},
    )
    check = contract.check(graph, verbose=False)
    assert not check.kept
    assert [b["importer"] for b in check.metadata["broken"]] == ["aitune_fp.shell.sneaky"]


def test_the_shipped_sdks_are_flagged_outside_their_backends() -> None:
    """An import of onnxruntime from a module that is not the ONNX Runtime backend breaks
    the contract derived from the shipped declarations; the owner's import keeps it."""
    graph = grimp.ImportGraph()
    for name in ("aitune_fp.effects.backends.ort", "aitune_fp.cli.main", "onnxruntime"):
        graph.add_module(name, is_squashed=name == "onnxruntime")
    graph.add_import(importer="aitune_fp.effects.backends.ort", imported="onnxruntime")
    contract = DeclaredSdkContract(name="sdks", session_options={}, contract_options={})
    assert contract.check(graph, verbose=False).kept
    graph.add_import(
        importer="aitune_fp.cli.main", imported="onnxruntime", line_number=3, line_contents="x"
    )
    assert not contract.check(graph, verbose=False).kept


def test_no_other_file_names_the_backend() -> None:
    """Neither the package nor pyproject.toml names the one-file backend."""
    names = ("onefile_backend", "TorchScript(")
    files = [ROOT / "pyproject.toml", *(ROOT / "aitune_fp").rglob("*.py")]
    assert [f for f in files if any(n in f.read_text(encoding="utf-8") for n in names)] == []


def test_the_cli_names_it_by_module_and_class(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--backends tests.effects.onefile_backend:TorchScript`` profiles it and records it
    (whether it beats eager is the machine's business)."""
    from aitune_fp.cli.main import main
    from aitune_fp.core.record.run_record import loads

    model = tmp_path / "my_model.py"
    model.write_text(
        "import torch\n\ndef build():\n    torch.manual_seed(0)\n"
        "    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU())\n"
    )
    out = tmp_path / "out"
    args = ["tune", f"{model}:build", "--backends", SOURCE, "--input-shape", "2x4"]
    options = ["--max-batch-size", "2", "--no-isolation", "--no-plot", "--out", str(out)]
    assert main([*args, *options, "--cache-dir", str(tmp_path / "cache")]) == 0
    assert "torchscript" in capsys.readouterr().out
    record = loads((out / "run.json").read_text())
    assert [c.config["source"] for c in record.candidates] == [SOURCE]
    assert record.candidates[0].profile is not None
