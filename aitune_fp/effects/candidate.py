"""One candidate's effect: build → validate → profile, timed per stage, never raising.

Rules: the stages run in order and stop at the first failure, which comes back as a
``BackendFailure`` naming the backend and stage; the full error text is appended to the
backend's ``work_dir/build.log``; every stage's wall time is recorded, failed ones too, and
so are the parts of the build the backend and the cache timed (``export``, ``compile``,
``cache``).

- a built artifact's size and sha256 are recorded in ``Built.info`` (``artifact_size``,
  ``artifact_sha256``) right after the build, so whoever later runs or saves it can check
  it is still the same file (:class:`~aitune_fp.shell.tuned_module.TunedModule`);
- a runner served from the artifact cache that fails validation has its cache entry
  evicted and is built afresh and validated again, once (a poisoned entry whose hashes
  match cannot fail every later run);
- ``validation_sizes`` (the batch sizes validation checks) go to the cache, whose new
  entries keep eager's outputs at them; ``build.log`` gets one line naming the reference
  a passed validation used (``reference: cached`` or ``reference: eager``);
- the build is the shared one (:func:`~aitune_fp.effects.shared_build.shared_build`: the
  artifact cache, shared ``torch.export`` programs, the tune's batch envelope);
- ``timer`` (default: the profiler's own) times each profiled call; the isolation
  worker passes one that beats its heartbeat before starting the clock;
- ``early_stop`` (the early-stop rule and the current best) goes to the profiler as is:
  clearly beaten batch sizes stop after their probe (see :mod:`aitune_fp.effects.measure.profiler`).

Longer than 260 lines: one candidate's three steps and their stage timing share its hooks.
"""

from __future__ import annotations

import dataclasses
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from returns.io import IOFailure, IOResult, IOSuccess

from aitune_fp.core.rebuild import rebuilds_after_failed_validation
from aitune_fp.core.records import BackendFailure, Profile
from aitune_fp.effects.backends.base import Backend, Built
from aitune_fp.effects.build_request import BuildRequest, Candidate, Hooks
from aitune_fp.effects.cache.artifact_cache import evict
from aitune_fp.effects.cache.integrity import digest
from aitune_fp.effects.checks.accuracy import with_figures
from aitune_fp.effects.measure.profiler import Clocks, SweepPlan, profile_runner
from aitune_fp.effects.shared_build import shared_build


@dataclass(frozen=True, slots=True)
class CandidateRun:
    """What one candidate's effect produced: the built runner (if any) and stage facts."""

    backend: Backend
    name: str
    built: Built | None
    outcome: IOResult[Profile, BackendFailure]
    stage_seconds: dict[str, float] = field(default_factory=dict)
    validation: dict[str, float] = field(default_factory=dict)
    work_dir: Path | None = None


def built_stages(built: Built) -> dict[str, float]:
    """The build's own parts (``export``, ``compile``, ``cache``) from ``info["stage_seconds"]``.

    >>> built_stages(Built(print, info={"stage_seconds": {"export": 1.0}}))
    {'export': 1.0}
    """
    parts = built.info.get("stage_seconds", {})
    return {k: float(v) for k, v in parts.items()} if isinstance(parts, dict) else {}


def append_log(work_dir: Path, text: str) -> None:
    """Append ``text`` to ``work_dir/build.log`` (creating the folder).

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp()) / "onnxruntime"
    >>> append_log(folder, "export: fresh\\n\\n")
    >>> append_log(folder, "build: 1.2 s")
    >>> (folder / "build.log").read_text()
    'export: fresh\\nbuild: 1.2 s\\n'
    """
    work_dir.mkdir(parents=True, exist_ok=True)
    with (work_dir / "build.log").open("a", encoding="utf-8") as fh:
        fh.write(text.rstrip() + "\n")


def _timed(stages: dict[str, float], stage: str, fn: Callable[[], Any]) -> Any:
    t0 = time.perf_counter()
    try:
        return fn()
    finally:
        stages[stage] = time.perf_counter() - t0


def _safe(backend: str, stage: str, fn: Callable[[], IOResult[Any, BackendFailure]]) -> Any:
    """Run an effect, turning an unexpected exception into a failure of ``stage``."""
    try:
        return fn()
    except Exception as error:
        text = "".join(traceback.format_exception(error))
        return IOFailure(BackendFailure(backend, stage, f"{type(error).__name__}: {error}\n{text}"))


@dataclass
class _Trace:
    """What one candidate's steps leave behind as they run: each stage's seconds, the
    validation's figures and the runners built (closed on a failure)."""

    stages: dict[str, float] = field(default_factory=dict)
    validation: dict[str, float] = field(default_factory=dict)
    runners: list[Built] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Steps:
    """The fixed inputs of one candidate's three steps."""

    request: BuildRequest
    candidate: Candidate
    validate: Callable[[Built], IOResult[dict[str, float], BackendFailure]]
    hooks: Hooks
    ready: Built | None
    trace: _Trace

    def stage(self, label: str, fn: Callable[[], IOResult[Any, BackendFailure]]) -> Any:
        """Run ``fn`` as stage ``label``: announced, timed, an exception turned into its
        failure."""
        self.hooks.on_stage(label)
        return _timed(self.trace.stages, label, lambda: _safe(self.candidate.name, label, fn))


def run_candidate(
    request: BuildRequest,
    candidate: Candidate,
    validate: Callable[[Built], IOResult[dict[str, float], BackendFailure]],
    hooks: Hooks = Hooks(),
    ready: Built | None = None,
) -> CandidateRun:
    """Build, validate and profile one backend; a failure at any stage is a value.

    ``ready``: a runner this process already built for it (a build ahead's, kept warm in
    its worker): the build stage takes it as is, and says so in ``build.log``."""
    steps = _Steps(request, candidate, validate, hooks, ready, _Trace())
    outcome = (
        build_step(steps).bind(partial(validate_step, steps)).bind(partial(profile_step, steps))
    )
    return _ended(steps, outcome)


def build_step(steps: _Steps, *, reuse: bool = True) -> IOResult[Built, BackendFailure]:
    """The build stage: the runner built ahead when there is one (and ``reuse``), else
    the shared build through the artifact cache; a built runner is kept in the trace with
    its artifact's digest and its build's parts."""
    c = steps.candidate

    def build() -> IOResult[Built, BackendFailure]:
        if steps.ready is not None and reuse:
            append_log(
                c.work_dir, f"build of {c.name}: the runner built ahead, kept warm in its worker"
            )
            return IOSuccess(steps.ready)
        return shared_build(steps.request, c, reuse=reuse)

    built: IOResult[Built, BackendFailure] = steps.stage("build", build)
    return built.map(partial(_kept, steps.trace))


def _kept(trace: _Trace, built: Built) -> Built:
    """``built`` with its artifact's digest, kept in ``trace`` with its build's parts."""
    built = with_artifact_digest(built)
    trace.runners.append(built)
    trace.stages.update(built_stages(built))
    return built


def validate_step(steps: _Steps, built: Built) -> IOResult[Built, BackendFailure]:
    """The validate stage: ``built`` when it passes; a cache hit that fails is evicted and
    built afresh once (:func:`~aitune_fp.core.rebuild.rebuilds_after_failed_validation`),
    and the fresh runner's validation decides."""
    checked = _validated(steps, built)
    cache_dir, key = steps.request.cache_dir, built.info.get("cache_key")
    if not rebuilds_after_failed_validation(built.info.get("cache"), key, cache_dir is not None):
        return checked
    return checked.lash(partial(_rebuilt, steps, str(key)))


def _validated(steps: _Steps, built: Built) -> IOResult[Built, BackendFailure]:
    report: IOResult[dict[str, float], BackendFailure] = steps.stage(
        "validate", lambda: steps.validate(built)
    )
    return report.map(partial(_passed, steps, built))


def _passed(steps: _Steps, built: Built, report: dict[str, float]) -> Built:
    """A passed validation: its figures kept, its reference named in ``build.log``."""
    steps.trace.validation.update(report)
    used = "cached" if report.get("cached_reference") else "eager"
    append_log(steps.candidate.work_dir, f"[validate] passed; reference: {used}")
    return built


def _rebuilt(steps: _Steps, key: str, failure: BackendFailure) -> IOResult[Built, BackendFailure]:
    """The cache entry ``key`` evicted for ``failure``, the runner built afresh and
    validated once more (the rebuild's parts replace the hit's)."""
    assert steps.request.cache_dir is not None
    evict(
        steps.request.cache_dir,
        key,
        f"its runner failed validation: {failure.message.splitlines()[0]}",
    )
    for runner in steps.trace.runners:
        runner.close()
    steps.trace.runners.clear()
    return build_step(steps, reuse=False).bind(partial(_validated, steps))


def profile_step(steps: _Steps, built: Built) -> IOResult[Profile, BackendFailure]:
    """The profile stage: the validated runner swept, the validation's figures added."""
    report = dict(steps.trace.validation)
    return steps.stage(  # type: ignore[no-any-return]
        "profile",
        lambda: _profile(steps.request, steps.candidate, built, steps.hooks).map(
            partial(with_figures, report)
        ),
    )


def _ended(steps: _Steps, outcome: IOResult[Profile, BackendFailure]) -> CandidateRun:
    """The candidate's run: its runner on success; on a failure every runner closed and
    the failure written to ``build.log`` (its first line kept)."""
    c, trace = steps.candidate, steps.trace
    if isinstance(outcome, IOSuccess):
        built = trace.runners[-1]
        return CandidateRun(
            c.backend, c.name, built, outcome, trace.stages, trace.validation, c.work_dir
        )
    for runner in trace.runners:
        runner.close()
    logged = outcome.lash(partial(_log_failure, c.work_dir))
    return CandidateRun(c.backend, c.name, None, logged, trace.stages, trace.validation, c.work_dir)


def _profile(
    request: BuildRequest, candidate: Candidate, built: Built, hooks: Hooks
) -> IOResult[Profile, BackendFailure]:
    r = request
    plan = SweepPlan(r.batch_sizes, r.plan.call_rule, r.plan.sweep_rule, candidate.early_stop)
    return profile_runner(
        candidate.name,
        built.runner,
        r.samples,
        r.device,
        plan,
        r.settings,
        hooks.on_batch,
        Clocks(hooks.timer),
    )


def _log_failure(work_dir: Path, failure: BackendFailure) -> IOResult[Profile, BackendFailure]:
    """Write the full failure to ``build.log`` and keep its first line as the message."""
    append_log(work_dir, f"[{failure.stage}] {failure.message}")
    first = failure.message.split("\n")[0][:500]
    return IOFailure(BackendFailure(failure.backend, failure.stage, first))


def with_artifact_digest(built: Built) -> Built:
    """``built`` with its artifact's size and sha256 in ``info`` (unchanged without one)."""
    if built.artifact is None or not built.artifact.is_file():
        return built
    d = digest(built.artifact)
    info = {**built.info, "artifact_size": d.size, "artifact_sha256": d.sha256}
    return dataclasses.replace(built, info=info)
