"""The shell interprets the pure session: a real tune's run.json keeps the session's event
log, replaying it re-derives the run's decisions, and the ``replay`` verb says so."""

from __future__ import annotations

from pathlib import Path

import pytest
from returns.unsafe import unsafe_perform_io

from aitune_fp.cli.main import main
from aitune_fp.core.record.run_record import loads
from aitune_fp.core.session import Profiled, Timed
from aitune_fp.core.session.recorded import replay_record
from aitune_fp.core.strategies import max_throughput, one_backend
from aitune_fp.shell.tune_module import TuneOptions, TuningRun, run_tuning
from tests.shell.fakes import FakeBackend
from tests.shell.test_tune_rounds import quick_confident


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One small tune with final rounds and a verification, its run.json on disk."""
    import torch

    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
    folder = tmp_path_factory.mktemp("replayed")
    backends = [FakeBackend("slow", sleep_ms=2.0), FakeBackend("a"), FakeBackend("b")]
    tuned = run_tuning(
        module,
        torch.randn(4, 8),
        quick_confident(),
        backends,
        TuneOptions(
            cache_dir=folder / "cache",
            verify_seconds=0.3,
            isolation=False,
            record_path=folder / "run.json",
        ),
    )
    run: TuningRun = unsafe_perform_io(tuned).unwrap()
    assert run.tuned is not None
    return folder / "run.json"


def test_the_record_keeps_the_sessions_event_log(recorded: Path) -> None:
    """run.json holds one Profiled per backend built, in build order, and the timings: both
    the final rounds and the verification's rounds ran and were logged."""
    record = loads(recorded.read_text())
    built = [e.name for e in record.events if isinstance(e, Profiled)]
    assert built == [o.backend for o in record.outcomes]
    purposes = [e.purpose for e in record.events if isinstance(e, Timed)]
    assert set(purposes) == {"rounds", "verify"}, purposes


def test_replaying_the_record_re_derives_its_selection(recorded: Path) -> None:
    """The replay under the stored strategy selects what the run selected."""
    record = loads(recorded.read_text())
    again = replay_record(record)
    assert record.selection is not None
    assert again.done.selection.unwrap().backend == record.selection.backend
    assert again.diverged is None


def test_replay_under_another_strategy_names_where_it_diverges(recorded: Path) -> None:
    """A strategy that admits only ``a`` diverges right after the baseline's build, which
    both ask for first: the run built ``slow`` next, the replay builds ``a``; it still
    ends, selecting from the logged measurements."""
    record = loads(recorded.read_text())
    slow, a = record.strategy["backends"][:2]
    again = replay_record(record, one_backend(max_throughput, a))
    assert again.diverged is not None and again.diverged.index == 1
    assert again.diverged.recorded.startswith(f"build {slow}")
    assert again.diverged.replayed.startswith(f"build {a}")
    assert again.done.selection.unwrap().backend in (a, "eager")


def test_the_replay_verb_prints_the_replay(
    recorded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``aitune-fp replay run.json`` exits 0 and says the run selected the same backend."""
    assert main(["replay", str(recorded)]) == 0
    out = capsys.readouterr().out
    assert "replayed" in out and ": the same" in out and "every decision is the recorded one" in out
    assert main(["replay", str(recorded), "--strategy", "max-throughput"]) == 0


def test_the_replay_verb_refuses_a_record_without_a_log(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run.json written before the log existed is a one-line error, exit 1."""
    import json

    doc = json.loads(recorded.read_text())
    del doc["events"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc))
    assert main(["replay", str(old)]) == 1
    assert "keeps no event log" in capsys.readouterr().err
