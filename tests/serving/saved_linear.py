"""A saved tuned model for the serving tests: a real ONNX graph ``x @ W + B`` (4 → 2) run by
ONNX Runtime, selected at batch size 8 (2 ms a call) in a tune whose envelope reaches 16."""

from __future__ import annotations

from pathlib import Path

import torch

import aitune_fp
from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.core.records import BackendProfilingResult, Selection
from aitune_fp.effects.backends.base import Built
from aitune_fp.effects.backends.ort import OnnxRuntime
from aitune_fp.effects.inputs import normalise_samples
from aitune_fp.shell.tuned_module import TunedModule

WEIGHT = [[1.0, -2.0], [0.5, 0.25], [3.0, 1.0], [-1.0, 0.0]]
BIAS = [0.1, -0.2]
BATCH_SIZE = 8
LATENCY_MS = 2.0
ENVELOPE_MAX = 16


def linear(x: torch.Tensor) -> torch.Tensor:
    """What the saved graph computes."""
    return x @ torch.tensor(WEIGHT) + torch.tensor(BIAS)


def _write_onnx(path: Path) -> None:
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


def selection() -> Selection:
    """The saved selection: onnxruntime at batch size 8, 2 ms a call."""
    throughput = BATCH_SIZE / LATENCY_MS * 1000.0
    result = BackendProfilingResult(throughput, BATCH_SIZE, LATENCY_MS, throughput)
    return Selection("onnxruntime", result, False)


def save_linear(tmp: Path) -> Path:
    """Save the linear ONNX winner (with its run record) under ``tmp/saved``."""
    artifact = tmp / "build" / "model.onnx"
    artifact.parent.mkdir(parents=True)
    _write_onnx(artifact)
    samples = normalise_samples([torch.randn(2, 4)])
    built = Built(linear, artifact=artifact, info={"device": "cpu"})
    strategy = {"strategy": "max_throughput", "parameters": {}}
    record = RunRecord("linear", "cpu", strategy, None, (), selection(), None, {}, {}, ENVELOPE_MAX)
    tuned = TunedModule(built, OnnxRuntime(), selection(), samples, record)
    return aitune_fp.save(tuned, tmp / "saved")
