"""Interrupts keep everything finished: whatever the moment, ``run.json`` holds every backend
already shown as done, and ``report`` and ``reselect`` read it."""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import torch

import aitune_fp
from aitune_fp.core.record.run_record import RunRecord, loads, with_strategy
from aitune_fp.core.report.markdown import render_markdown
from aitune_fp.shell.progress import ProgressEvent
from aitune_fp.shell.tune_module import TuneOptions, run_tuning
from tests.shell.fakes import FakeBackend
from tests.shell.test_tune_module_fakes import quick

MODEL = Path(__file__).with_name("model_file.py")
BACKENDS = [FakeBackend("a"), FakeBackend("b", fail_build=True), FakeBackend("c", sleep_ms=1.0)]


class Stop(KeyboardInterrupt):
    """The interrupt a test raises from the progress sink (as a signal handler would)."""


def _tune(tmp_path: Path, progress: Any) -> None:
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(8, 4)).eval()
    run_tuning(
        module, [torch.randn(1, 8) for _ in range(2)], quick(aitune_fp.max_throughput),
        BACKENDS, TuneOptions(cache_dir=tmp_path / "cache", max_batch_size=2, isolation=False,
                              record_path=tmp_path / "run.json", progress=progress,
                              verify_seconds=None),
    )  # fmt: skip


def _check_partial(record: RunRecord, shown: dict[str, str]) -> None:
    """Every backend shown as done is in ``record`` as it was shown; the record reads."""
    outcomes = {o.backend: o for o in record.outcomes}
    for backend, message in shown.items():
        assert backend in outcomes, (backend, sorted(outcomes))
        assert outcomes[backend].status == ("failed" if message.startswith("failed") else
                                            "profiled")  # fmt: skip
    assert render_markdown(record).startswith("# aitune_fp run")
    with_strategy(record, aitune_fp.min_latency)


def _interrupted_at(tmp_path: Path, k: int) -> tuple[RunRecord, dict[str, str]]:
    """The record left by interrupting the run at its ``k``-th progress event (from 0), and
    the backends shown as done before (that event included)."""
    shown: dict[str, str] = {}
    seen = [0]

    def progress(event: ProgressEvent) -> None:
        if event.kind == "backend_done":
            shown[event.backend] = event.message
        seen[0] += 1
        if seen[0] > k:
            raise Stop()

    with pytest.raises(Stop):
        _tune(tmp_path, progress)
    return loads((tmp_path / "run.json").read_text()), shown


def _check_interrupts(tmp_path: Path, chosen: Any) -> None:
    events: list[ProgressEvent] = []
    _tune(tmp_path / "whole", events.append)
    assert sum(e.kind == "backend_done" for e in events) == 4
    for k, event in enumerate(events):
        if not chosen(event):
            continue
        record, shown = _interrupted_at(tmp_path / f"at-{k}", k)
        assert record.status == ("complete" if event.kind == "selected" else "interrupted")
        _check_partial(record, shown)


def test_an_interrupt_as_a_row_is_shown_leaves_that_row_in_the_record(tmp_path: Path) -> None:
    """Interrupting the run the moment each backend's row is shown (and at the selection)
    leaves a readable run.json holding that backend and every one shown before, which the
    report and a re-selection read."""
    _check_interrupts(tmp_path, lambda e: e.kind in ("backend_done", "selected"))


@pytest.mark.heavy
def test_an_interrupt_at_every_event_leaves_a_record_of_what_was_shown(tmp_path: Path) -> None:
    """Interrupting the run at each of its progress events in turn always leaves a readable
    run.json holding every backend shown as done so far."""
    _check_interrupts(tmp_path, lambda e: True)


def _cli(tmp_path: Path) -> tuple[subprocess.Popen[str], str]:
    shutil.copy(MODEL, tmp_path / "model.py")
    cmd = [sys.executable, "-m", "aitune_fp", "tune", "model.py:make", "--out", "out",
           "--cache-dir", "cache", "--max-batch-size", "2", "--no-plot",
           "--backends", "onnxruntime", "--verify-seconds", "0"]  # fmt: skip
    root = str(Path(aitune_fp.__file__).parents[1])  # this checkout, wherever pytest runs
    path = os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {**os.environ, "AITUNE_TEST_FAULT": "", "COLUMNS": "200", "PYTHONPATH": path}
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True,
                            stdout=subprocess.DEVNULL)  # fmt: skip
    return proc, path


@pytest.mark.heavy
@pytest.mark.parametrize(
    ("sig", "row", "delay"),
    [
        (signal.SIGINT, 1, 0.0),
        (signal.SIGTERM, 1, 0.02),
        (signal.SIGTERM, 2, 0.0),
        (signal.SIGINT, 2, 0.1),
    ],
)
def test_a_signal_right_after_a_row_keeps_that_row(
    tmp_path: Path, sig: signal.Signals, row: int, delay: float
) -> None:
    """``aitune-fp tune`` signalled right after its ``row``-th backend row is printed (after
    ``delay`` s) leaves a run.json holding every row printed, read by ``report``."""
    proc, path = _cli(tmp_path)
    assert proc.stderr is not None
    shown: dict[str, str] = {}
    for line in proc.stderr:
        if " · " in line and line.startswith("  "):
            backend, message = line.strip().split(" · ", 1)
            shown[backend] = message
            if len(shown) == row:
                time.sleep(delay)
                proc.send_signal(sig)
                break
    proc.communicate(timeout=120)
    assert len(shown) == row and proc.returncode in (0, 128 + sig), proc.returncode
    record = loads((tmp_path / "out" / "run.json").read_text())
    _check_partial(record, shown)
    report = subprocess.run([sys.executable, "-m", "aitune_fp", "report", "out/run.json"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": path})  # fmt: skip
    assert report.returncode == 0, report.stderr
    assert all(backend in report.stdout for backend in shown)


def test_the_record_is_written_before_any_backend(tmp_path: Path) -> None:
    """As soon as the first progress event is emitted, run.json is this run's record (no
    backend yet), not a previous run's left in the folder."""
    (tmp_path / "run.json").write_text("not this run's")
    first: list[RunRecord] = []

    def progress(event: ProgressEvent) -> None:
        if not first:
            first.append(loads((tmp_path / "run.json").read_text()))
            raise Stop()

    with pytest.raises(Stop):
        _tune(tmp_path, progress)
    assert first[0].status == "interrupted" and first[0].outcomes == ()
    assert dataclasses.replace(first[0]).max_batch_size == 2


HANGS_AT_TWO = """
import pathlib, time, torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)
    def forward(self, x):
        if x.shape[0] >= 2:
            pathlib.Path({hung!r}).touch()
            time.sleep(3600)
        return self.fc(x)
def make():
    return Model(), [torch.randn(1, 8)]
"""


@pytest.mark.heavy
def test_an_interrupt_before_any_record_keeps_the_previous_run_json(tmp_path: Path) -> None:
    """SIGINT while the max-batch sweep waits on a hung call (before this run has written
    anything) exits 130, says the run.json there is a previous run's, and leaves it as
    it was."""
    (tmp_path / "out").mkdir()
    previous = "previous run's record\n"
    (tmp_path / "out" / "run.json").write_text(previous)
    hung = tmp_path / "hung"  # the model touches it when its call at batch size 2 hangs
    (tmp_path / "model.py").write_text(HANGS_AT_TWO.format(hung=str(hung)))
    root = str(Path(aitune_fp.__file__).parents[1])
    cmd = [sys.executable, "-m", "aitune_fp", "tune", "model.py:make", "--out", "out",
           "--cache-dir", "cache", "--no-plot", "--backends", "onnxruntime",
           "--call-timeout", "120"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": root}
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 240
    while not hung.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert hung.exists(), proc.communicate()[1]  # the sweep's worker waits on the hung call
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "out/run.json is a previous run's, kept" in err and "partial run record" not in err
    assert (tmp_path / "out" / "run.json").read_text() == previous
