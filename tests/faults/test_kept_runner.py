"""A just-in-time build ahead keeps its warm runner in its worker for the candidate's first
sweep job: the job runs there with no second build, and a kept worker that died, hangs or
was never claimed ends as any worker does, nothing left running."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from returns.io import IOFailure, IOResult, IOSuccess
from returns.unsafe import unsafe_perform_io

from aitune_fp.core.records import BackendFailure
from aitune_fp.core.strategies import max_throughput
from aitune_fp.effects.backends.base import Built, ConfigIdentity
from aitune_fp.effects.build_ahead import PrebuildJob
from aitune_fp.effects.build_request import BuildRequest, Candidate
from aitune_fp.effects.inputs.samples import Samples, normalise_samples
from aitune_fp.effects.isolation import Timeouts, client
from aitune_fp.effects.isolation.isolated import (
    isolated_candidate,
    kept_key,
    prebuild_payload,
    run_prebuild,
)
from aitune_fp.effects.isolation.watchdog import Handle
from tests.faults.faulty import Faulty, Plain

SLOW = Timeouts(60.0, 60.0)


def _request() -> BuildRequest:
    torch.manual_seed(0)
    return BuildRequest(torch.nn.Linear(8, 4).eval(), normalise_samples([torch.randn(1, 8)]),
                        torch.device("cpu"), max_throughput.plan, (1, 2), (1, 2))  # fmt: skip


def _kept(backend: object, work_dir: Path) -> str:
    """Build ``backend`` ahead keeping its runner, for the candidate in ``work_dir``; the key."""
    job = PrebuildJob(_request(), backend, "x", work_dir / ".ahead", keep=True)  # type: ignore[arg-type]
    payload = prebuild_payload(job)
    assert isinstance(payload, bytes)
    key = kept_key(work_dir)
    assert run_prebuild(payload, SLOW, key) is None
    return key


def _gone(handle: Handle) -> bool:
    deadline = time.monotonic() + 10
    while handle.proc.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    return not handle.proc.is_alive()


def _profiled(backend: object, work_dir: Path) -> bool:
    run = isolated_candidate(_request(), Candidate(backend, "x", work_dir), timeouts=SLOW)  # type: ignore[arg-type]
    return isinstance(run.outcome, IOSuccess)


def test_the_first_sweep_job_runs_on_the_kept_runner_then_the_worker_ends(
    tmp_path: Path,
) -> None:
    """The built-ahead worker stays under the candidate's key; the candidate's job runs in
    it (its build stage takes the kept runner, ``build.log`` says so) and profiles, and the
    worker is gone afterwards; the next job for the candidate gets a fresh worker."""
    key = _kept(Plain(), tmp_path)
    handle = client._KEPT[key]
    assert handle.proc.is_alive()
    assert _profiled(Plain(), tmp_path)
    assert "kept warm in its worker" in (tmp_path / "build.log").read_text()
    assert key not in client._KEPT and _gone(handle)
    (tmp_path / "build.log").unlink()
    assert _profiled(Plain(), tmp_path)
    assert "kept warm" not in (tmp_path / "build.log").read_text()


def test_a_kept_worker_killed_while_idle_leaves_the_job_to_a_fresh_worker(
    tmp_path: Path,
) -> None:
    """A kept worker that died while it waited (SIGKILL, as the out-of-memory killer would)
    is not used: the candidate's job runs in a fresh worker and profiles."""
    key = _kept(Plain(), tmp_path)
    handle = client._KEPT[key]
    os.kill(handle.proc.pid, signal.SIGKILL)
    assert _gone(handle)
    assert _profiled(Plain(), tmp_path)
    assert "kept warm" not in (tmp_path / "build.log").read_text()


def test_a_job_that_crashes_on_the_kept_runner_is_recorded_as_its_failure(
    tmp_path: Path,
) -> None:
    """A kept runner whose call segfaults in the sweep (its third call at a batch of two
    rows: the build ahead's warm call was the first) ends that worker, and the candidate
    fails with the signal and the stage it was in."""
    faulty = Faulty(fault="segfault", stage="call", at_batch=2, after_calls=1)
    key = _kept(faulty, tmp_path)
    handle = client._KEPT[key]
    run = isolated_candidate(_request(), Candidate(faulty, "x", tmp_path), timeouts=SLOW)
    assert isinstance(run.outcome, IOFailure)
    failure = unsafe_perform_io(run.outcome.failure())
    assert "SIGSEGV" in failure.message and failure.stage in ("validate", "profile")
    assert _gone(handle)


def test_release_ends_every_kept_worker_nothing_left_running(tmp_path: Path) -> None:
    """Kept workers nobody claimed (a pruned variant's) end when the tune releases them;
    no worker is left running."""
    handles = [client._KEPT[_kept(Plain(), tmp_path / n)] for n in ("a", "b")]
    assert all(h.proc.is_alive() for h in handles)
    assert client.release_kept() == 2
    assert all(_gone(h) for h in handles) and client._KEPT == {}
    deadline = time.monotonic() + 10
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert multiprocessing.active_children() == []


@dataclass(frozen=True, slots=True)
class Holding(ConfigIdentity):
    """The eager module, with a runner that holds 64 MiB its build allocated."""

    name: str = field(default="holding", init=False)

    def unavailable_reason(self, device: torch.device) -> str | None:
        """Always available."""
        return None

    def build(
        self, module: torch.nn.Module, samples: Samples, device: torch.device, work_dir: Path
    ) -> IOResult[Built, BackendFailure]:
        """A runner that keeps a 64 MiB buffer alive."""
        held = torch.ones(16 * 1024 * 1024)

        def runner(*args: Any, **kwargs: Any) -> Any:
            with torch.inference_mode():
                return module(*args, **kwargs) + 0 * held[0]

        return IOSuccess(Built(runner, info={"device": str(device)}))


def test_a_kept_runner_is_still_charged_the_memory_its_build_holds(tmp_path: Path) -> None:
    """The peak memory of a job run on a kept runner counts what the runner's build holds
    (64 MiB here), as a job that builds it does, and not the job's second copy of the
    module twice."""
    _kept(Holding(), tmp_path / "kept")
    run = isolated_candidate(_request(), Candidate(Holding(), "x", tmp_path / "kept"),
                             timeouts=SLOW)  # fmt: skip
    fresh = isolated_candidate(_request(), Candidate(Holding(), "x", tmp_path / "fresh"),
                               timeouts=SLOW)  # fmt: skip
    kept_mb = unsafe_perform_io(run.outcome.unwrap()).peak_memory_mb
    fresh_mb = unsafe_perform_io(fresh.outcome.unwrap()).peak_memory_mb
    assert "kept warm" in (tmp_path / "kept" / "build.log").read_text()
    assert kept_mb is not None and fresh_mb is not None
    assert kept_mb >= 60 and abs(kept_mb - fresh_mb) < 16
