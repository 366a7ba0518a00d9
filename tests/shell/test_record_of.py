"""The run record derived from the session alone (``record_of``) is the record the shell
derived from its own runs (``run_record``), for real in-process tunes: every record
written mid-run and the final one."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import torch

from aitune_fp.core.measure.stop_rules import fixed_steps
from aitune_fp.core.record.derive import record_of
from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.core.strategies import max_throughput, one_backend
from aitune_fp.shell import recording, tune_run
from aitune_fp.shell.io import perform
from aitune_fp.shell.tune_module import TuneOptions, TuningRun, run_tuning
from tests.shell.fakes import FakeBackend
from tests.shell.test_tune_rounds import quick_confident

FAST, SLOW = FakeBackend(label="fast", sleep_ms=2.0), FakeBackend(label="slow", sleep_ms=20.0)
BROKEN = FakeBackend(label="broken", fail_build=True)
RACING = dataclasses.replace(
    max_throughput,
    plan=dataclasses.replace(max_throughput.plan, call_rule=fixed_steps(warmup=1, steps=8)),
    validate_performance=False,
)
CASES = {
    "rounds and verification": (quick_confident(), [SLOW, FakeBackend("a"), BROKEN], 0.3),
    "race, widened": (RACING, [SLOW, FAST, BROKEN], None),
    "one backend": (one_backend(quick_confident(), FAST.describe()), [SLOW, FAST], None),
}


def _compared(monkeypatch: pytest.MonkeyPatch) -> list[tuple[RunRecord, RunRecord]]:
    """Every record the shell derives from now on, next to ``record_of``'s."""
    pairs: list[tuple[RunRecord, RunRecord]] = []
    old = recording.run_record

    def both(setup: Any, run: Any, outcome: Any, heading: Any, status: str = "complete",
             verification: Any = None, wall: Any = None) -> RunRecord:  # fmt: skip
        record = old(setup, run, outcome, heading, status, verification, wall)
        if run.session is not None:
            unmade = None
            if status == "complete" and outcome is not run.done.selection:
                unmade = outcome.failure()
            configs = [r.backend for r in run.runs]
            env = recording.env_of(setup, heading, configs, status, wall, unmade)
            pairs.append((record, record_of(run.session, env)))
        return record

    monkeypatch.setattr(tune_run, "run_record", both)
    return pairs


@pytest.mark.parametrize("case", sorted(CASES))
def test_record_of_the_session_is_the_shells_record(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """For each tune, every record written (mid-run and final) equals ``record_of`` of the
    session then, field by field."""
    strategy, backends, verify = CASES[case]
    pairs = _compared(monkeypatch)
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
    options = TuneOptions(cache_dir=tmp_path / "cache", isolation=False, max_batch_size=8,
                          verify_seconds=verify, record_path=tmp_path / "run.json")  # fmt: skip
    run: TuningRun = perform(run_tuning(module, torch.randn(8, 8), strategy, backends,
                                        options)).unwrap()  # fmt: skip
    if run.tuned is not None:
        run.tuned.close()
    assert len(pairs) >= 3
    for old, new in pairs:
        for f in dataclasses.fields(RunRecord):
            assert getattr(new, f.name) == getattr(old, f.name), (case, f.name)
