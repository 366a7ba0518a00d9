"""A build ahead: one candidate's build, run only to fill the caches its sweep build reads.

Rules:
- the build is the sweep's own (:func:`~aitune_fp.effects.shared_build.shared_build`: the
  same artifact-cache key, ``torch.export`` sharing and batch envelope), so the sweep's
  build of the same candidate finds the artifact in the cache and only loads it;
- a backend without a loadable artifact (a just-in-time compiler whose compiled graphs
  land in its own on-disk cache, as TorchInductor's FX-graph cache) then has its runner
  called once at each validation batch size and each profiled batch size, in the
  sweep's order (validation, then profiling), untimed: the compiles those shapes cause in
  the sweep are then cache hits too;
- :func:`cached_already` says whether a loadable backend's artifact is in the cache
  already (its entry's folder under the key the sweep's build will look up, computed in
  the same envelope): such a build has nothing to do ahead (a warm tune builds nothing
  ahead); a key that cannot be computed reads as not cached;
- nothing is validated or timed; the runner is closed, or (``keep``, a just-in-time
  backend: :func:`build_ahead`) handed back, warm, so the worker that built it can
  serve the candidate's sweep job with it (:mod:`aitune_fp.effects.isolation.worker`:
  the compiles of every warm size are then in memory, where a fresh worker would trace and
  load them again from the compiler's cache); the answer is ``None`` (done) or why the
  build failed (its first line), never an exception; ``on_call`` is told before each call
  (the isolation worker's heartbeat).
"""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from aitune_fp.effects.backends._export import batch_envelope
from aitune_fp.effects.backends.base import Backend, Built
from aitune_fp.effects.build_request import BuildRequest, Candidate
from aitune_fp.effects.cache.artifact_cache import cache_key
from aitune_fp.effects.cache.artifacts import loadable
from aitune_fp.effects.inputs.samples import make_batch
from aitune_fp.effects.isolation.heartbeat import Heartbeat
from aitune_fp.effects.isolation.protocol import outcome_values
from aitune_fp.effects.shared_build import envelope_of, shared_build


def _nothing() -> None:
    return None


def warm_sizes(batch_sizes: tuple[int, ...], validation_sizes: tuple[int, ...]) -> tuple[int, ...]:
    """The batch sizes a just-in-time build ahead calls at: validation's, then profiling's
    (each once, in that order).

    >>> warm_sizes((1, 2, 4, 8), (1, 8))
    (1, 8, 2, 4)
    """
    return tuple(dict.fromkeys((*validation_sizes, *batch_sizes)))


def cached_already(request: BuildRequest, backend: Backend, model: str | None = None) -> bool:
    """Whether ``backend``'s artifact for this build is in the request's cache already
    (``model``: the module's digest, when the caller has it)."""
    r = request
    if r.cache_dir is None or not loadable(backend):
        return False
    try:
        with batch_envelope(envelope_of(r.samples, r.batch_sizes, r.validation_sizes)):
            key = cache_key(r.module, r.samples, backend, r.device, model)
    except Exception:
        return False
    return (r.cache_dir / "artifacts" / key / "entry.json").is_file()


def build_ahead(
    request: BuildRequest,
    backend: Backend,
    work_dir: Path,
    on_call: Callable[[], None] = _nothing,
    *,
    keep: bool = False,
) -> tuple[str | None, Built | None]:
    """Build ``backend`` ahead (see the module's rules): ``None`` or why it failed, and its
    warm runner when ``keep`` and the backend is not loadable (``None`` otherwise: closed,
    or never made)."""
    try:
        made = shared_build(request, Candidate(backend, backend.describe(), work_dir))
        built, failure = outcome_values(made)
        if built is None:
            return (failure.describe() if failure is not None else "no runner"), None
        keeps = keep and not loadable(backend)
        _warmed(request, backend, built, on_call, close=not keeps)
    except Exception as error:
        lines = "".join(traceback.format_exception_only(error)).strip()
        return lines.split("\n")[0][:500], None
    return None, (built if keeps else None)


def _warmed(
    request: BuildRequest,
    backend: Backend,
    built: Built,
    on_call: Callable[[], None],
    *,
    close: bool,
) -> None:
    """Call a just-in-time backend's runner once at each warm size, in the sweep's order
    (a loadable backend's is not called), then close it (``close``; always when a call
    raised)."""
    try:
        if not loadable(backend):
            with torch.inference_mode():
                for size in warm_sizes(request.batch_sizes, request.validation_sizes):
                    on_call()
                    make_batch(request.samples, size).to(request.device).call(built.runner)
    except BaseException:
        close = True
        raise
    finally:
        if close:
            with contextlib.suppress(Exception):
                built.close()


@dataclass(frozen=True, slots=True)
class PrebuildJob:
    """Build ``backend`` (named ``name``) ahead in an isolation worker (the job the
    worker runs for :func:`build_ahead`; its heartbeat beats before each call)."""

    request: BuildRequest
    backend: Backend
    name: str
    work_dir: Path
    keep: bool = False

    def run(self, beat: Heartbeat) -> str | None:
        """The build ahead, in the worker: ``None``, or why it failed."""
        failed, _ = self.run_keeping(beat)
        return failed

    def run_keeping(self, beat: Heartbeat) -> tuple[str | None, Built | None]:
        """The build ahead, in the worker, and its warm runner when ``keep`` says so and
        the backend is not loadable (:func:`build_ahead`)."""

        def on_call() -> None:
            beat.tick(may_compile=True)  # a first call at a batch size may compile

        return build_ahead(self.request, self.backend, self.work_dir, on_call, keep=self.keep)
