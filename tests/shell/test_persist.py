"""save/load: a saved winner loads in a fresh process and refuses tampered files."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import aitune_fp
from aitune_fp.core.records import BackendProfilingResult, Selection
from aitune_fp.effects.backends.base import Built
from aitune_fp.effects.backends.eager import TorchEager
from aitune_fp.effects.backends.ort import OnnxRuntime
from aitune_fp.effects.inputs.samples import normalise_samples
from aitune_fp.shell.persist import LoadError
from aitune_fp.shell.tuned_module import TunedModule

WEIGHT = [[1.0, -2.0], [0.5, 0.25], [3.0, 1.0], [-1.0, 0.0]]
BIAS = [0.1, -0.2]
MODEL_FILE = """
import torch

def build():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
"""


def _selection(backend: str) -> Selection:
    return Selection(backend, BackendProfilingResult(100.0, 2, 20.0, 100.0), False)


def _write_onnx(path: Path) -> None:
    """A real ONNX graph ``output_0 = input_0 @ W + B`` with a dynamic batch axis."""
    from onnx import TensorProto, helper

    w = helper.make_tensor("W", TensorProto.FLOAT, [4, 2], [v for row in WEIGHT for v in row])
    b = helper.make_tensor("B", TensorProto.FLOAT, [2], BIAS)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["input_0", "W"], ["mm"]),
            helper.make_node("Add", ["mm", "B"], ["output_0"]),
        ],
        "linear",
        [helper.make_tensor_value_info("input_0", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("output_0", TensorProto.FLOAT, ["batch", 2])],
        initializer=[w, b],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())


def _linear(x: torch.Tensor) -> torch.Tensor:
    return x @ torch.tensor(WEIGHT) + torch.tensor(BIAS)


@pytest.fixture
def saved_onnx(tmp_path: Path) -> Path:
    """An ONNX Runtime winner saved to ``tmp_path/saved``."""
    artifact = tmp_path / "build" / "model.onnx"
    artifact.parent.mkdir()
    _write_onnx(artifact)
    samples = normalise_samples([torch.randn(2, 4)])
    built = Built(_linear, artifact=artifact, info={"device": "cpu"})
    tuned = TunedModule(built, OnnxRuntime(), _selection("onnxruntime"), samples)
    return aitune_fp.save(tuned, tmp_path / "saved")


def _load_in_fresh_process(folder: Path, x: list[list[float]], module_file: Path | None) -> str:
    script = textwrap.dedent(
        f"""
        import json, sys, torch, aitune_fp
        module = None
        if {str(module_file) if module_file else ""!r}:
            sys.path.insert(0, {str(module_file.parent) if module_file else ""!r})
            from model import build
            module = build()
        tuned = aitune_fp.load({str(folder)!r}, module=module)
        print(json.dumps(tuned(torch.tensor({x!r})).tolist()))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_saved_onnx_artifact_reproduces_outputs_in_a_fresh_process(saved_onnx: Path) -> None:
    """load in a new interpreter runs the saved ONNX model and gives the tuned outputs."""
    manifest = json.loads((saved_onnx / "manifest.json").read_text())
    assert manifest["mode"] == "artifact" and manifest["artifact"] == "model.onnx"
    x = [[1.0, 2.0, 3.0, 4.0], [0.0, -1.0, 0.5, 2.0], [1.0, 1.0, 1.0, 1.0]]
    got = torch.tensor(json.loads(_load_in_fresh_process(saved_onnx, x, None)))
    assert torch.allclose(got, _linear(torch.tensor(x)), atol=1e-6)


def test_loaded_module_keeps_the_selection(saved_onnx: Path) -> None:
    """The loaded TunedModule names the saved backend and selection and runs a verified
    private copy of the saved artifact."""
    tuned = aitune_fp.load(saved_onnx)
    assert tuned.backend == "onnxruntime" and tuned.selection == _selection("onnxruntime")
    assert tuned.built.artifact is not None and tuned.built.artifact.name == "model.onnx"
    assert tuned.built.artifact.read_bytes() == (saved_onnx / "model.onnx").read_bytes()
    assert saved_onnx not in tuned.built.artifact.parents


def test_a_flipped_byte_in_the_artifact_is_refused(saved_onnx: Path) -> None:
    """One changed byte anywhere in the artifact makes load fail naming the file."""
    artifact = saved_onnx / "model.onnx"
    data = bytearray(artifact.read_bytes())
    data[len(data) // 2] ^= 0x01
    artifact.write_bytes(bytes(data))
    with pytest.raises(LoadError, match=r"model\.onnx does not match its recorded sha256"):
        aitune_fp.load(saved_onnx)


def test_a_truncated_or_missing_artifact_is_refused(saved_onnx: Path) -> None:
    """A truncated file says so with its size; a missing one is named."""
    artifact = saved_onnx / "model.onnx"
    artifact.write_bytes(artifact.read_bytes()[:10])
    with pytest.raises(LoadError, match=r"model\.onnx is truncated: 10 bytes"):
        aitune_fp.load(saved_onnx)
    artifact.unlink()
    with pytest.raises(LoadError, match=r"model\.onnx is missing"):
        aitune_fp.load(saved_onnx)


def test_a_manifest_cannot_point_outside_its_folder(saved_onnx: Path) -> None:
    """A manifest naming ../something is refused before anything is read."""
    path = saved_onnx / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["files"]["../model.onnx"] = manifest["files"].pop("model.onnx")
    path.write_text(json.dumps(manifest))
    with pytest.raises(LoadError, match="is not a plain file name"):
        aitune_fp.load(saved_onnx)


def test_not_a_save_folder_is_refused(tmp_path: Path) -> None:
    """A folder without a manifest, or with a foreign one, is refused clearly."""
    with pytest.raises(LoadError, match=r"has no manifest\.json"):
        aitune_fp.load(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps({"format": "other", "version": 1}))
    with pytest.raises(LoadError, match="is not an aitune_fp save of version 1"):
        aitune_fp.load(tmp_path)


def test_save_never_overwrites_a_foreign_folder(tmp_path: Path) -> None:
    """save refuses a non-empty folder that is not an earlier save."""
    (tmp_path / "notes.txt").write_text("mine")
    module = torch.nn.Linear(4, 2)
    samples = normalise_samples([torch.randn(1, 4)])
    tuned = TunedModule(Built(module), TorchEager(), _selection("eager"), samples, source=module)
    with pytest.raises(ValueError, match="is not an aitune_fp save folder"):
        aitune_fp.save(tuned, tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"


@pytest.fixture
def saved_recipe(tmp_path: Path) -> tuple[Path, Path]:
    """An eager winner (no artifact) saved as a recipe, and the file building its module."""
    model_file = tmp_path / "model.py"
    model_file.write_text(MODEL_FILE)
    namespace: dict[str, object] = {}
    exec(compile(MODEL_FILE, str(model_file), "exec"), namespace)
    module = namespace["build"]()  # type: ignore[operator]
    samples = normalise_samples([torch.randn(2, 4)])
    tuned = TunedModule(Built(module), TorchEager(), _selection("eager"), samples, source=module)
    return aitune_fp.save(tuned, tmp_path / "saved"), model_file


def test_recipe_rebuilds_from_the_module_in_a_fresh_process(
    saved_recipe: tuple[Path, Path],
) -> None:
    """An eager winner is saved as a recipe and rebuilt from the same module elsewhere."""
    folder, model_file = saved_recipe
    assert json.loads((folder / "manifest.json").read_text())["mode"] == "recipe"
    x = [[0.5, -0.5, 1.0, 2.0]]
    got = torch.tensor(json.loads(_load_in_fresh_process(folder, x, model_file)))
    namespace: dict[str, object] = {}
    exec(compile(MODEL_FILE, "model.py", "exec"), namespace)
    expected = namespace["build"]()(torch.tensor(x))  # type: ignore[operator]
    assert torch.allclose(got, expected, atol=1e-6)


def test_recipe_needs_the_same_module(saved_recipe: tuple[Path, Path]) -> None:
    """A recipe without a module, or with other weights, is refused."""
    folder, _ = saved_recipe
    with pytest.raises(LoadError, match="pass the module it was tuned from"):
        aitune_fp.load(folder)
    other = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    with pytest.raises(LoadError, match="weights differ"):
        aitune_fp.load(folder, module=other)


@pytest.mark.heavy
def test_tuned_onnxruntime_winner_round_trips_through_save_and_load(tmp_path: Path) -> None:
    """Tune for real, save the winner, load it in a fresh process: same outputs."""
    from returns.unsafe import unsafe_perform_io

    from aitune_fp.shell.tune_module import TuneOptions, run_tuning

    model_file = tmp_path / "model.py"
    model_file.write_text(MODEL_FILE)
    namespace: dict[str, object] = {}
    exec(compile(MODEL_FILE, str(model_file), "exec"), namespace)
    module = namespace["build"]()  # type: ignore[operator]
    run = unsafe_perform_io(
        run_tuning(
            module,
            [torch.randn(2, 4) for _ in range(3)],
            aitune_fp.min_latency,
            ["onnxruntime"],
            TuneOptions(cache_dir=tmp_path / "cache", max_batch_size=2),
        ).unwrap()
    )
    assert run.tuned is not None
    folder = aitune_fp.save(run.tuned, tmp_path / "saved")
    x = [[0.1, 0.2, 0.3, 0.4], [1.0, 0.0, -1.0, 0.5]]
    got = torch.tensor(json.loads(_load_in_fresh_process(folder, x, model_file)))
    assert torch.allclose(got, run.tuned(torch.tensor(x)), atol=1e-5)
    assert (folder / "run.json").is_file()
