"""Candidates refused before they were built (a pruned variant, one not admitted) are
failure rows of run.json, shown by the table, and the record still round-trips through
decode, reselect and replay."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from returns.unsafe import unsafe_perform_io

from aitune_fp import ProfilingPlan, min_latency, one_backend
from aitune_fp.core.measure.stop_rules import fixed_steps
from aitune_fp.core.record.run_record import RunRecord, decode, encode, loads, reselect
from aitune_fp.core.record.unbuilt import with_unbuilt
from aitune_fp.core.records import BackendFailure
from aitune_fp.core.report.tables import backend_rows
from aitune_fp.core.session.recorded import replay_record
from aitune_fp.core.strategies.registry import strategy_from_config
from aitune_fp.shell.tune_module import TuneOptions, TuningRun, run_tuning
from tests.shell.fakes import FakeBackend

QUICK = dataclasses.replace(
    min_latency, plan=ProfilingPlan(batching=False, call_rule=fixed_steps(warmup=1, steps=3))
)


@dataclass(frozen=True, slots=True)
class SlowFake(FakeBackend):
    """A fake whose default config sleeps 30 ms a call: a base clearly beaten by any fake."""

    sleep_ms: float = 30.0
    name: str = "slowfake"


def _tune(tmp_path: Path, strategy: object, backends: list[object]) -> RunRecord:
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
    run: TuningRun = unsafe_perform_io(
        run_tuning(
            module,
            torch.randn(4, 8),
            strategy,
            backends,
            TuneOptions(
                cache_dir=tmp_path / "cache", isolation=False, record_path=tmp_path / "run.json"
            ),
        )
    ).unwrap()
    stored = loads((tmp_path / "run.json").read_text())
    assert stored == run.record
    return stored


@pytest.fixture(scope="module")
def pruned(tmp_path_factory: pytest.TempPathFactory) -> RunRecord:
    """A tune whose slow base is beaten far beyond 4× before its variant's turn."""
    base, quick, variant = SlowFake(), FakeBackend("quick"), SlowFake(label="v")
    return _tune(tmp_path_factory.mktemp("pruned"), QUICK, [base, quick, variant])


def test_a_pruned_variant_is_a_failure_row_in_plan_order(pruned: RunRecord) -> None:
    """The variant has a row, after its base and the fast fake, failed at measure with
    the pruning rule's reason; the table shows it."""
    names = [o.backend for o in pruned.candidates]
    assert names == ["slowfake", "fake(label='quick')", "slowfake(label='v')"]
    row = pruned.candidates[2]
    assert row.failure is not None and row.failure.stage == "measure"
    assert row.failure.message.startswith("not built: its base slowfake is ")
    assert row.kind == "slowfake" and row.profile is None and row.key == ""
    shown = backend_rows(pruned)[-1]
    assert shown.status == "failed (measure)" and shown.reason == row.failure.message


def test_a_record_with_failure_rows_round_trips(pruned: RunRecord) -> None:
    """decode(encode) is the identity, reselect under the stored strategy gives the
    run's selection and failures, and the replay from the event log selects the same."""
    assert decode(encode(pruned)) == pruned
    again = reselect(pruned, strategy_from_config(pruned.strategy)).unwrap()
    assert pruned.selection is not None
    assert again.backend == pruned.selection.backend
    assert set(again.failures) == set(pruned.selection.failures)
    replayed = replay_record(pruned)
    assert replayed.diverged is None
    assert replayed.done.selection.unwrap().backend == pruned.selection.backend


def test_candidates_not_admitted_are_failure_rows(tmp_path: Path) -> None:
    """With one_backend, the others are never built: one before the admitted one is a
    failure row saying why, one after it (the strategy settled) a ``not run`` row."""
    backends = [FakeBackend("a"), FakeBackend("b"), FakeBackend("c")]
    record = _tune(tmp_path, one_backend(QUICK, "fake(label='b')"), backends)
    rows = {o.backend: o for o in record.candidates}
    assert list(rows) == ["fake(label='a')", "fake(label='b')", "fake(label='c')"]
    assert rows["fake(label='b')"].profile is not None
    failure = rows["fake(label='a')"].failure
    assert failure is not None and failure.stage == "measure"
    assert "not admitted" in failure.message
    assert rows["fake(label='c')"].status == "not run"
    statuses = [r.status for r in backend_rows(record)][1:]
    assert statuses[0] == "failed (measure)" and statuses[2] == "not run"
    assert statuses[1] in ("selected", "profiled")  # profiled: the run fell back to eager
    again = reselect(record, strategy_from_config(record.strategy)).unwrap()
    assert record.selection is not None and again.backend == record.selection.backend


def test_only_refused_names_get_rows_and_built_ones_win() -> None:
    """A refusal of a built candidate, or of a name outside the plan, adds no row."""
    refused = [BackendFailure("x", "measure", "budget"), BackendFailure("y", "measure", "no")]
    rows = with_unbuilt((), ("x", "z"), refused)
    assert [o.backend for o in rows] == ["x"] and rows[0].failure == refused[0]
