"""The saved module's manifest by msgspec: round trip, strict one-line errors, old fields."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyrsistent import pmap

from aitune_fp.core.records import BackendProfilingResult, Selection
from aitune_fp.effects.cache.integrity import FileDigest
from aitune_fp.shell.manifest import Manifest, SavedBackend, manifest_text
from aitune_fp.shell.sealed import LoadError, _parsed


def _manifest() -> Manifest:
    selection = Selection("onnxruntime", BackendProfilingResult(2.0, 1, 0.5, 2.0), False)
    spec = {"positional": ["x"], "keywords": [], "tensors": [], "batch_axis": 0, "dynamic": []}
    return Manifest(
        mode="artifact",
        backend=SavedBackend("onnxruntime", pmap({"threads": 2}), None, "onnxruntime()", "k"),
        device="cpu",
        input_spec=pmap(spec),
        outputs="tensor",
        selection=selection,
        files=pmap({"model.onnx": FileDigest(10, "ab" * 32)}),
        artifact="model.onnx",
        libraries=pmap({"torch": "2.8"}),
    )


def test_a_manifest_reads_back_equal(tmp_path: Path) -> None:
    """The manifest's text, read back, is the same value."""
    manifest = _manifest()
    assert _parsed(tmp_path, manifest_text(manifest)) == manifest


def test_a_wrong_type_is_a_load_error_naming_the_file_and_the_path(tmp_path: Path) -> None:
    """A file size written as text is refused (no coercion), naming manifest.json's path."""
    doc = json.loads(manifest_text(_manifest()))
    doc["files"]["model.onnx"]["size"] = "10"
    with pytest.raises(LoadError) as error:
        _parsed(tmp_path, json.dumps(doc).encode())
    assert str(error.value) == (
        f"{tmp_path / 'manifest.json'}: manifest.json.files[...].size: "
        "expected an integer, got a string"
    )


def test_a_manifest_without_the_later_fields_reads_with_their_defaults(tmp_path: Path) -> None:
    """A manifest written before the digests, the libraries and the backend's description
    existed reads with those as unknown."""
    doc = json.loads(manifest_text(_manifest()))
    for key in ("weights_sha256", "model_sha256", "libraries"):
        del doc[key]
    del doc["backend"]["description"]
    read = _parsed(tmp_path, json.dumps(doc).encode())
    assert read.weights_sha256 is None and dict(read.libraries) == {}
    assert read.backend.description == "" and read.files == _manifest().files


def test_another_format_or_version_is_refused_by_name(tmp_path: Path) -> None:
    """A document of another format or version is refused before its fields are read."""
    doc = {**json.loads(manifest_text(_manifest())), "version": 2}
    with pytest.raises(LoadError, match=r"not an aitune_fp save of version 1 \(format"):
        _parsed(tmp_path, json.dumps(doc).encode())
