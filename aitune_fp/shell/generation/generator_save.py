"""A ``TunedGenerator`` saved as a sealed folder, like ``aitune_fp.save`` saves a module.

A save is a folder: ``generation.json`` (the :class:`~aitune_fp.core.generation.saved_record.
GeneratorRecord`: the pick, why, every candidate's result, the tune's wall, a fresh
re-measure's figures) and ``manifest.json`` (format ``aitune_fp.saved_generator``, version,
the pick, the model's weights digest, library versions, and the size and sha256
of every other file), both written through the strict codec. The pick is a recipe: rebuilt
from its candidate name over the model passed to ``load``, never pickled.

Rules:
- ``save`` writes into a staging folder, the manifest last, and renames it into place; it
  only replaces a folder that holds an earlier save (or is empty);
- ``load`` reads the manifest (pinned by ``expected_digest="sha256:<hex>"`` when given),
  refuses another format or version by name, checks the folder is sealed (exactly the
  manifest and the files it lists, each with its size and sha256), reads the record from a
  verified private copy, and refuses a module whose weights differ from the saved digest
  (only the weights: ``generate`` itself changes a model's attributes, so the code-and-
  attributes digest of a module save would refuse the very model a tune ran); every
  refusal is a :class:`~aitune_fp.shell.sealed.LoadError` naming the file and why, before
  any stepper is built.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import msgspec
import torch
from pyrsistent import PMap, pmap

from aitune_fp.core.generation.saved_record import GeneratorRecord
from aitune_fp.core.record.json_codec import from_json, to_json
from aitune_fp.effects.atomic import publish_dir, staging_dir
from aitune_fp.effects.cache.integrity import FileDigest, check_sealed, digest, private_copy
from aitune_fp.effects.machine.environment import library_versions
from aitune_fp.shell.manifest import MANIFEST
from aitune_fp.shell.model_match import MODEL_FIELD, mismatch, model_fields
from aitune_fp.shell.sealed import LoadError, _check_pinned

FORMAT: Final = "aitune_fp.saved_generator"
VERSION: Final = 1
RECORD: Final = "generation.json"


@dataclass(frozen=True, slots=True)
class GeneratorManifest:
    """Every field of a generator save's ``manifest.json`` (see the module rules)."""

    pick: str
    files: PMap[str, FileDigest]
    weights_sha256: str | None = None
    libraries: PMap[str, object] = field(default_factory=pmap)
    format: str = FORMAT
    version: int = VERSION


def _text(value: Any) -> bytes:
    return msgspec.json.format(msgspec.json.encode(to_json(value), order="sorted"), indent=2)


def is_generator_save(path: str | Path) -> bool:
    """Whether ``path`` is a folder written by :func:`save_generator` (by its manifest)."""
    try:
        data = msgspec.json.decode((Path(path) / MANIFEST).read_bytes())
    except (OSError, msgspec.DecodeError):
        return False
    return isinstance(data, dict) and data.get("format") == FORMAT


def save_generator(record: GeneratorRecord, model: Any, path: str | Path) -> Path:
    """Save ``record`` of a generator over ``model`` to the folder ``path``; returns it."""
    target = Path(path)
    if target.exists() and not (target.is_dir() and _replaceable(target)):
        raise ValueError(f"{target} exists and is not an aitune_fp save folder: choose another")
    with staging_dir(target) as staging:
        (staging / RECORD).write_bytes(_text(record))
        weights = model_fields(model)["weights_sha256"]
        files = pmap({RECORD: digest(staging / RECORD)})
        manifest = GeneratorManifest(record.pick, files, weights, pmap(library_versions()))
        (staging / MANIFEST).write_bytes(_text(manifest))
        publish_dir(staging, target)
    return target


def _replaceable(folder: Path) -> bool:
    return not any(folder.iterdir()) or (folder / MANIFEST).is_file()


def _manifest(folder: Path, expected_digest: str | None) -> GeneratorManifest:
    try:
        raw = (folder / MANIFEST).read_bytes()
    except OSError:
        raise LoadError(f"{folder} is not a generator save: it has no {MANIFEST}") from None
    if expected_digest is not None:
        _check_pinned(folder, raw, expected_digest)
    try:
        data = msgspec.json.decode(raw)
        found = data if isinstance(data, dict) else {}
        if (found.get("format"), found.get("version")) != (FORMAT, VERSION):
            why = f"format {found.get('format')!r}, version {found.get('version')!r}"
            raise ValueError(f"not a generator save of version {VERSION} ({why})")
        return from_json(data, GeneratorManifest, MANIFEST)
    except (ValueError, msgspec.DecodeError) as error:
        raise LoadError(f"{folder / MANIFEST}: {error}") from None


def _record(folder: Path, doc: GeneratorManifest) -> GeneratorRecord:
    """The record, read from a verified private copy of the sealed folder."""
    private = Path(tempfile.mkdtemp(prefix="aitune_fp-load-"))
    try:
        files = dict(doc.files)
        problem = check_sealed(folder, files, MANIFEST) or private_copy(folder, files, private)
        if problem is None and RECORD not in files:
            problem = f"{RECORD} is not listed in {MANIFEST}"
        if problem is not None:
            raise LoadError(f"refusing to load {folder}: {problem}")
        try:
            data = msgspec.json.decode((private / RECORD).read_bytes())
            return from_json(data, GeneratorRecord, RECORD)
        except (ValueError, msgspec.DecodeError) as error:
            raise LoadError(f"{folder / RECORD}: {error}") from None
    finally:
        shutil.rmtree(private, ignore_errors=True)


def load_record(
    path: str | Path, module: Any, expected_digest: str | None = None
) -> GeneratorRecord:
    """The record of the generator save at ``path``, checked against ``module`` (see the
    module rules)."""
    folder = Path(path)
    doc = _manifest(folder, expected_digest)
    record = _record(folder, doc)
    saved = {"weights_sha256": doc.weights_sha256, MODEL_FIELD: None}
    device = next((p.device for p in module.parameters()), torch.device("cpu"))
    problem = mismatch(saved, None, module, device)
    if problem is not None:
        raise LoadError(f"the module is not the one {folder} was tuned from: {problem}")
    return record
