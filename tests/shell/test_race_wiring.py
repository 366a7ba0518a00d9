"""The race through the interpreter: a real in-process tune under max throughput drops a
clearly beaten candidate after the race's batch sizes, widens the winner, records both
and replays; ``AITUNE_FP_RACE=0`` sweeps every candidate over the whole ladder."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from aitune_fp.core.measure.stop_rules import fixed_steps
from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.core.report.markdown import render_markdown
from aitune_fp.core.session.notes import DroppedInRace
from aitune_fp.core.session.recorded import replay_record
from aitune_fp.core.strategies import max_throughput
from aitune_fp.shell.io import perform
from aitune_fp.shell.tune_module import TuneOptions, TuningRun, run_tuning
from tests.shell.fakes import FakeBackend

# a sleep per call: the per-row cost of both falls with the batch size, clearly
FAST, SLOW = FakeBackend(label="fast", sleep_ms=2.0), FakeBackend(label="slow", sleep_ms=20.0)
PLAN = dataclasses.replace(max_throughput.plan, call_rule=fixed_steps(warmup=1, steps=8))
STRATEGY = dataclasses.replace(max_throughput, plan=PLAN, validate_performance=False)


def _tune(folder: Path) -> RunRecord:
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
    effect = run_tuning(
        module,
        torch.randn(8, 8),
        STRATEGY,
        [SLOW, FAST],
        TuneOptions(cache_dir=folder, isolation=False, max_batch_size=8, model_name="raced"),
    )
    run: TuningRun = perform(effect).unwrap()
    if run.tuned is not None:
        run.tuned.close()
    return run.record


@pytest.fixture(scope="module")
def raced(tmp_path_factory: pytest.TempPathFactory) -> RunRecord:
    """One raced tune's record."""
    return _tune(tmp_path_factory.mktemp("raced"))


def test_the_beaten_candidate_is_dropped_in_the_record_and_the_report(raced: RunRecord) -> None:
    """The slow fake keeps only the race's batch sizes (the ladder's smallest, middle and
    largest) and says why it was dropped, in its record row and in the report; the fast
    one is widened over the size the race skipped and selected; each backend has one
    row."""
    rows = {o.backend: o for o in raced.candidates}
    slow, fast = rows[SLOW.describe()], rows[FAST.describe()]
    assert slow.profile is not None and slow.profile.batch_sizes == (1, 4, 8)
    assert "dropped in the race" in (slow.stopped_early or "")
    assert f"- {SLOW.describe()}: " in render_markdown(raced)
    assert fast.profile is not None and fast.profile.batch_sizes == (1, 2, 4, 8)
    assert raced.options["race_ladder"] == (1, 2, 4, 8)
    assert raced.selection is not None and raced.selection.backend == FAST.describe()
    assert len(rows) == len(raced.candidates)


def test_the_raced_record_replays_every_decision(raced: RunRecord) -> None:
    """The replay of the raced run's event log (two builds of the widened one) selects
    what the run selected and diverges nowhere."""
    again = replay_record(raced)
    assert raced.selection is not None and again.diverged is None
    assert again.done.selection.unwrap().backend == raced.selection.backend


def test_the_record_keeps_what_the_session_said(raced: RunRecord) -> None:
    """The run's notes reach its record: the race's drop of the slow fake with its
    evidence (against the fast one), and the replay of the log says the same notes."""
    drops = [n for n in raced.notes if isinstance(n, DroppedInRace)]
    assert [(d.name, d.evidence.against) for d in drops] == [(SLOW.describe(), FAST.describe())]
    assert replay_record(raced).session.notes == raced.notes


def test_without_the_race_every_candidate_sweeps_the_ladder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``AITUNE_FP_RACE=0`` nothing is dropped in the race and the slow fake is
    measured beyond the race's batch sizes."""
    monkeypatch.setenv("AITUNE_FP_RACE", "0")
    record = _tune(tmp_path)
    slow = next(o for o in record.candidates if o.backend == SLOW.describe())
    assert "dropped in the race" not in (slow.stopped_early or "")
    assert slow.profile is not None and 2 in slow.profile.batch_sizes
