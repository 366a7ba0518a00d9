"""The run record derived from the session alone (``record_of``) keeps what the shell's
builds learnt, as the shell's own copy of the runs did (checked equal to it field by field
before that copy went): for real in-process tunes, each row's config, validation, artifact
and stage seconds are its builds' (a widened contender's two builds summed); the record on
disk is the one returned; a backend is shown done only once its row is on disk."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import torch
from pyrsistent import freeze

from aitune_fp.core.measure.stop_rules import fixed_steps
from aitune_fp.core.record.run_record import BackendOutcome, RunRecord, loads
from aitune_fp.core.strategies import max_throughput, one_backend
from aitune_fp.effects.candidate import CandidateRun
from aitune_fp.shell import building, journal
from aitune_fp.shell.io import perform
from aitune_fp.shell.progress import ProgressEvent
from aitune_fp.shell.recording import config_dict
from aitune_fp.shell.setup import as_result
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


@dataclasses.dataclass
class Seen:
    """A tune's builds (in order), and what happened in order: each record written and
    each backend shown done."""

    builds: list[CandidateRun] = dataclasses.field(default_factory=list)
    story: list[RunRecord | str] = dataclasses.field(default_factory=list)


def _tuned(case: str, folder: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[TuningRun, Seen]:
    """One tune of ``case``, watched."""
    seen, build, write = Seen(), building.in_process, journal.write_record

    def built(*args: Any, **kwargs: Any) -> CandidateRun:
        seen.builds.append(build(*args, **kwargs))
        return seen.builds[-1]

    def written(record: RunRecord, path: Path) -> bool:
        seen.story.append(record)
        return write(record, path)

    def shown(event: ProgressEvent) -> None:
        if event.kind == "backend_done":
            seen.story.append(event.backend)

    monkeypatch.setattr(building, "in_process", built)
    monkeypatch.setattr(journal, "write_record", written)
    strategy, backends, verify = CASES[case]
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
    options = TuneOptions(cache_dir=folder / "cache", isolation=False, max_batch_size=8,
                          verify_seconds=verify, record_path=folder / "run.json",
                          progress=shown)  # fmt: skip
    run: TuningRun = perform(run_tuning(module, torch.randn(8, 8), strategy, backends,
                                        options)).unwrap()  # fmt: skip
    if run.tuned is not None:
        run.tuned.close()
    return run, seen


def _expected(builds: list[CandidateRun], row: BackendOutcome) -> None:
    """``row`` keeps its builds' facts: the last build's config, validation and artifact,
    every build's stage seconds summed (the final rounds' share aside)."""
    mine = [b for b in builds if b.name == row.backend]
    last = mine[-1]
    assert (row.kind, row.key) == (last.backend.name, last.backend.key())
    assert row.config == freeze(config_dict(last.backend))
    assert dict(row.validation) == last.validation
    built = last.built.artifact if last.built is not None else None
    assert row.artifact == (str(built) if built else None)
    summed = {k: sum(b.stage_seconds.get(k, 0.0) for b in mine) for b in mine
              for k in b.stage_seconds}  # fmt: skip
    assert {k: v for k, v in row.stage_seconds.items() if k != "rounds"} == pytest.approx(summed)
    failed = as_result(last).swap().value_or(None)
    assert row.failure == (failed if row.profile is None else None)


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_record_keeps_every_fact_of_the_builds(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every built row's facts are its builds' (see :func:`_expected`), the record on disk
    is the returned one, and every record before it was written ``interrupted``."""
    run, seen = _tuned(case, tmp_path, monkeypatch)
    record = run.record
    built = [o for o in record.outcomes if o.key]
    assert {o.backend for o in built} == {b.name for b in seen.builds}
    for row in built:
        _expected(seen.builds, row)
    assert loads((tmp_path / "run.json").read_text()) == record
    written = [r for r in seen.story if isinstance(r, RunRecord)]
    assert written[-1] == record and record.status == "complete"
    assert {r.status for r in written[:-1]} == {"interrupted"} and len(written) > 3


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_backend_is_shown_done_once_its_row_is_on_disk(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When a backend is shown done, the last record written has its row, built."""
    _, seen = _tuned(case, tmp_path, monkeypatch)
    shown = [i for i, s in enumerate(seen.story) if isinstance(s, str)]
    assert shown
    for i in shown:
        before = [r for r in seen.story[:i] if isinstance(r, RunRecord)]
        rows = {o.backend: o for o in before[-1].outcomes}
        assert seen.story[i] in rows and rows[str(seen.story[i])].status != "not run"
