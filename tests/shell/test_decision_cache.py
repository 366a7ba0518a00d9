"""The decision cache: an unchanged re-tune re-verifies the stored pick instead of tuning."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from pathlib import Path

import pytest
import torch

from aitune_fp.core.record.decisions import FULL, runner_up
from aitune_fp.core.record.hit import hit_record
from aitune_fp.core.record.run_record import RunRecord, loads, reselect
from aitune_fp.core.report.decision import decision_lines
from aitune_fp.core.report.stages import wall_summary
from aitune_fp.core.session.recorded import replay_record
from aitune_fp.core.strategies import max_throughput, min_latency
from aitune_fp.effects.measure.timing import ProfileSettings
from aitune_fp.shell import decided, decision_cache
from aitune_fp.shell.io import perform
from aitune_fp.shell.tune_module import TuneOptions, TuningRun, run_tuning
from tests.shell.fakes import FakeBackend

SETTINGS = ProfileSettings(max_pool=2, max_seconds_per_batch=0.1)
# Each candidate differs from the others by milliseconds, so no pick rests on noise: a fake
# without a sleep runs exactly what eager runs, and a re-verification between two equals may
# go either way on a loaded machine.
NEAR, SLOW = FakeBackend(label="near", sleep_ms=3.0), FakeBackend(label="slow", sleep_ms=15.0)


def _tune(
    cache: Path,
    seed: int = 0,
    samples: torch.Tensor | None = None,
    backends: list[object] | None = None,
    **options: object,
) -> TuningRun:
    torch.manual_seed(seed)
    module = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    rows = torch.ones(2, 4) if samples is None else samples
    effect = run_tuning(
        module,
        rows,
        min_latency,
        backends or ["eager", NEAR, SLOW],
        TuneOptions(
            cache_dir=cache,
            isolation=False,
            max_batch_size=2,
            settings=SETTINGS,
            verify_seconds=0.3,
            **options,
        ),
    )
    run: TuningRun = perform(effect).unwrap()
    if run.tuned is not None:
        run.tuned.close()
    return run


def _entries(cache: Path) -> list[Path]:
    return sorted((cache / decision_cache.FOLDER).glob("*.json"))


def short_runs(monkeypatch: pytest.MonkeyPatch) -> list[RunRecord]:
    """The records of the short runs a hit re-verifies with (a spy on the merge)."""
    shorts: list[RunRecord] = []

    def spy(stored: RunRecord, short: RunRecord) -> RunRecord:
        shorts.append(short)
        return hit_record(stored, short)

    monkeypatch.setattr(decided, "hit_record", spy)
    return shorts


def test_an_unchanged_retune_is_a_cache_hit_and_fresh_tunes_in_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first tune is a full one and stores its decision; the unchanged second one
    re-verifies only the stored pick and its runner-up, keeps the pick and records (on
    disk too) the stored run's evidence whole: it re-selects under each strategy, replays
    and states its speedup as the stored run does; ``fresh`` and a changed model tune in
    full, the changed model's record naming its digest."""
    shorts = short_runs(monkeypatch)
    first = _tune(tmp_path)
    assert first.record.provenance.decision == FULL
    assert len(_entries(tmp_path)) == 1 and first.record.selection is not None
    second = _tune(tmp_path, record_path=tmp_path / "hit" / "run.json")
    assert "decision cache hit" in (second.record.provenance.decision or "")
    assert loads((tmp_path / "hit" / "run.json").read_text()) == second.record
    assert second.record.selection == first.record.selection
    for strategy in (min_latency, max_throughput):
        assert reselect(second.record, strategy) == reselect(first.record, strategy)
    assert replay_record(second.record) == replay_record(first.record)
    assert any(line.startswith("Speedup:") for line in decision_lines(second.record))
    assert (second.record.baseline, second.record.candidates) == (
        first.record.baseline, first.record.candidates)  # fmt: skip
    assert [len(s.candidates) for s in shorts] == [2] and len(first.record.candidates) > 2
    assert second.record.reverification == shorts[0].verification is not None
    assert _tune(tmp_path, fresh=True).record.provenance.decision == FULL
    changed = _tune(tmp_path, seed=1).record.provenance.decision
    assert changed == "full tune: changed since the stored decision: model digest"


def test_a_miss_names_the_keys_that_changed_in_the_record_and_one_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """After a stored decision, a tune with other candidates and other samples misses, and
    its record and one log line name both causes; a label never stored says only
    "full tune"."""
    _tune(tmp_path)
    with caplog.at_level(logging.INFO, logger="aitune_fp"):
        run = _tune(tmp_path, samples=torch.full((2, 4), 2.0), backends=["eager", NEAR])
    line = "full tune: changed since the stored decision: candidates, samples"
    assert run.record.provenance.decision == line
    assert [r.getMessage() for r in caplog.records if "decision cache miss" in r.getMessage()] \
        == [f"decision cache miss: {line}"]  # fmt: skip
    strategy = max_throughput
    never = decision_cache.read(tmp_path, {"model": "m", "device": "cpu"}, "never stored", strategy)
    assert never == decision_cache.Found(None, None)


def test_a_disagreeing_reverification_retunes_in_full(tmp_path: Path) -> None:
    """A stored decision whose pick the re-verification does not confirm (here a forged
    one naming the slow fake) leads to a full tune whose record says why."""
    first = _tune(tmp_path)
    (path,) = _entries(tmp_path)
    body = json.loads(path.read_text())["body"]
    stored = loads(body["record"])
    slow = next(c.backend for c in stored.candidates if "slow" in c.backend)
    assert stored.selection is not None and stored.selection.backend != slow
    forged = dataclasses.replace(
        stored, selection=dataclasses.replace(stored.selection, backend=slow), verification=None
    )
    decision_cache.store(tmp_path, body["keys"], forged)
    again = _tune(tmp_path)
    assert (again.record.provenance.decision or "").startswith("full tune: the re-verification")
    assert len(again.record.candidates) == len(first.record.candidates)
    assert again.record.selection is not None and again.record.selection.backend != slow
    wall = again.record.wall
    assert wall is not None
    stages = [name for name, _ in wall.stages]
    assert stages == ["setup", "max_batch_search", "decision_cache_hit", "plan", "candidates",
                      "final_rounds", "verification", "winner"]  # fmt: skip
    assert "-" not in (wall_summary(again.record) or "-")


def test_a_damaged_decision_is_a_warning_and_removed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A stored decision whose content does not match its hash is never used: one warning,
    the file removed, and the tune is a full one."""
    _tune(tmp_path)
    (path,) = _entries(tmp_path)
    path.write_text(path.read_text().replace('"format": 1', '"format": 1 '))
    data = json.loads(path.read_text())
    data["body"]["keys"]["device"] = "elsewhere"
    path.write_text(json.dumps(data))
    with caplog.at_level(logging.WARNING, logger="aitune_fp"):
        run = _tune(tmp_path)
    assert run.record.provenance.decision == FULL
    assert any("does not match its sha256" in r.getMessage() for r in caplog.records)


def test_the_runner_up_is_the_closest_cached_candidate_the_verification_saw(
    tmp_path: Path,
) -> None:
    """The runner-up skips the pick's own neighbouring batch sizes and the baseline (no
    candidate of a re-verification), takes the other backend the verification found
    closest to the pick, prefers one whose artifact the cache holds (a ``cache`` stage)
    over a closer one that would be compiled again, and without a verification is
    another candidate."""
    from aitune_fp.core.verification.verification_records import Comparison, Verification

    record = _tune(tmp_path).record
    assert record.selection is not None and record.baseline is not None
    pick = record.selection.backend
    others = [c.backend for c in record.candidates if c.backend != pick]
    found = (
        Comparison(pick, 1, 1.001, (0.99, 1.01), False),
        Comparison(record.baseline.backend, 1, 1.0, (0.99, 1.01), False),
        Comparison(others[0], 2, 1.5, (1.4, 1.6), False),
        Comparison(others[1], 2, 1.2, (1.1, 1.3), False),
    )
    verified = Verification(True, pick, pick, 1.001, (0.99, 1.01), 0.3, comparisons=found)
    seen = dataclasses.replace(record, verification=verified)
    assert runner_up(seen, min_latency) == others[1]
    cached = dataclasses.replace(seen, candidates=tuple(
        dataclasses.replace(c, stage_seconds=c.stage_seconds.set("cache", 0.01))
        if c.backend == others[0] else c
        for c in record.candidates
    ))  # fmt: skip
    assert runner_up(cached, min_latency) == others[0]
    unseen = dataclasses.replace(record, verification=None)
    assert runner_up(unseen, min_latency) in others


def test_the_policy_key_is_the_same_in_every_process() -> None:
    """The accuracy policy's key does not follow the process's string hashes (its maps'
    ``repr`` does: an unchanged re-tune in another process missed on "accuracy policy")."""
    import subprocess
    import sys

    code = ("from aitune_fp.shell.decision_cache import policy_key\n"
            "from aitune_fp.effects.checks.validate import Tolerance\n"
            "import hashlib\n"
            "t = Tolerance()\n"
            "print(policy_key(t), hashlib.sha256(repr(t).encode()).hexdigest())")  # fmt: skip
    seen = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout.split()
        for seed in (1, 2)
    ]  # fmt: skip
    assert seen[0][1] != seen[1][1], "the repr no longer differs: pick seeds that show it"
    assert seen[0][0] == seen[1][0]
