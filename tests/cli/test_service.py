"""The long-lived tuning service end to end, in real processes: its lifecycle, tunes that
attach to it, no state shared between two tunes, crashes and Ctrl-C in a tune.

One service per module (its warm-up imports torch and the backends' libraries), in a
temporary private folder; the fixture always stops it and kills what is left.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.heavy
MODELS = """
import os, time
import torch

def first():
    torch._aitune_fp_leak_probe = "first"  # a global a later tune must not see
    return torch.nn.Linear(4, 2), [torch.randn(2, 4)]

def second():
    if hasattr(torch, "_aitune_fp_leak_probe"):
        raise RuntimeError("state of the first tune leaked into this one")
    return torch.nn.Linear(4, 3), [torch.randn(2, 4)]

def crash():
    os._exit(7)

def slow():
    print("factory running", flush=True)
    time.sleep(120)


class Chain(torch.nn.Module):
    def forward(self, x):  # 200 tiny ops: Inductor fuses them, eager runs each, far slower
        for _ in range(100):
            x = x * 1.0001 + 0.0001
        return x


def chain():
    return Chain(), [torch.randn(2, 64)]


class Stuck(torch.nn.Module):
    def forward(self, x):
        if x.shape[0] > 1:  # not the one-row check in the tune process: a worker's batch
            with open(os.environ["STUCK_MARK"], "a") as mark:
                mark.write(f"{os.getpid()} ")
            time.sleep(120)
        return x * 1.0


def stuck():
    return Stuck(), [torch.randn(2, 4)]
"""


def _run(
    env: dict[str, str], *args: str, cwd: Path, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "aitune_fp", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)  # fmt: skip


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, str], Path]]:
    """A running service in a private temporary folder (stopped, then killed, at the end)."""
    work = tmp_path_factory.mktemp("service")
    folder = work / "svc"
    (work / "models.py").write_text(MODELS)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AITUNE_FP_SERVICE_DIR": str(folder),
           "AITUNE_FP_CACHE": str(work / "cache")}  # fmt: skip
    env.pop("AITUNE_FP_SERVICE", None)
    started = _run(env, "service", "start", "--idle-timeout", "600", cwd=work)
    status = _run(env, "service", "status", cwd=work)
    pid = int(status.stdout.split()[2].rstrip(":")) if "service pid" in status.stdout else None
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        yield env, work
    finally:
        _run(env, "service", "stop", cwd=work, timeout=120)
        kill_left(pid)


def kill_left(pid: int | None) -> None:
    """Terminate, then kill, a service a stop left running."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if pid is None:
            return
        try:
            os.kill(pid, sig)
            time.sleep(1.0)
        except ProcessLookupError:
            return


def _tune(
    env: dict[str, str], work: Path, target: str, out: str, *extra: str, backends: str = "eager"
) -> subprocess.CompletedProcess[str]:
    # --fresh: each tune decides anew (an earlier one's stored decision would make the
    # attached and the own-process records differ for a reason that is not the service)
    return _run(env, "tune", f"models.py:{target}", "--backends", backends, "--max-batch-size",
                "2", "--verify-seconds", "0", "--no-plot", "--fresh", "--out", str(work / out),
                *extra, cwd=work)  # fmt: skip


def _log(work: Path) -> str:
    return (work / "svc" / "service.log").read_text()


def test_status_and_a_second_start_name_the_running_service(
    service: tuple[dict[str, str], Path],
) -> None:
    """A running service answers status for this installation; a second start reuses it;
    its folder is 0700 and its socket 0600."""
    env, work = service
    status = _run(env, "service", "status", cwd=work)
    assert status.returncode == 0 and "serves this installation" in status.stdout
    again = _run(env, "service", "start", cwd=work)
    assert again.returncode == 0 and "already running" in again.stdout
    assert (work / "svc").stat().st_mode & 0o777 == 0o700
    assert (work / "svc" / "service.sock").stat().st_mode & 0o777 == 0o600


def test_a_tune_through_the_service_records_what_one_without_it_does(
    service: tuple[dict[str, str], Path],
) -> None:
    """A tune attached to the service prints on the client's stdout, exits 0 and writes a
    record with the same fields and the same selection as the same tune run in its own
    process, and the service ran it (the candidate, Inductor on a chain of 200 tiny ops it
    fuses, is many times faster than the eager baseline, so no near tie can split them)."""
    env, work = service
    attached = _tune(env, work, "chain", "attached", backends="inductor")
    assert attached.returncode == 0, attached.stderr[-3000:]
    assert "Selected" in attached.stdout and "wrote" in attached.stderr
    own = _tune(env, work, "chain", "own", "--no-service", backends="inductor")
    assert own.returncode == 0, own.stderr[-3000:]
    records = [json.loads((work / o / "run.json").read_text()) for o in ("attached", "own")]
    assert sorted(records[0]) == sorted(records[1])
    assert _chose(records[0]) == _chose(records[1])
    chosen = records[0]["selection"]
    assert chosen is not None and chosen["backend"] == "inductor", chosen
    assert chosen["fell_back_to_baseline"] is False
    assert [c["backend"] for c in records[0]["candidates"]] == [
        c["backend"] for c in records[1]["candidates"]
    ]
    assert records[0]["wall"]["from_process_start"] is True
    assert "models.py:chain --backends inductor" in _log(work)
    assert f"--out {work / 'attached'}" in _log(work)
    assert f"--out {work / 'own'}" not in _log(work)


def _chose(record: dict[str, object]) -> tuple[object, ...]:
    """What a record's selection decided, apart from its timings: the pick, whether it fell
    back, what was considered, which candidates were ranked and where which failed."""
    chosen = record["selection"]
    assert isinstance(chosen, dict), chosen
    return (chosen["backend"], chosen["fell_back_to_baseline"], tuple(chosen["considered"]),
            tuple(sorted(s["backend"] for s in chosen["ranking"])),
            tuple((f["backend"], f["stage"]) for f in chosen["failures"]))  # fmt: skip


def test_two_tunes_in_one_service_do_not_share_state(service: tuple[dict[str, str], Path]) -> None:
    """A global the first tune's factory sets is absent in the next tune (a fresh process
    each), so the second factory does not raise."""
    env, work = service
    assert _tune(env, work, "first", "a").returncode == 0
    second = _tune(env, work, "second", "b")
    assert second.returncode == 0, second.stderr[-3000:]
    assert "models.py:second" in _log(work)


def test_a_crashing_tune_fails_its_client_and_the_service_keeps_serving(
    service: tuple[dict[str, str], Path],
) -> None:
    """A factory that calls ``os._exit(7)`` ends its tune with 7 at the client; the
    service then answers and runs the next tune."""
    env, work = service
    crashed = _tune(env, work, "crash", "c")
    assert crashed.returncode == 7, crashed.stderr[-3000:]
    assert "ended with 7" in _log(work)
    status = _run(env, "service", "status", cwd=work)
    assert "serves this installation" in status.stdout
    assert _tune(env, work, "second", "d").returncode == 0


def test_ctrl_c_at_the_client_interrupts_the_tune(service: tuple[dict[str, str], Path]) -> None:
    """SIGINT to the client reaches the tune, which exits 130 as a fresh process would."""
    env, work = service
    args = [sys.executable, "-m", "aitune_fp", "tune", "models.py:slow", "--backends", "eager",
            "--out", str(work / "slow")]  # fmt: skip
    client = subprocess.Popen(args, cwd=work, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert client.stdout is not None
    line = client.stdout.readline()
    assert "factory running" in line, line
    client.send_signal(signal.SIGINT)
    _, err = client.communicate(timeout=120)
    assert client.returncode == 130, err[-3000:]
    assert "interrupted" in err


def test_ctrl_c_while_a_worker_runs_ends_the_tune_and_its_worker(
    service: tuple[dict[str, str], Path],
) -> None:
    """SIGINT to the client while a worker is stuck in the model's forward ends the tune
    with 130, and the worker (forked from the service's fork server) is gone after it."""
    env, work = service
    mark = work / "stuck.pids"
    args = [sys.executable, "-m", "aitune_fp", "tune", "models.py:stuck", "--backends", "eager",
            "--out", str(work / "stuck")]  # fmt: skip
    marked = {**env, "STUCK_MARK": str(mark)}
    client = subprocess.Popen(args, cwd=work, env=marked, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 300
    while not mark.exists() and time.monotonic() < deadline and client.poll() is None:
        time.sleep(0.2)
    assert mark.exists(), client.communicate(timeout=60)
    workers = [int(p) for p in mark.read_text().split()]
    client.send_signal(signal.SIGINT)
    _, err = client.communicate(timeout=120)
    assert client.returncode == 130, err[-3000:]
    time.sleep(1.0)
    assert not any(_alive(pid) for pid in workers), workers


def test_a_client_of_another_environment_runs_here(service: tuple[dict[str, str], Path]) -> None:
    """A client whose import-time environment differs is refused with a one-line note and
    runs the command itself."""
    env, work = service
    other = {**env, "OMP_NUM_THREADS": "1" if env.get("OMP_NUM_THREADS") != "1" else "2"}
    done = _run(other, "demo", "--help", cwd=work)
    assert done.returncode == 0 and "usage" in done.stdout
    assert "service not used" in done.stderr


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_stop_ends_the_service_and_its_fork_server(service: tuple[dict[str, str], Path]) -> None:
    """``service stop`` (last in this module) ends the service process and its fork
    server and removes the socket; status then says none runs."""
    env, work = service
    words = (
        _run(env, "service", "status", cwd=work).stdout.replace(",", " ").replace(";", " ").split()
    )
    service_pid = int(words[2].rstrip(":"))
    fork_server = int(words[words.index("server") + 1])
    assert _alive(service_pid) and _alive(fork_server)
    stopped = _run(env, "service", "stop", cwd=work)
    assert stopped.returncode == 0 and "service stopped" in stopped.stdout
    assert not (work / "svc" / "service.sock").exists()
    deadline = time.monotonic() + 30
    while (_alive(service_pid) or _alive(fork_server)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(service_pid) and not _alive(fork_server)
    assert "no service running" in _run(env, "service", "status", cwd=work).stdout
