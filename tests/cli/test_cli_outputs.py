"""The run's files: the plot drawn first and its time in the written account; a tune's own
run.json (written by the tuner) is not written again; the console script's exit runs the
``atexit`` handlers and keeps the exit code."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from aitune_fp.cli.outputs import write_run
from aitune_fp.core.record.run_record import BackendOutcome, RunRecord, dumps, loads
from aitune_fp.core.record.wall import WallAccount
from aitune_fp.core.records import Profile


def _record() -> RunRecord:
    eager = BackendOutcome("eager", "eager", "k", {}, profile=Profile("eager", {1: [5.0, 5.0]}))
    fast = BackendOutcome("fast", "fast", "k", {}, profile=Profile("fast", {1: [1.0, 1.0]}))
    return RunRecord("m", "cpu", {}, eager, (fast,), None, None, {}, {}, 1,
                     wall=WallAccount(2.0, (("startup", 1.0), ("candidates", 0.9))))  # fmt: skip


def test_the_written_record_accounts_for_the_plot(tmp_path: Path) -> None:
    """With a plot, run.json's and report.md's account end with a 'plot' stage of the
    plot's time and a wall longer by it; without one, the account is as the run made it."""
    pytest.importorskip("matplotlib")
    record, written = write_run(_record(), tmp_path / "a", Console(file=None, quiet=True))
    assert [p.name for p in written] == ["run.json", "report.md", "plot.png"]
    stored = loads((tmp_path / "a" / "run.json").read_text())
    assert stored.wall == record.wall and stored.wall is not None
    name, seconds = stored.wall.stages[-1]
    assert name == "plot" and seconds > 0 and stored.wall.wall == pytest.approx(2.0 + seconds)
    assert f"plot {seconds:.1f} s" in (tmp_path / "a" / "report.md").read_text()
    plain, written = write_run(_record(), tmp_path / "b", Console(quiet=True), plot=False)
    assert [p.name for p in written] == ["run.json", "report.md"]
    assert plain.wall == _record().wall


LEAVER = """
import atexit, sys
from aitune_fp.cli import entry
atexit.register(lambda: open(sys.argv[1], "w").write("ran"))
print("said", flush=False)
entry.leave(7)
"""


def test_a_tunes_run_json_is_not_written_again(tmp_path: Path) -> None:
    """With ``recorded``, the run.json the tuner wrote is kept byte for byte (the record as
    written is the tune's, no plot stage added) and report.md is written next to it; a
    run.json that does not hold the record is an error, never silently kept."""
    out = tmp_path / "run"
    out.mkdir()
    (out / "run.json").write_text(dumps(_record()))
    os.utime(out / "run.json", ns=(10**9, 10**9))  # 1 s after the epoch: any write moves it
    before = (out / "run.json").stat()
    record, written = write_run(_record(), out, Console(quiet=True), plot=False, recorded=True)
    assert [p.name for p in written] == ["run.json", "report.md"] and record == _record()
    after = (out / "run.json").stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, 10**9)  # not replaced, not written
    other = RunRecord("other", "cpu", {}, None, (), None, None, {}, {}, 1)
    with pytest.raises(OSError, match="does not hold this run's record"):
        write_run(other, out, Console(quiet=True), plot=False, recorded=True)


def test_leave_runs_atexit_flushes_and_keeps_the_code(tmp_path: Path) -> None:
    """``leave(code)`` runs the atexit handlers, flushes unflushed output and exits with code."""
    marker = tmp_path / "marker"
    done = subprocess.run([sys.executable, "-c", LEAVER, str(marker)], capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 7 and done.stdout == "said\n" and marker.read_text() == "ran"
