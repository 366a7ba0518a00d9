"""The backend registry: default candidates per device, lookup by name, configs as values."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest
import torch

from aitune_fp.effects.backends.base import Backend
from aitune_fp.effects.backends.inductor import InductorJIT
from aitune_fp.effects.backends.ort import OnnxRuntime
from aitune_fp.effects.backends.registry import (
    all_backends,
    backend_by_name,
    default_backends,
    with_max_batch_size,
)
from aitune_fp.effects.backends.torch_trt import TorchTensorRT
from aitune_fp.effects.backends.trt import TensorRT


def test_cpu_defaults_are_the_cpu_backends_without_eager() -> None:
    """On CPU the default candidates are inductor, aot_inductor and onnxruntime, in that order."""
    assert [b.describe() for b in default_backends(torch.device("cpu"))] == [
        "inductor",
        "aot_inductor",
        "onnxruntime",
    ]


def test_cuda_defaults_add_the_gpu_backends() -> None:
    """On CUDA the defaults add ORT's TensorRT provider, TensorRT and both Torch-TensorRT modes."""
    names = [b.describe() for b in default_backends("cuda")]
    assert names == [
        "inductor",
        "aot_inductor",
        "onnxruntime",
        "onnxruntime(provider='tensorrt')",
        "tensorrt",
        "torch_tensorrt",
        "torch_tensorrt(ir='torch_compile')",
    ]
    assert "eager" not in names


def test_every_backend_satisfies_the_protocol() -> None:
    """Every registered config is a frozen dataclass satisfying the Backend protocol."""
    for backend in all_backends():
        assert isinstance(backend, Backend)
        params = dataclasses.fields(backend)  # type: ignore[arg-type]
        assert params is not None
        with pytest.raises(dataclasses.FrozenInstanceError):
            backend.name = "other"  # type: ignore[misc]


def test_keys_are_stable_and_distinct() -> None:
    """Equal configs share a key; every config in the registry has its own key."""
    keys = [b.key() for b in all_backends()]
    assert len(set(keys)) == len(keys)
    assert InductorJIT(mode="max-autotune").key() == InductorJIT(mode="max-autotune").key()
    assert InductorJIT().key() != InductorJIT(mode="max-autotune").key()


def test_lookup_by_name_round_trips_the_registry() -> None:
    """Rebuilding each config from its name and init fields gives an equal config."""
    for backend in all_backends():
        fields = {
            f.name: getattr(backend, f.name)
            for f in dataclasses.fields(backend)  # type: ignore[arg-type]
            if f.init
        }
        assert backend_by_name(backend.name, **fields) == backend


def test_lookup_refuses_unknown_names_and_options() -> None:
    """Unknown backends and unknown options are argument errors that list what is valid."""
    with pytest.raises(ValueError, match="unknown backend 'trt'"):
        backend_by_name("trt")
    with pytest.raises(ValueError, match="it takes: mode, dynamic, fullgraph"):
        backend_by_name("inductor", modes="x")


def test_max_batch_size_applies_only_to_ahead_of_time_ranges() -> None:
    """TensorRT-style backends take the max batch size; others are returned unchanged."""
    assert with_max_batch_size(TensorRT(opt_batch_size=512), 64) == TensorRT(
        max_batch_size=64, opt_batch_size=64
    )
    assert with_max_batch_size(TorchTensorRT(), 32) == TorchTensorRT(max_batch_size=32)
    tensorrt_provider = OnnxRuntime(provider="tensorrt")
    assert with_max_batch_size(tensorrt_provider, 16).max_batch_size == 16  # type: ignore[attr-defined]
    assert with_max_batch_size(OnnxRuntime(), 16) == OnnxRuntime()
    assert with_max_batch_size(InductorJIT(), 16) == InductorJIT()


def test_importing_the_backends_loads_no_inference_sdk() -> None:
    """Importing aitune_fp and every backend module imports no ONNX/ORT/TensorRT library."""
    code = (
        "import sys, aitune_fp, aitune_fp.effects.backends.registry, aitune_fp.effects.validate\n"
        "sdks = ('onnx', 'onnxruntime', 'onnxscript', 'tensorrt', 'torch_tensorrt')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in sdks))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"
