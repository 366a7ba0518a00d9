"""Isolated effects: a backend's crash, exit, abort, hang or kill becomes its failure value."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch
from returns.io import IOFailure, IOSuccess
from returns.unsafe import unsafe_perform_io

from aitune_fp.core.records import BackendFailure
from aitune_fp.core.strategies import max_throughput
from aitune_fp.effects.build_request import BuildRequest, Candidate
from aitune_fp.effects.checks.validate import Tolerance
from aitune_fp.effects.inputs.samples import Samples, normalise_samples
from aitune_fp.effects.isolation import (
    Timeouts,
    isolated_candidate,
    isolated_max_batch,
    materialized,
)
from aitune_fp.effects.measure.timing import ProfileSettings
from tests.faults.faulty import Faulty, FaultyModule, Plain

CPU = torch.device("cpu")
FAST = ProfileSettings(max_pool=2, max_seconds_per_batch=0.2)


def _module() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 4)).eval()


def _samples() -> Samples:
    return normalise_samples([torch.randn(1, 8) for _ in range(2)])


def _run(backend: object, tmp_path: Path, timeouts: Timeouts = Timeouts(), sizes=(1, 2, 4)):  # type: ignore[no-untyped-def]
    request = BuildRequest(_module(), _samples(), CPU, max_throughput.plan, tuple(sizes), (1,),
                           None, FAST, Tolerance())  # fmt: skip
    named = Candidate(backend, backend.describe(), tmp_path / "work")  # type: ignore[arg-type,attr-defined]
    return isolated_candidate(request, named, timeouts=timeouts)


def _failure(run) -> BackendFailure:  # type: ignore[no-untyped-def]
    assert isinstance(run.outcome, IOFailure), run.outcome
    failure: BackendFailure = unsafe_perform_io(run.outcome.failure())
    return failure


@pytest.mark.parametrize(
    ("fault", "words"),
    [
        ("segfault", "worker died with SIGSEGV during profile at batch size 4"),
        ("abort", "worker died with SIGABRT during profile at batch size 4"),
        ("exit", "worker exited with code 7 during profile at batch size 4"),
        (
            "oom_kill",
            "worker was killed with SIGKILL (out of memory?) during profile at batch size 4",
        ),
    ],
)
def test_a_crash_while_profiling_is_a_profile_failure_naming_the_batch_size(
    tmp_path: Path, fault: str, words: str
) -> None:
    """A worker that dies at batch size 4 fails its backend at profile with the signal or
    exit code and the batch size, and the failure is kept in the backend's build.log."""
    run = _run(Faulty(fault=fault, at_batch=4), tmp_path)
    failure = _failure(run)
    assert (failure.backend, failure.stage) == (
        Faulty(fault=fault, at_batch=4).describe(),
        "profile",
    )
    assert failure.message == words
    assert words in (tmp_path / "work" / "build.log").read_text()


def test_os_exit_during_the_build_is_a_build_failure(tmp_path: Path) -> None:
    """``os._exit(7)`` inside a build (as an exporter might) fails that backend at build."""
    failure = _failure(_run(Faulty(fault="exit", stage="build"), tmp_path))
    assert failure.stage == "build" and failure.message == "worker exited with code 7 during build"


def test_a_hung_call_is_stopped_by_the_call_timeout(tmp_path: Path) -> None:
    """A timed call that never returns at batch size 2 is ended after the call timeout and
    fails its backend at profile naming the batch size."""
    began = time.monotonic()
    hang = Faulty(fault="hang", at_batch=2, after_calls=3)
    failure = _failure(_run(hang, tmp_path, Timeouts(build=30, call=1.0)))
    assert failure.stage == "profile"
    assert failure.message == (
        "a call did not return within 1 s during profile at batch size 2 (worker stopped)"
    )
    assert time.monotonic() - began < 30


def test_a_first_call_that_hangs_gets_the_build_timeout(tmp_path: Path) -> None:
    """The first call at a new batch size (which may compile) is allowed the build timeout,
    and one that never returns is ended then, saying it was that first call."""
    failure = _failure(_run(Faulty(fault="hang", at_batch=2), tmp_path, Timeouts(2.0, 0.5)))
    assert failure.message == (
        "a call did not return within 2 s during profile at batch size 2 "
        "(its first call there, which may compile) (worker stopped)"
    )


def test_a_hung_build_is_stopped_by_the_build_timeout(tmp_path: Path) -> None:
    """A build that hangs is ended after the build timeout and fails at build."""
    failure = _failure(_run(Faulty(fault="hang", stage="build"), tmp_path, Timeouts(build=1.0)))
    assert (failure.stage, failure.message) == ("build", "build exceeded 1 s (worker stopped)")


def test_a_healthy_backend_profiles_in_its_worker_and_runs_here(tmp_path: Path) -> None:
    """A healthy backend's profile comes back from its worker with every batch size, and
    its runner is made in this process on demand, giving the module's outputs."""
    run = _run(Plain(), tmp_path)
    assert isinstance(run.outcome, IOSuccess)
    profile = unsafe_perform_io(run.outcome.unwrap())
    assert sorted(profile.latencies_ms) == [1, 2, 4]
    assert run.stage_seconds.keys() >= {"build", "validate", "profile"}
    assert run.built is not None
    built = materialized(run.built)
    x = torch.randn(3, 8)
    assert torch.equal(built.runner(x), _module()(x))


def test_a_crash_in_the_max_batch_search_keeps_the_last_batch_size_that_ran() -> None:
    """The eager max-batch search in a worker that segfaults at batch size 8 keeps 4."""
    found = isolated_max_batch(FaultyModule("segfault", 8), _samples(), CPU, 64)
    assert found.max_batch_size == 4
    assert "SIGSEGV" in found.reason and "batch size 8" in found.reason


def test_an_empty_backend_list_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """``--backends ""`` is a usage error (exit 2), not every backend."""
    from aitune_fp.cli.main import main

    with pytest.raises(SystemExit) as stopped:
        main(["tune", "x.py:make", "--backends", ""])
    assert stopped.value.code == 2 and "no backend named" in capsys.readouterr().err


def test_a_factory_that_exits_is_a_factory_error(tmp_path: Path) -> None:
    """A factory calling sys.exit(3) is a FactoryError saying so, not an exit."""
    from aitune_fp.cli.factory import FactoryError, call_factory

    (tmp_path / "model.py").write_text("def leave():\n    raise SystemExit(3)\n")
    with pytest.raises(FactoryError, match=r"leave\(\) called sys.exit\(3\)"):
        call_factory(f"{tmp_path / 'model.py'}:leave")
