"""A build ahead in its worker: a backend that really hangs or crashes in its build ends only
that worker, under the build's timeout, and comes back as words, never raised."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from aitune_fp.core.strategies import max_throughput
from aitune_fp.effects.build_ahead import PrebuildJob
from aitune_fp.effects.build_request import BuildRequest
from aitune_fp.effects.inputs.samples import normalise_samples
from aitune_fp.effects.isolation import Timeouts
from aitune_fp.effects.isolation.isolated import prebuild_payload, run_prebuild
from tests.faults.faulty import Faulty, Plain


def _job(backend: object, tmp_path: Path) -> bytes:
    torch.manual_seed(0)
    request = BuildRequest(torch.nn.Linear(8, 4).eval(), normalise_samples([torch.randn(1, 8)]),
                           torch.device("cpu"), max_throughput.plan, (1, 2), (1, 2))  # fmt: skip
    job = PrebuildJob(request, backend, "x", tmp_path / "ahead")  # type: ignore[arg-type]
    payload = prebuild_payload(job)
    assert isinstance(payload, bytes)
    return payload


@pytest.mark.parametrize(
    ("fault", "words"),
    [
        ("segfault", "worker died with SIGSEGV during build"),
        ("exit", "worker exited with code 7 during build"),
        ("hang", "build exceeded 2 s (worker stopped)"),
    ],
)
def test_a_build_ahead_that_crashes_or_hangs_is_words(
    tmp_path: Path, fault: str, words: str
) -> None:
    """A segfault, an exit or a hang in the build ends the worker (the hang after the 2 s
    build timeout) and is answered as the reason, not raised."""
    answer = run_prebuild(_job(Faulty(fault=fault, stage="build"), tmp_path), Timeouts(2.0, 2.0))
    assert answer is not None and answer.startswith(words)


def test_a_healthy_build_ahead_is_none_and_a_call_crash_after_it_is_words(tmp_path: Path) -> None:
    """A backend that builds is ``None``; one whose runner segfaults on the untimed warm call
    a just-in-time build ahead makes fails with that signal."""
    assert run_prebuild(_job(Plain(), tmp_path), Timeouts(60.0, 60.0)) is None
    crashing = _job(Faulty(fault="segfault", stage="call", at_batch=2), tmp_path)
    answer = run_prebuild(crashing, Timeouts(60.0, 60.0))
    assert answer is not None and "SIGSEGV" in answer


def test_an_interrupt_while_building_ahead_kills_every_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C (SIGINT) while two builds ahead hang goes on as ``KeyboardInterrupt`` once
    both workers and their process groups are killed: no worker is left running."""
    import multiprocessing
    import signal
    import threading
    import time

    from aitune_fp.core.session import Prebuild
    from aitune_fp.shell import prebuild

    def hanging(_setup: object, _backend: object, name: str) -> PrebuildJob:
        torch.manual_seed(0)
        request = BuildRequest(torch.nn.Linear(8, 4).eval(),
                               normalise_samples([torch.randn(1, 8)]), torch.device("cpu"),
                               max_throughput.plan, (1,), (1,))  # fmt: skip
        return PrebuildJob(request, Faulty(fault="hang", stage="build"), name, tmp_path / name)

    class Quiet:
        timeouts = Timeouts(600.0, 600.0)

        def emit(self, *_args: object, **_fields: object) -> None:
            """Nothing to show."""

    monkeypatch.setattr(prebuild, "_job", hanging)
    started = time.monotonic()
    threading.Timer(8.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    with pytest.raises(KeyboardInterrupt):
        prebuild.prebuilt(Quiet(), Prebuild(("a", "b"), 2), {"a": None, "b": None})  # type: ignore[arg-type, dict-item]
    assert time.monotonic() - started < 60
    deadline = time.monotonic() + 10
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert multiprocessing.active_children() == []
