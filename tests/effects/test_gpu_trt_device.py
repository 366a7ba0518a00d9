"""A TensorRT engine lives and runs on the tuned device, whichever device is current
(issue 26 §6), on CPU with a fake ``tensorrt`` runtime and a fake current-device switch.

Source checked: the TensorRT 10.x/11.x Python runtime API (NVIDIA/TensorRT
``python/packages`` bindings and samples ``common_runtime.py``): ``Runtime(logger)``,
``deserialize_cuda_engine(bytes)``, ``ICudaEngine.num_io_tensors`` / ``get_tensor_name`` /
``get_tensor_mode`` / ``get_tensor_dtype`` / ``create_execution_context``,
``IExecutionContext.set_input_shape`` / ``set_tensor_address`` / ``get_tensor_shape`` /
``execute_async_v3(stream_handle)``. TensorRT allocates an engine's memory on the CUDA
device current when it is deserialised and enqueues on the current device, so both must
happen under ``torch.cuda.device(N)`` (torch 2.13's context, faked here to record the
device that is current at each step).
"""

from __future__ import annotations

import enum
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

import aitune_fp.effects.backends._trt_runtime as trt_runtime
from aitune_fp.effects.backends._build_guard import BuildLog
from aitune_fp.effects.backends._export import output_layout
from aitune_fp.effects.backends._onnx import OnnxGraph
from aitune_fp.effects.inputs.samples import normalise_samples

CURRENT: list[int] = [0]
EVENTS: list[tuple[str, int]] = []


class _Mode(enum.Enum):
    INPUT = 0
    OUTPUT = 1


class _Context:
    def __init__(self) -> None:
        self.shapes: dict[str, tuple[int, ...]] = {}

    def set_input_shape(self, name: str, shape: tuple[int, ...]) -> bool:
        self.shapes[name] = shape
        return True

    def set_tensor_address(self, name: str, address: int) -> None:
        EVENTS.append(("bind", CURRENT[-1]))

    def get_tensor_shape(self, name: str) -> tuple[int, ...]:
        return self.shapes["input_0"]

    def execute_async_v3(self, stream: int) -> bool:
        EVENTS.append(("execute", CURRENT[-1]))
        return True


class _Engine:
    num_io_tensors = 2

    def get_tensor_name(self, i: int) -> str:
        return ("input_0", "output_0")[i]

    def get_tensor_mode(self, name: str) -> _Mode:
        return _Mode.INPUT if name == "input_0" else _Mode.OUTPUT

    def get_tensor_dtype(self, name: str) -> str:
        return "float32"

    def create_execution_context(self) -> _Context:
        EVENTS.append(("context", CURRENT[-1]))
        return _Context()


class _Runtime:
    def __init__(self, logger: Any) -> None:
        EVENTS.append(("runtime", CURRENT[-1]))

    def deserialize_cuda_engine(self, data: bytes) -> _Engine:
        EVENTS.append(("deserialize", CURRENT[-1]))
        return _Engine()


class _ILogger:
    Severity = SimpleNamespace(INTERNAL_ERROR=0, ERROR=1, WARNING=2)

    def __init__(self) -> None:
        pass


class _CudaDevice:
    """torch.cuda.device(index): makes ``index`` current, restores the previous one."""

    def __init__(self, index: int) -> None:
        self.index = index

    def __enter__(self) -> None:
        CURRENT.append(self.index)

    def __exit__(self, *exc: object) -> None:
        CURRENT.pop()


@pytest.fixture
def fake_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake tensorrt, current-device switch, stream and device allocation."""
    fake_trt = SimpleNamespace(
        ILogger=_ILogger,
        Runtime=_Runtime,
        TensorIOMode=_Mode,
        float32="float32",
        float16="float16",
        bfloat16="bfloat16",
        int8="int8",
        int32="int32",
        int64="int64",
        bool="bool",
        uint8="uint8",
    )
    monkeypatch.setitem(sys.modules, "tensorrt", fake_trt)
    monkeypatch.setattr(torch.cuda, "device", _CudaDevice)
    monkeypatch.setattr(trt_runtime, "dedicated_stream", lambda d: SimpleNamespace(cuda_stream=1))
    monkeypatch.setattr(trt_runtime, "enter", lambda stream, device: None)
    monkeypatch.setattr(trt_runtime, "leave", lambda caller, stream: None)
    real_empty = torch.empty
    monkeypatch.setattr(
        torch, "empty", lambda shape, dtype=None, device=None: real_empty(shape, dtype=dtype)
    )
    EVENTS.clear()


def test_the_engine_is_deserialised_and_run_on_the_tuned_device(
    fake_cuda: None, tmp_path: Path
) -> None:
    """With device 0 current and the engine tuned for cuda:1, deserialising, creating the
    context, binding and enqueuing all happen with device 1 current; device 0 is current
    again afterwards."""
    samples = normalise_samples(torch.zeros(2, 4))
    graph = OnnxGraph(
        tmp_path / "m.onnx", ("input_0",), ("output_0",), output_layout(torch.zeros(2, 4))
    )
    runner = trt_runtime.EngineRunner(
        b"engine", graph, samples.spec, torch.device("cuda", 1), BuildLog()
    )
    runner(torch.zeros(3, 4))
    assert EVENTS and all(index == 1 for _, index in EVENTS), EVENTS
    assert {name for name, _ in EVENTS} >= {"deserialize", "context", "bind", "execute"}
    assert CURRENT == [0]


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA devices")
def test_a_real_engine_on_the_second_gpu_runs_while_the_first_is_current(tmp_path: Path) -> None:
    """On a machine with two GPUs and TensorRT, an engine built for cuda:1 validates while
    cuda:0 is current."""
    pytest.importorskip(
        "tensorrt", reason="needs an optional GPU library: TensorRT is not installed"
    )
    from aitune_fp.effects.backends.trt import TensorRT
    from aitune_fp.shell.io import perform

    module = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU()).eval()
    samples = normalise_samples(torch.randn(2, 4))
    device = torch.device("cuda", 1)
    torch.cuda.set_device(0)
    built = perform(
        TensorRT(max_batch_size=8).build(module, samples.to(device), device, tmp_path)
    ).unwrap()
    x = torch.randn(4, 4, device=device)
    torch.testing.assert_close(built.runner(x), module.to(device)(x), rtol=5e-3, atol=5e-3)
