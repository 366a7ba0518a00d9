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
- the build runs inside the tune's batch envelope (the largest of ``batch_sizes``,
  ``validation_sizes`` and the samples' own rows, which the eager check ran;
  :func:`~aitune_fp.effects.backends._export.batch_envelope`): an exporter's example
  batch never has more rows than the eager check and sweep ran;
- the build shares ``torch.export`` programs with the other candidates through
  :func:`~aitune_fp.effects.backends._shared_export.exports_folder` (the artifact cache's
  ``exports`` folder, or the run folder's ``.exports`` when uncached), in this process or
  in an isolation worker alike;
- ``timer`` (default: the profiler's own) times each profiled call; the isolation
  worker passes one that beats its heartbeat before starting the clock;
- ``early_stop`` (the early-stop rule and the current best) goes to the profiler as is:
  clearly beaten batch sizes stop after their probe (see :mod:`aitune_fp.effects.measure.profiler`).
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

from aitune_fp.core.records import BackendFailure, Profile
from aitune_fp.effects.backends._export import batch_envelope
from aitune_fp.effects.backends._shared_export import exports_folder, sharing
from aitune_fp.effects.backends.base import Backend, Built
from aitune_fp.effects.build_request import BuildRequest, Candidate, Hooks
from aitune_fp.effects.cache.artifact_cache import cached_build, evict, model_digest
from aitune_fp.effects.cache.integrity import digest
from aitune_fp.effects.checks.accuracy import with_figures
from aitune_fp.effects.inputs.samples import Samples
from aitune_fp.effects.measure.profiler import Clocks, SweepPlan, profile_runner


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


def envelope_of(
    samples: Samples, batch_sizes: tuple[int, ...], validation_sizes: tuple[int, ...] | None
) -> int | None:
    """The build's batch envelope: the largest of the batch sizes, the validation sizes and
    the samples' own rows (the eager check ran every sample)."""
    rows = (item.size for item in samples.items)
    return max((*batch_sizes, *(validation_sizes or ()), *rows), default=None)


def shared_build(
    request: BuildRequest, backend: Backend, work_dir: Path, *, reuse: bool = True
) -> IOResult[Built, BackendFailure]:
    """The candidate's build as the sweep runs it (and a build ahead, with the same cache
    key): through the artifact cache, sharing ``torch.export`` programs, inside the
    tune's batch envelope (see the module's rules)."""
    r = request
    largest = envelope_of(r.samples, r.batch_sizes, r.validation_sizes)
    with sharing(exports_folder(work_dir, r.cache_dir), model_digest), batch_envelope(largest):
        return cached_build(backend, r.module, r.samples, r.device, work_dir, r.cache_dir,
                            reuse=reuse, reference_sizes=r.validation_sizes or None)  # fmt: skip


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
    backend, name, work_dir = candidate.backend, candidate.name, candidate.work_dir
    cache_dir = request.cache_dir
    stages: dict[str, float] = {}
    validation: dict[str, float] = {}
    holder: list[Built] = []

    def build(reuse: bool = True) -> IOResult[Built, BackendFailure]:
        if ready is not None and reuse:
            append_log(
                work_dir, f"build of {name}: the runner built ahead, kept warm in its worker"
            )
            return IOSuccess(ready)
        return shared_build(request, backend, work_dir, reuse=reuse)

    def stage(label: str, fn: Callable[[], IOResult[Any, BackendFailure]]) -> Any:
        hooks.on_stage(label)
        return _timed(stages, label, lambda: _safe(name, label, fn))

    def after_build(built: Built) -> IOResult[dict[str, float], BackendFailure]:
        built = with_artifact_digest(built)
        holder.append(built)
        stages.update(built_stages(built))
        checked: IOResult[dict[str, float], BackendFailure] = stage(
            "validate", lambda: validate(built)
        )
        key = built.info.get("cache_key")
        if built.info.get("cache") != "hit" or cache_dir is None or not isinstance(key, str):
            return checked
        return checked.lash(lambda failure: revalidate(str(key), failure))

    def revalidate(key: str, failure: BackendFailure) -> IOResult[dict[str, float], BackendFailure]:
        """A cache hit that failed validation: evict it, rebuild fresh, validate once more."""
        assert cache_dir is not None
        evict(cache_dir, key, f"its runner failed validation: {failure.message.splitlines()[0]}")
        for built in holder:
            built.close()
        holder.clear()
        rebuilt: IOResult[Built, BackendFailure] = stage("build", lambda: build(reuse=False))

        def check(built: Built) -> IOResult[dict[str, float], BackendFailure]:
            built = with_artifact_digest(built)
            holder.append(built)
            stages.update(built_stages(built))  # the rebuild's export/compile, not the hit's
            return stage("validate", lambda: validate(built))  # type: ignore[no-any-return]

        return rebuilt.bind(check)

    def after_validate(report: dict[str, float]) -> IOResult[Profile, BackendFailure]:
        validation.update(report)
        used = "cached" if report.get("cached_reference") else "eager"
        append_log(work_dir, f"[validate] passed; reference: {used}")
        return stage(  # type: ignore[no-any-return]
            "profile",
            lambda: _profile(request, candidate, holder[0], hooks).map(
                partial(with_figures, report)
            ),
        )

    built_io: IOResult[Built, BackendFailure] = stage("build", build)
    outcome = built_io.bind(after_build).bind(after_validate)
    if isinstance(outcome, IOSuccess):
        return CandidateRun(backend, name, holder[0], outcome, stages, validation, work_dir)
    for built in holder:
        built.close()
    return CandidateRun(
        backend,
        name,
        None,
        outcome.lash(partial(_log_failure, work_dir)),
        stages,
        validation,
        work_dir,
    )


def _profile(
    request: BuildRequest, candidate: Candidate, built: Built, hooks: Hooks
) -> IOResult[Profile, BackendFailure]:
    r = request
    plan = SweepPlan(r.batch_sizes, r.plan.call_rule, r.plan.sweep_rule, candidate.early_stop)
    return profile_runner(candidate.name, built.runner, r.samples, r.device, plan, r.settings,
                          hooks.on_batch, Clocks(hooks.timer))  # fmt: skip


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
