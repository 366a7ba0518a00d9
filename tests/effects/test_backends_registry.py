"""The backend registry: default candidates per device, lookup by name, configs as values."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

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
    """On CPU the default candidates are inductor, aot_inductor, onnxruntime and openvino,
    in that order."""
    assert [b.describe() for b in default_backends(torch.device("cpu"))] == [
        "inductor",
        "aot_inductor",
        "onnxruntime",
        "openvino",
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
        "import sys, aitune_fp, aitune_fp.effects.backends.registry\n"
        "import aitune_fp.effects.checks.validate\n"
        "sdks = ('onnx', 'onnxruntime', 'onnxscript', 'tensorrt', 'torch_tensorrt')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in sdks))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"


def test_every_shipped_declaration_is_consistent() -> None:
    """Each shipped backend's declaration names real helper modules, skips only libraries it
    lists, builds its declared defaults and variants, and is not part of the config key."""
    import importlib.util

    from aitune_fp.effects.backends.registry import shipped

    assert len({cls.declaration.order for cls in shipped()}) == len(shipped())
    for cls in shipped():
        declared = cls.declaration
        assert set(declared.server_skips) <= set(declared.libraries), cls
        for module in declared.sdk_modules:
            assert importlib.util.find_spec(module) is not None, module
        options = [*declared.defaults.values()]
        options += [o for level in declared.variants.values() for o in level.values()]
        for config in (cls(**o) for opts in options for o in opts):
            assert isinstance(config, Backend)
        assert "declaration" not in {f.name for f in dataclasses.fields(cls)}


def test_a_module_dropped_into_the_package_is_a_shipped_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new public module in the backends package is all it takes: the registry finds its
    config by name, in its declared order, with its declared defaults."""
    import aitune_fp.effects.backends as package
    from aitune_fp.effects.backends import registry

    (tmp_path / "dropped_in.py").write_text(DROPPED_IN)
    monkeypatch.delitem(sys.modules, "aitune_fp.effects.backends.dropped_in", raising=False)
    try:
        with monkeypatch.context() as patch:
            patch.setattr(package, "__path__", [*package.__path__, str(tmp_path)])
            registry.shipped.cache_clear()
            assert backend_by_name("dropped_in").describe() == "dropped_in"
            assert [b.name for b in default_backends("cpu")][-1] == "dropped_in"
            assert "dropped_in" not in [b.name for b in default_backends("cuda")]
    finally:
        registry.shipped.cache_clear()
    assert "dropped_in" not in registry.backend_types()


DROPPED_IN = """
from dataclasses import dataclass, field
from typing import ClassVar

from aitune_fp.effects.backends.base import ConfigIdentity, Declaration


@dataclass(frozen=True, slots=True)
class DroppedIn(ConfigIdentity):
    declaration: ClassVar[Declaration] = Declaration(order=99, defaults={"cpu": ({},)})
    name: str = field(default="dropped_in", init=False)

    def unavailable_reason(self, device):
        return None

    def build(self, module, samples, device, work_dir):
        raise NotImplementedError("only looked up here")
"""
