"""ONNX Runtime's GPU path on CPU: a cache hit keeps its precision (issue 26 §1), the
TensorRT provider's profile covers the declared dynamic ranges (§5).

Sources checked: microsoft/onnxruntime ``tensorrt_execution_provider_info.cc``
(``trt_profile_min_shapes`` / ``trt_profile_opt_shapes`` / ``trt_profile_max_shapes``, each
``name:d0xd1,name2:…``; ``trt_fp16_enable``; ``user_compute_stream``) and
``InferenceSession.get_providers()``, which the fake session below mirrors (1.2x–1.3x all
have these names). The fake session and stream stand in for the CUDA objects only.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
import torch.utils._pytree as pytree

import aitune_fp.effects.backends.ort as ort_module
from aitune_fp.effects.backends._build_guard import BuildLog
from aitune_fp.effects.backends.base import LoadRequest
from aitune_fp.effects.backends.ort import OnnxRuntime
from aitune_fp.effects.inputs.samples import normalise_samples

CUDA = torch.device("cuda", 0)


class FakeSession:
    """Mirrors what aitune_fp reads from an ``onnxruntime.InferenceSession``."""

    def __init__(self, providers: list[str]) -> None:
        self.providers = providers

    def get_providers(self) -> list[str]:
        """The providers the session runs on."""
        return self.providers

    def get_inputs(self) -> list[Any]:
        """One input named like aitune_fp's export names it."""
        return [SimpleNamespace(name="input_0")]


@pytest.mark.parametrize(
    ("config", "providers", "precision"),
    [
        (
            OnnxRuntime(provider="tensorrt", fp16=True),
            ["TensorrtExecutionProvider", "CUDAExecutionProvider"],
            "float16",
        ),
        (OnnxRuntime(provider="cuda", tf32=True), ["CUDAExecutionProvider"], "tf32"),
        (OnnxRuntime(provider="cpu"), ["CPUExecutionProvider"], "float32"),
    ],
    ids=["trt-fp16", "cuda-tf32", "cpu"],
)
def test_a_loaded_onnx_runner_records_the_precision_its_build_recorded(
    config: OnnxRuntime,
    providers: list[str],
    precision: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """A runner loaded back from the cache carries the same ``precision`` as its build, so
    validation of the hit uses the bound of the precision it runs in."""
    monkeypatch.setattr(OnnxRuntime, "open_session", lambda *a, **k: FakeSession(providers))
    monkeypatch.setattr(ort_module, "session_runner", lambda *a: lambda *x: None)
    samples = normalise_samples(torch.zeros(2, 4))
    outputs = pytree.tree_flatten(torch.zeros(1))[1]
    path = tmp_path / "model.onnx"
    request = LoadRequest(path, samples.spec, outputs, CUDA, tmp_path, BuildLog())
    loader = OnnxRuntime.declaration.loader
    assert loader is not None
    built = loader(config, request)
    assert built.info["precision"] == precision
    assert built.info["providers"] == providers


def test_the_tensorrt_provider_profile_spans_every_declared_dynamic_range(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Batch 1…max and a declared sequence axis 8…64 reach the provider's min/opt/max shapes
    (opt: the samples' length, 16), instead of every shape pinned at the samples' length."""
    monkeypatch.setattr(ort_module, "dedicated_stream", lambda d: SimpleNamespace(cuda_stream=7))
    samples = normalise_samples(
        {"ids": torch.zeros(1, 16, dtype=torch.int64)},
        dynamic_axes={"ids": {1: (8, 64)}},
    )
    providers = OnnxRuntime(provider="tensorrt", max_batch_size=32)._providers(
        samples.spec, CUDA, tmp_path
    )
    name, options = providers[0]
    assert name == "TensorrtExecutionProvider"
    assert options["trt_profile_min_shapes"] == "ids:1x8"
    assert options["trt_profile_opt_shapes"] == "ids:32x16"
    assert options["trt_profile_max_shapes"] == "ids:32x64"
    assert options["user_compute_stream"] == "7"
