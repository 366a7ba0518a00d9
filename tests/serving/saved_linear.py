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
from aitune_fp.effects.inputs.samples import normalise_samples
from aitune_fp.shell.tuned_module import TunedModule
from tests.shell.test_persist import BIAS, WEIGHT, _write_onnx

BATCH_SIZE = 8
LATENCY_MS = 2.0
ENVELOPE_MAX = 16


def linear(x: torch.Tensor) -> torch.Tensor:
    """What the saved graph computes."""
    return x @ torch.tensor(WEIGHT) + torch.tensor(BIAS)


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
