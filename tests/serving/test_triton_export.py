"""aitune-fp export DIR --triton REPO: a Triton repository whose config parses with
Triton's schema and carries the tuned batch sizes; what Triton cannot run is one line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

import aitune_fp
from aitune_fp.cli.main import main
from aitune_fp.core.records import BackendProfilingResult, Selection
from aitune_fp.effects.backends.base import Built
from aitune_fp.effects.backends.eager import TorchEager
from aitune_fp.effects.backends.ort import OnnxRuntime
from aitune_fp.effects.inputs.samples import normalise_samples
from aitune_fp.shell.serving.triton_export import TRITON_HINT, export_triton, parse_config
from aitune_fp.shell.tuned_module import TunedModule
from tests.serving.saved_linear import BATCH_SIZE, save_linear

pytest.importorskip("tritonclient.grpc.model_config_pb2")


def test_the_exported_repository_parses_and_carries_the_tune(tmp_path: Path) -> None:
    """The CLI writes REPO/<name>/config.pbtxt and 1/model.onnx; the config parses with
    Triton's ModelConfig and holds the platform, dims, tuned batch sizes and queue delay."""
    saved = save_linear(tmp_path)
    repo = tmp_path / "repo"
    assert main(["export", str(saved), "--triton", str(repo), "--name", "linear"]) == 0
    model = repo / "linear"
    config = parse_config((model / "config.pbtxt").read_text())
    assert config.name == "linear" and config.platform == "onnxruntime_onnx"
    assert config.max_batch_size == BATCH_SIZE
    assert list(config.dynamic_batching.preferred_batch_size) == [BATCH_SIZE]
    assert config.dynamic_batching.max_queue_delay_microseconds == 1000  # half of 2 ms
    assert [(t.name, list(t.dims)) for t in config.input] == [("input_0", [4])]
    assert [(t.name, list(t.dims)) for t in config.output] == [("output_0", [2])]
    from tritonclient.grpc import model_config_pb2 as pb

    assert config.input[0].data_type == pb.TYPE_FP32
    assert config.instance_group[0].kind == config.instance_group[0].KIND_CPU
    assert (model / "1" / "model.onnx").read_bytes() == (saved / "model.onnx").read_bytes()
    assert main(["export", str(saved), "--triton", str(repo), "--name", "linear"]) == 1


def test_overrides_reach_the_config(tmp_path: Path) -> None:
    """--max-batch-size and --batch-wait-ms replace the derived batching in the config."""
    saved = save_linear(tmp_path)
    target = export_triton(saved, tmp_path / "repo", max_batch_size=16, batch_wait_ms=3.0)
    config = parse_config((target / "config.pbtxt").read_text())
    assert config.max_batch_size == 16
    assert list(config.dynamic_batching.preferred_batch_size) == [BATCH_SIZE, 16]
    assert config.dynamic_batching.max_queue_delay_microseconds == 3000


def test_a_recipe_is_not_exportable_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An eager winner (a recipe, no artifact) exits 1 with 'not exportable to Triton: why'."""
    module = torch.nn.Linear(4, 2)
    samples = normalise_samples([torch.randn(2, 4)])
    selection = Selection("eager", BackendProfilingResult(10.0, 2, 1.0, 10.0), False)
    tuned = TunedModule(Built(module), TorchEager(), selection, samples, source=module)
    saved = aitune_fp.save(tuned, tmp_path / "saved")
    assert main(["export", str(saved), "--triton", str(tmp_path / "repo")]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "not exportable to Triton: eager was saved as a recipe" in lines[0]
    assert not (tmp_path / "repo").exists()


def test_without_tritonclient_the_export_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With tritonclient missing the export stops with one line naming aitune_fp[triton]."""
    saved = save_linear(tmp_path)
    monkeypatch.setitem(sys.modules, "tritonclient", None)
    monkeypatch.setitem(sys.modules, "tritonclient.grpc", None)
    assert main(["export", str(saved), "--triton", str(tmp_path / "repo")]) == 1
    assert capsys.readouterr().err.strip() == f"aitune-fp: error: {TRITON_HINT}"


def _dynamic_save(tmp: Path) -> Path:
    """A saved ONNX model over ``input_0`` (batch, seq 3..5, 4): outputs the sum over seq
    (batch, 4) and the input itself (batch, seq, 4)."""
    from onnx import TensorProto, helper

    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [1])
    graph = helper.make_graph(
        [
            helper.make_node("ReduceSum", ["input_0", "axes"], ["output_0"], keepdims=0),
            helper.make_node("Identity", ["input_0"], ["output_1"]),
        ],
        "dynamic",
        [helper.make_tensor_value_info("input_0", TensorProto.FLOAT, ["batch", "seq", 4])],
        [
            helper.make_tensor_value_info("output_0", TensorProto.FLOAT, ["batch", 4]),
            helper.make_tensor_value_info("output_1", TensorProto.FLOAT, ["batch", "seq", 4]),
        ],
        initializer=[axes],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    artifact = tmp / "build" / "model.onnx"
    artifact.parent.mkdir(parents=True)
    artifact.write_bytes(model.SerializeToString())
    samples = normalise_samples([torch.randn(2, 3, 4), torch.randn(2, 5, 4)])
    built = Built(lambda x: (x.sum(1), x), artifact=artifact, info={"device": "cpu"})
    selection = Selection("onnxruntime", BackendProfilingResult(100.0, 4, 4.0, 100.0), False)
    tuned = TunedModule(built, OnnxRuntime(), selection, samples)
    return aitune_fp.save(tuned, tmp / "saved")


def test_dynamic_axes_are_minus_one_in_the_exported_config(tmp_path: Path) -> None:
    """A dynamic sequence axis is -1 in the input's and the output's dims; fixed axes keep
    their size; the batch axis is left out."""
    target = export_triton(_dynamic_save(tmp_path), tmp_path / "repo")
    config = parse_config((target / "config.pbtxt").read_text())
    assert [list(t.dims) for t in config.input] == [[-1, 4]]
    assert [(t.name, list(t.dims)) for t in config.output] == [
        ("output_0", [4]),
        ("output_1", [-1, 4]),
    ]
    assert config.max_batch_size == 4
