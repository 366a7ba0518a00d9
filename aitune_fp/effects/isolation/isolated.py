"""Isolated versions of the tune's risky effects: one candidate, and the max-batch search.

Rules:
- :func:`isolated_candidate` runs build → validate → profile of one backend in a worker
  (:mod:`~aitune_fp.effects.isolation.client`) and returns the same ``CandidateRun`` as
  :func:`~aitune_fp.effects.candidate.run_candidate`, with the worker's profile (its peak
  memory measured in the worker, where only that backend ran), failure, stage times and
  validation errors. A worker that dies or overruns becomes
  ``BackendFailure(backend, stage, reason)`` (also written to the backend's
  ``build.log``); a job that cannot be sent to a worker runs in this process, with a
  warning; the worker's start (asked for until it has its job) is the candidate's
  ``worker_start`` stage, failed candidates' too; ``early_stop`` travels with the job;
- a successful candidate's runner stays in the worker and ends with it; its ``Built`` here
  is *deferred*: :func:`materialized` makes the real one in this process when the shell
  needs it (final rounds, the tuned module): from the artifact the worker built, after
  checking it still has the digest recorded at its build, or by building the backend
  again here for backends without a loadable artifact (eager, ``torch.compile``), whose
  compiler caches the worker has just warmed; the backend's libraries are imported here
  first (:func:`~aitune_fp.effects.machine.preload.preload`: this process imports only
  those of the backends it runs itself, and only then). A deferred runner materialises
  itself on its first call too;
- :func:`prebuild_payload` and :func:`run_prebuild` build one candidate ahead in a worker
  (:mod:`aitune_fp.effects.build_ahead`: its build only, nothing validated or timed), the
  whole job under the build's limit: a crash, a hang or a failed build comes back as
  words (``None``: done), never raised; a job that keeps its warm runner leaves its worker
  under the candidate's :func:`kept_key`, and :func:`isolated_candidate` sends that
  candidate's first job there (:func:`~aitune_fp.effects.isolation.client.run_kept`), to
  a fresh worker otherwise; the payload is made in the calling thread (the
  serialiser's by-value registry is process-wide), the job may run in another;
- :func:`isolated_max_batch` runs the eager check and the max-batch search in a worker
  (every call under the call timeout): a crash (a signal, an exit) or a hang at batch
  size ``s`` keeps the batch size tried before it, as a raising batch size would, and
  says so (``stop`` ``crashed`` or ``hung``, "eager crashed at batch size 4 (SIGSEGV)");
  at batch size 1 (nothing ran) it is a ``TuneError``, as is eager raising on one row.

Longer than 260 lines: the isolated candidate and the isolated max-batch search share the
worker protocol.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import torch
from returns.io import IOFailure, IOResult, IOSuccess

from aitune_fp.core.records import BackendFailure, Profile, TuneError
from aitune_fp.effects.backends.base import Built
from aitune_fp.effects.build_ahead import PrebuildJob
from aitune_fp.effects.build_request import BuildRequest, Candidate, Hooks, validation_check
from aitune_fp.effects.cache.artifacts import load_built, loadable, output_spec
from aitune_fp.effects.cache.integrity import digest
from aitune_fp.effects.candidate import CandidateRun, append_log, run_candidate
from aitune_fp.effects.checks.precheck import eager_check
from aitune_fp.effects.inputs.samples import Samples, make_batch
from aitune_fp.effects.isolation.client import Ended, NotIsolated, dumps, run_job, run_kept
from aitune_fp.effects.isolation.protocol import Timeouts, eager_fault, outcome_values
from aitune_fp.effects.isolation.worker import CandidateJob, CandidateResult, MaxBatchJob
from aitune_fp.effects.machine.preload import preload
from aitune_fp.effects.measure.max_batch import (
    UNBATCHED,
    MaxBatchResult,
    find_max_batch_size,
    size_before,
)

log = logging.getLogger("aitune_fp")


class _Deferred:
    """A runner that is made in this process on demand (see :func:`materialized`)."""

    __slots__ = ("_make", "built")

    def __init__(self, make: Callable[[], Built]) -> None:
        self._make = make
        self.built: Built | None = None

    def get(self) -> Built:
        if self.built is None:
            self.built = self._make()
        return self.built

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.get().runner(*args, **kwargs)

    def close(self) -> None:
        if self.built is not None:
            self.built.close()


def materialized(built: Built) -> Built:
    """The real ``Built`` behind a deferred one (made now if needed); others as they are.

    Raises ``RuntimeError`` naming the backend when it cannot be made here.
    """
    runner = built.runner
    return runner.get() if isinstance(runner, _Deferred) else built


def materialize(built: Built) -> IOResult[Built, str]:
    """:func:`materialized` as an effect: the real ``Built``, or why it cannot be made here
    (the one place its ``RuntimeError`` is caught)."""
    try:
        return IOSuccess(materialized(built))
    except RuntimeError as error:
        return IOFailure(str(error))


def _make_here(request: BuildRequest, candidate: Candidate, result: CandidateResult) -> Built:
    """The backend's runner in this process: its artifact loaded, or built again."""
    backend, name, work_dir = candidate.backend, candidate.name, candidate.work_dir
    module, samples, device = request.module, request.samples, request.device
    artifact = result.artifact
    preload((backend,), device)  # its libraries (and Inductor's probe), before it runs here
    effect: IOResult[Built, BackendFailure]
    if artifact is not None and loadable(backend) and artifact.is_file():
        now = digest(artifact)
        if result.info.get("artifact_sha256") not in (None, now.sha256):
            raise RuntimeError(f"{name}: {artifact} changed after its build (sha256 mismatch)")
        with torch.inference_mode():
            outputs = output_spec(make_batch(samples, 1).call(module))
        effect = load_built(backend, artifact, samples.spec, outputs, device, work_dir / "here")
        effect = effect.map(lambda b: dataclasses.replace(b, info={**result.info, **b.info}))
    else:
        effect = backend.build(module, samples, device, work_dir / "here")
    made, failure = outcome_values(effect)
    if made is None:
        why = failure.describe() if failure is not None else "no runner"
        raise RuntimeError(f"{name} could not be made in the tune process: {why}")
    return made


def isolated_candidate(
    request: BuildRequest,
    candidate: Candidate,
    hooks: Hooks = Hooks(),
    timeouts: Timeouts = Timeouts(),
) -> CandidateRun:
    """Build, validate and profile ``candidate`` in a worker (see the module rules)."""
    payload = dumps(CandidateJob(request, candidate), request.module, type(candidate.backend))
    if isinstance(payload, NotIsolated):
        return _not_isolated(request, candidate, hooks, payload.reason)
    started: dict[str, float] = {}
    on_event = partial(_forwarded, hooks, started)
    answer = run_kept(kept_key(candidate.work_dir), payload, timeouts, on_event, "build")
    if answer is None:
        answer = run_job(payload, timeouts, on_event, "build")
    if isinstance(answer, Ended) or answer[0] != "done":
        return _unanswered(candidate, answer, started)
    return _answered(request, candidate, answer[1], started)


def _not_isolated(
    request: BuildRequest, candidate: Candidate, hooks: Hooks, reason: str
) -> CandidateRun:
    """The candidate run in the tune process, with a warning saying why."""
    name = candidate.name
    log.warning("%s runs in the tune process, not isolated: %s", name, reason)
    check = validation_check(request, name)
    return run_candidate(request, candidate, check, hooks)


def _forwarded(hooks: Hooks, started: dict[str, float], message: tuple[str, Any]) -> None:
    """A worker's progress message passed to ``hooks`` (its start time noted)."""
    if message[0] == "started":
        started["worker_start"] = float(message[1])
    elif message[0] == "stage":
        hooks.on_stage(str(message[1]))
    elif message[0] == "batch":
        hooks.on_batch(message[1])


def _unanswered(
    candidate: Candidate, answer: Ended | tuple[str, Any], started: dict[str, float]
) -> CandidateRun:
    """The run of a worker that ended (or answered with an error) instead of a result: a
    failure at its stage, the whole reason in ``build.log``."""
    if isinstance(answer, Ended):
        stage, reason = answer.stage, answer.reason
    else:
        stage, reason = "build", str(answer[1])
    append_log(candidate.work_dir, f"[{stage}] {reason}")
    failure = BackendFailure(candidate.name, stage, reason.split("\n")[0][:500])
    outcome: IOResult[Profile, BackendFailure] = IOFailure(failure)
    return CandidateRun(
        candidate.backend, candidate.name, None, outcome, dict(started), {}, candidate.work_dir
    )


def _answered(
    request: BuildRequest, candidate: Candidate, result: CandidateResult, started: dict[str, float]
) -> CandidateRun:
    """The run of a worker's result: its failure, or its profile with a runner made here
    only when used."""
    backend, name, work_dir = candidate.backend, candidate.name, candidate.work_dir
    stages = {**result.stage_seconds, **started}
    if result.profile is None:
        failure = result.failure or BackendFailure(name, "build", "no result")
        return CandidateRun(
            backend, name, None, IOFailure(failure), stages, result.validation, work_dir
        )
    deferred = _Deferred(lambda: _make_here(request, candidate, result))
    built = Built(deferred, deferred.close, artifact=result.artifact, info=result.info)
    return CandidateRun(
        backend, name, built, IOSuccess(result.profile), stages, result.validation, work_dir
    )


def prebuild_payload(job: PrebuildJob) -> bytes | NotIsolated:
    """The build-ahead ``job`` serialised for a worker, or why it cannot be."""
    return dumps(job, job.request.module, type(job.backend))


def kept_key(work_dir: Path) -> str:
    """The key a candidate's warm runner is kept under: its work folder (one per candidate
    and run)."""
    return str(work_dir.resolve())


def run_prebuild(payload: bytes, timeouts: Timeouts, keep_as: str | None = None) -> str | None:
    """Run a serialised build ahead in a worker: ``None`` when it built, else why not
    (``keep_as``: the worker of a job that keeps its runner stays under that key)."""
    answer = run_job(payload, timeouts, lambda _: None, "build", keep_as)
    if isinstance(answer, Ended):
        return answer.reason
    if answer[0] == "kept":
        return None
    if answer[0] != "done":
        return str(answer[1]).split("\n")[0][:500]
    failed: str | None = answer[1]
    return failed


def isolated_max_batch(
    module: torch.nn.Module,
    samples: Samples,
    device: torch.device,
    cap: int | None,
    timeouts: Timeouts = Timeouts(),
    *,
    sweep: bool = True,
) -> MaxBatchResult | TuneError:
    """The eager check and (``sweep``) the max-batch search in a worker (see the rules)."""
    payload = dumps(MaxBatchJob(module, samples, str(device), cap, sweep), module)
    if isinstance(payload, NotIsolated):
        log.warning("max-batch search runs in the tune process: %s", payload.reason)
        from aitune_fp.effects.backends._runner import in_inference_mode, prepared

        problem = eager_check(module, samples)
        if problem is not None or not sweep:
            return problem or MaxBatchResult(1, UNBATCHED, "unbatched")
        runner = in_inference_mode(prepared(module, device))
        return find_max_batch_size(runner, samples, device, cap=cap)
    answer = run_job(payload, timeouts, lambda _: None, "max batch search")
    if isinstance(answer, Ended):
        tried = max(answer.batch_size, 1)
        stop, words = eager_fault(None if answer.hung else answer.exitcode, tried, timeouts.call)
        if size_before(tried) < 1:
            return TuneError(f"the eager module cannot run one row: {words}")
        return MaxBatchResult(size_before(tried), words, stop, tried)
    if answer[0] != "done":
        log.warning("max-batch search failed in its worker: %s", answer[1])
        return MaxBatchResult(1, str(answer[1]).split("\n")[0], "raised")
    found: MaxBatchResult | TuneError = answer[1]
    return found
