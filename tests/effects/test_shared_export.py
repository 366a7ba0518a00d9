"""One ``torch.export`` per model and input spec, shared by the backends through disk."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import torch
from returns.io import IOResult
from returns.unsafe import unsafe_perform_io
from torch import nn

from aitune_fp import ProfilingPlan, min_latency
from aitune_fp.core.measure.stop_rules import fixed_steps
from aitune_fp.core.record.run_record import BackendOutcome
from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends._build_guard import BuildLog, available_build
from aitune_fp.effects.backends._export import example_batch
from aitune_fp.effects.backends._export_entries import ENTRY, PROGRAM
from aitune_fp.effects.backends._runner import prepared
from aitune_fp.effects.backends._shared_export import exported, on_program, sharing
from aitune_fp.effects.backends.base import Built, ConfigIdentity
from aitune_fp.effects.cache.artifact_cache import model_digest
from aitune_fp.effects.inputs.samples import Samples, normalise_samples
from aitune_fp.shell.tune_module import TuneOptions, TuningRun, run_tuning

CPU = torch.device("cpu")
QUICK = dataclasses.replace(
    min_latency,
    plan=ProfilingPlan(call_rule=fixed_steps(warmup=1, steps=3)),
    validate_performance=False,
)


def _mlp() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).eval()


@pytest.fixture
def mlp_and_samples() -> tuple[nn.Module, Samples]:
    """A tiny MLP and two samples of batch 2."""
    return _mlp(), normalise_samples([torch.randn(2, 4), torch.randn(2, 4)])


@pytest.fixture
def export_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts the calls of ``torch.export.export`` made in this process."""
    calls: list[int] = []
    real = torch.export.export

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(torch.export, "export", counted)
    yield calls


def _export(
    module: nn.Module, samples: Samples, folder: Path, work: Path
) -> tuple[Any, str, BuildLog]:
    log = BuildLog()
    with sharing(folder, model_digest):
        had = exported(module, example_batch(samples, CPU), samples.spec, CPU, work, log)
    return had.program, had.source, log


def test_the_second_backend_loads_the_first_ones_program(
    mlp_and_samples: tuple[nn.Module, Samples], tmp_path: Path, export_calls: list[int]
) -> None:
    """With a shared folder open, the first request exports and stores, the second loads the
    stored program (no second export) and it computes what the module computes."""
    module, samples = mlp_and_samples
    _, first, _ = _export(module, samples, tmp_path / "exports", tmp_path)
    program, second, log2 = _export(module, samples, tmp_path / "exports", tmp_path)
    assert (first, second, len(export_calls)) == ("fresh", "shared", 1)
    assert "export: shared" in log2.text() and "export" in log2.seconds
    x = torch.randn(5, 4)
    torch.testing.assert_close(program.module()(x), module(x))
    (entry,) = (tmp_path / "exports").iterdir()
    assert sorted(p.name for p in entry.iterdir()) == [ENTRY, PROGRAM]


def test_other_weights_or_another_batch_bound_is_another_program(
    mlp_and_samples: tuple[nn.Module, Samples], tmp_path: Path, export_calls: list[int]
) -> None:
    """A program is keyed by the weights and the batch bound: changing either exports anew,
    and the same module again shares."""
    module, samples = mlp_and_samples
    folder = tmp_path / "exports"
    _export(module, samples, folder, tmp_path)
    other = _mlp()
    with torch.no_grad():
        next(other.parameters()).add_(1.0)
    assert _export(other, samples, folder, tmp_path)[1] == "fresh"
    batch = example_batch(samples, CPU)
    with sharing(folder, model_digest):
        bounded = exported(module, batch, samples.spec, CPU, tmp_path, BuildLog(), bound=16)
    assert bounded.source == "fresh"
    assert _export(module, samples, folder, tmp_path)[1] == "shared"
    assert len(export_calls) == 3 and len(list(folder.iterdir())) == 3


@pytest.mark.parametrize("damage", ["flip a byte", "swap the program", "unlisted file", "index"])
def test_a_damaged_entry_is_exported_again_never_trusted(
    mlp_and_samples: tuple[nn.Module, Samples], tmp_path: Path, damage: str
) -> None:
    """A corrupt, swapped, unsealed or unreadable entry is discarded, the program exported
    afresh and stored again whole (the next request shares it)."""
    module, samples = mlp_and_samples
    folder = tmp_path / "exports"
    _export(module, samples, folder, tmp_path)
    (entry,) = folder.iterdir()
    program = entry / PROGRAM
    if damage == "flip a byte":
        data = bytearray(program.read_bytes())
        data[len(data) // 2] ^= 0xFF
        program.write_bytes(bytes(data))
    elif damage == "swap the program":
        stranger = nn.Linear(4, 3).eval()
        torch.export.save(torch.export.export(stranger, (torch.randn(2, 4),)), str(program))
    elif damage == "unlisted file":
        (entry / "extra.bin").write_bytes(b"x")
    else:
        (entry / ENTRY).write_text("{not json")
    _, source, log = _export(module, samples, folder, tmp_path)
    assert source == "fresh" and "discarding the shared program" in log.text()
    shared, again, _ = _export(module, samples, folder, tmp_path)
    assert again == "shared"
    x = torch.randn(3, 4)
    torch.testing.assert_close(shared.module()(x), module(x))


def test_without_a_shared_folder_every_backend_exports_alone(
    mlp_and_samples: tuple[nn.Module, Samples], tmp_path: Path, export_calls: list[int]
) -> None:
    """No folder open (a backend built directly): a fresh export each time, nothing written."""
    module, samples = mlp_and_samples
    log = BuildLog()
    batch = example_batch(samples, CPU)
    sources = [exported(module, batch, samples.spec, CPU, tmp_path, log).source for _ in "ab"]
    assert sources == ["fresh", "fresh"] and len(export_calls) == 2
    assert list(tmp_path.iterdir()) == []


def test_a_module_that_cannot_be_keyed_exports_unshared(
    mlp_and_samples: tuple[nn.Module, Samples], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the weights cannot be hashed, the program is exported for this backend alone
    (logged), never a build failure, and nothing is stored."""

    def unhashable(module: nn.Module) -> str:
        raise TypeError("an exotic tensor type")

    module, samples = mlp_and_samples
    log = BuildLog()
    with sharing(tmp_path / "exports", unhashable):
        had = exported(module, example_batch(samples, CPU), samples.spec, CPU, tmp_path, log)
    program, source = had.program, had.source
    assert source == "fresh" and "cannot key the program" in log.text()
    assert not (tmp_path / "exports").exists()
    x = torch.randn(3, 4)
    torch.testing.assert_close(program.module()(x), module(x))


def test_a_step_failing_on_the_shared_program_retries_on_a_fresh_export(
    mlp_and_samples: tuple[nn.Module, Samples], tmp_path: Path, export_calls: list[int]
) -> None:
    """A backend rejecting the loaded program logs it and runs once more on its own fresh
    export; a failure on a fresh program is raised (the backend's own failure)."""
    module, samples = mlp_and_samples
    batch, spec, folder = example_batch(samples, CPU), samples.spec, tmp_path / "exports"
    seen: list[str] = []

    def picky(program: Any, _shared: object = None) -> str:
        seen.append("call")
        if len(seen) == 1:
            raise RuntimeError("this compiler rejects the program")
        return "compiled"

    with sharing(folder, model_digest):
        exported(module, batch, spec, CPU, tmp_path, BuildLog())
        log = BuildLog()
        result = on_program(module, batch, spec, CPU, tmp_path, log, picky)
        assert result == ("compiled", "fresh after shared failed")
        assert "retrying on a fresh export of its own" in log.text()
        assert len(export_calls) == 2

        def never(program: Any, _shared: object = None) -> str:
            raise RuntimeError("rejects every program")

        with pytest.raises(RuntimeError, match="rejects every program"):
            on_program(module, batch, spec, CPU, tmp_path, BuildLog(), never)
    with pytest.raises(RuntimeError, match="rejects every program"):  # fresh: no retry
        on_program(module, batch, spec, CPU, tmp_path, BuildLog(), never)


@dataclass(frozen=True, slots=True)
class RejectsPrograms(ConfigIdentity):
    """A test backend consuming the shared program whose 'compiler' rejects every program."""

    name: str = field(default="rejects_programs", init=False)

    def unavailable_reason(self, device: torch.device) -> str | None:
        """Runs anywhere."""
        return None

    def build(
        self, module: nn.Module, samples: Samples, device: torch.device, work_dir: Path
    ) -> IOResult[Built, BackendFailure]:
        """Take the shared program and fail on it."""

        def build(log: BuildLog) -> Built:
            model = prepared(module, device)
            batch = example_batch(samples, device)

            def reject(program: Any, _shared: object = None) -> Built:
                raise RuntimeError(f"cannot compile {len(program.graph.nodes)} nodes")

            built, _ = on_program(model, batch, samples.spec, device, work_dir, log, reject)
            return built

        return available_build(self, device, work_dir, build)


def _tune(backends: list[Any], cache: Path, *, isolation: bool) -> TuningRun:
    run: TuningRun = unsafe_perform_io(
        run_tuning(
            _mlp(),
            [torch.randn(2, 4) for _ in range(2)],
            QUICK,
            backends,
            TuneOptions(cache_dir=cache, max_batch_size=2, isolation=isolation),
        ).unwrap()
    )
    return run


def _build_logs(cache: Path) -> dict[str, str]:
    """Every backend's build log in the (single) run folder under ``cache``, by folder."""
    (run,) = (cache / "runs").iterdir()
    return {d.name: (d / "build.log").read_text() for d in run.iterdir() if d.is_dir()}


def _outcomes(run: TuningRun) -> dict[str, BackendOutcome]:
    return {c.backend: c for c in run.record.candidates}


@pytest.mark.heavy
def test_one_export_serves_aot_inductor_and_onnxruntime(
    tmp_path: Path, export_calls: list[int]
) -> None:
    """In one tune (in-process), AOTInductor and ONNX Runtime are built from one export: one
    torch.export call, the second backend's log says shared, both profile."""
    run = _tune(["aot_inductor", "onnxruntime"], tmp_path / "cache", isolation=False)
    outcomes = _outcomes(run)
    assert {n: o.status for n, o in outcomes.items()} == {
        "aot_inductor": "profiled",
        "onnxruntime": "profiled",
    }
    assert len(export_calls) == 1
    logs = _build_logs(tmp_path / "cache")
    assert "export: fresh, program" in logs["aot_inductor"]
    assert "export: shared, program" in logs["onnxruntime"]
    assert outcomes["onnxruntime"].stage_seconds["export"] >= 0


@pytest.mark.heavy
def test_a_backend_failing_on_the_shared_program_fails_alone(
    tmp_path: Path, export_calls: list[int]
) -> None:
    """A backend that rejects the shared program (and its own fresh retry) fails at build
    with its own reason; AOTInductor before it and ONNX Runtime after it still succeed on
    the one shared program."""
    run = _tune(
        ["aot_inductor", RejectsPrograms(), "onnxruntime"], tmp_path / "cache", isolation=False
    )
    outcomes = _outcomes(run)
    rejected = outcomes["rejects_programs"]
    assert rejected.failure is not None
    assert rejected.failure.stage == "build"
    assert "cannot compile" in rejected.failure.message
    assert outcomes["aot_inductor"].status == "profiled"
    assert outcomes["onnxruntime"].status == "profiled"
    logs = _build_logs(tmp_path / "cache")
    assert "retrying on a fresh export of its own" in logs["rejects_programs"]
    assert "export: shared, program" in logs["onnxruntime"]
    assert len(export_calls) == 2  # the first backend's, and the rejecting one's retry


@pytest.mark.heavy
def test_the_program_is_shared_across_isolated_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With isolation on, each backend builds in its own worker process and the second one
    still loads the first one's program from disk (the sweep's builds: none ahead)."""
    monkeypatch.setenv("AITUNE_FP_PREBUILD", "0")
    run = _tune(["aot_inductor", "onnxruntime"], tmp_path / "cache", isolation=True)
    outcomes = _outcomes(run)
    assert outcomes["aot_inductor"].status == "profiled"
    assert outcomes["onnxruntime"].status == "profiled"
    logs = _build_logs(tmp_path / "cache")
    assert "export: fresh, program" in logs["aot_inductor"]
    assert "export: shared, program" in logs["onnxruntime"]
    entries = list((tmp_path / "cache" / "exports").iterdir())
    entries = [e for e in entries if e.is_dir()]
    programs = [e for e in entries if ".onnx-" not in e.name]
    assert len(programs) == 1 and len(entries) == 2  # the program, and its ONNX translation
    record = json.loads((programs[0] / ENTRY).read_text())
    assert set(record["files"]) == {PROGRAM}
