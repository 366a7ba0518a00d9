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
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any, Final

import torch
from returns.io import IOFailure

from aitune_fp.core.record.codec import decode_selection, encode_selection
from aitune_fp.core.record.reader import Reader
from aitune_fp.core.record.run_record import RunRecord, dumps, loads
from aitune_fp.core.records import Selection
from aitune_fp.effects.artifacts import (
    artifact_files,
    backend_from_config,
    dump_output_spec,
    load_built,
    loadable,
    output_spec,
    read_output_spec,
)
from aitune_fp.effects.atomic import publish_dir, staging_dir
from aitune_fp.effects.backends.base import Backend, Built
from aitune_fp.effects.backends.registry import source_of
from aitune_fp.effects.dynamic import dynamic_to_json, with_dynamic
from aitune_fp.effects.environment import library_versions
from aitune_fp.effects.inputs import InputSpec, Samples, TensorSpec, make_batch, normalise_samples
from aitune_fp.effects.integrity import FileDigest, digest
from aitune_fp.shell.io import unsafe_perform_io
from aitune_fp.shell.model_match import PROBE_FILE, mismatch, model_fields, write_model_probe
from aitune_fp.shell.sealed import (
    FORMAT,
    MANIFEST,
    VERSION,
    LoadError,
    _read_manifest,
    _sealed_copy,
    manifest_digest,
)
from aitune_fp.shell.tuned_module import TunedModule

__all__ = ["LoadError", "load", "manifest_digest", "save"]
RECORD: Final = "run.json"


# --------------------------------------------------------------------------- input spec
def spec_to_json(spec: InputSpec) -> dict[str, Any]:
    """An input spec as JSON: positional and keyword names, tensors, batch axis, dynamic axes."""
    return {
        "positional": list(spec.positional),
        "keywords": list(spec.keywords),
        "tensors": [
            {"name": t.name, "row_shape": list(t.row_shape), "dtype": t.dtype} for t in spec.tensors
        ],
        "batch_axis": spec.batch_axis,
        "dynamic": dynamic_to_json(spec),
    }


def spec_from_json(doc: Reader) -> InputSpec:
    """An input spec from :func:`spec_to_json`'s output."""
    tensors = tuple(
        TensorSpec(t.text("name"), tuple(int(d) for d in t.array("row_shape")), t.text("dtype"))
        for t in doc.children("tensors")
    )
    for t in tensors:
        if not isinstance(getattr(torch, t.dtype, None), torch.dtype):
            raise LoadError(f"{doc.path}: unknown dtype {t.dtype!r}")
    spec = InputSpec(
        doc.texts("positional"), doc.texts("keywords"), tensors, doc.integer("batch_axis")
    )
    try:  # manifests written before dynamic axes have none
        return with_dynamic(spec, doc.array("dynamic", []))
    except ValueError as error:
        raise LoadError(f"{doc.path}: {error}") from None


def zero_samples(spec: InputSpec) -> Samples:
    """One all-zeros sample of batch size 1 matching ``spec`` (for rebuilding a recipe)."""
    tensors = {
        t.name: torch.zeros(t.shape(1, spec.batch_axis), dtype=getattr(torch, t.dtype))
        for t in spec.tensors
    }
    args = [tensors[n] for n in spec.positional]
    if spec.keywords:
        if args:
            raise LoadError("a recipe with both positional and keyword inputs cannot be rebuilt")
        return normalise_samples({k: tensors[k] for k in spec.keywords}, batch_axis=spec.batch_axis)
    return normalise_samples([tuple(args)], batch_axis=spec.batch_axis)


# --------------------------------------------------------------------------- save
def _is_save_folder(path: Path) -> bool:
    return path.is_dir() and (not any(path.iterdir()) or (path / MANIFEST).is_file())


def _outputs_of(tuned: TunedModule) -> str:
    with torch.inference_mode():
        outputs = make_batch(tuned.samples, 1).call(tuned)
    return dump_output_spec(output_spec(outputs))


def _manifest(
    tuned: TunedModule, mode: str, files: dict[str, FileDigest], artifact: str | None
) -> dict[str, Any]:
    config: Backend = tuned.backend_config
    source = tuned.source_module
    return {
        "format": FORMAT,
        "version": VERSION,
        "mode": mode,
        "backend": {
            "kind": config.name,
            "source": source_of(config),
            "description": config.describe(),
            "key": config.key(),
            "config": json.loads(json.dumps(dataclasses.asdict(config), default=str)),  # type: ignore[call-overload]
        },
        "artifact": artifact,
        "device": str(tuned.built.info.get("device", "cpu")),
        "input_spec": spec_to_json(tuned.samples.spec),
        "outputs": _outputs_of(tuned),
        "selection": encode_selection(tuned.selection),
        **model_fields(source),
        "libraries": library_versions(),
        "files": {name: dataclasses.asdict(d) for name, d in sorted(files.items())},
    }


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


def save(tuned: TunedModule, path: str | Path) -> Path:
    """Save ``tuned`` to the folder ``path`` (see the module rules); returns the folder."""
    target = Path(path)
    if target.exists() and not _is_save_folder(target):
        raise ValueError(
            f"{target} exists and is not an aitune_fp save folder: choose another path"
        )
    config = tuned.backend_config
    artifact = tuned.built.artifact
    mode = (
        "artifact" if artifact is not None and artifact.is_file() and loadable(config) else "recipe"
    )
    if mode == "recipe" and tuned.source_module is None:
        raise ValueError(f"{config.describe()} has no artifact and the source module is unknown")
    if mode == "artifact" and artifact is not None:
        _check_artifact(tuned, artifact)
    with staging_dir(target) as staging:
        files: dict[str, FileDigest] = {}
        if mode == "artifact" and artifact is not None:
            for file in artifact_files(artifact):
                shutil.copy2(file, staging / file.name)
                files[file.name] = digest(staging / file.name)
            if files[artifact.name] != tuned.artifact_digest and tuned.artifact_digest:
                raise ValueError(f"refusing to save: {artifact} changed while it was copied")
        probe = write_model_probe(staging, tuned.samples, tuned.source_module)
        if probe is not None:
            files[PROBE_FILE] = probe
        if tuned.record is not None:
            (staging / RECORD).write_text(dumps(tuned.record), encoding="utf-8")
            files[RECORD] = digest(staging / RECORD)
        name = artifact.name if mode == "artifact" and artifact is not None else None
        manifest = _manifest(tuned, mode, files, name)
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True))
        publish_dir(staging, target)
    return target


# --------------------------------------------------------------------------- load
def _built(
    doc: Reader,
    folder: Path,
    config: Backend,
    samples: Samples,
    module: torch.nn.Module | None,
    device: torch.device,
    work_dir: Path,
    shown: Path,
) -> Built:
    outputs = read_output_spec(doc.text("outputs"))
    if module is not None:
        probe = folder / PROBE_FILE if (folder / PROBE_FILE).is_file() else None
        saved = {k: doc.text_or_none(k) for k in model_fields(None)}
        problem = mismatch(saved, probe, module, device)
        if problem is not None:
            raise LoadError(f"the module is not the one {shown} was tuned from: {problem}")
    if doc.text("mode") == "artifact":
        effect = load_built(
            config, folder / doc.text("artifact"), samples.spec, outputs, device, work_dir
        )
    else:
        if module is None:
            raise LoadError(
                f"{shown} holds a recipe for {config.describe()}: pass the module it was "
                "tuned from, load(path, module=...)"
            )
        effect = config.build(module, samples, device, work_dir)
    if isinstance(effect, IOFailure):
        raise LoadError(f"{shown}: {unsafe_perform_io(effect.failure()).describe()}")
    return unsafe_perform_io(effect.unwrap())


def load(
    path: str | Path,
    module: torch.nn.Module | None = None,
    *,
    device: str | None = None,
    expected_digest: str | None = None,
) -> TunedModule:
    """The tuned module saved at ``path``, ready to run (see the module rules).

    ``device`` defaults to the device it was tuned on; ``expected_digest``
    (``"sha256:<hex>"``) pins the manifest's digest.
    """
    folder = Path(path)
    doc = _read_manifest(folder, expected_digest)
    private = Path(tempfile.mkdtemp(prefix="aitune_fp-load-"))
    try:
        try:
            _sealed_copy(folder, doc, private / "files")
            backend = doc.child("backend")
            config = backend_from_config(
                backend.text("kind"), backend.obj("config"), backend.text_or_none("source")
            )
            spec = spec_from_json(doc.child("input_spec"))
            selection: Selection = decode_selection(doc.child("selection"))
            dev = torch.device(device or doc.text("device"))
            record: RunRecord | None = None
            if (private / "files" / RECORD).is_file():
                record = loads((private / "files" / RECORD).read_text(encoding="utf-8"))
        except LoadError:
            raise
        except ValueError as error:
            raise LoadError(f"{folder / MANIFEST}: {error}") from None
        samples = dataclasses.replace(zero_samples(spec), spec=spec)  # keeps the dynamic axes
        built = _built(
            doc, private / "files", config, samples, module, dev, private / "work", folder
        )
    except BaseException:
        shutil.rmtree(private, ignore_errors=True)
        raise
    return TunedModule(built, config, selection, samples, record, source=module, owned_dir=private)
