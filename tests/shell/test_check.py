"""``aitune-fp check``'s effect: a pick timed again and judged against its recorded figures.

The models sleep a fixed time per call, so a planted 20 % slowdown is a 20 % slowdown on
any machine, loaded or not."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest
import torch
from returns.unsafe import unsafe_perform_io
from torch import nn

from aitune_fp import min_latency, save
from aitune_fp.core.measure.stop_rules import fixed_steps
from aitune_fp.core.record.run_record import dumps
from aitune_fp.core.strategy import ProfilingPlan
from aitune_fp.shell.pick_check import CheckError, CheckRequest, check
from aitune_fp.shell.tune_module import TuneOptions, TuningRun, run_tuning

SLEEP_S = 0.050


class Sleepy(nn.Module):
    """A linear layer whose forward sleeps ``seconds`` first (the planted cost)."""

    def __init__(self, seconds: float = SLEEP_S) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(8, 4)
        self.seconds = seconds

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Sleep, then the layer."""
        time.sleep(self.seconds)
        return self.fc(x)  # type: ignore[no-any-return]


SAMPLES = [torch.randn(2, 8) for _ in range(2)]


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, TuningRun]:
    """One quick eager-only tune of Sleepy, its record written to run.json."""
    folder = tmp_path_factory.mktemp("check")
    plan = ProfilingPlan(call_rule=fixed_steps(warmup=2, steps=30), batching=False)
    strategy = dataclasses.replace(min_latency, plan=plan, validate_performance=False)
    options = TuneOptions(cache_dir=folder / "c", isolation=False, record_path=folder / "run.json",
                          max_batch_size=2)  # fmt: skip
    run: TuningRun = unsafe_perform_io(
        run_tuning(Sleepy().eval(), SAMPLES, strategy, ["eager"], options)
    ).unwrap()
    return folder, run


def test_an_unchanged_model_passes_its_check(tuned: tuple[Path, TuningRun]) -> None:
    """The run.json's pick rebuilt on the same model is not slower beyond the margin and
    still correct: the check passes."""
    folder, _ = tuned
    result = check(CheckRequest(folder / "run.json", Sleepy(), SAMPLES, calls=30))
    assert result.passed, result
    assert result.pick == "eager" and result.wrong is None


def test_a_planted_twenty_percent_slowdown_fails_with_a_clear_verdict(
    tuned: tuple[Path, TuningRun],
) -> None:
    """The same model sleeping 20 % longer per call fails: slower than recorded beyond the
    10 % margin, the whole interval below 1 / 1.1."""
    folder, _ = tuned
    result = check(CheckRequest(folder / "run.json", Sleepy(SLEEP_S * 1.2), SAMPLES, calls=40))
    assert not result.passed and result.speed == "loss"
    assert result.high < 1 / 1.1


def test_a_saved_pick_is_checked_against_the_run_json_it_carries(
    tuned: tuple[Path, TuningRun], tmp_path: Path
) -> None:
    """A save folder (a recipe: loaded with its module) is timed and judged against the
    record saved with it; another run given as the baseline is compared instead."""
    folder, run = tuned
    assert run.tuned is not None
    saved = save(run.tuned, tmp_path / "saved")
    module = run.tuned.source_module
    own = check(CheckRequest(saved, module, SAMPLES, calls=30))
    assert own.passed and own.recorded_ms == run.record.selection.result.samples_ms
    other = folder / "other.json"
    slower = tuple(x * 2 for x in own.recorded_ms)  # a baseline run twice as slow
    result = dataclasses.replace(run.record.selection.result, samples_ms=slower)
    selection = dataclasses.replace(run.record.selection, result=result)
    other.write_text(dumps(dataclasses.replace(run.record, selection=selection)))
    against = check(CheckRequest(saved, module, SAMPLES, baseline=other, calls=30))
    assert against.recorded_ms == slower and against.speed == "win"


def test_a_run_json_without_its_module_cannot_be_checked(tuned: tuple[Path, TuningRun]) -> None:
    """A run.json's pick is rebuilt on its module: without one the check is an error, not a
    verdict."""
    folder, _ = tuned
    with pytest.raises(CheckError, match="give the module"):
        check(CheckRequest(folder / "run.json"))


def _saved_tune(seconds: float, folder: Path) -> tuple[Path, nn.Module]:
    """A quick eager-only tune of ``Sleepy(seconds)``, saved in ``folder``."""
    plan = ProfilingPlan(call_rule=fixed_steps(warmup=5, steps=20), batching=False)
    strategy = dataclasses.replace(min_latency, plan=plan, validate_performance=False)
    module = Sleepy(seconds).eval()
    options = TuneOptions(cache_dir=folder / "c", isolation=False, record_path=folder / "r.json")
    run: TuningRun = unsafe_perform_io(
        run_tuning(module, SAMPLES, strategy, ["eager"], options)
    ).unwrap()
    assert run.tuned is not None
    return save(run.tuned, folder / "saved"), module


def test_a_save_against_a_baseline_save_is_timed_paired_in_interleaved_rounds(
    tmp_path: Path,
) -> None:
    """Against a baseline save both picks are timed now, interleaved, and judged paired:
    the release against itself passes; a build sleeping 20 % longer fails."""
    release, module = _saved_tune(SLEEP_S, tmp_path / "release")
    same = check(CheckRequest(release, module, SAMPLES, baseline=release, seconds=6.0))
    assert same.passed and len(same.now_ms) == len(same.recorded_ms) >= 2
    slower, slow_module = _saved_tune(SLEEP_S * 1.2, tmp_path / "new")
    request = CheckRequest(slower, slow_module, SAMPLES, baseline=release,
                           baseline_module=module, seconds=6.0)  # fmt: skip
    result = check(request)
    assert not result.passed and result.speed == "loss" and result.high < 1 / 1.1
