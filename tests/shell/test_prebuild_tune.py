"""Builds ahead in real isolated tunes of a tiny model: run.json records the Prebuilt, the
sweep's build of a candidate built ahead finds its artifact in the cache, a build ahead
that really segfaults is only a warning while the sweep records the real failure, the
record replays, and nothing else runs until every build ahead has ended."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest
import torch
from returns.io import IOFailure, IOResult
from returns.unsafe import unsafe_perform_io

from aitune_fp.core.record.run_record import RunRecord, loads
from aitune_fp.core.records import BackendFailure
from aitune_fp.core.session import Prebuild, Prebuilt, Profiled
from aitune_fp.core.session.recorded import recorded_plan, replay_record
from aitune_fp.core.strategies import max_throughput
from aitune_fp.effects.backends.base import Built, ConfigIdentity, Declaration
from aitune_fp.effects.backends.inductor import InductorJIT
from aitune_fp.effects.inputs.samples import Samples
from aitune_fp.shell import prebuild
from aitune_fp.shell.tune_module import TuneOptions, TuningRun, run_tuning
from tests.faults.faulty import do


@dataclass(frozen=True, slots=True)
class CrashingJIT(InductorJIT):
    """A just-in-time backend (so it is built ahead) whose build really does ``fault``."""

    fault: str = "segfault"
    name: str = field(default="crashing_jit", init=False)

    def build(
        self, module: torch.nn.Module, samples: Samples, device: torch.device, work_dir: Path
    ) -> IOResult[Built, BackendFailure]:
        """The fault, in the build."""
        do(self.fault)
        raise AssertionError("unreachable")  # pragma: no cover


@dataclass(frozen=True, slots=True)
class KernelTimer(ConfigIdentity):
    """A one-file backend whose artifacts load back (so it fills the artifact cache) but
    whose build, it declares, times kernels; its build fails at once, so it costs nothing."""

    declaration: ClassVar[Declaration] = Declaration(
        loader=lambda _config, _request: Built(lambda *a: a), times_kernels=True
    )
    name: str = "kernel_timer"

    def build(
        self, module: torch.nn.Module, samples: Samples, device: torch.device, work_dir: Path
    ) -> IOResult[Built, BackendFailure]:
        """A recorded build failure."""
        return IOFailure(BackendFailure(self.describe(), "build", "a test backend builds nothing"))


def _tune(folder: Path, backends: list[Any], name: str) -> RunRecord:
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    tuned = run_tuning(
        module.eval(),
        torch.randn(2, 8),
        max_throughput,
        backends,
        TuneOptions(
            cache_dir=folder / "cache", max_batch_size=4, record_path=folder / f"{name}.json"
        ),
    )
    assert isinstance(unsafe_perform_io(tuned).unwrap(), TuningRun)
    return loads((folder / f"{name}.json").read_text())


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The healthy tune's folder and cache."""
    return tmp_path_factory.mktemp("ahead")


@pytest.fixture(scope="module")
def healthy(folder: Path) -> RunRecord:
    """A cold isolated tune of Inductor and ONNX Runtime, two builds at once."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AITUNE_FP_PREBUILD", "2")
        return _tune(folder, ["inductor", "onnxruntime"], "healthy")


def test_the_record_keeps_the_prebuilt_and_the_sweep_loads_from_the_cache(
    healthy: RunRecord, folder: Path
) -> None:
    """The first event is a Prebuilt with no failure, the record keeps what could be built
    ahead, the sweep still builds and profiles both, and ONNX Runtime's sweep build loaded
    the artifact built ahead (a cached copy, no export) from a folder left clean."""
    first = healthy.events[0]
    assert isinstance(first, Prebuilt) and not first.failures and first.seconds > 0
    assert dict(healthy.options["prebuild"]) == {"names": ("inductor", "onnxruntime"),
                                                  "parallel": 2}  # fmt: skip
    built = [e.name for e in healthy.events if isinstance(e, Profiled)]  # a raced one twice
    assert list(dict.fromkeys(built)) == ["eager", "inductor", "onnxruntime"]
    ort = next(o for o in healthy.outcomes if o.backend == "onnxruntime")
    assert ort.artifact is not None and "cached-" in Path(ort.artifact).parent.name
    log = (Path(ort.artifact).parent.parent / "build.log").read_text()
    assert "loading" in log and "export" not in log
    assert not list(folder.rglob(".ahead"))
    stages = [s for s, _ in healthy.wall.stages]  # type: ignore[union-attr]
    assert stages[stages.index("prebuild") + 1] == "candidates"


def test_a_run_that_built_ahead_replays_to_its_own_commands(healthy: RunRecord) -> None:
    """The record's plan builds the same names ahead, and its replay asks for the Prebuild
    first and selects what the run selected, with no divergence."""
    plan = recorded_plan(healthy)
    assert (plan.ahead, plan.parallel) == (("inductor", "onnxruntime"), 2)
    again = replay_record(healthy)
    assert again.commands[0] == Prebuild(("inductor", "onnxruntime"), 2)
    assert healthy.selection is not None and again.diverged is None
    assert again.done.selection.unwrap().backend == healthy.selection.backend


def test_a_warm_tune_builds_nothing_ahead(healthy: RunRecord, folder: Path) -> None:
    """Tuned again with the same cache, nothing is built ahead (not even Inductor, whose
    own cache is warm) and ONNX Runtime's artifact is the cached one: a decision cache hit
    has no build-ahead stage on its own wall (its record is the stored run's whole); a full
    re-tune (a stored decision that does not stand here) plans no build ahead."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AITUNE_FP_PREBUILD", "2")
        again = _tune(folder, ["inductor", "onnxruntime"], "warm")
    assert again.wall is not None and "prebuild" not in [s for s, _ in again.wall.stages]
    if again.provenance.cache_hit:
        assert again.events == healthy.events
    else:
        assert not any(isinstance(e, Prebuilt) for e in again.events)
        assert dict(again.options["prebuild"])["names"] == ()
    ort = next(o for o in again.outcomes if o.backend == "onnxruntime")
    assert ort.artifact is not None and "cached-" in Path(ort.artifact).parent.name


def test_a_segfault_while_building_ahead_is_a_warning_and_the_sweep_records_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backend whose build segfaults fails its build ahead (a warning naming SIGSEGV; the
    cache is cold, so ONNX Runtime is built ahead beside it); the
    sweep builds it again in its own worker and records that failure at build, and the
    healthy candidate is still built and profiled. A one-file backend that declares it
    times kernels is never built ahead, though its artifact would fill the cold cache."""
    monkeypatch.setenv("AITUNE_FP_PREBUILD", "2")
    with caplog.at_level(logging.WARNING, logger="aitune_fp"):
        record = _tune(tmp_path, [CrashingJIT(), "onnxruntime", KernelTimer()], "crashing")
    assert dict(record.options["prebuild"])["names"] == ("crashing_jit", "onnxruntime")
    timer = next(o for o in record.outcomes if o.backend == "kernel_timer")
    assert timer.failure is not None and timer.failure.stage == "build"
    first = record.events[0]
    assert isinstance(first, Prebuilt) and set(first.failures) == {"crashing_jit"}
    assert "SIGSEGV" in first.failures["crashing_jit"]
    assert any("crashing_jit ahead failed" in r.getMessage() for r in caplog.records)
    failed = next(o for o in record.outcomes if o.backend == "crashing_jit")
    assert failed.failure is not None and failed.failure.stage == "build"
    assert "worker died with SIGSEGV during build" in failed.failure.message
    ort = next(o for o in record.outcomes if o.backend == "onnxruntime")
    assert ort.failure is None and ort.profile is not None and record.selection is not None


def test_builds_ahead_run_at_most_parallel_at_once_and_all_end_before_the_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Three jobs two at a time overlap (two ran at once) but never three, and every job
    had ended when ``prebuilt`` answered; a failed job is in the answer."""
    lock, running, seen, ended = threading.Lock(), [0], [0], []

    def fake_run(payload: bytes, _timeouts: object, _keep_as: object = None) -> str | None:
        with lock:
            running[0] += 1
            seen[0] = max(seen[0], running[0])
        time.sleep(0.3)
        with lock:
            running[0] -= 1
            ended.append(time.monotonic())
        return "boom" if payload == b"b" else None

    monkeypatch.setattr(prebuild, "run_prebuild", fake_run)
    monkeypatch.setattr(prebuild, "prebuild_payload", lambda job: job.name.encode())
    monkeypatch.setattr(prebuild, "_job", lambda _setup, _backend, name: _Named(name))
    setup = _QuietSetup()
    answer = prebuild.prebuilt(setup, Prebuild(("a", "b", "c"), 2), {"a": 0, "b": 0, "c": 0})  # type: ignore[arg-type, dict-item]
    answered = time.monotonic()
    assert seen[0] == 2 and len(ended) == 3 and max(ended) <= answered
    assert dict(answer.failures) == {"b": "boom"}


@dataclass(frozen=True)
class _Named:
    name: str
    work_dir: Path = Path("/nonexistent/aitune-ahead")
    keep: bool = False


class _QuietSetup:
    timeouts = None

    def emit(self, *_args: object, **_fields: object) -> None:
        """Nothing to show."""
