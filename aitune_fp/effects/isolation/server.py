"""The workers' fork server: started once per process, reused by every tune, stopped at exit.

Rules:
- workers come from a ``forkserver`` that imported torch and the backends' libraries once
  (:func:`start`); a worker is a fork of that clean server, never of the tune process,
  which may hold CUDA state, OpenMP thread pools or compiler pools that do not survive a
  fork (a plain ``fork`` after a parallel matmul hangs the child on this torch);
- the server is paid for once per process: a later tune (a fleet's next model, a
  benchmark loop, a second ``tune_module`` call) whose libraries the running server has
  already imported reuses it as it is; one that needs a library the server lacks restarts
  it once with both sets (so a worker never imports a compiler on its own clock); what is
  reused is only the server and its imports: every job still gets a fresh worker forked
  from the server, which never runs a job or sees a user's model itself, so nothing of
  one model reaches the next;
- :func:`shutdown` stops the server (killed: it may still be importing; it runs no job)
  and is registered with ``atexit`` when it is first started; the next :func:`start` or
  worker starts a fresh one; it is only called between tunes, never while a worker runs;
- the fork server imports from the tune process's own ``sys.path``, in its order
  (:func:`server_environment`), never from its working directory first;
- the user's ``__main__`` is hidden from multiprocessing while a process starts
  (:func:`_main_hidden`): a worker never re-runs the user's script (which need not have
  an ``if __name__ == "__main__"`` guard);
- a tune forked from the long-lived service (:mod:`.service_daemon`) uses the service's
  running server (:func:`adopt_inherited`): the server is not its child, so it is checked
  with a signal 0 rather than waited for, and this process never stops it (its
  :func:`shutdown` only forgets it); its workers run with this process's environment
  (:class:`EnvProcess`), not the server's; a tune that needs a library the inherited
  server lacks starts a server of its own, as a fresh process would;
- a server for a CUDA tune imports none of :data:`CUDA_UNSAFE` (a running server that has
  is replaced): after ``import torch._inductor.compile_fx`` a fork cannot use CUDA
  (measured on a lent H200, torch 2.11+cu130 with Triton 3.6: "Cannot re-initialize CUDA
  in forked subprocess", ``scripts/gpu_fork_probe.py``), so its workers pay those imports.

Longer than 260 lines: the fork server's start, reuse and stop are one lifecycle.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import multiprocessing
import os
import signal
import sys
from collections.abc import Iterable, Iterator
from multiprocessing import forkserver, resource_tracker
from typing import Any, Final

log = logging.getLogger("aitune_fp")
ALWAYS_PRELOAD: Final = (
    "torch",
    "aitune_fp.effects.isolation.worker",
    "aitune_fp.effects.candidate",
    "aitune_fp.effects.checks.validate",
    "aitune_fp.effects.measure.memory",
    "aitune_fp.effects.measure.max_batch",
    "aitune_fp.effects.backends.registry",
)
COMPILER_IMPORTS: Final = "aitune_fp.effects.isolation.compiler_imports"
COMPILER_PROBE: Final = "aitune_fp.effects.isolation.compiler_probe"
FROZEN_HEAP: Final = "aitune_fp.effects.isolation.frozen_heap"
_STATE: dict[str, Any] = {}
CUDA_UNSAFE: Final = (
    "torch._inductor",
    "torch.export",
    "torch.onnx",
    COMPILER_PROBE,
    COMPILER_IMPORTS,
)
"""Modules (and their submodules) a fork server for a CUDA tune must not import."""


def cuda_safe(names: Iterable[str]) -> tuple[str, ...]:
    """``names`` without the :data:`CUDA_UNSAFE` modules.

    >>> cuda_safe(["torch", "torch._inductor.compile_fx", "onnxruntime", "torch.export"])
    ('torch', 'onnxruntime')
    """
    return tuple(n for n in names if not any(n == u or n.startswith(u + ".") for u in CUDA_UNSAFE))


def wanted(libraries: Iterable[str] = ()) -> tuple[str, ...]:
    """What a server for ``libraries`` preloads: torch and the worker's own modules, the
    libraries (the caller passes only those a fork server may import:
    :func:`~aitune_fp.effects.machine.preload.libraries_of`), and with Inductor's, the compilers'
    modules and CPU probe (:mod:`.compiler_probe` right after torch, so the probe overlaps
    every other import; :mod:`.compiler_imports`, which joins it, after the libraries);
    last, the heap frozen (:mod:`.frozen_heap`).

    >>> "onnxruntime" in wanted(["onnxruntime"])
    True
    >>> [n.split(".")[-1] for n in wanted(["torch._inductor", FROZEN_HEAP])[-2:]]
    ['compiler_imports', 'frozen_heap']
    >>> wanted(["torch._inductor"])[1].split(".")[-1]
    'compiler_probe'

    """
    last = (COMPILER_PROBE, COMPILER_IMPORTS, FROZEN_HEAP)
    names = [*ALWAYS_PRELOAD, *(n for n in libraries if n not in last)]
    if any(n.startswith("torch._inductor") for n in names):
        names = [names[0], COMPILER_PROBE, *names[1:], COMPILER_IMPORTS]
    return (*dict.fromkeys(names), FROZEN_HEAP)


def _server() -> Any:
    """multiprocessing's fork server of this process (its pid and ``_stop`` are private)."""
    return forkserver._forkserver


def running() -> bool:
    """Whether this process's fork server is running."""
    return getattr(_server(), "_forkserver_pid", None) is not None


def server_pid() -> int | None:
    """The running server's pid (``None`` when none runs)."""
    pid = getattr(_server(), "_forkserver_pid", None)
    return None if pid is None else int(pid)


def preloaded() -> tuple[str, ...]:
    """What the running server imported (empty when none runs)."""
    return tuple(_STATE.get("preloaded", ())) if running() else ()


def context(libraries: Iterable[str] = ()) -> Any:
    """The forkserver context; a server that is not running yet will preload
    :func:`wanted` of ``libraries`` (a running one is used as it is)."""
    ctx = multiprocessing.get_context("forkserver")
    if not running():
        names = wanted(libraries)
        ctx.set_forkserver_preload(list(names))
        _STATE["preloaded"] = names
    return ctx


def start(libraries: Iterable[str] = (), *, cuda: bool = False) -> None:
    """Make sure a server that has imported ``libraries`` runs: reuse the running one when
    it has, else (re)start one (it imports in the background while the caller works). For
    a ``cuda`` tune, the CUDA-unsafe libraries are left out, and a running server that
    imported any of them is replaced."""
    names = wanted(cuda_safe(libraries) if cuda else libraries)
    have = preloaded()
    if running() and cuda and cuda_safe(have) != have:
        log.info("restarting the workers' server without the compilers' imports (CUDA tune)")
        shutdown()
        have = ()
    if running() and set(names) <= set(have):
        log.debug("workers' server reused (pid %s)", _server()._forkserver_pid)
        return
    if running():  # it lacks a library: one restart with everything both tunes need
        log.info("restarting the workers' server for %s", ", ".join(sorted(set(names) - set(have))))
        names = wanted([*have, *names])
        shutdown()
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(list(names))
    _STATE["preloaded"] = names
    with _main_hidden():
        forkserver.ensure_running()
    if not _STATE.get("atexit"):
        atexit.register(shutdown)
        _STATE["atexit"] = True


def shutdown() -> None:
    """Stop this process's fork server (nothing when none runs); an inherited one
    (:func:`adopt_inherited`) is only forgotten, never stopped."""
    if running() and _STATE.get("inherited") == _server()._forkserver_pid:
        _forget()
    elif running():  # it may still be importing: killed, not waited for (no worker runs now)
        with contextlib.suppress(OSError):
            os.kill(_server()._forkserver_pid, signal.SIGKILL)
        with contextlib.suppress(OSError, ChildProcessError):
            _server()._stop()
    _STATE.pop("preloaded", None)


def keep_running() -> None:
    """Restart this process's server if it died (the service, before each tune it forks;
    a no-op when none was started or it is alive)."""
    if running():
        with _main_hidden():
            forkserver.ensure_running()


def adopt_inherited() -> None:
    """In a process forked (plain ``os.fork``) from one whose server runs: use that
    server for this process's workers and never stop it (see the module's rules)."""
    srv = _server()
    pid = srv._forkserver_pid
    if pid is None:
        return
    _STATE["inherited"] = pid
    original = type(srv).ensure_running

    def ensure_running() -> None:
        if srv._forkserver_pid is not None and srv._forkserver_pid == _STATE.get("inherited"):
            resource_tracker.ensure_running()
            try:
                os.kill(srv._forkserver_pid, 0)
                return
            except OSError:  # the service's server is gone: start one of our own
                _forget()
        original(srv)

    srv.ensure_running = ensure_running
    ctx: Any = multiprocessing.get_context("forkserver")
    ctx.Process = EnvProcess  # this process's copy of the context only


class EnvProcess(multiprocessing.context.ForkServerProcess):
    """A worker of an inherited server (:func:`adopt_inherited`): it runs with the
    environment of the process that started it, not the server's (the service's, started
    earlier and maybe from another shell), as a worker of a tune's own server does."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._aitune_fp_env = dict(os.environ)

    def run(self) -> None:
        os.environ.clear()
        os.environ.update(self._aitune_fp_env)
        super().run()


def _forget() -> None:
    """Drop this process's handles of an inherited server (it keeps running)."""
    srv = _server()
    with contextlib.suppress(OSError, TypeError):
        os.close(srv._forkserver_alive_fd)
    srv._forkserver_pid = srv._forkserver_alive_fd = srv._forkserver_address = None
    _STATE.pop("inherited", None)
    _STATE.pop("preloaded", None)


def server_environment() -> dict[str, str]:
    """The environment variables the fork server starts with so that it imports from this
    process's ``sys.path``, in this order: ``PYTHONPATH`` is that path (``""`` as the
    working directory), and ``PYTHONSAFEPATH`` keeps the server's own ``python -c`` from
    putting its working directory first (multiprocessing's fork server ignores the path it
    is given, so a worker could import another checkout of a package than this process).

    >>> env = server_environment()
    >>> first = env["PYTHONPATH"].split(os.pathsep)[0]
    >>> env["PYTHONSAFEPATH"], first == (sys.path[0] or os.getcwd())
    ('1', True)
    """
    entries = [entry or os.getcwd() for entry in sys.path]
    return {"PYTHONPATH": os.pathsep.join(dict.fromkeys(entries)), "PYTHONSAFEPATH": "1"}


@contextlib.contextmanager
def _main_hidden() -> Iterator[None]:
    """Make ``__main__`` look like an interactive session while a process starts, so that
    multiprocessing does not ask the new process to import or re-run it; the fork server,
    when this starts it, gets :func:`server_environment`."""
    saved_env = {k: os.environ.get(k) for k in ("PYTHONPATH", "PYTHONSAFEPATH")}
    os.environ.update(server_environment())
    try:
        with _main_hidden_only():
            yield
    finally:
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextlib.contextmanager
def _main_hidden_only() -> Iterator[None]:
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    saved: dict[str, Any] = {
        k: main.__dict__[k] for k in ("__file__", "__spec__") if k in main.__dict__
    }
    main.__dict__.pop("__file__", None)
    main.__dict__["__spec__"] = None
    try:
        yield
    finally:
        main.__dict__.pop("__spec__", None)
        main.__dict__.update(saved)
