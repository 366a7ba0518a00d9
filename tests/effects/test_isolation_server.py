"""The workers' fork server: paid once per process, restarted only for a missing library,
stopped on request, and a fresh worker (never the server) for every job."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from aitune_fp.effects.inputs.samples import normalise_samples
from aitune_fp.effects.isolation import Timeouts, isolated_max_batch, server
from aitune_fp.effects.measure.max_batch import MaxBatchResult

CPU = torch.device("cpu")


class PidWriter(torch.nn.Module):
    """A linear layer whose forward appends the calling process's pid to a file."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)
        self.path = path

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``fc(x)``, after writing the pid."""
        with open(self.path, "a") as fh:
            fh.write(f"{os.getpid()}\n")
        return self.fc(x)  # type: ignore[no-any-return]


def _server_pid() -> int:
    pid = server._server()._forkserver_pid
    assert isinstance(pid, int)
    return pid


def test_the_server_is_reused_restarted_for_a_new_library_and_stopped() -> None:
    """A second start for the same libraries keeps the running server; one that needs a
    library it lacks restarts it once with both sets; shutdown stops it."""
    server.shutdown()
    server.start(["json"])
    first = _server_pid()
    server.start([])  # a subset: reused as it is
    assert _server_pid() == first and "json" in server.preloaded()
    server.start(["json", "decimal"])  # a library it lacks: one restart with both
    second = _server_pid()
    assert second != first and {"json", "decimal"} <= set(server.preloaded())
    server.shutdown()
    assert not server.running() and server.preloaded() == ()


def test_every_job_gets_a_fresh_worker_from_one_server(tmp_path: Path) -> None:
    """Two jobs in one process run in two different workers, neither the server nor this
    process, while the server stays the same (nothing of one job's process reaches the next)."""
    server.start([])
    before = _server_pid()
    samples = normalise_samples(torch.randn(1, 4))
    pids = []
    for name in ("a", "b"):
        path = tmp_path / f"{name}.txt"
        found = isolated_max_batch(PidWriter(str(path)), samples, CPU, 2, Timeouts())
        assert isinstance(found, MaxBatchResult), found
        pids.append({int(line) for line in path.read_text().split()})
    assert all(len(p) == 1 for p in pids) and pids[0] != pids[1]
    assert not ({before, os.getpid()} & (pids[0] | pids[1]))
    assert _server_pid() == before


def _frozen_count(queue: object) -> None:
    """Put this process's count of frozen objects on ``queue``."""
    import gc

    queue.put(gc.get_freeze_count())  # type: ignore[attr-defined]


def test_a_worker_starts_with_the_servers_heap_frozen() -> None:
    """A process forked from the server inherits its preloaded objects in the permanent
    generation (the server froze its heap last), so the worker's collections skip them."""
    server.shutdown()
    ctx = server.context([])
    server.start([])
    queue = ctx.Queue()
    worker = ctx.Process(target=_frozen_count, args=(queue,))
    worker.start()
    count = queue.get(timeout=120)
    worker.join(timeout=60)
    assert count > 10_000
    assert server.preloaded()[-1] == server.FROZEN_HEAP


def test_a_cuda_tune_gets_a_server_without_the_compilers_imports() -> None:
    """A CUDA tune's server imports none of the CUDA-unsafe modules (after which, on an
    H200 with torch 2.11, a fork cannot use CUDA), and a running server that imported
    them is replaced rather than reused; the CPU server keeps them (issue 37, found on
    the lent GPU)."""
    server.shutdown()
    server.start(["json", "torch.export"])
    cpu_pid = _server_pid()
    assert "torch.export" in server.preloaded()
    server.start(["json", "torch.export"], cuda=True)
    assert _server_pid() != cpu_pid
    assert "json" in server.preloaded()
    assert not set(server.preloaded()) & set(server.CUDA_UNSAFE)
    cuda_pid = _server_pid()
    server.start(["json", "torch._inductor.compile_fx"], cuda=True)  # safe part: reused
    assert _server_pid() == cuda_pid
    server.shutdown()
