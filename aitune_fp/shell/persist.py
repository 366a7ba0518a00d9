"""Save a tuned module and load it back to deploy the winner without re-tuning.

A save is a folder: ``manifest.json`` (format, backend kind, source (``module:Class``)
and config, input spec, output
structure, the selection, the module's weights digest, and the size and sha256 of every
other file), ``run.json`` when the run was recorded, and the winner's artifact — an
AOTInductor package, an ONNX model or a TensorRT engine. A winner without a loadable
artifact (eager, inductor JIT, Torch-TensorRT) is saved as a *recipe*: the backend config
to rebuild it from the same module.

Rules:
- ``load`` checks the manifest's format, then that the folder is sealed: the manifest's
  ``artifact`` is a plain file name listed in ``files``; every file in the folder is
  listed (an unlisted ONNX external-data file too); each is a regular file inside the
  folder (no absolute path, no ``..``, no link) with its recorded size and sha256. Then
  the listed files are copied into a private folder and the *copies* are verified again,
  and only the copies are opened by a runtime. Any problem is a :class:`LoadError` naming
  the file and why, raised before a runtime has opened anything;
- ``load(path, expected_digest="sha256:<hex>")`` also pins the manifest itself (its
  digest is :func:`manifest_digest`, printed by ``save``'s callers): since the manifest
  lists every file's hash, a pinned digest from outside the folder fixes every byte that
  is loaded;
- the private copy is owned by the loaded module: removed by its ``close()`` or when it
  is garbage-collected, and at once when loading fails;
- a recipe needs ``module=`` and refuses a module whose weights differ from the saved
  digest; an artifact ignores ``module``;
- a backend from outside aitune_fp is found again by its recorded source: ``load`` imports
  that module (as loading a ``.pt2`` runs code: load only saves you trust); a shipped
  backend is found by its kind, whatever the source says;
- nothing is unpickled: the manifest and the record are JSON, artifacts are read by their
  own runtimes (an AOTInductor ``.pt2`` package holds a native shared library that is
  loaded and so runs: load only saves whose digest you trust, see docs/reliability.md);
- ``save`` first checks that the artifact still has the digest recorded when it was built
  (a module never saves another build's artifact), writes into a staging folder and
  renames it into place, and only replaces a folder that holds an earlier save (or is
  empty).

Longer than 260 lines: save and load are inverses, kept side by side so their formats agree.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
from pathlib import Path
from typing import Final

import torch
from pyrsistent import pmap
from returns.result import Failure

from aitune_fp.core.record.run_record import RunRecord, dumps, loads
from aitune_fp.core.records import Selection
from aitune_fp.effects.atomic import publish_dir, staging_dir
from aitune_fp.effects.backends.base import Backend, Built
from aitune_fp.effects.backends.registry import source_of
from aitune_fp.effects.cache.artifacts import (
    artifact_files,
    backend_from_config,
    dump_output_spec,
    load_built,
    loadable,
    output_spec,
    read_output_spec,
)
from aitune_fp.effects.cache.integrity import FileDigest, digest
from aitune_fp.effects.inputs.samples import InputSpec, Samples, make_batch
from aitune_fp.effects.machine.environment import library_versions
from aitune_fp.shell.io import perform
from aitune_fp.shell.manifest import MANIFEST, Manifest, SavedBackend, manifest_text
from aitune_fp.shell.model_match import (
    MODEL_FIELD,
    PROBE_FILE,
    mismatch,
    model_fields,
    write_model_probe,
)
from aitune_fp.shell.sealed import LoadError, _read_manifest, _sealed_copy, manifest_digest
from aitune_fp.shell.spec_json import spec_from_json, spec_to_json, zero_samples
from aitune_fp.shell.tuned_module import TunedModule

__all__ = ["LoadError", "load", "manifest_digest", "save"]
RECORD: Final = "run.json"


# --------------------------------------------------------------------------- save
def _is_save_folder(path: Path) -> bool:
    return path.is_dir() and (not any(path.iterdir()) or (path / MANIFEST).is_file())


def _outputs_of(tuned: TunedModule) -> str:
    with torch.inference_mode():
        outputs = make_batch(tuned.samples, 1).call(tuned)
    return dump_output_spec(output_spec(outputs))


def _backend_fields(config: Backend) -> SavedBackend:
    """The manifest's ``backend``: kind, source (``module:Class`` of a backend from outside
    the package), description, key and the config as JSON (odd leaves as their text)."""
    as_json = json.loads(json.dumps(dataclasses.asdict(config), default=str))  # type: ignore[call-overload]
    return SavedBackend(
        config.name, pmap(as_json), source_of(config), config.describe(), config.key()
    )


def _manifest(
    tuned: TunedModule, mode: str, files: dict[str, FileDigest], artifact: str | None
) -> Manifest:
    digests = model_fields(tuned.source_module)
    return Manifest(
        mode=mode,
        backend=_backend_fields(tuned.backend_config),
        device=str(tuned.built.info.get("device", "cpu")),
        input_spec=pmap(spec_to_json(tuned.samples.spec)),
        outputs=_outputs_of(tuned),
        selection=tuned.selection,
        files=pmap(files),
        artifact=artifact,
        weights_sha256=digests["weights_sha256"],
        model_sha256=digests[MODEL_FIELD],
        libraries=pmap(library_versions()),
    )


def _check_artifact(tuned: TunedModule, artifact: Path) -> None:
    """Refuse an artifact that is not the one ``tuned`` was built with."""
    expected = tuned.artifact_digest
    if expected is None:
        return
    now = digest(artifact)
    if now != expected:
        raise ValueError(
            f"refusing to save: {artifact} changed since {tuned.backend} was built "
            f"(sha256 {now.sha256[:12]}…, built {expected.sha256[:12]}…); "
            "another build overwrote it — tune again"
        )


def _saved_artifact(tuned: TunedModule, target: Path) -> Path | None:
    """The artifact to save (``None``: a recipe), after checking ``target`` and ``tuned``."""
    if target.exists() and not _is_save_folder(target):
        raise ValueError(
            f"{target} exists and is not an aitune_fp save folder: choose another path"
        )
    config = tuned.backend_config
    artifact = tuned.built.artifact
    if artifact is not None and artifact.is_file() and loadable(config):
        _check_artifact(tuned, artifact)
        return artifact
    if tuned.source_module is None:
        raise ValueError(f"{config.describe()} has no artifact and the source module is unknown")
    return None


def _copy_artifact(tuned: TunedModule, artifact: Path, staging: Path) -> dict[str, FileDigest]:
    """Copy the artifact's files into ``staging``; refuse one that changed while copied."""
    files: dict[str, FileDigest] = {}
    for file in artifact_files(artifact):
        shutil.copy2(file, staging / file.name)
        files[file.name] = digest(staging / file.name)
    if files[artifact.name] != tuned.artifact_digest and tuned.artifact_digest:
        raise ValueError(f"refusing to save: {artifact} changed while it was copied")
    return files


def _staged(tuned: TunedModule, artifact: Path | None, staging: Path) -> None:
    """Write every file of the save, the manifest last, into ``staging``."""
    files = {} if artifact is None else _copy_artifact(tuned, artifact, staging)
    probe = write_model_probe(staging, tuned.samples, tuned.source_module)
    if probe is not None:
        files[PROBE_FILE] = probe
    if tuned.record is not None:
        (staging / RECORD).write_text(dumps(tuned.record), encoding="utf-8")
        files[RECORD] = digest(staging / RECORD)
    mode = "recipe" if artifact is None else "artifact"
    manifest = _manifest(tuned, mode, files, None if artifact is None else artifact.name)
    (staging / MANIFEST).write_bytes(manifest_text(manifest))


def save(tuned: TunedModule, path: str | Path) -> Path:
    """Save ``tuned`` to the folder ``path`` (see the module rules); returns the folder."""
    target = Path(path)
    artifact = _saved_artifact(tuned, target)
    with staging_dir(target) as staging:
        _staged(tuned, artifact, staging)
        publish_dir(staging, target)
    return target


# --------------------------------------------------------------------------- load
def _check_module(
    doc: Manifest, folder: Path, module: torch.nn.Module, device: torch.device, shown: Path
) -> None:
    """Refuse a ``module`` that is not the one the save was tuned from."""
    probe = folder / PROBE_FILE if (folder / PROBE_FILE).is_file() else None
    saved = {"weights_sha256": doc.weights_sha256, MODEL_FIELD: doc.model_sha256}
    problem = mismatch(saved, probe, module, device)
    if problem is not None:
        raise LoadError(f"the module is not the one {shown} was tuned from: {problem}")


def _built(
    doc: Manifest,
    folder: Path,
    config: Backend,
    samples: Samples,
    module: torch.nn.Module | None,
    device: torch.device,
    work_dir: Path,
    shown: Path,
) -> Built:
    if module is not None:
        _check_module(doc, folder, module, device, shown)
    if doc.mode == "artifact" and doc.artifact is not None:
        outputs = read_output_spec(doc.outputs)
        artifact = folder / doc.artifact
        effect = load_built(config, artifact, samples.spec, outputs, device, work_dir)
    elif module is None:
        raise LoadError(
            f"{shown} holds a recipe for {config.describe()}: pass the module it was "
            "tuned from, load(path, module=...)"
        )
    else:
        effect = config.build(module, samples, device, work_dir)
    made = perform(effect)
    if isinstance(made, Failure):
        raise LoadError(f"{shown}: {made.failure().describe()}")
    return made.unwrap()


def _decoded(
    folder: Path, doc: Manifest, files: Path
) -> tuple[Backend, InputSpec, Selection, RunRecord | None]:
    """The manifest's backend, input spec and selection, and the record when kept; a
    malformed value is a ``LoadError`` naming the manifest."""
    try:
        backend = doc.backend
        config = backend_from_config(backend.kind, dict(backend.config), backend.source)
        spec = spec_from_json(dict(doc.input_spec), f"{MANIFEST}.input_spec")
        selection = doc.selection
        record = None
        if (files / RECORD).is_file():
            record = loads((files / RECORD).read_text(encoding="utf-8"))
    except LoadError:
        raise
    except ValueError as error:
        raise LoadError(f"{folder / MANIFEST}: {error}") from None
    return config, spec, selection, record


def load(
    path: str | Path,
    module: torch.nn.Module | None = None,
    *,
    device: str | None = None,
    expected_digest: str | None = None,
) -> TunedModule:
    """The tuned module saved at ``path``, ready to run (see the module rules).

    ``device`` defaults to the device it was tuned on; ``expected_digest``
    (``"sha256:<hex>"``) pins the manifest's digest. A folder that is not a save is refused
    before anything is copied or opened:

    >>> empty = Path(tempfile.mkdtemp())
    >>> load(empty)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    aitune_fp.shell.sealed.LoadError: ... is not an aitune_fp save: it has no manifest.json
    """
    folder = Path(path)
    doc = _read_manifest(folder, expected_digest)
    private = Path(tempfile.mkdtemp(prefix="aitune_fp-load-"))
    try:
        _sealed_copy(folder, doc, private / "files")
        config, spec, selection, record = _decoded(folder, doc, private / "files")
        dev = _device(folder, device or doc.device)
        samples = dataclasses.replace(zero_samples(spec), spec=spec)  # keeps the dynamic axes
        files, work = private / "files", private / "work"
        built = _built(doc, files, config, samples, module, dev, work, folder)
    except BaseException:
        shutil.rmtree(private, ignore_errors=True)
        raise
    return TunedModule(built, config, selection, samples, record, source=module, owned_dir=private)


def _device(folder: Path, name: str) -> torch.device:
    """The torch device named ``name``; an unknown one is a ``LoadError``."""
    try:
        return torch.device(name)
    except ValueError as error:
        raise LoadError(f"{folder / MANIFEST}: {error}") from None
