"""The candidate's build as the sweep runs it, and as a build ahead runs it with the same
cache key.

Rules:
- the build goes through the artifact cache
  (:func:`~aitune_fp.effects.cache.artifact_cache.cached_build`; ``reuse=False`` builds
  afresh and replaces the entry);
- it runs inside the tune's batch envelope (the largest of ``batch_sizes``,
  ``validation_sizes`` and the samples' own rows, which the eager check ran;
  :func:`~aitune_fp.effects.backends._export.batch_envelope`): an exporter's example
  batch never has more rows than the eager check and sweep ran;
- it shares ``torch.export`` programs with the other candidates through
  :func:`~aitune_fp.effects.backends._shared_export.exports_folder` (the artifact cache's
  ``exports`` folder, or the run folder's ``.exports`` when uncached), in this process or
  in an isolation worker alike.
"""

from __future__ import annotations

from returns.io import IOResult

from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends._export import batch_envelope
from aitune_fp.effects.backends._shared_export import exports_folder, sharing
from aitune_fp.effects.backends.base import Built
from aitune_fp.effects.build_request import BuildRequest, Candidate
from aitune_fp.effects.cache.artifact_cache import cached_build, model_digest
from aitune_fp.effects.inputs.samples import Samples


def envelope_of(
    samples: Samples, batch_sizes: tuple[int, ...], validation_sizes: tuple[int, ...] | None
) -> int | None:
    """The build's batch envelope: the largest of the batch sizes, the validation sizes and
    the samples' own rows (the eager check ran every sample)."""
    rows = (item.size for item in samples.items)
    return max((*batch_sizes, *(validation_sizes or ()), *rows), default=None)


def shared_build(
    request: BuildRequest, candidate: Candidate, *, reuse: bool = True
) -> IOResult[Built, BackendFailure]:
    """The candidate's build as the sweep runs it (and a build ahead, with the same cache
    key): through the artifact cache, sharing ``torch.export`` programs, inside the
    tune's batch envelope (see the module's rules)."""
    r, folder = request, exports_folder(candidate.work_dir, request.cache_dir)
    largest = envelope_of(r.samples, r.batch_sizes, r.validation_sizes)
    with sharing(folder, model_digest), batch_envelope(largest):
        return cached_build(r, candidate, reuse=reuse)
