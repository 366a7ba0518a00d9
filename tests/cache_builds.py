"""A build through the artifact cache as the sweep asks for it, from the parts tests have
at hand: the request a tune would make (one batch size, validated at
``reference_sizes``) and a candidate named after its backend."""

from __future__ import annotations

from pathlib import Path

import torch
from returns.io import IOResult

from aitune_fp.core.records import BackendFailure
from aitune_fp.core.strategies import max_throughput
from aitune_fp.effects.backends.base import Backend, Built
from aitune_fp.effects.build_request import BuildRequest, Candidate
from aitune_fp.effects.cache.artifact_cache import cached_build
from aitune_fp.effects.inputs.samples import Samples


def cached(
    backend: Backend,
    module: torch.nn.Module,
    samples: Samples,
    device: torch.device,
    work_dir: Path,
    cache_dir: Path | None,
    *,
    reuse: bool = True,
    reference_sizes: tuple[int, ...] | None = None,
) -> IOResult[Built, BackendFailure]:
    """:func:`cached_build` of ``backend`` for the request these parts make."""
    sizes = tuple(reference_sizes or ())
    request = BuildRequest(module, samples, device, max_throughput.plan, (1,), sizes, cache_dir)
    return cached_build(request, Candidate(backend, backend.describe(), work_dir), reuse=reuse)
