"""Stop clear losers early, wired: the driver judges each candidate against the best so far
and the run record says who stopped early and why (fake backends, in process)."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from returns.io import IOResult, IOSuccess
from returns.unsafe import unsafe_perform_io

from aitune_fp import ProfilingPlan, min_latency
from aitune_fp.core.measure.stop_rules import fixed_steps
from aitune_fp.core.record.run_record import RunRecord, decode, encode
from aitune_fp.core.records import BackendFailure
from aitune_fp.core.report.markdown import render_markdown
from aitune_fp.effects.backends.base import Built, ConfigIdentity
from aitune_fp.effects.inputs.samples import Samples
from aitune_fp.effects.measure.timing import ProfileSettings
from aitune_fp.shell.tune_module import TuneOptions, TuningRun, run_tuning

STEPS = 12
STRATEGY = dataclasses.replace(
    min_latency, plan=ProfilingPlan(batching=False, call_rule=fixed_steps(warmup=2, steps=STEPS))
)


class SlowEager(torch.nn.Module):
    """A linear layer whose eager forward sleeps 8 ms first (the slowest way to run it)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.body = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Sleep 8 ms, then the linear layer."""
        time.sleep(0.008)
        return self.body(x)


@dataclass(frozen=True, slots=True)
class Sleeper(ConfigIdentity):
    """A backend that runs the module's linear layer after sleeping ``sleep_ms``."""

    label: str = "sleeper"
    sleep_ms: float = 1.0
    name: str = "sleeper"

    def unavailable_reason(self, device: torch.device) -> str | None:
        """Always available."""
        return None

    def build(
        self, module: torch.nn.Module, samples: Samples, device: torch.device, work_dir: Path
    ) -> IOResult[Built, BackendFailure]:
        """A runner: sleep, then ``module.body``."""
        body: Any = module.body

        def runner(x: torch.Tensor) -> torch.Tensor:
            time.sleep(self.sleep_ms / 1000.0)
            with torch.inference_mode():
                out: torch.Tensor = body(x)
            return out

        return IOSuccess(Built(runner, close=lambda: None))


def _tune(tmp_path: Path, backends: list[Sleeper], **settings: Any) -> RunRecord:
    run: TuningRun = unsafe_perform_io(
        run_tuning(
            SlowEager().eval(),
            [torch.randn(1, 8) for _ in range(3)],
            STRATEGY,
            backends,
            TuneOptions(
                cache_dir=tmp_path,
                isolation=False,
                settings=ProfileSettings(warmup=None, max_pool=2, **settings),
            ),
        )
    ).unwrap()
    return run.record


def test_a_clear_loser_stops_early_and_the_record_says_why(tmp_path: Path) -> None:
    """Against a 3 ms leader, a candidate 3x slower keeps only its probe and its record
    says why in one line; one within 4 % runs in full; the baseline, slowest of all, is
    never stopped; the record reads back the same and its report lists the stop; without
    isolation no worker started (``worker_start`` is null)."""
    lead, slow, close = Sleeper("lead", 3.0), Sleeper("slow", 9.0), Sleeper("close", 3.12)
    record = _tune(tmp_path, [lead, slow, close])
    by_name = {c.backend: c for c in record.candidates}
    stopped = by_name[slow.describe()]
    assert stopped.profile is not None and len(stopped.profile.samples(1)) == 5
    line = stopped.stopped_early
    assert line is not None and "\n" not in line and "batch size 1" in line
    assert lead.describe() in line
    for full in (by_name[lead.describe()], by_name[close.describe()], record.baseline):
        assert full is not None and full.profile is not None
        assert full.stopped_early is None and len(full.profile.samples(1)) == STEPS
    assert stopped.profile.stopped_early == line
    assert decode(encode(record)) == record
    assert all(c["stage_seconds"]["worker_start"] is None for c in encode(record)["candidates"])
    assert f"- {slow.describe()}: {line}" in render_markdown(record)


def test_early_stop_off_measures_every_candidate_in_full(tmp_path: Path) -> None:
    """With ``ProfileSettings(early_stop=False)`` a clear loser runs its whole call rule, and
    the record's options say early stop was off."""
    record = _tune(tmp_path, [Sleeper("lead", 3.0), Sleeper("slow", 9.0)], early_stop=False)
    slow = record.candidates[1]
    assert slow.profile is not None and len(slow.profile.samples(1)) == STEPS
    assert slow.stopped_early is None and record.options["early_stop"] is False
