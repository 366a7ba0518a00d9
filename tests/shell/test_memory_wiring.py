"""Peak memory through the shell: measured per backend, recorded, reported, and budgeted."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
from returns.io import IOResult, IOSuccess
from returns.unsafe import unsafe_perform_io

from aitune_fp import ProfilingPlan, Strategy, max_throughput, min_latency, within_memory
from aitune_fp.core.measure.stop_rules import fixed_steps
from aitune_fp.core.record.run_record import dumps as dump_record
from aitune_fp.core.record.run_record import loads
from aitune_fp.core.records import BackendFailure
from aitune_fp.core.report.columns import headers
from aitune_fp.core.report.markdown import backends_section, render_markdown
from aitune_fp.effects.backends.base import Built, ConfigIdentity
from aitune_fp.effects.inputs.samples import Samples
from aitune_fp.effects.measure import memory
from aitune_fp.shell.tune_module import TuneOptions, TuningRun, run_tuning
from tests.shell.fakes import FakeBackend

MIB = 1024 * 1024


needs_proc = pytest.mark.skipif(
    not (memory.reset_resident_peak() and memory.PROC_STATUS.exists()),
    reason="needs /proc/self/clear_refs (Linux >= 4.0)",
)


@dataclass(frozen=True, slots=True)
class HogBackend(ConfigIdentity):
    """Runs the eager module but holds ``hold_mib`` MiB of its own, like a runtime that
    copies the weights (a fake, not a mock)."""

    hold_mib: int = 200
    name: str = "hog"

    def unavailable_reason(self, device: torch.device) -> str | None:
        """Always available."""
        return None

    def build(
        self, module: torch.nn.Module, samples: Samples, device: torch.device, work_dir: Path
    ) -> IOResult[Built, BackendFailure]:
        """Allocate and touch the held block, then wrap ``module``."""
        block = torch.ones(self.hold_mib * MIB // 4)
        held = [block]

        def runner(*args: Any, **kwargs: Any) -> Any:
            with torch.inference_mode():
                return module(*args, **kwargs)

        return IOSuccess(Built(runner, close=held.clear))


def quick(strategy: Strategy) -> Strategy:
    """The strategy with 1 warm-up and 4 timed calls per batch size."""
    plan = ProfilingPlan(
        call_rule=fixed_steps(warmup=1, steps=4),
        batching=strategy.plan.batching,
        sweep_rule=strategy.plan.sweep_rule,
    )
    return dataclasses.replace(strategy, plan=plan)


def _run(*head: Any, **options: Any) -> TuningRun:
    """``run_tuning(*head, TuneOptions(**options))``, performed, expecting a run."""
    run: TuningRun = unsafe_perform_io(run_tuning(*head, TuneOptions(**options))).unwrap()
    return run


@needs_proc
def test_every_profiled_backend_records_its_peak_memory(module, samples, tmp_path) -> None:
    """The baseline and every profiled candidate carry a peak_memory_mb >= 0, kept in JSON."""
    backends = [FakeBackend("a"), FakeBackend("b", sleep_ms=0.5)]
    run = _run(
        module, samples, quick(max_throughput), backends, cache_dir=tmp_path, max_batch_size=4
    )
    outcomes = run.record.outcomes
    assert len(outcomes) == 3 and all(o.profile is not None for o in outcomes)
    peaks = [o.profile.peak_memory_mb for o in outcomes if o.profile is not None]
    assert all(p is not None and p >= 0.0 for p in peaks)
    again = loads(dump_record(run.record))
    assert [o.profile.peak_memory_mb for o in again.outcomes if o.profile] == peaks
    assert run.tuned is not None and run.tuned.selection.result.peak_memory_mb is not None


@needs_proc
def test_a_backend_holding_memory_shows_it_and_is_refused_over_budget(
    module, samples, tmp_path
) -> None:
    """A backend holding 200 MiB measures >= 150 MiB and within_memory(100) refuses it."""
    strategy = quick(within_memory(min_latency, 100))
    run = _run(module, samples, strategy, [HogBackend(), FakeBackend("lean")], cache_dir=tmp_path)
    hog = next(c for c in run.record.candidates if c.backend == "hog")
    assert hog.profile is not None and hog.profile.peak_memory_mb is not None
    assert hog.profile.peak_memory_mb >= 150.0
    assert run.tuned is not None
    refused = {f.backend: f for f in run.tuned.selection.failures}["hog"]
    assert refused.stage == "measure" and "exceeds the budget of 100 MiB" in refused.message
    assert "| peak MiB |" in render_markdown(run.record)


def test_without_proc_the_run_goes_on_with_unknown_memory(
    module, samples, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the peak cannot be reset every figure is None and tuning still selects (in
    process: the patch reaches no worker)."""
    monkeypatch.setattr(memory, "PROC_CLEAR_REFS", tmp_path / "no" / "clear_refs")
    run = _run(
        module, samples, quick(min_latency), [FakeBackend("a")], cache_dir=tmp_path,
        isolation=False,
    )  # fmt: skip
    assert all(o.profile is not None for o in run.record.outcomes)
    assert all(o.profile.peak_memory_mb is None for o in run.record.outcomes if o.profile)
    assert run.tuned is not None
    rows = backends_section(run.record).splitlines()[2:]
    peak = headers().index("peak MiB")
    cells = [[c.strip() for c in row.strip().strip("|").split("|")] for row in rows]
    assert len(rows) == 2 and all(row[peak] == "—" for row in cells)
