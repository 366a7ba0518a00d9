"""ONNX Runtime: dynamo export with a dynamic batch, CPU provider here, CUDA/TensorRT on GPUs."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from returns.io import IOSuccess
from returns.unsafe import unsafe_perform_io
from torch import nn

from aitune_fp.effects.backends.base import Built
from aitune_fp.effects.backends.ort import OnnxRuntime
from aitune_fp.effects.checks.validate import validate
from aitune_fp.effects.inputs.samples import Samples

CPU = torch.device("cpu")
CUDA = torch.device("cuda", 0)


def _build(
    backend: OnnxRuntime, module: nn.Module, samples: Samples, device: torch.device, work_dir: Path
) -> Built:
    built: Built = unsafe_perform_io(backend.build(module, samples, device, work_dir).unwrap())
    return built


def _validates(built: Built, module: nn.Module, samples: Samples, device: torch.device) -> float:
    result = validate("onnxruntime", built, module, samples, device, batch_sizes=(1, 8))
    assert isinstance(result, IOSuccess), result
    return float(unsafe_perform_io(result.unwrap()).max_abs_error)


@pytest.mark.heavy
def test_mlp_builds_and_validates_on_the_cpu_provider(
    mlp: nn.Module, mlp_samples: Samples, work_dir: Path
) -> None:
    """The tiny MLP exports to model.onnx, runs on the CPU provider and matches eager."""
    built = _build(OnnxRuntime(), mlp, mlp_samples, CPU, work_dir)
    assert built.artifact == work_dir / "model.onnx" and built.artifact.exists()
    assert built.info["provider"] == "cpu"
    assert _validates(built, mlp, mlp_samples, CPU) < 1e-4
    out = built.runner(torch.randn(11, 4))
    assert isinstance(out, torch.Tensor) and out.shape == (11, 3)


@pytest.mark.heavy
def test_keyword_inputs_validate(
    keyword_module: nn.Module, keyword_samples: Samples, work_dir: Path
) -> None:
    """A module fed a dict of keyword tensors builds and validates through ONNX Runtime."""
    built = _build(OnnxRuntime(), keyword_module, keyword_samples, CPU, work_dir)
    _validates(built, keyword_module, keyword_samples, CPU)


@pytest.mark.heavy
def test_nested_outputs_come_back_in_eager_structure(
    structured_module: nn.Module, structured_samples: Samples, work_dir: Path
) -> None:
    """Flat ONNX outputs are rebuilt into eager's tuple-with-dict, dtypes kept, and validate."""
    built = _build(OnnxRuntime(), structured_module, structured_samples, CPU, work_dir)
    h, d = built.runner(torch.randn(5, 4), torch.randn(5, 4))
    assert h.shape == (5, 2) and sorted(d) == ["argmax", "total"]
    assert d["argmax"].dtype == torch.int64
    _validates(built, structured_module, structured_samples, CPU)


def test_missing_library_is_a_recorded_failure(
    mlp: nn.Module, mlp_samples: Samples, work_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without onnxruntime installed the build fails at once with the reason, writing nothing."""
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name == "onnxruntime" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    assert OnnxRuntime().unavailable_reason(CPU) == "onnxruntime is not installed"
    failure = unsafe_perform_io(OnnxRuntime().build(mlp, mlp_samples, CPU, work_dir).failure())
    assert failure.describe() == "onnxruntime failed at build: onnxruntime is not installed"
    assert not work_dir.exists()


@pytest.mark.parametrize("provider", ["cuda", "tensorrt"])
def test_gpu_providers_need_a_cuda_device(provider: str) -> None:
    """The CUDA and TensorRT providers on a CPU device say they need a CUDA device."""
    assert OnnxRuntime(provider=provider).unavailable_reason(CPU) == "needs a CUDA device"


def test_gpu_provider_missing_from_the_install_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a CUDA device with a CPU-only onnxruntime, the reason names the missing provider."""
    import onnxruntime

    monkeypatch.setattr(onnxruntime, "get_available_providers", lambda: ["CPUExecutionProvider"])
    assert OnnxRuntime().unavailable_reason(CUDA) == (
        "onnxruntime's CUDAExecutionProvider is not installed (needs onnxruntime-gpu)"
    )


def test_cpu_provider_refuses_a_cuda_device() -> None:
    """Asking for the CPU provider on a CUDA device is a clear reason, not a crash."""
    assert OnnxRuntime(provider="cpu").unavailable_reason(CUDA) == (
        "the CPU provider needs a CPU device"
    )


def test_bad_configs_are_refused() -> None:
    """Unknown providers and fp16 outside the TensorRT provider are refused at construction."""
    with pytest.raises(ValueError, match="provider must be one of"):
        OnnxRuntime(provider="rocm")
    with pytest.raises(ValueError, match="fp16 applies to the TensorRT and CUDA providers only"):
        OnnxRuntime(fp16=True)


@pytest.mark.gpu
@pytest.mark.parametrize("provider", ["cuda", "tensorrt"])
def test_gpu_providers_validate_with_io_binding(
    provider: str,
    mlp: nn.Module,
    mlp_samples: Samples,
    work_dir: Path,
    cuda: torch.device,
    skip_unless_available: Callable[[Any, torch.device], None],
) -> None:
    """The CUDA/TensorRT providers bind torch CUDA tensors and match eager on the GPU."""
    backend = OnnxRuntime(provider=provider, max_batch_size=8)
    skip_unless_available(backend, cuda)
    built = _build(backend, mlp, mlp_samples, cuda, work_dir)
    out = built.runner(torch.randn(3, 4, device=cuda))
    assert out.device.type == "cuda" and out.shape == (3, 3)
    asked = {"cuda": "CUDAExecutionProvider", "tensorrt": "TensorrtExecutionProvider"}[provider]
    assert built.info["providers"][0] == asked
    _validates(built, mlp, mlp_samples, cuda)
