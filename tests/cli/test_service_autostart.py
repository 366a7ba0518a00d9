"""The tuning service starts itself on a first tune, serves two tunes at once, and passes
the terminal's Ctrl-Z on to the tune; every service here lives in a private temporary
folder and is stopped (then killed) at teardown."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from aitune_fp.cli import service_client
from tests.cli.test_service import kill_left

ROOT = Path(__file__).resolve().parents[2]
MODELS = """
import pathlib
import time
import torch

GO = pathlib.Path(__file__).resolve().with_name("go")

def small():
    return torch.nn.Linear(4, 2), [torch.randn(2, 4)]

class Gated(torch.nn.Module):
    def forward(self, x):  # the tune cannot end before the test opens the gate
        while not GO.exists():
            time.sleep(0.01)
        return x * 2.0

def gated():
    return Gated(), [torch.randn(2, 4)]
"""
DEADLINE = 60.0
"""Seconds a state change seen in /proc may take (the checks poll, they never sleep blind)."""


def _run(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "aitune_fp", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600, check=False)  # fmt: skip


def _tune_args(work: Path, target: str, out: str) -> list[str]:
    return ["tune", f"models.py:{target}", "--backends", "eager", "--max-batch-size", "2",
            "--verify-seconds", "0", "--no-plot", "--out", str(work / out)]  # fmt: skip


def _status(env: dict[str, str], work: Path) -> str:
    return _run(env, "service", "status", cwd=work).stdout


def _wait_for_service(env: dict[str, str], work: Path, seconds: float = 300.0) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        said = _status(env, work)
        if "service pid" in said:
            return said
        time.sleep(1.0)
    raise AssertionError(f"no service came up: {(work / 'svc' / 'service.log').read_text()}")


@pytest.fixture
def private(tmp_path: Path) -> Iterator[tuple[dict[str, str], Path]]:
    """An environment whose service folder is private to this test (stopped at the end)."""
    (tmp_path / "models.py").write_text(MODELS)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AITUNE_FP_SERVICE_DIR": str(tmp_path / "svc"),
           "AITUNE_FP_CACHE": str(tmp_path / "cache")}  # fmt: skip
    env.pop("AITUNE_FP_SERVICE", None)
    try:
        yield env, tmp_path
    finally:
        said = _status(env, tmp_path)
        _run(env, "service", "stop", cwd=tmp_path)
        kill_left(int(said.split()[2].rstrip(":")) if "service pid" in said else None)


def test_the_suite_never_starts_a_service_by_itself() -> None:
    """The suite runs with ``AITUNE_FP_SERVICE=0``, so a first tune starts no service."""
    assert os.environ.get("AITUNE_FP_SERVICE") == "0"
    assert service_client.autostart() is False


def test_a_service_that_cannot_start_is_one_warning_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A service folder that cannot be made (a file is in its way) is one warning, no start."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    env = {"AITUNE_FP_SERVICE_DIR": str(blocker / "svc")}
    monkeypatch.setenv("AITUNE_FP_SERVICE_DIR", env["AITUNE_FP_SERVICE_DIR"])
    assert service_client.autostart(env) is False
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "could not be started" in lines[0]


@pytest.mark.heavy
def test_a_first_tune_starts_the_service_and_later_ones_attach_two_at_once(
    private: tuple[dict[str, str], Path],
) -> None:
    """The first tune runs in its own process and leaves a service behind; two tunes
    started together then both run through it and both succeed."""
    env, work = private
    first = _run(env, *_tune_args(work, "small", "first"), cwd=work)
    assert first.returncode == 0, first.stderr[-2000:]
    _wait_for_service(env, work)
    both = [subprocess.Popen([sys.executable, "-m", "aitune_fp", *_tune_args(work, "small", o)],
                             cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True) for o in ("a", "b")]  # fmt: skip
    for tune in both:
        _, err = tune.communicate(timeout=600)
        assert tune.returncode == 0, err[-2000:]
    assert (work / "a" / "run.json").is_file() and (work / "b" / "run.json").is_file()
    assert "2 tunes served" in _status(env, work)


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == pid:
                found.append(int(entry.name))
    return found


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _until(check: Callable[[], bool], what: str) -> None:
    """Poll ``check`` until it holds, failing with ``what`` past :data:`DEADLINE`."""
    deadline = time.monotonic() + DEADLINE
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {DEADLINE:g} s: {what}")
        time.sleep(0.05)


@pytest.mark.heavy
def test_ctrl_z_at_the_client_stops_the_tune_and_fg_continues_it(
    private: tuple[dict[str, str], Path],
) -> None:
    """SIGTSTP at an attached client (in a process group of its own, as a shell's job is,
    so the stop is never discarded as an orphaned group's) stops the service's tune too;
    SIGCONT resumes both, and the tune, held by its model until then, finishes with 0."""
    env, work = private
    assert _run(env, "service", "start", cwd=work).returncode == 0
    service = int(_status(env, work).split()[2].rstrip(":"))
    before = set(_children(service))
    command = [sys.executable, "-m", "aitune_fp", *_tune_args(work, "gated", "z"),
               "--call-timeout", "600"]  # fmt: skip
    client = subprocess.Popen(command, cwd=work, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, process_group=0)  # fmt: skip
    try:
        _until(lambda: bool(set(_children(service)) - before), "the service forks the tune")
        (tune,) = set(_children(service)) - before
        client.send_signal(signal.SIGTSTP)
        _until(lambda: _state(tune) == "T" == _state(client.pid), "the tune and client stop")
        client.send_signal(signal.SIGCONT)
        _until(lambda: _state(tune) != "T" != _state(client.pid), "both continue")
        assert client.poll() is None  # the gate still holds the tune
    finally:
        (work / "go").touch()
    _, err = client.communicate(timeout=600)
    assert client.returncode == 0, err[-2000:]
