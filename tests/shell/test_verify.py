"""The verification after selection, wired end to end with fake runners of known speeds."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
from returns.io import IOResult, IOSuccess
from returns.unsafe import unsafe_perform_io

from aitune_fp import max_throughput, min_latency
from aitune_fp.core.record.run_record import dumps, loads, with_strategy
from aitune_fp.core.records import BackendFailure
from aitune_fp.core.report.tables import decision_lines
from aitune_fp.effects.backends.base import Built, ConfigIdentity
from aitune_fp.effects.inputs.samples import Samples
from aitune_fp.effects.measure import timing
from aitune_fp.effects.measure.timing import ProfileSettings
from aitune_fp.shell.progress import ProgressEvent
from aitune_fp.shell.tune_module import TuneOptions, TuningRun, run_tuning
from tests.shell.fakes import FakeBackend
from tests.shell.test_tune_module_fakes import quick

FIXED = ProfileSettings(warmup=None)  # a fixed warm-up keeps the verification's rounds many


@dataclass(frozen=True, slots=True)
class Liar(ConfigIdentity):
    """Fast while the tune measures it, ``slow_ms`` a call once ``switch`` is set: a planted
    wrong pick (the sweep saw a speed the backend does not keep)."""

    switch: tuple[list[bool], ...] = ([],)
    slow_ms: float = 8.0
    name: str = "liar"

    def unavailable_reason(self, device: torch.device) -> str | None:
        """Always available."""
        return None

    def build(
        self, module: torch.nn.Module, samples: Samples, device: torch.device, work_dir: Path
    ) -> IOResult[Built, BackendFailure]:
        """A runner around ``module`` that turns slow when the switch is set."""

        def runner(*args: Any, **kwargs: Any) -> Any:
            if self.switch[0]:
                time.sleep(self.slow_ms / 1000.0)
            with torch.inference_mode():
                return module(*args, **kwargs)

        return IOSuccess(Built(runner))


def _tune(module: Any, samples: Any, backends: list[Any], tmp: Path, **kw: Any) -> TuningRun:
    strategy = dataclasses.replace(quick(min_latency), validate_performance=False)
    run: TuningRun = unsafe_perform_io(
        run_tuning(
            module, samples, strategy, backends, TuneOptions(cache_dir=tmp, settings=FIXED, **kw)
        )
    ).unwrap()
    return run


def test_verification_overturns_a_planted_wrong_pick(module, samples, tmp_path) -> None:
    """A backend fast in the sweep but slow when re-measured loses its pick to the runner-up,
    which the record, the decision lines and the tuned module then name; both are kept."""
    switch: list[bool] = []

    def flip(event: ProgressEvent) -> None:
        if event.kind == "stage" and event.stage == "verification":
            switch.append(True)

    backends = [Liar(switch=(switch,)), FakeBackend("honest", sleep_ms=3.0)]
    run = _tune(module, samples, backends, tmp_path, verify_seconds=1.5, progress=flip)
    v = run.record.verification
    assert v is not None and not v.holds
    assert v.winner == "liar" and v.challenger.startswith("fake") and v.selected == v.challenger
    assert v.ci95[1] < 1.0 and v.rounds >= 6 and v.seconds > 0.0
    assert run.record.selection is not None and run.record.selection.backend == v.challenger
    assert run.tuned is not None and run.tuned.backend == v.challenger
    assert any("does not hold" in line for line in decision_lines(run.record))
    x = torch.randn(3, 8)
    torch.testing.assert_close(run.tuned(x), module(x))
    run.tuned.close()


def test_verification_confirms_a_correct_pick(module, samples, tmp_path) -> None:
    """A pick that really is faster holds: same selection, a held verification recorded."""
    backends = [FakeBackend("slow", sleep_ms=8.0), FakeBackend("fast")]
    run = _tune(module, samples, backends, tmp_path, verify_seconds=1.0)
    v = run.record.verification
    assert v is not None and v.holds and v.winner == v.selected == run.record.selection.backend
    assert "fast" in v.winner and "slow" in v.challenger and v.ci95[0] > 1.0
    assert run.tuned is not None and run.tuned.backend == v.winner
    run.tuned.close()


def test_verified_records_read_back_and_reselect(module, samples, tmp_path) -> None:
    """A verified run's record reads back equal; re-selection drops the verification; a run
    without verification records null."""
    backends = [FakeBackend("slow", sleep_ms=8.0), FakeBackend("fast")]
    run = _tune(module, samples, backends, tmp_path, verify_seconds=0.5)
    again = loads(dumps(run.record))
    assert again == run.record and again.verification == run.record.verification
    assert with_strategy(again, min_latency).verification is None
    plain = _tune(module, samples, backends, tmp_path / "plain")
    assert plain.record.verification is None and '"verification": null' in dumps(plain.record)


class VirtualTime:
    """A fake ``time`` module for the profiler's call timer: ``perf_counter_ns`` reads a
    counter that only a planted runner advances, so each timed call measures exactly its
    planted cost, whatever the machine's load; anything else is the real ``time``'s."""

    def __init__(self) -> None:
        self.ns = 0

    def advance(self, ms: float) -> None:
        """A call that took ``ms``."""
        self.ns += round(ms * 1e6)

    def perf_counter_ns(self) -> int:
        """The virtual counter."""
        return self.ns

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


@dataclass(frozen=True, slots=True)
class Plateau(ConfigIdentity):
    """2 ms a call at any batch size while the tune measures it (so the largest batch size
    wins on throughput); once ``switch`` is set, calls at that largest batch size take
    ``slow_ms``: the batch size below (half as large) is then ``slow_ms / 4`` × better per
    sample. The time passes on ``clock`` (a :class:`VirtualTime`) when given, else asleep."""

    switch: tuple[list[bool], ...] = ([],)
    slow_ms: float = 6.0
    clock: tuple[VirtualTime | None, ...] = (None,)
    name: str = "plateau"

    def unavailable_reason(self, device: torch.device) -> str | None:
        """Always available."""
        return None

    def build(
        self, module: torch.nn.Module, samples: Samples, device: torch.device, work_dir: Path
    ) -> IOResult[Built, BackendFailure]:
        """A runner around ``module`` with the plateau's timing."""
        largest = [0]

        def runner(x: torch.Tensor) -> Any:
            bs = int(x.shape[0])
            if not self.switch[0]:
                largest[0] = max(largest[0], bs)
            slow = self.switch[0] and bs >= largest[0]
            cost = self.slow_ms if slow else 2.0
            clock = self.clock[0]
            if clock is None:
                time.sleep(cost / 1000.0)
            else:
                clock.advance(cost)
            with torch.inference_mode():
                return module(x)

        return IOSuccess(Built(runner))


def _plateau_run(module: Any, samples: Any, tmp_path: Path, plant: Plateau) -> TuningRun:
    """A max-throughput tune of ``plant`` alone (no race, in this process: the runner's
    memory of the sweep is the plant), the plant turning slow when the verification starts."""

    def flip(event: ProgressEvent) -> None:
        if event.kind == "stage" and event.stage == "verification":
            plant.switch[0].append(True)

    strategy = dataclasses.replace(quick(max_throughput), validate_performance=False)
    options = TuneOptions(cache_dir=tmp_path, settings=FIXED, verify_seconds=1.0, progress=flip,
                          isolation=False)  # fmt: skip
    run: TuningRun = unsafe_perform_io(
        run_tuning(module, samples, strategy, [plant], options)
    ).unwrap()
    return run


def _moved_to_the_neighbour(run: TuningRun) -> None:
    """The verification overturned the pick for the same backend one batch size down, and
    the record (which reads back), the selection and the decision lines say so."""
    v = run.record.verification
    assert v is not None and not v.holds
    assert v.selected == v.winner == v.challenger
    assert v.selected_batch_size == v.challenger_batch_size < v.winner_batch_size
    assert f"{v.winner}@{v.challenger_batch_size}" in v.samples_ms
    selection = run.record.selection
    assert selection is not None and selection.result.selected_batch_size == v.selected_batch_size
    assert loads(dumps(run.record)).verification == v
    assert any("does not hold" in line for line in decision_lines(run.record))


def test_verification_moves_a_throughput_pick_to_a_better_neighbouring_batch_size(
    module, samples, tmp_path, monkeypatch
) -> None:
    """Under max throughput the winner is re-measured at its neighbouring batch sizes too; a
    neighbour 1.5× faster per sample overturns the pick: same backend, new batch size,
    named in the record (which reads back) and in the selection's result. The calls are
    timed on a virtual clock (each measures exactly its planted cost), so the machine's
    load cannot erode the edge. (No race: the plant remembers the largest batch size one
    build measured, and a raced contender is built twice, the second time only if its cost
    still improved.)"""
    monkeypatch.setenv("AITUNE_FP_RACE", "0")
    clock = VirtualTime()
    monkeypatch.setattr(timing, "time", clock)
    run = _plateau_run(module, samples, tmp_path, Plateau(switch=([],), clock=(clock,)))
    _moved_to_the_neighbour(run)
    v = run.record.verification
    assert v is not None and v.speedup == pytest.approx(2 / 3)  # 6 ms against 2 × 2 ms


def test_the_verification_is_wired_to_the_real_clock(
    module, samples, tmp_path, monkeypatch
) -> None:
    """With real sleeps and a 5× edge per sample (20 ms at the largest batch size against
    2 ms at half of it), the real timer moves the pick to the neighbouring batch size."""
    monkeypatch.setenv("AITUNE_FP_RACE", "0")
    _moved_to_the_neighbour(
        _plateau_run(module, samples, tmp_path, Plateau(switch=([],), slow_ms=20.0))
    )
