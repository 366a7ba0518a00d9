"""The artifact cache: a rebuild of the same thing reuses the artifact built before.

Rules:
- the key is a sha256 over: the module's code and weights (every parameter and buffer,
  by name, dtype, shape and bytes; every submodule's class qualified name and source,
  never its import name, so keys match across processes and import paths), the input spec,
  the backend's kind, config key and implementation source, the device (and GPU model),
  and the versions of Python and of every inference library;
- only backends whose artifacts can be loaded back (:func:`~aitune_fp.effects.cache.artifacts.
  loadable`) are cached; JIT and eager backends always build;
- an entry is a folder ``<cache_dir>/artifacts/<key>/`` holding the artifact files and an
  ``entry.json`` with each file's size and sha256; it is written to a temporary folder and
  renamed into place, so a half-written entry is never seen;
- an entry is trusted only when it is sealed (:func:`~aitune_fp.effects.cache.integrity.
  check_sealed`: its ``artifact`` is a plain name listed in ``files``, every file in the
  folder is listed, a regular file, no link, with its recorded size and hash) and it
  loads; the runtime then opens a verified private copy in the build's own ``work_dir``,
  never the shared entry. Anything else (missing, truncated, tampered, unlisted,
  unloadable) is removed and the backend is rebuilt — a corrupt entry never fails a tune;
  an entry whose runner then fails validation is evicted (:func:`evict`) and rebuilt by
  the caller, once;
- a cache folder that cannot be written (:func:`unusable_reason`) means running uncached;
  an entry that cannot be stored (``artifacts`` is a file, the disk is full) is a warning
  and the fresh build is used as is;
- a module whose weights cannot be hashed (an exotic tensor type) is built uncached;
- with ``reference_sizes`` (the batch sizes validation will check), an entry also holds
  the eager outputs of every validation batch and the digest of the samples they came
  from (:mod:`aitune_fp.effects.cache.reference`), as one more listed, sealed file; a hit hands
  its private copy to validation in ``Built.info["cache_reference"]``, which uses it only
  for the same samples and batches. A changed reference file is a changed entry (sealing
  fails: the entry is discarded and rebuilt, validated against eager); the reference is
  as trusted as the entry, so the cache folder must be one only you write to;
- a cache hit says so in ``Built.info["cache"]`` (``"hit"``; a fresh build stored is
  ``"stored"``); the lookup's and the store's seconds are ``info["stage_seconds"]["cache"]``.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from functools import partial
from typing import TYPE_CHECKING, Any

from returns.io import IOFailure, IOResult

from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends._structured import refused_containers
from aitune_fp.effects.backends.base import Backend, Built
from aitune_fp.effects.cache.artifacts import loadable
from aitune_fp.effects.cache.entry import (
    cache_miss,
    evict,
    lookup,
)
from aitune_fp.effects.cache.key import (
    cache_key,
    code_digest,
    implementation_digest,
    model_digest,
    weights_digest,
)
from aitune_fp.effects.cache.store import store, unusable_reason

if TYPE_CHECKING:
    from aitune_fp.effects.build_request import BuildRequest, Candidate

log = logging.getLogger("aitune_fp")

__all__ = [
    "cache_key",
    "cached_build",
    "code_digest",
    "evict",
    "implementation_digest",
    "lookup",
    "model_digest",
    "store",
    "unusable_reason",
    "weights_digest",
]


def cached_build(
    request: BuildRequest, candidate: Candidate, *, reuse: bool = True
) -> IOResult[Built, BackendFailure]:
    """``candidate.backend.build(...)`` for ``request``, or the cached artifact of an
    identical earlier build.

    ``reuse=False`` skips the lookup (a fresh build, stored over the old entry); a stored
    entry keeps eager's outputs at the request's validation sizes (none without them).

    A backend that cannot take the samples' containers fails at once
    (:mod:`aitune_fp.effects.backends._structured`). Without the request's cache folder, or
    for a backend whose artifact cannot be loaded back, this is exactly
    ``backend.build(module, samples, device, work_dir)``.
    """
    backend, r = candidate.backend, request
    refused = refused_containers(backend, r.samples)
    if refused is not None:
        return IOFailure(refused)
    keyed = _keyed(backend, r) if r.cache_dir is not None and loadable(backend) else None
    if keyed is None:
        return backend.build(r.module, r.samples, r.device, candidate.work_dir)
    model, key = keyed
    looked = time.perf_counter()
    found = (
        lookup(r, candidate, key, model)
        if reuse
        else cache_miss(backend, "a fresh build was asked for")
    )
    lookup_seconds = time.perf_counter() - looked

    def stored(built: Built) -> Built:
        start = time.perf_counter()
        kept = store(r, key, built, model)
        seconds = lookup_seconds + time.perf_counter() - start
        info = _with_cache_seconds({**built.info, "cache_key": key}, seconds) | (
            {"cache": "stored"} if kept else {}
        )
        return dataclasses.replace(built, info=info)

    def rebuild(_: BackendFailure) -> IOResult[Built, BackendFailure]:
        return backend.build(r.module, r.samples, r.device, candidate.work_dir).map(stored)

    return found.map(partial(_timed_hit, lookup_seconds)).lash(rebuild)


def _timed_hit(lookup_seconds: float, built: Built) -> Built:
    """A hit with the lookup's seconds as its cache stage."""
    return dataclasses.replace(built, info=_with_cache_seconds(built.info, lookup_seconds))


def _keyed(backend: Backend, request: BuildRequest) -> tuple[str, str] | None:
    """The module's digest and the build's cache key; ``None`` (logged) when the module
    cannot be keyed (an odd tensor type must not fail the build: it skips the cache)."""
    try:
        model = model_digest(request.module)
        return model, cache_key(request.module, request.samples, backend, request.device, model)
    except Exception as error:
        log.warning("artifact cache: cannot key %s (%s); building", backend.describe(), error)
        return None


def _with_cache_seconds(info: dict[str, Any], seconds: float) -> dict[str, Any]:
    """``info`` with the cache's lookup and store seconds as its ``stage_seconds["cache"]``."""
    return {**info, "stage_seconds": {**info.get("stage_seconds", {}), "cache": seconds}}
