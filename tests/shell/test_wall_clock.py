"""The tune's wall account, measured: the stopwatch, and a whole run's stages adding up."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import torch
from returns.unsafe import unsafe_perform_io

from aitune_fp import ProfilingPlan, min_latency
from aitune_fp.core.measure.stop_rules import fixed_steps
from aitune_fp.shell.tune_module import TuneOptions, run_tuning
from aitune_fp.shell.wall_clock import Stopwatch, count_from_process_start, process_age
from tests.shell.fakes import FakeBackend


def test_stopwatch_laps_are_disjoint_and_the_rest_unaccounted() -> None:
    """Laps measure the time since the previous lap; what follows the last is unaccounted."""
    clock = Stopwatch()
    time.sleep(0.02)
    clock.lap("a")
    time.sleep(0.03)
    account = clock.account()
    assert [name for name, _ in account.stages] == ["a"] and not account.from_process_start
    assert 0.02 <= account.seconds("a") < account.wall
    assert account.unaccounted >= 0.03


def test_counting_from_process_start_adds_startup_once() -> None:
    """Armed, the next stopwatch starts at the process start (a ``startup`` stage); the one
    after it counts from its own start again."""
    age = process_age()
    assert age is not None and age > 0  # Linux: /proc/self/stat
    count_from_process_start()
    first, second = Stopwatch().account(), Stopwatch().account()
    assert first.from_process_start and first.seconds("startup") >= age
    assert not second.from_process_start and second.stages == ()


def test_a_run_records_a_wall_account_that_adds_up(tmp_path: Path) -> None:
    """A finished run's record holds its stages in order, and they sum to nearly the wall."""
    module = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
    plan = ProfilingPlan(call_rule=fixed_steps(warmup=1, steps=4))
    strategy = dataclasses.replace(min_latency, plan=plan)
    effect = run_tuning(
        module,
        torch.randn(4, 8),
        strategy,
        [FakeBackend("fast")],
        TuneOptions(cache_dir=tmp_path, isolation=False),
    )
    record = unsafe_perform_io(effect).unwrap().record
    wall = record.wall
    assert wall is not None and not wall.from_process_start
    names = [name for name, _ in wall.stages]
    assert names == ["setup", "max_batch_search", "plan", "candidates", "final_rounds",
                     "verification", "winner"]  # fmt: skip
    assert 0.0 <= wall.unaccounted < 0.05 * wall.wall + 0.01
