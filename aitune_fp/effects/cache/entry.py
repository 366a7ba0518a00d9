"""Reading a cache entry back: trusted only when sealed, intact and loadable.

Rules (of :mod:`aitune_fp.effects.cache.artifact_cache`): an entry is a folder
``<cache_dir>/artifacts/<key>/`` whose ``entry.json`` lists each file's size and sha256; it
is trusted only when it is sealed (:func:`~aitune_fp.effects.cache.integrity.check_sealed`), was
stored for the same key and model, holds a behaviour probe the module still reproduces, and
loads; the runtime opens a verified private copy in the build's own ``work_dir``. Anything
else is removed (with a warning) and reported as a miss, never as a failed tune.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
import uuid
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import torch
from returns.io import IOFailure, IOResult

from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends.base import Backend, Built
from aitune_fp.effects.cache.artifacts import (
    load_built,
    read_output_spec,
)
from aitune_fp.effects.cache.integrity import FileDigest, check_sealed, private_copy, safe_name
from aitune_fp.effects.cache.key import model_digest
from aitune_fp.effects.cache.probe import PROBE_FILE, probe_problem
from aitune_fp.effects.cache.reference import INFO_KEY

if TYPE_CHECKING:
    from aitune_fp.effects.build_request import BuildRequest, Candidate

log = logging.getLogger("aitune_fp")


ENTRY_FILE: Final = "entry.json"


ENTRY_FORMAT: Final = "aitune_fp.cache_entry/2"


def entry_dir(cache_dir: Path, key: str) -> Path:
    """The folder of the entry ``key``: ``<cache_dir>/artifacts/<key>``.

    >>> entry_dir(Path("/c"), "3f2a").as_posix()
    '/c/artifacts/3f2a'
    """
    return cache_dir / "artifacts" / key


Entry = tuple[str, dict[str, FileDigest], str]


def _read_entry(folder: Path, key: str, model: str) -> Entry | str:
    """(artifact name, file digests, output spec text) of an entry, or why it is refused:
    unreadable, of another format, or recorded for another key or model."""
    try:
        data = json.loads((folder / ENTRY_FILE).read_text(encoding="utf-8"))
        if data.get("format") != ENTRY_FORMAT:
            return f"an entry of another format ({data.get('format')!r})"
        if data.get("key") != key or data.get("model") != model:
            return "the entry was stored for another model or key (moved or copied here)"
        files = {str(name): FileDigest(**d) for name, d in data["files"].items()}
        if PROBE_FILE not in files:
            return "the entry has no behaviour probe"
        return str(data["artifact"]), files, str(data["outputs"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return "unreadable entry.json"


def _read_reference(folder: Path, files: dict[str, FileDigest]) -> dict[str, str] | None:
    """The entry's reference (its file's name and samples digest), when it lists one."""
    try:
        data = json.loads((folder / ENTRY_FILE).read_text(encoding="utf-8"))
        ref = data.get("reference")
        name, samples = str(ref["file"]), str(ref["samples"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return {"file": name, "samples": samples} if safe_name(name) and name in files else None


def _entry_problem(folder: Path, entry: Entry | str) -> str | None:
    """Why an entry cannot be trusted (``None`` when it is sealed and intact)."""
    if isinstance(entry, str):
        return entry
    artifact, files, _ = entry
    if not safe_name(artifact) or artifact not in files:
        return f"its artifact {artifact!r} is not a file listed in the entry"
    return check_sealed(folder, files, ENTRY_FILE)


def _discard(folder: Path, why: str) -> None:
    log.warning("artifact cache: discarding entry %s (%s); rebuilding", folder.name, why)
    shutil.rmtree(folder, ignore_errors=True)


def cache_miss(backend: Backend, why: str) -> IOResult[Built, BackendFailure]:
    """A miss as a value: a ``build`` failure of ``backend`` saying why there is no entry."""
    return IOFailure(BackendFailure(backend.describe(), "build", f"cache miss: {why}"))


def lookup(
    request: BuildRequest, candidate: Candidate, key: str, model: str | None = None
) -> IOResult[Built, BackendFailure]:
    """The cached runner of ``candidate``'s backend for ``key`` in ``request``'s cache, or a
    failure saying why there is none (a bad entry is removed on the way). The request's
    module must give the entry's probe outputs (:mod:`~aitune_fp.effects.cache.probe`);
    ``model`` is its :func:`model_digest`."""
    backend, work_dir = candidate.backend, candidate.work_dir
    module, device = request.module, request.device
    if request.cache_dir is None:
        return cache_miss(backend, "no cache")
    folder = entry_dir(request.cache_dir, key)
    if not folder.is_dir():
        return cache_miss(backend, "no entry")
    trusted = _trusted_copy(folder, key, module, device, work_dir, model or model_digest(module))
    if isinstance(trusted, str):
        _discard(folder, trusted)
        return cache_miss(backend, trusted)
    artifact, files, spec, copy = trusted
    hit = partial(_hit, backend, key, _read_reference(folder, files), copy)
    loaded = load_built(backend, copy / artifact, request.samples.spec, spec, device, work_dir)
    return loaded.map(hit).lash(partial(_discarded, folder))


Trusted = tuple[str, dict[str, FileDigest], Any, Path]
"""A trusted entry: its artifact's name, its files, its output spec, its private copy."""


def _trusted_copy(
    folder: Path,
    key: str,
    module: torch.nn.Module,
    device: torch.device,
    work_dir: Path,
    model: str,
) -> Trusted | str:
    """The entry, sealed and intact, copied and verified into ``work_dir`` with its probe
    reproduced by ``module``; else why not (the copy is removed)."""
    entry = _read_entry(folder, key, model)
    problem = _entry_problem(folder, entry)
    if isinstance(entry, str) or problem is not None:
        return problem or "unreadable entry"
    artifact, files, outputs = entry
    try:
        spec = read_output_spec(outputs)
    except ValueError as error:
        return str(error)
    copy = work_dir / f"cached-{uuid.uuid4().hex[:8]}"
    problem = private_copy(folder, files, copy) or probe_problem(copy / PROBE_FILE, module, device)
    if problem is not None:
        shutil.rmtree(copy, ignore_errors=True)
        return problem
    return artifact, files, spec, copy


def _hit(
    backend: Backend, key: str, reference: dict[str, str] | None, copy: Path, built: Built
) -> Built:
    """The loaded runner, marked a hit (with the reference's private copy, when kept)."""
    log.info("artifact cache: %s reuses entry %s", backend.describe(), key)
    info = {**built.info, "cache": "hit", "cache_key": key}
    if reference is not None:
        info[INFO_KEY] = {**reference, "file": str(copy / reference["file"])}
    return dataclasses.replace(built, info=info)


def _discarded(folder: Path, failure: BackendFailure) -> IOResult[Built, BackendFailure]:
    """An entry that did not load is removed; the failure stands."""
    _discard(folder, failure.message)
    return IOFailure(failure)


def evict(cache_dir: Path, key: str, why: str) -> None:
    """Remove the entry ``key`` (it loaded but its runner failed validation)."""
    folder = entry_dir(cache_dir, key)
    if folder.is_dir():
        _discard(folder, why)
