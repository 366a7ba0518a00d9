"""Trusted loading: a saved module or cache entry is refused unless every file it uses is
listed, inside its folder and intact; a pinned manifest digest fixes all of them."""

from __future__ import annotations

import glob
import hashlib
import json
import os
import tempfile
from pathlib import Path

import pytest
import torch

import aitune_fp
from aitune_fp.core.records import BackendProfilingResult, Selection
from aitune_fp.effects.backends.base import Built
from aitune_fp.effects.backends.ort import OnnxRuntime
from aitune_fp.effects.inputs.samples import normalise_samples
from aitune_fp.shell.persist import LoadError, manifest_digest
from aitune_fp.shell.tuned_module import TunedModule

WEIGHT = [[1.0, -2.0], [0.5, 0.25], [3.0, 1.0], [-1.0, 0.0]]


def _onnx(path: Path, external: str | None = None, weight: list[list[float]] = WEIGHT) -> None:
    """A real ONNX graph ``output_0 = input_0 @ W``, ``W`` in ``external`` when given."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.array(weight, dtype=np.float32), "W")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["input_0", "W"], ["output_0"])],
        "linear",
        [helper.make_tensor_value_info("input_0", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("output_0", TensorProto.FLOAT, ["batch", 2])],
        initializer=[w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    if external is None:
        path.write_bytes(model.SerializeToString())
        return
    onnx.save_model(
        model, str(path), save_as_external_data=True, location=external, size_threshold=0
    )


def _save(tmp_path: Path, external: str | None = None) -> Path:
    artifact = tmp_path / "build" / "model.onnx"
    artifact.parent.mkdir()
    _onnx(artifact, external)
    samples = normalise_samples([torch.randn(2, 4)])
    selection = Selection("onnxruntime", BackendProfilingResult(100.0, 2, 20.0, 100.0), False)
    built = Built(lambda x: x @ torch.tensor(WEIGHT), artifact=artifact, info={"device": "cpu"})
    return aitune_fp.save(TunedModule(built, OnnxRuntime(), selection, samples), tmp_path / "saved")


def _edit_manifest(folder: Path, **changes: object) -> None:
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest.update(changes)
    path.write_text(json.dumps(manifest))


def test_an_absolute_artifact_path_is_refused(tmp_path: Path) -> None:
    """A manifest whose artifact is an absolute path is refused, naming it."""
    folder = _save(tmp_path)
    _edit_manifest(folder, artifact=str(tmp_path / "build" / "model.onnx"))
    with pytest.raises(LoadError, match=r"is not a file listed in manifest\.json"):
        aitune_fp.load(folder)


def test_a_dotdot_artifact_path_is_refused(tmp_path: Path) -> None:
    """A manifest whose artifact is ``../build/model.onnx`` is refused."""
    folder = _save(tmp_path)
    _edit_manifest(folder, artifact="../build/model.onnx")
    with pytest.raises(LoadError, match=r"'\.\./build/model\.onnx' is not a file listed"):
        aitune_fp.load(folder)


def test_a_symlink_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    """A listed file that is a symbolic link (here to an identical file outside) is refused."""
    folder = _save(tmp_path)
    outside = tmp_path / "outside.onnx"
    outside.write_bytes((folder / "model.onnx").read_bytes())
    (folder / "model.onnx").unlink()
    os.symlink(outside, folder / "model.onnx")
    with pytest.raises(LoadError, match=r"model\.onnx is a symbolic link"):
        aitune_fp.load(folder)


def test_external_data_is_listed_and_a_swapped_file_is_refused(tmp_path: Path) -> None:
    """A model's external-data file is saved and listed; replacing its bytes is refused."""
    folder = _save(tmp_path, external="weights.bin")
    listed = json.loads((folder / "manifest.json").read_text())["files"]
    assert "weights.bin" in listed
    tuned = aitune_fp.load(folder)
    x = torch.randn(3, 4)
    assert torch.allclose(tuned(x), x @ torch.tensor(WEIGHT))
    tuned.close()
    other = tmp_path / "other"
    other.mkdir()
    _onnx(other / "model.onnx", "weights.bin", weight=[[9.0, 9.0]] * 4)
    (folder / "weights.bin").write_bytes((other / "weights.bin").read_bytes())
    with pytest.raises(LoadError, match=r"weights\.bin does not match its recorded sha256"):
        aitune_fp.load(folder)


def test_an_unlisted_external_data_file_is_refused(tmp_path: Path) -> None:
    """External data dropped from the manifest's files (so it could be swapped) is refused."""
    folder = _save(tmp_path, external="weights.bin")
    manifest = json.loads((folder / "manifest.json").read_text())
    del manifest["files"]["weights.bin"]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(LoadError, match=r"weights\.bin is in the folder but not listed"):
        aitune_fp.load(folder)


def test_external_data_pointing_outside_the_folder_is_refused(tmp_path: Path) -> None:
    """A model whose external data lives at ``../weights.bin`` is refused before ORT opens it,
    even with its own hash updated in the manifest."""
    folder = _save(tmp_path)
    _onnx(tmp_path / "model.onnx", "weights.bin")
    (tmp_path / "weights.bin").replace(tmp_path / "w.bin")
    import onnx

    model = onnx.load(str(tmp_path / "model.onnx"), load_external_data=False)
    for entry in model.graph.initializer[0].external_data:
        if entry.key == "location":
            entry.value = "../w.bin"
    data = model.SerializeToString()
    (folder / "model.onnx").write_bytes(data)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["files"]["model.onnx"] = {
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(
        LoadError, match=r"points to external data '\.\./w\.bin' outside its folder"
    ):
        aitune_fp.load(folder)


def test_a_pinned_digest_must_match_the_manifest(tmp_path: Path) -> None:
    """load with the manifest's own digest works; any other digest is refused, naming both."""
    folder = _save(tmp_path)
    good = manifest_digest(folder)
    aitune_fp.load(folder, expected_digest=good).close()
    bad = "sha256:" + "0" * 64
    with pytest.raises(LoadError, match=f"not the expected {bad}"):
        aitune_fp.load(folder, expected_digest=bad)
    with pytest.raises(LoadError, match="must look like sha256:<hex>"):
        aitune_fp.load(folder, expected_digest="md5:abc")


def test_load_cleans_up_its_private_copy(tmp_path: Path) -> None:
    """A loaded module's private folder goes away on close, and a refused load leaves none."""
    folder = _save(tmp_path)
    pattern = os.path.join(tempfile.gettempdir(), "aitune_fp-load-*")
    before = set(glob.glob(pattern))
    tuned = aitune_fp.load(folder)
    assert len(set(glob.glob(pattern)) - before) == 1
    tuned.close()
    assert set(glob.glob(pattern)) - before == set()
    (folder / "model.onnx").write_bytes(b"broken")
    with pytest.raises(LoadError):
        aitune_fp.load(folder)
    assert set(glob.glob(pattern)) - before == set()
