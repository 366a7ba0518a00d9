"""Faults of the user's model outside the backends: the eager check, the max-batch sweep and
the exporters' example batch, with tiny modules that really crash, exit or hang."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest
import torch

from aitune_fp.core.record.max_batch import MaxBatchSearch, max_batch_line
from aitune_fp.core.record.run_record import RunRecord, dumps, loads
from aitune_fp.core.records import TuneError
from aitune_fp.core.report.markdown import render_markdown
from aitune_fp.core.strategies import max_throughput
from aitune_fp.effects.backends._export import batch_envelope, example_batch, example_rows
from aitune_fp.effects.backends._shared_export import export_program
from aitune_fp.effects.inputs.samples import Samples, normalise_samples
from aitune_fp.effects.isolation import Timeouts, isolated_max_batch
from aitune_fp.effects.measure.max_batch import MaxBatchResult
from aitune_fp.shell.batch_search import search_max_batch
from aitune_fp.shell.io import perform
from aitune_fp.shell.tune_module import TuneOptions, run_tuning
from tests.faults.faulty import FaultyModule

CPU = torch.device("cpu")


def _samples() -> Samples:
    torch.manual_seed(0)
    return normalise_samples([torch.randn(1, 8) for _ in range(2)])


def _found(fault: str, at: int, cap: int = 64, call: float = 60.0) -> MaxBatchResult:
    found = isolated_max_batch(FaultyModule(fault, at), _samples(), CPU, cap, Timeouts(30, call))
    assert isinstance(found, MaxBatchResult), found
    return found


@pytest.mark.parametrize(
    ("fault", "words"),
    [
        ("segfault", "eager crashed at batch size 4 (SIGSEGV)"),
        ("abort", "eager crashed at batch size 4 (SIGABRT)"),
        ("exit", "eager exited with code 7 at batch size 4"),
    ],
)
def test_a_crash_at_batch_size_4_ends_the_sweep_at_2_and_says_why(fault: str, words: str) -> None:
    """A segfault, abort or ``os._exit`` at batch size 4 keeps 2, with the stop ``crashed``,
    the batch size that failed and the signal or exit code in words."""
    found = _found(fault, 4)
    assert (found.max_batch_size, found.stop, found.failed_at) == (2, "crashed", 4)
    assert found.reason == words


def test_a_hang_at_batch_size_2_is_ended_by_the_call_timeout_and_keeps_1() -> None:
    """A model sleeping at batch size 2 is stopped after the call timeout (not the build's),
    and the sweep keeps 1, saying it hung past that timeout."""
    began = time.monotonic()
    found = _found("hang", 2, call=1.0)
    assert time.monotonic() - began < 20
    assert (found.max_batch_size, found.stop, found.failed_at) == (1, "hung", 2)
    assert found.reason == "eager hung past the 1 s call timeout at batch size 2"


def test_a_crash_at_a_cap_that_is_no_power_of_two_keeps_the_size_tried_before() -> None:
    """With a cap of 6 the sweep tries 1, 2, 4, 6: a crash at 6 keeps 4, not 3."""
    found = _found("segfault", 6, cap=6)
    assert (found.max_batch_size, found.failed_at) == (4, 6)


@pytest.mark.parametrize(
    ("fault", "words"),
    [
        ("segfault", "eager crashed at batch size 1 (SIGSEGV)"),
        ("hang", "eager hung past the 1 s call timeout at batch size 1"),
    ],
)
def test_a_model_that_cannot_run_one_row_is_a_tune_error(fault: str, words: str) -> None:
    """A crash or a hang on the eager check's one row ends the tune as a ``TuneError``
    naming it (nothing can be tuned), the tune process alive."""
    found = isolated_max_batch(FaultyModule(fault, 1), _samples(), CPU, 64, Timeouts(30, 1.0))
    assert found == TuneError(f"the eager module cannot run one row: {words}")


def test_the_search_result_goes_to_the_record_and_its_one_line() -> None:
    """The shell's search gives the max batch size and a ``MaxBatchSearch`` that a record
    keeps through run.json, and the report shows its line."""
    found = search_max_batch(
        FaultyModule("segfault", 4), _samples(), CPU, max_throughput.plan, 64,
        isolation=True, timeouts=Timeouts(),
    ).unwrap()  # fmt: skip
    assert found == (2, MaxBatchSearch("crashed", "eager crashed at batch size 4 (SIGSEGV)", 4))
    record = RunRecord("m", "cpu", {}, None, (), None, None, {}, {}, 2, max_batch_search=found[1])
    assert loads(dumps(record)) == record
    line = "max batch size 2: eager crashed at batch size 4 (SIGSEGV)"
    assert max_batch_line(2, found[1]) == line and line in render_markdown(record)


def test_a_record_without_the_search_reads_as_unknown() -> None:
    """A run.json written before ``max_batch_search`` existed reads as ``None``."""
    record = RunRecord("m", "cpu", {}, None, (), None, None, {}, {}, 8)
    text = dumps(record).replace('  "max_batch_search": null,\n', "")
    assert "max_batch_search" not in text and loads(text).max_batch_search is None


def test_an_unbatched_plan_runs_the_eager_check_only() -> None:
    """Without batching nothing is swept: max batch size 1, stop ``unbatched``; the eager
    check still runs in its worker (a model crashing at batch size 2 is never called so)."""
    unbatched = dataclasses.replace(max_throughput.plan, batching=False)
    size, search = search_max_batch(
        FaultyModule("segfault", 2), _samples(), CPU, unbatched, None,
        isolation=True, timeouts=Timeouts(),
    ).unwrap()  # fmt: skip
    assert (size, search.stop) == (1, "unbatched")


def test_the_example_batch_stays_inside_a_one_row_envelope() -> None:
    """Inside a one-row envelope the exporters' example batch has one row and the batch
    axis is static, so exporting a model that hangs at two rows returns at once; outside
    any envelope the example keeps two rows."""
    samples = _samples()
    assert example_rows() == 2 and example_batch(samples, CPU).size == 2
    module = FaultyModule("hang", 2).eval()
    began = time.monotonic()
    with batch_envelope(1):
        batch = example_batch(samples, CPU)
        program = export_program(module, batch, samples.spec, 1)
    assert batch.size == 1 and time.monotonic() - began < 60
    x = torch.randn(1, 8)
    assert torch.allclose(program.module()(x), module.fc(x))


@pytest.mark.heavy
@pytest.mark.parametrize(
    ("fault", "at", "size", "line"),
    [
        ("hang", 2, 1, "max batch size 1: eager hung past the 2 s call timeout at batch size 2"),
        ("segfault", 4, 2, "max batch size 2: eager crashed at batch size 4 (SIGSEGV)"),
    ],
)
def test_a_model_faulting_at_a_batch_size_is_tuned_below_it(
    tmp_path: Path, fault: str, at: int, size: int, line: str
) -> None:
    """A model that hangs at batch size 2 or segfaults at 4 is tuned with ONNX Runtime below
    that size: no backend fails (no build timeout: no build calls the model there), and
    the record says why the max batch size is what it is."""
    options = TuneOptions(cache_dir=tmp_path / "cache", timeouts=Timeouts(120, 2.0),
                          verify_seconds=None)  # fmt: skip
    rows = [torch.randn(1, 8) for _ in range(2)]
    run = perform(run_tuning(FaultyModule(fault, at), rows, max_throughput, ["onnxruntime"],
                             options)).unwrap()  # fmt: skip
    record = run.record
    assert record.max_batch_size == size
    assert max_batch_line(record.max_batch_size, record.max_batch_search) == line
    assert [o.failure for o in record.outcomes] == [None, None]
    (ort,) = record.candidates
    assert ort.profile is not None and max(ort.profile.latencies_ms) == size
    assert line in render_markdown(record)


def test_samples_larger_than_a_faulty_size_are_cut_below_it(tmp_path: Path) -> None:
    """A model hanging at two rows, given samples of two rows each, is tuned at batch size
    1 within seconds: the samples are cut to one row, so neither the warm-up, the eager
    build nor validation on each sample calls it at two rows."""
    began = time.monotonic()
    options = TuneOptions(cache_dir=tmp_path / "cache", timeouts=Timeouts(60, 1.0),
                          verify_seconds=None)  # fmt: skip
    rows = [torch.randn(2, 8) for _ in range(2)]
    run = perform(run_tuning(FaultyModule("hang", 2), rows, max_throughput, ["eager"],
                             options)).unwrap()  # fmt: skip
    assert time.monotonic() - began < 60
    assert run.record.max_batch_size == 1 and run.record.baseline is not None
    assert run.record.baseline.profile is not None and run.tuned is not None
    assert run.tuned.max_batch_size == 1


def test_the_console_shows_why_the_max_batch_size_is_what_it_is() -> None:
    """Under the table, the console prints the max-batch line of the record."""
    from rich.console import Console

    from aitune_fp.cli.console import show_run

    search = MaxBatchSearch("hung", "eager hung past the 10 s call timeout at batch size 2", 2)
    record = RunRecord("m", "cpu", {}, None, (), None, None, {}, {}, 1, max_batch_search=search)
    console = Console(record=True, width=200)
    show_run(console, record)
    assert (
        "max batch size 1: eager hung past the 10 s call timeout at batch size 2"
        in console.export_text()
    )
