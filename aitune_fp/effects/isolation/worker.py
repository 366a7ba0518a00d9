"""The worker side: runs one job in its own process and reports back over a pipe.

Rules:
- the worker makes itself a process-group leader first, so the tune process can end it
  together with anything it started (a compiler's worker pool) in one ``killpg``; on
  Linux it also asks to be killed when its parent (the fork server, which exits with the
  tune process) goes, so even a tune process killed outright leaves no worker behind;
- the job arrives as one cloudpickled value (the module's weights are copied, never
  shared with the tune process, so a backend that edits weights in place cannot touch
  the user's module); once it is unpickled the worker says ``("started", None)``, its
  first message (the parent times the worker's start up to it); it runs under the float32
  switches (TF32, matmul precision) the tune process had when it started the worker, not
  those of the fork server it forks from, which started earlier;
- a candidate job first calls the eager module once (:func:`_warm`, so first-use costs
  of a fresh process are not charged to the backend's memory), then runs
  :func:`~aitune_fp.effects.candidate.run_candidate` as is (the same stages, cache,
  validation and profiler as without isolation), with one full garbage collection as
  the profile stage starts (:func:`settle_heap`: the clock never pays it); its stage
  and batch-size events go to the pipe, its heartbeat to shared memory before each
  call (through the profiler's injected timer, before the clock starts), and its
  result (profile or failure, stage times, validation errors, artifact, build facts,
  peak memory) comes back as plain values; the runner itself never leaves the worker;
- a max-batch job first runs the eager check (:mod:`aitune_fp.effects.checks.precheck`, one
  row), answering its ``TuneError`` if eager cannot run, then (``sweep``) runs
  :func:`~aitune_fp.effects.measure.max_batch.find_max_batch_size` on the eager module with a
  heartbeat per call naming the batch size being tried, so a crash or hang at batch size
  8 still tells the parent which one it was (and so that 4 ran);
- a build-ahead job (:class:`~aitune_fp.effects.build_ahead.PrebuildJob`) only builds (its
  answer: ``None`` or why it failed), under the build's limit throughout; one that
  ``keep``s (a just-in-time backend, given a job pipe ``jobs``) and built answers
  ``("kept", None)``, keeps its warm runner and waits on ``jobs`` for the candidate's
  sweep job (:func:`_serve_kept`), which it runs as any candidate job, its build stage
  taking the kept runner (:func:`~aitune_fp.effects.candidate.run_candidate`'s
  ``ready``); the end of ``jobs`` (the tune released it) ends the worker;
- anything the job raises is reported as ``("error", text)``; the worker then exits 0.
"""

from __future__ import annotations

import contextlib
import os
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch

from aitune_fp.effects.backends.base import Built
from aitune_fp.effects.build_ahead import PrebuildJob
from aitune_fp.effects.build_request import BuildRequest, Candidate
from aitune_fp.effects.checks.tf32 import DEFAULT_SWITCHES, Tf32Switches, use_switches
from aitune_fp.effects.inputs.samples import Samples
from aitune_fp.effects.isolation.heartbeat import Heartbeat
from aitune_fp.effects.isolation.kept_memory import footprint, room_to_keep, without
from aitune_fp.effects.isolation.parent_death import die_with_parent
from aitune_fp.effects.isolation.worker_candidate import CandidateResult as CandidateResult
from aitune_fp.effects.isolation.worker_candidate import settle_heap as settle_heap


@dataclass(frozen=True, slots=True)
class CandidateJob:
    """Build, validate and profile one candidate as the tune's request says (with the
    candidate's ``early_stop``: clear losers stop after their probe, see the profiler)."""

    request: BuildRequest
    candidate: Candidate


@dataclass(frozen=True, slots=True)
class MaxBatchJob:
    """Check that eager runs one row, then (``sweep``) find the largest batch size it runs
    at (see ``find_max_batch_size``)."""

    module: torch.nn.Module
    samples: Samples
    device: str
    cap: int | None
    sweep: bool = True


Send = Callable[[tuple[str, Any]], None]


def _warm(module: torch.nn.Module, samples: Samples, device: torch.device) -> None:
    """One eager call of the module, before anything is measured: the thread pools, kernels
    and library pages a fresh process touches on first use are then resident, as they are
    in a tune process that has already run the eager module (its max-batch search), so
    they are not charged to the backend's peak memory."""
    from aitune_fp.effects.backends._runner import prepared

    with contextlib.suppress(Exception), torch.inference_mode():
        samples.items[0].to(device).call(prepared(module, device))


def _candidate(
    job: CandidateJob,
    send: Send,
    beat: Heartbeat,
    ready: Built | None = None,
    footprint: Any = None,
) -> CandidateResult:
    from aitune_fp.effects.candidate import run_candidate
    from aitune_fp.effects.isolation.worker_candidate import StageHooks, beating_check, result_of
    from aitune_fp.effects.measure.memory import MemoryWatch

    request, candidate = job.request, job.candidate
    _warm(request.module, request.samples, request.device)
    watch = MemoryWatch(request.device)
    # a kept runner's level, as if it were not built yet
    watch.before = without(footprint, request.device)
    stages = StageHooks(send, beat, tuple(request.batch_sizes), watch, watch.before is not None)
    check = partial(beating_check, request, candidate.name, beat)
    run = run_candidate(request, candidate, check, stages.hooks(request), ready)
    return result_of(run, watch)  # type: ignore[no-any-return]


def _max_batch(job: MaxBatchJob, beat: Heartbeat) -> Any:
    from aitune_fp.effects.backends._runner import in_inference_mode, prepared
    from aitune_fp.effects.checks.precheck import eager_check
    from aitune_fp.effects.measure.max_batch import UNBATCHED, MaxBatchResult, find_max_batch_size

    def trying(batch_size: int) -> None:
        beat.batch_size = batch_size
        beat.tick()

    trying(1)
    problem = eager_check(job.module, job.samples)
    if problem is not None or not job.sweep:
        return problem or MaxBatchResult(1, UNBATCHED, "unbatched")
    device = torch.device(job.device)
    runner = in_inference_mode(prepared(job.module, device))
    return find_max_batch_size(runner, job.samples, device, cap=job.cap, on_try=trying)


def main(
    conn: Any,
    cells: Any,
    payload: bytes,
    switches: Tf32Switches = DEFAULT_SWITCHES,
    jobs: Any = None,
) -> None:
    """The worker's entry point: run the job in ``payload`` under ``switches``, answer over
    ``conn``, beat into the shared ``cells`` (:class:`Heartbeat`); ``jobs``: where a
    build ahead that keeps its runner waits for its candidate's job."""
    with contextlib.suppress(OSError):
        os.setpgrp()
    die_with_parent()
    import cloudpickle

    def send(message: tuple[str, Any]) -> None:
        conn.send_bytes(cloudpickle.dumps(message))

    try:
        job = cloudpickle.loads(payload)
        send(("started", None))
        with use_switches(switches):
            beat = Heartbeat(cells)
            if isinstance(job, PrebuildJob) and job.keep and jobs is not None:
                _build_and_keep(job, jobs, send, beat)
            else:
                send(_answer(job, send, beat))
    except Exception as error:
        text = "".join(traceback.format_exception(error))
        with contextlib.suppress(Exception):
            send(("error", f"{type(error).__name__}: {error}\n{text}"))
    finally:
        with contextlib.suppress(Exception):
            conn.close()


def _build_and_keep(job: PrebuildJob, jobs: Any, send: Send, beat: Heartbeat) -> None:
    """A build ahead that keeps its warm runner when it built one and there is room
    (``("kept", None)``, then :func:`_serve_kept`), else answers as any build ahead."""
    device = job.request.device
    before = _level(job.request)
    failed, kept = job.run_keeping(beat)
    held = footprint(before, device) if kept is not None else None
    if kept is not None and not room_to_keep(held, device):
        kept.close()  # no room to spare: the sweep builds it afresh
        kept = None
    send(("done", failed) if kept is None else ("kept", None))
    if kept is not None:
        _serve_kept(jobs, send, beat, (kept, held))


def _level(request: BuildRequest) -> Any:
    """The memory level before a build ahead that keeps its runner: read after the eager
    warm-up call, as a candidate job reads its level before its build (:func:`_candidate`)."""
    from aitune_fp.effects.measure.memory import memory_level

    _warm(request.module, request.samples, request.device)
    return memory_level(request.device)


def _serve_kept(jobs: Any, send: Send, beat: Heartbeat, held: tuple[Built, Any]) -> None:
    """Wait for the kept runner's candidate job on ``jobs`` and run it with that runner,
    its peak memory measured as if it were built in the job (``held``: the runner and what
    it holds); the end of ``jobs`` (released unclaimed) closes the runner."""
    import cloudpickle

    kept, footprint = held
    try:
        payload = jobs.recv_bytes()
    except (EOFError, OSError):
        with contextlib.suppress(Exception):
            kept.close()
        return
    job = cloudpickle.loads(payload)
    send(("started", None))
    if not isinstance(job, CandidateJob):
        send(("error", f"a kept runner serves candidate jobs, not {type(job).__name__}"))
        return
    send(("done", _candidate(job, send, beat, ready=kept, footprint=footprint)))


def _answer(job: Any, send: Send, beat: Heartbeat) -> tuple[str, Any]:
    """Run ``job``: its ``done`` message (``error`` for an unknown job)."""
    if isinstance(job, CandidateJob):
        return "done", _candidate(job, send, beat)
    if isinstance(job, MaxBatchJob):
        return "done", _max_batch(job, beat)
    if isinstance(job, PrebuildJob):
        return "done", job.run(beat)
    return "error", f"unknown job {type(job).__name__}"
