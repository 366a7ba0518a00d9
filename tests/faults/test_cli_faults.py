"""``aitune-fp tune`` with a model that crashes, exits or hangs in a backend, is interrupted
or terminated, or is pointed at bad folders: it always ends with a code and a record."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

MODEL = Path(__file__).with_name("model_file.py")
TUNE = ["--max-batch-size", "2", "--strategy", "min-latency", "--no-plot"]


def _cli(tmp_path: Path, *args: str, fault: str = "", marker: str = "") -> subprocess.Popen[str]:
    model = tmp_path / "model.py"
    shutil.copy(MODEL, model)
    env = {**os.environ, "AITUNE_TEST_FAULT": fault, "AITUNE_TEST_MARKER": marker, "COLUMNS": "200"}
    return subprocess.Popen(
        [sys.executable, "-m", "aitune_fp", *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _tune(tmp_path: Path, *extra: str, fault: str = "", factory: str = "make"):  # type: ignore[no-untyped-def]
    cmd = ["tune", f"model.py:{factory}", "--out", "out", "--cache-dir", "cache", *TUNE, *extra]
    proc = _cli(tmp_path, *cmd, fault=fault)
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out, err


def _record(tmp_path: Path) -> dict:  # type: ignore[type-arg]
    return json.loads((tmp_path / "out" / "run.json").read_text())  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("segfault", "worker died with SIGSEGV during build"),
        ("exit", "worker exited with code 7 during build"),
    ],
)
def test_a_backend_that_crashes_in_export_fails_alone(
    tmp_path: Path, fault: str, reason: str
) -> None:
    """A segfault or ``os._exit`` inside aot_inductor's export fails that backend at build
    with the reason; eager still competes and is selected; the exit code is 0."""
    code, _, err = _tune(tmp_path, "--backends", "aot_inductor,eager", fault=fault)
    assert code == 0, err
    record = _record(tmp_path)
    assert record["status"] == "complete"
    (aot,) = [c for c in record["candidates"] if c["backend"] == "aot_inductor"]
    assert aot["failure"]["stage"] == "build" and aot["failure"]["message"] == reason
    assert record["baseline"]["profile"] is not None
    assert record["selection"]["backend"] == "eager"


def test_a_backend_that_hangs_in_export_is_stopped_by_the_build_timeout(tmp_path: Path) -> None:
    """A hang inside export ends at ``--build-timeout`` as that backend's build failure;
    the run ends (exit 0) with eager selected and the timeout in the record."""
    code, _, err = _tune(
        tmp_path, "--backends", "aot_inductor,eager", "--build-timeout", "3", fault="hang"
    )
    assert code == 0, err
    record = _record(tmp_path)
    (aot,) = [c for c in record["candidates"] if c["backend"] == "aot_inductor"]
    assert (
        aot["failure"]
        == {
            "backend": "aot_inductor",
            "stage": "build",
            "message": "build exceeded 3 s (worker stopped)",
        }
        or aot["failure"]["message"] == "build exceeded 3 s (worker stopped)"
    )
    assert record["options"]["build_timeout_s"] == 3.0 and record["options"]["isolation"] is True


def _profiled(record: Path) -> bool:
    """Whether ``record`` (written from the start of the run) holds eager's profile yet."""
    try:
        return json.loads(record.read_text())["baseline"] is not None
    except (OSError, ValueError, KeyError):
        return False


def _alive(marker: str) -> list[int]:
    """Processes whose environment carries ``marker`` (the tune and its descendants)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if f"AITUNE_TEST_MARKER={marker}".encode() in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.parametrize(
    ("sig", "code", "words"),
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated (SIGTERM)")],
)
def test_a_signal_after_the_eager_profile_leaves_a_partial_record(
    tmp_path: Path, sig: signal.Signals, code: int, words: str
) -> None:
    """SIGINT or SIGTERM while a backend hangs, after eager was profiled: the tune exits
    with 130/143 and a message naming the partial run.json, which holds the eager profile,
    says ``interrupted`` and is read by ``aitune-fp report``; no worker is left behind."""
    marker = uuid.uuid4().hex
    cmd = ["tune", "model.py:make", "--out", "out", "--cache-dir", "cache", *TUNE]
    proc = _cli(tmp_path, *cmd, "--backends", "aot_inductor", fault="hang", marker=marker)
    record = tmp_path / "out" / "run.json"
    deadline = time.monotonic() + 240
    while not _profiled(record) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert _profiled(record), proc.communicate()[1]
    time.sleep(1.0)  # the hanging export has started in its worker
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert f"aitune-fp: {words}" in err and f"partial run record: {Path('out') / 'run.json'}" in err
    data = _record(tmp_path)
    assert data["status"] == "interrupted" and data["baseline"]["profile"] is not None
    shown = _cli(tmp_path, "report", "out/run.json")
    out, report_err = shown.communicate(timeout=120)
    assert shown.returncode == 0, report_err
    assert "eager" in out
    time.sleep(1.0)
    assert _alive(marker) == []


def test_a_killed_tune_process_leaves_a_valid_partial_record(tmp_path: Path) -> None:
    """SIGKILL of the tune process itself (a crash) after eager leaves a loadable partial
    run.json that ``reselect`` accepts, and its hanging worker does not outlive it."""
    marker = uuid.uuid4().hex
    cmd = ["tune", "model.py:make", "--out", "out", "--cache-dir", "cache", *TUNE]
    proc = _cli(tmp_path, *cmd, "--backends", "aot_inductor", fault="hang", marker=marker)
    record = tmp_path / "out" / "run.json"
    deadline = time.monotonic() + 240
    while not _profiled(record) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    proc.kill()
    proc.communicate(timeout=60)
    assert _record(tmp_path)["status"] == "interrupted"
    again = _cli(tmp_path, "reselect", "out/run.json", "--strategy", "max-throughput")
    _, err = again.communicate(timeout=120)
    assert again.returncode in (0, 1) and "run record" not in err, err
    deadline = time.monotonic() + 20
    while _alive(marker) and time.monotonic() < deadline:
        time.sleep(0.5)
    left = _alive(marker)
    for pid in left:  # never leave a stray process behind, even when the check fails
        os.kill(pid, signal.SIGKILL)
    assert left == []


def test_out_and_cache_paths_are_checked_before_any_work(tmp_path: Path) -> None:
    """An --out or --cache-dir that is a file, or an --out that cannot be written (under
    /proc, which nobody can write, root included), is a usage error (exit 2) naming it."""
    (tmp_path / "afile").write_text("x")
    cases = [
        (["--out", "afile"], "--out afile exists and is not a folder"),
        (["--out", "/proc/aitune_fp_out"], "--out /proc/aitune_fp_out cannot be written"),
        (["--cache-dir", "afile"], "--cache-dir afile exists and is not a folder"),
    ]
    for extra, words in cases:
        proc = _cli(tmp_path, "tune", "model.py:make", *TUNE, "--backends", "eager", *extra)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 2 and words in err, err
        assert not list(tmp_path.rglob("run.json"))  # nothing was tuned


def test_an_unwritable_cache_dir_runs_uncached_with_a_warning(tmp_path: Path) -> None:
    """A cache dir that cannot be created (under /proc) only turns the cache off: the tune
    still selects, exit 0, and the record is written."""
    code, _, err = _tune(tmp_path, "--backends", "eager", "--cache-dir", "/proc/aitune_fp_cache")
    assert code == 0, err
    assert "artifact cache off for this run" in err
    assert _record(tmp_path)["selection"] is not None


def test_a_factory_that_exits_is_one_line_error(tmp_path: Path) -> None:
    """A factory calling sys.exit(3) ends the command with exit 1 and one line saying so."""
    code, _, err = _tune(tmp_path, "--backends", "eager", factory="leave")
    assert code == 1
    assert err.strip().splitlines()[-1] == "aitune-fp: error: leave() called sys.exit(3)"


def test_an_empty_backend_list_is_a_usage_error(tmp_path: Path) -> None:
    """``--backends ""`` is a usage error (exit 2), not every backend."""
    code, _, err = _tune(tmp_path, "--backends", "")
    assert code == 2 and "no backend named" in err
