"""Writing a cache entry: staged in a temporary folder, sealed, then renamed into place.

Rules (of :mod:`aitune_fp.effects.cache.artifact_cache`): only an artifact with its
behaviour probe is stored; every file is listed with its size and sha256 in ``entry.json``; with
``reference_sizes``, the eager outputs of the validation batches are kept as one more
sealed file; a store that fails (disk full, unwritable folder) is a warning and ``False``,
never a failed build.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from aitune_fp.effects.atomic import publish_dir, staging_dir
from aitune_fp.effects.backends.base import Built
from aitune_fp.effects.cache.artifacts import (
    artifact_files,
    dump_output_spec,
    output_spec,
)
from aitune_fp.effects.cache.entry import (
    ENTRY_FILE,
    ENTRY_FORMAT,
    entry_dir,
)
from aitune_fp.effects.cache.integrity import digest
from aitune_fp.effects.cache.key import model_digest
from aitune_fp.effects.cache.probe import PROBE_FILE, write_probe
from aitune_fp.effects.cache.reference import (
    REFERENCE_FILE,
    eager_references,
    samples_digest,
    write_references,
)
from aitune_fp.effects.inputs.samples import Samples, make_batch

if TYPE_CHECKING:
    from aitune_fp.effects.build_request import BuildRequest

log = logging.getLogger("aitune_fp")


def unusable_reason(cache_dir: Path) -> str | None:
    """``None`` when entries can be written under ``cache_dir``, else why not (one line).

    >>> import tempfile
    >>> unusable_reason(Path(tempfile.mkdtemp())) is None
    True
    """
    try:
        parent = cache_dir / "artifacts"
        parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=parent, prefix=".probe-"):
            pass
    except OSError as error:
        return f"{cache_dir} is not writable: {error.strerror or error}"
    return None


def store(request: BuildRequest, key: str, built: Built, model: str | None = None) -> bool:
    """Copy ``built``'s artifact into ``request``'s cache under ``key`` with its behaviour
    probe (and the eager outputs of the validation batches at the request's validation
    sizes); ``False`` if it could not (an entry without a probe is never stored, nor one
    without a cache). ``model`` is the module's :func:`model_digest`, when known."""
    if built.artifact is None or not built.artifact.is_file() or request.cache_dir is None:
        return False
    module, samples, reference_sizes = request.module, request.samples, request.validation_sizes
    final = entry_dir(request.cache_dir, key)
    try:
        with staging_dir(final) as staging:
            outputs = _probe(staging, module, samples)
            files = {PROBE_FILE: dataclasses.asdict(digest(staging / PROBE_FILE))}
            files |= _copied(built.artifact, staging)
            entry: dict[str, Any] = {
                "format": ENTRY_FORMAT,
                "key": key,
                "model": model or model_digest(module),
                "artifact": built.artifact.name,
                "files": files,
                "outputs": dump_output_spec(output_spec(outputs)),
                "backend": built.info,
            }
            if reference_sizes and REFERENCE_FILE not in files:
                entry["reference"] = _store_reference(
                    staging, files, module, samples, reference_sizes, request.device
                )
            (staging / ENTRY_FILE).write_text(json.dumps(entry, indent=2, default=str))
            publish_dir(staging, final)
        return True
    except (OSError, RuntimeError, TypeError, ValueError) as error:
        log.warning("artifact cache: could not store %s: %s", key, error)
        return False


def _probe(staging: Path, module: torch.nn.Module, samples: Samples) -> Any:
    """Write the behaviour probe (one call on one row) into ``staging``; its outputs."""
    probe = make_batch(samples, 1)
    with torch.inference_mode():
        outputs = probe.call(module)
    if not write_probe(staging / PROBE_FILE, probe, outputs):
        raise ValueError("its outputs cannot be kept as a behaviour probe")
    return outputs


def _copied(artifact: Path, staging: Path) -> dict[str, Any]:
    """Copy the artifact's files into ``staging``; their digests by name."""
    files: dict[str, Any] = {}
    for path in artifact_files(artifact):
        shutil.copy2(path, staging / path.name)
        files[path.name] = dataclasses.asdict(digest(staging / path.name))
    return files


def _store_reference(
    staging: Path,
    files: dict[str, Any],
    module: torch.nn.Module,
    samples: Samples,
    sizes: tuple[int, ...],
    device: torch.device | None,
) -> dict[str, str] | None:
    """Write the eager reference into ``staging`` and list it in ``files``; its entry field."""
    try:
        here = device if device is not None else samples.items[0].flat()[0].device
        outputs = eager_references(module, samples, sizes, here)
        sha = samples_digest(samples)
        if not write_references(staging / REFERENCE_FILE, sha, outputs):
            return None
    except Exception as error:  # no reference is no worse than before: validate with eager
        (staging / REFERENCE_FILE).unlink(missing_ok=True)
        log.warning("artifact cache: no eager reference kept: %s", error)
        return None
    files[REFERENCE_FILE] = dataclasses.asdict(digest(staging / REFERENCE_FILE))
    return {"file": REFERENCE_FILE, "samples": sha}
