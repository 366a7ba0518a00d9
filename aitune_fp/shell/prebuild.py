"""Builds ahead as the interpreter carries them out (which and when: the session's
:mod:`aitune_fp.core.session.prebuild`).

Rules:
- :func:`capable` tells the session what this interpreter can build ahead: only with
  isolation (the builds run in workers; a run in this process builds nothing ahead), and
  each candidate's :class:`~aitune_fp.core.session.prebuild.BuildTraits`, read from what
  its backend declares (``times_kernels``, ``warms_own_cache``, a ``loader``) and from
  the artifact cache (:func:`~aitune_fp.effects.build_ahead.cached_already`), judged by the
  session's rule (:func:`~aitune_fp.core.session.prebuild.buildable_ahead`); at most
  :func:`parallel_builds` at once (from the cores and how many are busy right now,
  measured over a quarter second: builds ahead only use cores nobody else is using) (the
  environment variable ``AITUNE_FP_PREBUILD``, when set to a whole number, replaces that
  number: ``0`` builds nothing ahead, as does any number under 2 by the session's rule);
  on a CUDA device at most one at a time (:data:`CUDA_BUILDS`: builds autotune kernels on
  the one device), so a CUDA tune builds nothing ahead unless the variable says so;
- the busy cores are measured (a quarter second) only when something would be built
  ahead; otherwise the recorded ``parallel`` is the cores' limit alone;
- (measured for the session's re-tune rule: a warm mlp tune spent 1.9 s building the two
  Inductor candidates ahead, then loaded them again in the sweep);
- :func:`prebuilt` answers a ``Prebuild``: its jobs run ``parallel`` at a time, in the
  session's order, each in a fresh worker forked from the fork server, under the build's
  timeout and the same watchdog as any job (:func:`~aitune_fp.effects.isolation.isolated.
  run_prebuild`), in a folder of its own inside the candidate's (removed afterwards); it
  returns only when every job has ended, so nothing runs (and nothing is timed) while a
  build ahead does; a just-in-time candidate's worker (its backend has no loadable
  artifact: Inductor) keeps its warm runner, idle, for that candidate's first sweep job
  (:func:`~aitune_fp.effects.isolation.isolated.isolated_candidate`), and the run ends
  any left unclaimed (:func:`~aitune_fp.effects.isolation.client.release_kept`); a job
  that cannot be sent, crashes, hangs or fails is a failure in the ``Prebuilt`` (a
  warning; the sweep's own build finds and records the real failure), never raised;
- interrupted (``KeyboardInterrupt``, ``SystemExit``), no job starts any more and every
  worker still running (or starting meanwhile) is killed with its process group until
  each job has ended; then the interruption goes on.

Longer than 260 lines: which builds run ahead, where, and which runners are kept are one
plan carried out.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable, Mapping

from pyrsistent import pmap

from aitune_fp.core.session import Prebuild, Prebuilt, SessionPlan
from aitune_fp.core.session.prebuild import BuildTraits, buildable_ahead
from aitune_fp.effects.backends.base import Backend
from aitune_fp.effects.build_ahead import PrebuildJob, cached_already
from aitune_fp.effects.build_request import BuildRequest
from aitune_fp.effects.cache.artifact_cache import model_digest, unusable_reason
from aitune_fp.effects.cache.artifacts import loadable
from aitune_fp.effects.isolation.client import NotIsolated
from aitune_fp.effects.isolation.isolated import kept_key, prebuild_payload, run_prebuild
from aitune_fp.effects.machine.busy_cores import busy_cores
from aitune_fp.shell import building
from aitune_fp.shell.setup import Setup

log = logging.getLogger("aitune_fp")


def parallel_builds(cores: int, load: float = 0.0) -> int:
    """How many builds run at once on ``cores`` cores with ``load`` runnable processes
    already (busy now, :func:`_load`): compiles are mostly single-threaded, so two on
    two cores and one per two cores on more, but never more than one plus the cores
    nobody else uses: builds sharing busy cores only slow each other down (measured on a
    2-core machine shared with other work, load 4-5: two builds at once each ran at half
    speed, and the mlp tune's builds ahead plus its sweep took 45.7 s against 32.4 s for
    the plain sweep). One means nothing is built ahead.

    >>> [parallel_builds(n) for n in (1, 2, 4, 8, 16)]
    [1, 2, 2, 4, 8]
    >>> parallel_builds(2, 0.9), parallel_builds(2, 1.2), parallel_builds(8, 6.5)
    (2, 1, 2)
    """
    spare = max(0, math.floor(cores - load))
    return max(1, min(cores, max(2, cores // 2), spare + 1))


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


CUDA_BUILDS = 1
"""Builds at once on one CUDA device: Inductor and AOTInductor autotune their Triton kernels
on the device they build for, so builds side by side time each other's kernels and may keep
slower ones (one, so a CUDA tune builds nothing ahead: the session's rule needs two)."""


def builds_at_once(
    environ: Mapping[str, str], cores: int, load: float = 0.0, device_type: str = "cpu"
) -> int:
    """``AITUNE_FP_PREBUILD`` when it is a whole number, else :func:`parallel_builds`, at
    most :data:`CUDA_BUILDS` for a tune on a CUDA device.

    >>> builds_at_once({"AITUNE_FP_PREBUILD": "0"}, 8), builds_at_once({}, 8)
    (0, 4)
    >>> builds_at_once({"AITUNE_FP_PREBUILD": "2"}, 2, 5.0), builds_at_once({}, 2, 5.0)
    (2, 1)
    >>> builds_at_once({}, 16, 0.0, "cuda")
    1
    """
    asked = environ.get("AITUNE_FP_PREBUILD", "").strip()
    if asked.isdigit():
        return max(0, int(asked))
    by_cores = parallel_builds(cores, load)
    return min(by_cores, CUDA_BUILDS) if device_type == "cuda" else by_cores


def _load() -> float:
    """The cores busy now, over a quarter second (:func:`~aitune_fp.effects.machine.busy_cores.
    busy_cores`; this process waits through it); where that cannot be read, the one-minute
    load average (which also counts this tune's own start-up), else ``0.0``."""
    now = busy_cores()
    if now is not None:
        return now
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):  # pragma: no cover - not Unix
        return 0.0


def times_kernels(backend: Backend) -> bool:
    """Whether ``backend``'s build picks kernels by timing them (its declaration says).

    >>> from aitune_fp.effects.backends.trt import TensorRT
    >>> from aitune_fp.effects.backends.inductor import InductorJIT
    >>> times_kernels(TensorRT()), times_kernels(InductorJIT(mode="max-autotune"))
    (True, True)
    >>> times_kernels(InductorJIT())
    False
    """
    return backend.declaration.kernels_timed(backend)


def _facts(
    request: BuildRequest, backend: Backend, digest: Callable[[], str | None]
) -> BuildTraits:
    """``backend``'s :class:`BuildTraits` (the request's cache, ``None`` when unusable, looked
    up only when it matters; ``digest`` gives the module's digest, computed once)."""
    declared = backend.declaration
    if declared.kernels_timed(backend):
        return BuildTraits(times_kernels=True, compiles=declared.compiles)
    warms = declared.warms_own_cache is not None and declared.warms_own_cache()
    if request.cache_dir is None or not loadable(backend):
        return BuildTraits(warms_own_cache=warms, compiles=declared.compiles)
    held = cached_already(request, backend, digest())
    return BuildTraits(
        fills_artifact_cache=not held, warms_own_cache=warms, compiles=declared.compiles
    )


def capable(setup: Setup, plan: SessionPlan, backends: Mapping[str, Backend]) -> SessionPlan:
    """``plan`` with what this run can build ahead: the facts of each candidate's build,
    judged by :func:`~aitune_fp.core.session.prebuild.buildable_ahead`."""
    if not setup.isolation:
        return plan
    by_cores = builds_at_once(os.environ, _cores(), 0.0, setup.request.device.type)
    if by_cores < 2 or plan.strategy.settled is not None:  # nothing would be built ahead
        return dataclasses.replace(plan, parallel=by_cores)
    request = setup.request
    if request.cache_dir is not None and unusable_reason(request.cache_dir) is not None:
        request = dataclasses.replace(request, cache_dir=None)
    digest = functools.cache(lambda: _digest(setup))
    facts = {n: _facts(request, backends[n], digest) for n in plan.candidates if n in backends}
    names = buildable_ahead(facts, plan.variant_of)
    if not names:
        return dataclasses.replace(plan, parallel=by_cores)
    return dataclasses.replace(
        plan,
        ahead=names,
        parallel=builds_at_once(os.environ, _cores(), _load(), setup.request.device.type),
    )


def _digest(setup: Setup) -> str | None:
    """The module's digest for the cache keys (``None``: it cannot be keyed)."""
    try:
        return model_digest(setup.request.module)
    except Exception:
        return None


def _job(setup: Setup, backend: Backend, name: str) -> PrebuildJob:
    folder = building.work_dir(setup, backend, name) / ".ahead"
    keep = not loadable(backend) and setup.request.device.type == "cpu"  # kept warm for the sweep
    return PrebuildJob(setup.request, backend, name, folder, keep)


def prebuilt(setup: Setup, command: Prebuild, backends: Mapping[str, Backend]) -> Prebuilt:
    """Carry out ``command`` (see the module's rules); its ``Prebuilt``."""
    began = time.monotonic()
    log.info("building ahead, %d at a time: %s", command.parallel, ", ".join(command.names))
    setup.emit("stage", stage="building ahead")
    failures: dict[str, str] = {}
    jobs: list[tuple[str, bytes, PrebuildJob]] = []
    for name in command.names:  # serialised here: the by-value registry is process-wide
        job = _job(setup, backends[name], name)
        payload = prebuild_payload(job)
        if isinstance(payload, NotIsolated):
            failures[name] = payload.reason
        else:
            jobs.append((name, payload, job))
    _run_all(setup, jobs, command.parallel, failures)
    for _, _, job in jobs:
        shutil.rmtree(job.work_dir, ignore_errors=True)
    seconds = time.monotonic() - began
    log.info("built ahead in %.1f s (%d failed)", seconds, len(failures))
    return Prebuilt(seconds, pmap(failures))


def _run_all(
    setup: Setup, jobs: list[tuple[str, bytes, PrebuildJob]], parallel: int, out: dict[str, str]
) -> None:
    """Run ``jobs`` ``parallel`` at a time; each failure's words into ``out``."""
    pending = list(reversed(jobs))
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                if not pending:
                    return
                name, payload, job = pending.pop()
            began = time.monotonic()
            keep_as = kept_key(job.work_dir.parent) if job.keep else None
            try:
                failed = run_prebuild(payload, setup.timeouts, keep_as)
            except Exception as error:  # a thread must not die silently
                failed = f"{type(error).__name__}: {error}"
            log.info(
                "built %s ahead in %.1f s%s",
                name,
                time.monotonic() - began,
                "" if failed is None else f" (failed: {failed})",
            )
            if failed is not None:
                with lock:
                    out[name] = failed

    threads = [
        threading.Thread(target=worker, daemon=True, name=f"aitune-ahead-{i}")
        for i in range(max(1, min(parallel, len(jobs))))
    ]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            thread.join()
    except BaseException:
        with lock:
            pending.clear()
        while any(thread.is_alive() for thread in threads):  # one may still be starting one
            _kill_workers()
            for thread in threads:
                thread.join(timeout=0.2)
        raise


def _kill_workers() -> None:
    """Kill the process group of every worker this process still runs (interrupted)."""
    import multiprocessing

    for child in multiprocessing.active_children():
        if child.pid is not None:
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                child.kill()
