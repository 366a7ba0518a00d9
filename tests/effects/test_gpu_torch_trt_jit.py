"""Torch-TensorRT's JIT path (``ir="torch_compile"``) judged by the engines that ran, and
the tuned device passed on (issue 26 §2, §6), on CPU with a fake ``torch_tensorrt``.

Sources checked (pytorch/TensorRT, 2.12–2.14 ``py/torch_tensorrt/dynamo``):
``_defaults.py`` has ``PASS_THROUGH_BUILD_FAILURES = False`` and ``MIN_BLOCK_SIZE = 5``;
``backend/backends.py`` registers the ``torch_tensorrt`` dynamo backend, whose
``(gm, sample_inputs, **kwargs)`` reads ``kwargs["options"]`` through
``utils.parse_dynamo_kwargs`` into ``CompilationSettings`` (fields include ``device``,
``pass_through_build_failures``, ``min_block_size``, ``disable_tf32``; ``device`` may be a
``torch.device``, converted by ``to_torch_tensorrt_device``); when conversion fails and
pass-through is off, the partitioned graph falls back to the original PyTorch graph;
engines are ``TorchTensorRTModule`` / ``PythonTorchTensorRTModule`` submodules called by
the compiled ``GraphModule``. The fake below registers a backend under that name (through
torch 2.13's ``torch._dynamo.backends.registry``) that behaves either way.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
import torch._dynamo.backends.registry as registry
from torch import nn

from aitune_fp.effects.backends.torch_trt import TorchTensorRT
from aitune_fp.effects.inputs.samples import normalise_samples
from aitune_fp.shell.io import perform

CPU = torch.device("cpu")


@dataclasses.dataclass
class CompilationSettings:
    """The fields of Torch-TensorRT 2.13's ``CompilationSettings`` that matter here."""

    device: Any = None
    pass_through_build_failures: bool = False
    min_block_size: int = 5
    disable_tf32: bool = False
    use_explicit_typing: bool = True


class TorchTensorRTModule(nn.Module):
    """Stands in for an engine: runs the graph it replaced, in the dtype it is fed."""

    def __init__(self, graph: Callable[..., Any]) -> None:
        super().__init__()
        self.graph = graph

    def forward(self, *args: Any) -> Any:
        """The replaced graph's outputs."""
        return self.graph(*args)


class Partitioned(nn.Module):
    """What Torch-TensorRT's compile_module returns: a graph calling an engine submodule."""

    def __init__(self, graph: Callable[..., Any]) -> None:
        super().__init__()
        self._run_on_acc_0 = TorchTensorRTModule(graph)

    def forward(self, *args: Any) -> Any:
        """Calls the engine."""
        return self._run_on_acc_0(*args)


def _install(monkeypatch: pytest.MonkeyPatch, converts: bool) -> list[dict[str, Any]]:
    """A fake ``torch_tensorrt`` module and its ``torch_tensorrt`` dynamo backend."""
    options_seen: list[dict[str, Any]] = []

    def backend(gm: torch.fx.GraphModule, inputs: Any, **kwargs: Any) -> Any:
        options = kwargs.get("options", {})
        options_seen.append(options)
        if not converts:  # the original graph: PyTorch runs it, no engine
            return gm.forward
        return Partitioned(gm.forward)

    fake = SimpleNamespace(dynamo=SimpleNamespace(CompilationSettings=CompilationSettings))
    monkeypatch.setitem(sys.modules, "torch_tensorrt", fake)
    monkeypatch.setitem(registry._BACKENDS, "torch_tensorrt", None)
    monkeypatch.setitem(registry._COMPILER_FNS, "torch_tensorrt", backend)
    monkeypatch.setattr(TorchTensorRT, "unavailable_reason", lambda self, device: None)
    torch._dynamo.reset()
    return options_seen


def _build(fp16: bool, tmp_path: Path) -> Any:
    module = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).eval()
    samples = normalise_samples(torch.randn(2, 4))
    config = TorchTensorRT(ir="torch_compile", fp16=fp16)
    return perform(config.build(module, samples, CPU, tmp_path))


@pytest.mark.parametrize("fp16", [False, True], ids=["fp32", "fp16"])
def test_a_jit_build_that_left_the_module_in_pytorch_fails(
    fp16: bool, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """When Torch-TensorRT hands back the PyTorch graph (no engine), the JIT build is a
    failure, not a "torch_tensorrt" candidate that is plain PyTorch (fp16: the module's own
    float16 outputs do not count as engines computing in float16)."""
    _install(monkeypatch, converts=False)
    failure = _build(fp16, tmp_path).failure()
    assert "built no TensorRT engine" in failure.message


def test_a_jit_build_records_the_engines_and_passes_the_device(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With an engine that ran in float16 the build succeeds, says so, and Torch-TensorRT got
    the tuned device and ``pass_through_build_failures=True``."""
    options_seen = _install(monkeypatch, converts=True)
    built = _build(True, tmp_path).unwrap()
    assert built.info["precision"] == "float16"
    assert built.info["precision_source"] == "1 TensorRT engine(s)"
    assert options_seen and options_seen[0]["device"] == CPU
    assert options_seen[0]["pass_through_build_failures"] is True
    assert built.runner(torch.randn(3, 4)).dtype == torch.float32


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_real_jit_build_on_cuda_runs_tensorrt_engines(tmp_path: Path) -> None:
    """On a GPU with Torch-TensorRT, a JIT build of an MLP records at least one engine."""
    pytest.importorskip(
        "torch_tensorrt", reason="needs an optional GPU library: Torch-TensorRT is not installed"
    )
    module = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64)).eval()
    samples = normalise_samples(torch.randn(8, 64))
    built = perform(
        TorchTensorRT(ir="torch_compile").build(module, samples, torch.device("cuda"), tmp_path)
    ).unwrap()
    assert built.info["precision_source"] != "0 TensorRT engine(s)"
