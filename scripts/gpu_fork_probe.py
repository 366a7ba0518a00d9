"""Which import makes the workers' fork server initialise CUDA (a worker forked from a
server with CUDA initialised fails with "Cannot re-initialize CUDA in forked subprocess").

    python scripts/gpu_fork_probe.py [cnn]   # on a CUDA machine

Imports, in a fresh process and in the fork server's order, what a CUDA demo tune of the
model preloads, printing after each whether torch's CUDA state is initialised; then
starts a real fork server with those preloads and runs one CUDA op in a worker.
"""

from __future__ import annotations

import importlib
import sys
import time


def main(model: str = "cnn") -> int:
    """Print one line per preloaded module and the worker's verdict."""
    import torch

    from aitune_fp.effects.backends.search_space import search_candidates
    from aitune_fp.core.accuracy import Search
    from aitune_fp.effects.isolation.server import wanted
    from aitune_fp.effects.machine.preload import libraries_of

    configs = search_candidates(Search(), "cuda")
    names = wanted([n for c in configs for n in libraries_of(c)])
    print(f"INFO preloads: {names}; initialised at start: {torch.cuda.is_initialized()}")
    for name in names:
        t0 = time.perf_counter()
        try:
            importlib.import_module(name)
            said = "ok"
        except Exception as error:  # what a preload that fails does in the server
            said = f"{type(error).__name__}: {error}"
        took = time.perf_counter() - t0
        print(f"INFO import {name}: {said}; {took:.1f} s; cuda initialised: "
              f"{torch.cuda.is_initialized()}; a fork can use CUDA: {_fork_ok()}",
              flush=True)  # fmt: skip
    return _through_server(names)


def _fork_ok() -> str:
    """Whether a plain fork of this process can run a CUDA op now (its words)."""
    import os

    pid = os.fork()
    if pid == 0:  # the child: one CUDA op, exit 0 when it ran
        code = 1
        try:
            import torch

            torch.zeros(1, device="cuda").add_(1)
            code = 0
        except Exception as error:
            print(f"    child: {type(error).__name__}: {str(error)[:80]}", flush=True)
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return "yes" if os.waitstatus_to_exitcode(status) == 0 else "NO"


def _cuda_op(queue: object) -> None:
    import torch

    try:
        torch.zeros(1, device="cuda").add_(1)
        queue.put("PASS")  # type: ignore[attr-defined]
    except Exception as error:
        queue.put(f"FAIL {type(error).__name__}: {error}")  # type: ignore[attr-defined]


def _through_server(names: tuple[str, ...]) -> int:
    """A real fork server with ``names`` preloaded; one CUDA op in a worker."""
    import multiprocessing

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(list(names))
    queue = ctx.Queue()
    proc = ctx.Process(target=_cuda_op, args=(queue,))
    proc.start()
    proc.join(300)
    said = queue.get(timeout=5) if proc.exitcode == 0 else f"FAIL exit {proc.exitcode}"
    print(f"{said.split(' ')[0]} fork server worker: {said}")
    return 0 if said.startswith("PASS") else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
