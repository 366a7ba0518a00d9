"""The artifact cache: a rebuild of the same thing reuses the artifact built before.

Rules:
- the key is a sha256 over: the module's code and weights (every parameter and buffer,
  by name, dtype, shape and bytes; every submodule's class qualified name and source,
  never its import name, so keys match across processes and import paths), the input spec,
  the backend's kind, config key and implementation source, the device (and GPU model),
  and the versions of Python and of every inference library;
- only backends whose artifacts can be loaded back (:func:`~aitune_fp.effects.artifacts.
  loadable`) are cached; JIT and eager backends always build;
- an entry is a folder ``<cache_dir>/artifacts/<key>/`` holding the artifact files and an
  ``entry.json`` with each file's size and sha256; it is written to a temporary folder and
  renamed into place, so a half-written entry is never seen;
- an entry is trusted only when it is sealed (:func:`~aitune_fp.effects.integrity.
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
  from (:mod:`aitune_fp.effects.reference`), as one more listed, sealed file; a hit hands
  its private copy to validation in ``Built.info["cache_reference"]``, which uses it only
  for the same samples and batches. A changed reference file is a changed entry (sealing
  fails: the entry is discarded and rebuilt, validated against eager); the reference is
  as trusted as the entry, so the cache folder must be one only you write to;
- a cache hit says so in ``Built.info["cache"]`` (``"hit"``; a fresh build stored is
  ``"stored"``); the lookup's and the store's seconds are ``info["stage_seconds"]["cache"]``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import inspect
import json
import logging
import platform
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Final

import torch
from returns.io import IOFailure, IOResult

from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.artifacts import (
    artifact_files,
    dump_output_spec,
    load_built,
    loadable,
    output_spec,
    read_output_spec,
)
from aitune_fp.effects.atomic import publish_dir, staging_dir
from aitune_fp.effects.backends.base import Backend, Built
from aitune_fp.effects.environment import library_versions
from aitune_fp.effects.inputs import Samples, make_batch
from aitune_fp.effects.integrity import FileDigest, check_sealed, digest, private_copy, safe_name
from aitune_fp.effects.reference import (
    INFO_KEY,
    REFERENCE_FILE,
    eager_references,
    samples_digest,
    write_references,
)

log = logging.getLogger("aitune_fp")
ENTRY_FILE: Final = "entry.json"
ENTRY_FORMAT: Final = "aitune_fp.cache_entry/1"


def weights_digest(module: torch.nn.Module) -> str:
    """sha256 of every parameter and buffer of ``module``: name, dtype, shape and bytes.

    >>> a = torch.nn.Linear(2, 2)
    >>> weights_digest(a) == weights_digest(a), weights_digest(a) == weights_digest(
    ...     torch.nn.Linear(2, 2))
    (True, False)
    """
    h = hashlib.sha256()
    tensors: dict[str, torch.Tensor] = dict(module.named_parameters(remove_duplicate=False))
    tensors.update(module.named_buffers(remove_duplicate=False))
    for name in sorted(tensors):
        t = tensors[name].detach()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        flat = t.to("cpu").contiguous().reshape(-1)
        if flat.numel():
            h.update(flat.view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def _class_source(cls: type) -> str:
    """The source text of ``cls`` (empty when Python cannot find it)."""
    with contextlib.suppress(OSError, TypeError):
        return inspect.getsource(cls)
    return ""


def code_digest(module: torch.nn.Module) -> str:
    """sha256 of the module tree's structure (``repr``) and every submodule class's qualified
    name and source text.

    The import name (``__module__``) is left out on purpose: the same file imported under
    another name, or in another process, gives the same digest.
    """
    h = hashlib.sha256(repr(module).encode())
    classes = {(cls.__qualname__, _class_source(cls)) for cls in map(type, module.modules())}
    for qualname, source in sorted(classes):
        h.update(f"{qualname}|{hashlib.sha256(source.encode()).hexdigest()}|".encode())
    return h.hexdigest()


def model_digest(module: torch.nn.Module) -> str:
    """sha256 of the module's code (:func:`code_digest`) and weights (:func:`weights_digest`).

    >>> a = torch.nn.Linear(2, 2)
    >>> model_digest(a) == model_digest(a), model_digest(a) == model_digest(torch.nn.ReLU())
    (True, False)
    """
    both = f"{code_digest(module)}|{weights_digest(module)}"
    return hashlib.sha256(both.encode()).hexdigest()


def implementation_digest(backend: Backend) -> str:
    """sha256 of the source file that implements ``backend`` (a changed builder misses)."""
    try:
        source = inspect.getsourcefile(type(backend))
        return hashlib.sha256(Path(source).read_bytes()).hexdigest() if source else ""
    except (OSError, TypeError):
        return ""


def _device_facts(device: torch.device) -> str:
    if device.type == "cuda" and torch.cuda.is_available():
        index = device.index if device.index is not None else torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
        return f"cuda|{props.name}|{props.major}.{props.minor}"
    return device.type


def cache_key(
    module: torch.nn.Module, samples: Samples, backend: Backend, device: torch.device
) -> str:
    """The cache key of building ``backend`` for ``module`` with these inputs on ``device``."""
    parts = {
        "weights": weights_digest(module),
        "code": code_digest(module),
        "inputs": repr(samples.spec),
        "backend": [backend.name, backend.key(), implementation_digest(backend)],
        "device": _device_facts(device),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "libraries": library_versions(),
    }
    if getattr(backend, "calibrated", False):  # a calibration depends on the samples' values
        parts["calibration"] = samples_digest(samples)
    blob = json.dumps(parts, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:32]


def _entry_dir(cache_dir: Path, key: str) -> Path:
    return cache_dir / "artifacts" / key


def _read_entry(folder: Path) -> tuple[str, dict[str, FileDigest], str] | None:
    """(artifact name, file digests, output spec text) of an entry, or ``None``."""
    try:
        data = json.loads((folder / ENTRY_FILE).read_text(encoding="utf-8"))
        if data.get("format") != ENTRY_FORMAT:
            return None
        files = {str(name): FileDigest(**d) for name, d in data["files"].items()}
        return str(data["artifact"]), files, str(data["outputs"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _read_reference(folder: Path, files: dict[str, FileDigest]) -> dict[str, str] | None:
    """The entry's reference (its file's name and samples digest), when it lists one."""
    try:
        data = json.loads((folder / ENTRY_FILE).read_text(encoding="utf-8"))
        ref = data.get("reference")
        name, samples = str(ref["file"]), str(ref["samples"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return {"file": name, "samples": samples} if safe_name(name) and name in files else None


def _entry_problem(
    folder: Path, entry: tuple[str, dict[str, FileDigest], str] | None
) -> str | None:
    """Why an entry cannot be trusted (``None`` when it is sealed and intact)."""
    if entry is None:
        return "unreadable entry.json"
    artifact, files, _ = entry
    if not safe_name(artifact) or artifact not in files:
        return f"its artifact {artifact!r} is not a file listed in the entry"
    return check_sealed(folder, files, ENTRY_FILE)


def _discard(folder: Path, why: str) -> None:
    log.warning("artifact cache: discarding entry %s (%s); rebuilding", folder.name, why)
    shutil.rmtree(folder, ignore_errors=True)


def _miss(backend: Backend, why: str) -> IOResult[Built, BackendFailure]:
    return IOFailure(BackendFailure(backend.describe(), "build", f"cache miss: {why}"))


def lookup(
    cache_dir: Path,
    key: str,
    backend: Backend,
    samples: Samples,
    device: torch.device,
    work_dir: Path,
) -> IOResult[Built, BackendFailure]:
    """The cached runner for ``key``, or a failure saying why there is none (a bad entry is
    removed on the way)."""
    folder = _entry_dir(cache_dir, key)
    if not folder.is_dir():
        return _miss(backend, "no entry")
    entry = _read_entry(folder)
    problem = _entry_problem(folder, entry)
    if entry is None or problem is not None:
        _discard(folder, problem or "unreadable entry")
        return _miss(backend, problem or "unreadable entry")
    artifact, files, outputs = entry
    try:
        spec = read_output_spec(outputs)
    except ValueError as error:
        _discard(folder, str(error))
        return _miss(backend, str(error))
    copy = work_dir / f"cached-{uuid.uuid4().hex[:8]}"
    problem = private_copy(folder, files, copy)
    if problem is not None:
        shutil.rmtree(copy, ignore_errors=True)
        _discard(folder, problem)
        return _miss(backend, problem)

    def discard(failure: BackendFailure) -> IOResult[Built, BackendFailure]:
        _discard(folder, failure.message)
        return IOFailure(failure)

    reference = _read_reference(folder, files)

    def hit(built: Built) -> Built:
        log.info("artifact cache: %s reuses entry %s", backend.describe(), key)
        info = {**built.info, "cache": "hit", "cache_key": key}
        if reference is not None:
            info[INFO_KEY] = {**reference, "file": str(copy / reference["file"])}
        return dataclasses.replace(built, info=info)

    loaded = load_built(backend, copy / artifact, samples.spec, spec, device, work_dir)
    return loaded.map(hit).lash(discard)


def evict(cache_dir: Path, key: str, why: str) -> None:
    """Remove the entry ``key`` (it loaded but its runner failed validation)."""
    folder = _entry_dir(cache_dir, key)
    if folder.is_dir():
        _discard(folder, why)


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


def store(
    cache_dir: Path,
    key: str,
    built: Built,
    module: torch.nn.Module,
    samples: Samples,
    reference_sizes: tuple[int, ...] | None = None,
    device: torch.device | None = None,
) -> bool:
    """Copy ``built``'s artifact into the cache under ``key`` (with the eager outputs of
    the validation batches at ``reference_sizes``); ``False`` if it could not."""
    if built.artifact is None or not built.artifact.is_file():
        return False
    final = _entry_dir(cache_dir, key)
    try:
        with staging_dir(final) as staging:
            with torch.inference_mode():
                outputs = make_batch(samples, 1).call(module)
            files = {}
            for path in artifact_files(built.artifact):
                shutil.copy2(path, staging / path.name)
                files[path.name] = dataclasses.asdict(digest(staging / path.name))
            entry: dict[str, Any] = {
                "format": ENTRY_FORMAT,
                "artifact": built.artifact.name,
                "files": files,
                "outputs": dump_output_spec(output_spec(outputs)),
                "backend": built.info,
            }
            if reference_sizes and REFERENCE_FILE not in files:
                entry["reference"] = _store_reference(
                    staging, files, module, samples, reference_sizes, device
                )
            (staging / ENTRY_FILE).write_text(json.dumps(entry, indent=2, default=str))
            publish_dir(staging, final)
        return True
    except (OSError, RuntimeError, TypeError, ValueError) as error:
        log.warning("artifact cache: could not store %s: %s", key, error)
        return False


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


def cached_build(
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
    """``backend.build(...)``, or the cached artifact of an identical earlier build.

    ``reuse=False`` skips the lookup (a fresh build, stored over the old entry);
    ``reference_sizes``: the batch sizes validation checks, whose eager outputs a stored
    entry keeps (``None``: it keeps none).

    Without ``cache_dir``, or for a backend whose artifact cannot be loaded back, this is
    exactly ``backend.build(module, samples, device, work_dir)``.
    """
    if cache_dir is None or not loadable(backend):
        return backend.build(module, samples, device, work_dir)
    try:
        key = cache_key(module, samples, backend, device)
    except Exception as error:  # an odd tensor type must not fail the build: skip the cache
        log.warning("artifact cache: cannot key %s (%s); building", backend.describe(), error)
        return backend.build(module, samples, device, work_dir)

    looked = time.perf_counter()
    found = (
        lookup(cache_dir, key, backend, samples, device, work_dir)
        if reuse
        else _miss(backend, "a fresh build was asked for")
    )
    lookup_seconds = time.perf_counter() - looked

    def stored(built: Built) -> Built:
        start = time.perf_counter()
        kept = store(cache_dir, key, built, module, samples, reference_sizes, device)
        seconds = lookup_seconds + time.perf_counter() - start
        info = _with_cache_seconds({**built.info, "cache_key": key}, seconds) | (
            {"cache": "stored"} if kept else {}
        )
        return dataclasses.replace(built, info=info)

    def rebuild(_: BackendFailure) -> IOResult[Built, BackendFailure]:
        return backend.build(module, samples, device, work_dir).map(stored)

    def timed_hit(built: Built) -> Built:
        return dataclasses.replace(built, info=_with_cache_seconds(built.info, lookup_seconds))

    return found.map(timed_hit).lash(rebuild)


def _with_cache_seconds(info: dict[str, Any], seconds: float) -> dict[str, Any]:
    """``info`` with the cache's lookup and store seconds as its ``stage_seconds["cache"]``."""
    return {**info, "stage_seconds": {**info.get("stage_seconds", {}), "cache": seconds}}
