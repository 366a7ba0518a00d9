"""The third GPU review's fixes on a real GPU (issue 37 §5, §6, §7, §9, §12, §13): each
test skips with the backend's own reason where its SDK is missing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from returns.io import IOSuccess
from returns.unsafe import unsafe_perform_io
from torch import nn

from aitune_fp.effects.backends.ort import OnnxRuntime
from aitune_fp.effects.backends.trt import TensorRT
from aitune_fp.effects.cache.artifacts import artifact_files
from aitune_fp.effects.inputs.samples import Samples

pytestmark = pytest.mark.gpu
Skip = Callable[[Any, torch.device], None]


def _built(result: Any) -> Any:
    assert isinstance(result, IOSuccess), result
    return unsafe_perform_io(result.unwrap())


def test_ort_cuda_fp16_builds_validates_and_keeps_float32_io(
    mlp: nn.Module, mlp_samples: Samples, cuda: torch.device, tmp_path: Path,
    skip_unless_available: Skip,
) -> None:  # fmt: skip
    """The CUDA provider's fp16 variant builds from the converted graph, takes and returns
    float32, and stays within float16's reach of eager."""
    config = OnnxRuntime(provider="cuda", fp16=True)
    skip_unless_available(config, cuda)
    built = _built(config.build(mlp.to(cuda), mlp_samples.to(cuda), cuda, tmp_path))
    x = mlp_samples.items[0].args[0].to(cuda)
    got = built.runner(x)
    assert got.dtype == torch.float32 and built.info["precision"] == "float16"
    torch.testing.assert_close(got, mlp.to(cuda)(x), rtol=2e-2, atol=2e-2)


def test_ort_tensorrt_engines_are_files_of_the_artifact(
    mlp: nn.Module, mlp_samples: Samples, cuda: torch.device, tmp_path: Path,
    skip_unless_available: Skip,
) -> None:  # fmt: skip
    """Where the TensorRT EP loads, its build leaves engine files beside the graph, named
    after it, so the artifact cache keeps them with the graph."""
    config = OnnxRuntime(provider="tensorrt", max_batch_size=8)
    skip_unless_available(config, cuda)
    built = _built(config.build(mlp.to(cuda), mlp_samples.to(cuda), cuda, tmp_path))
    names = [p.name for p in artifact_files(built.artifact)]
    assert any(n.startswith("model.onnx.trt") and n.endswith(".engine") for n in names), names


@pytest.mark.parametrize("flags", [{"fp16": True}, {"bf16": True}])
def test_a_tensorrt_half_engine_validates_at_its_request(
    flags: dict[str, bool], mlp: nn.Module, mlp_samples: Samples, cuda: torch.device,
    tmp_path: Path, skip_unless_available: Skip,
) -> None:  # fmt: skip
    """A TensorRT fp16/bf16 engine records the precision it is judged at and the read-back
    beside it, and computes at it: its outputs leave the float32 engine's by far more than
    that engine leaves eager's (an fp32 engine that echoes the request fails), within the
    half precision's reach of eager."""
    config = TensorRT(max_batch_size=8, **flags)
    skip_unless_available(config, cuda)
    model, samples = mlp.to(cuda), mlp_samples.to(cuda)
    built = _built(config.build(model, samples, cuda, tmp_path / "half"))
    assert built.info["precision"] == config.precision
    assert "precision_read_back" in built.info
    full = _built(TensorRT(max_batch_size=8).build(model, samples, cuda, tmp_path / "fp32"))
    x = 10 * torch.randn(8, 4, device=cuda, generator=torch.Generator(cuda).manual_seed(0))
    with torch.inference_mode():
        half, exact, eager = built.runner(x).float(), full.runner(x).float(), model(x)
    assert (half - exact).abs().max() > 10 * (exact - eager).abs().max().clamp(min=1e-6)
    torch.testing.assert_close(half, eager, rtol=5e-2, atol=5e-2)
