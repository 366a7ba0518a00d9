"""The shell's wiring, checked with fake backends (fast, no compilers)."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

import pytest
import torch
from returns.io import IOResult
from returns.unsafe import unsafe_perform_io

from aitune_fp import (
    ProfilingPlan,
    Strategy,
    TuneError,
    latency_budget,
    max_throughput,
    min_latency,
)
from aitune_fp.core.measure.stop_rules import fixed_steps
from aitune_fp.shell.progress import ProgressEvent
from aitune_fp.shell.tune_module import TuneOptions, TuningRun, run_tuning, tune_module
from aitune_fp.shell.tuned_module import TunedModule
from tests.shell.fakes import FakeBackend

QUICK = ProfilingPlan(call_rule=fixed_steps(warmup=1, steps=4))


def quick(strategy: Strategy) -> Strategy:
    """The strategy with a short profiling plan (keeps its batching choice)."""
    return dataclasses.replace(
        strategy,
        plan=dataclasses.replace(
            QUICK, batching=strategy.plan.batching, sweep_rule=strategy.plan.sweep_rule
        ),
    )


def _ok(io: IOResult[TunedModule, TuneError]) -> TunedModule:
    return unsafe_perform_io(io).unwrap()


def _run(*head: Any, **options: Any) -> TuningRun:
    """``run_tuning(*head, TuneOptions(**options))``, performed, expecting a run."""
    run: TuningRun = unsafe_perform_io(run_tuning(*head, TuneOptions(**options))).unwrap()
    return run


def test_faster_backend_wins_and_runs_like_eager(module, samples, tmp_path: Path) -> None:
    """The fastest correct backend is selected and the tuned module matches eager outputs."""
    backends = [FakeBackend("slow", sleep_ms=3.0), FakeBackend("fast")]
    strategy = dataclasses.replace(quick(min_latency), validate_performance=False)
    tuned = _ok(tune_module(module, samples, strategy, backends, cache_dir=tmp_path))
    assert "fast" in tuned.backend and not tuned.selection.fell_back_to_baseline
    x = torch.randn(5, 8)
    torch.testing.assert_close(tuned(x), module(x))


def test_baseline_selected_when_no_candidate_beats_it(module, samples, tmp_path) -> None:
    """With every candidate slower than eager the baseline is selected and still runs."""
    # 20 ms a call: far beyond any scheduler stall eager can suffer on a loaded machine
    backends = [FakeBackend("slow", sleep_ms=20.0)]
    tuned = _ok(tune_module(module, samples, quick(min_latency), backends, cache_dir=tmp_path))
    assert tuned.selection.fell_back_to_baseline and tuned.backend == "eager"
    x = torch.randn(2, 8)
    torch.testing.assert_close(tuned(x), module(x))


@pytest.mark.parametrize(
    ("fake", "stage"),
    [
        (FakeBackend("wrong", scale=1.5), "validate"),
        (FakeBackend("nan", nan=True), "validate"),
        (FakeBackend("broken", fail_build=True), "build"),
        (FakeBackend("faulty", raise_above=0), "validate"),
    ],
)
def test_faulty_backend_is_a_recorded_failure_while_others_compete(
    module, samples, tmp_path, fake: FakeBackend, stage: str
) -> None:
    """A faulty candidate ends as a failure of its stage and a good one still wins."""
    backends = [fake, FakeBackend("good")]
    run = _run(
        module, samples, quick(max_throughput), backends, cache_dir=tmp_path, max_batch_size=4
    )
    assert run.tuned is not None
    failures = {f.backend: f for f in run.tuned.selection.failures}
    assert failures[fake.describe()].stage == stage
    record = run.record
    failed = next(c for c in record.candidates if c.backend == fake.describe())
    assert failed.failure is not None and failed.profile is None


def test_profiling_fault_after_validation_is_a_profile_failure(module, samples, tmp_path) -> None:
    """A runner that passes validation but raises while profiled fails at stage profile."""
    # validation's 9 calls: 3 samples, batch sizes 1 and 4, 4 fresh draws (3 rows: too few
    # to hold any out); the fault comes after them
    backends = [FakeBackend("flaky", raise_after_calls=10), FakeBackend("good")]
    run = _run(
        module, samples, quick(max_throughput), backends, cache_dir=tmp_path, max_batch_size=4
    )
    assert run.tuned is not None
    flaky = next(c for c in run.record.candidates if "flaky" in c.backend)
    assert flaky.failure is not None and flaky.failure.stage == "profile"
    assert "fake fault" in flaky.failure.message


def test_validation_failure_writes_the_full_error_to_build_log(module, samples, tmp_path) -> None:
    """A failed backend's work dir keeps a build.log with the failure."""
    fake = FakeBackend("wrong", scale=3.0)
    _run(module, samples, quick(min_latency), [fake], cache_dir=tmp_path)
    logs = list(tmp_path.glob("runs/*/fake*/build.log"))
    assert logs and "validate" in logs[0].read_text()


def test_bad_samples_are_a_tune_error(module, tmp_path) -> None:
    """Empty samples give a TuneError before anything is built."""
    error = unsafe_perform_io(tune_module(module, [], cache_dir=tmp_path)).failure()
    assert "no samples" in error.message


def test_cuda_without_a_gpu_is_a_tune_error(module, samples, tmp_path) -> None:
    """Asking for CUDA on a machine without it is a clear TuneError."""
    if torch.cuda.is_available():
        pytest.skip("needs a machine without a CUDA device")
    error = unsafe_perform_io(tune_module(module, samples, device="cuda", cache_dir=tmp_path))
    assert "needs CUDA" in error.failure().message


def test_latency_budget_nobody_meets_is_a_failure_naming_it(module, samples, tmp_path) -> None:
    """A budget no candidate meets fails naming the budget, and the run is still recorded."""
    strategy = quick(latency_budget(0.0001))
    run = _run(
        module,
        samples,
        strategy,
        [FakeBackend("slow", sleep_ms=1.0)],
        cache_dir=tmp_path,
        max_batch_size=2,
    )
    assert run.tuned is None and run.record.error is not None
    assert "0.0001 ms" in run.record.error.message


def test_no_baseline_when_performance_validation_is_off(module, samples, tmp_path) -> None:
    """With validation off the baseline is not profiled and the best candidate wins anyway."""
    strategy = dataclasses.replace(quick(min_latency), validate_performance=False)
    run = _run(module, samples, strategy, [FakeBackend("slow", sleep_ms=1.0)], cache_dir=tmp_path)
    assert run.record.baseline is None
    assert run.tuned is not None and not run.tuned.selection.fell_back_to_baseline


def test_progress_events_cover_every_step(module, samples, tmp_path) -> None:
    """The progress sink sees plan, backend start, stages, batch sizes, done and selected."""
    events: list[ProgressEvent] = []
    _run(
        module,
        samples,
        quick(max_throughput),
        [FakeBackend("a")],
        cache_dir=tmp_path,
        max_batch_size=2,
        progress=events.append,
    )
    kinds = {e.kind for e in events}
    assert kinds == {"plan", "backend_start", "stage", "batch_size", "backend_done", "selected"}
    stages = {e.stage for e in events if e.kind == "stage"}
    assert stages == {"preload", "build", "validate", "profile"}


def test_log_has_one_line_per_step(module, samples, tmp_path, caplog) -> None:
    """The aitune_fp logger states building, profiled and selected."""
    with caplog.at_level(logging.INFO, logger="aitune_fp"):
        _run(module, samples, quick(min_latency), [FakeBackend("a")], cache_dir=tmp_path)
    text = caplog.text
    assert "building fake(label='a')" in text and "profiled" in text and "Selected" in text


def test_record_keeps_raw_samples_and_stage_times(module, samples, tmp_path) -> None:
    """The run record keeps every raw sample and the wall time of each stage, the isolated
    worker's start included (a positive number of seconds)."""
    run = _run(
        module,
        samples,
        quick(max_throughput),
        [FakeBackend("a")],
        cache_dir=tmp_path,
        max_batch_size=4,
    )
    cand = run.record.candidates[0]
    assert cand.profile is not None
    assert all(len(cand.profile.samples(bs)) == 4 for bs in cand.profile.batch_sizes)
    assert set(cand.stage_seconds) == {"build", "validate", "profile", "worker_start"}
    assert cand.stage_seconds["worker_start"] > 0.0
    assert cand.stopped_early is None
    assert run.record.baseline is not None and run.record.max_batch_size == 4
