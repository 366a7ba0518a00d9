"""GPU runners serve concurrent calls: each call gets the rows of its own inputs (issue 46
§8). Serving runs a request alone in ``asyncio.to_thread`` beside a batch, so two calls of
one runner can overlap; the fakes copy each bound input to its bound output by address,
the way ONNX Runtime's IO binding and TensorRT's execution context read the addresses they
hold when the run starts, and wait for the other call in between, so an unlocked runner
hands one request the other's rows."""

from __future__ import annotations

import contextlib
import ctypes
import sys
import threading
import types
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from aitune_fp.effects.backends import _ort_runners, _trt_runtime
from aitune_fp.effects.backends._export import output_layout
from aitune_fp.effects.backends._onnx import OnnxGraph
from aitune_fp.effects.inputs.samples import normalise_samples

ROWS = (3, 4)


class Overlap:
    """Two calls meet here mid-run (an unlocked runner lets them; a locked one times out
    the wait and runs them one after the other)."""

    def __init__(self) -> None:
        self.barrier = threading.Barrier(2)

    def meet(self) -> None:
        with contextlib.suppress(threading.BrokenBarrierError):
            self.barrier.wait(timeout=0.5)


def _copy(dst: int, src: int, shape: tuple[int, ...]) -> None:
    """The "model": y = x, bytes copied between device addresses (float32)."""
    ctypes.memmove(dst, src, 4 * int(torch.Size(shape).numel()))


class FakeIOBinding:
    """onnxruntime.IOBinding: bind_input/bind_output by address, get_outputs' shapes."""

    def __init__(self) -> None:
        self.inputs: dict[str, tuple[tuple[int, ...], int]] = {}
        self.outputs: dict[str, tuple[Any, Any]] = {}

    def bind_input(self, name: str, device_type: str, device_id: int, element_type: Any,
                   shape: tuple[int, ...], buffer_ptr: int) -> None:  # fmt: skip
        self.inputs[name] = (shape, buffer_ptr)

    def bind_output(self, name: str, device_type: str = "cpu", device_id: int = 0,
                    element_type: Any = None, shape: Any = None,
                    buffer_ptr: Any = None) -> None:  # fmt: skip
        self.outputs[name] = (shape, buffer_ptr)

    def get_outputs(self) -> list[Any]:
        shape = self.inputs["x"][0]
        return [SimpleNamespace(shape=lambda: list(shape))]


class FakeSession:
    """onnxruntime.InferenceSession: io_binding(), get_outputs(), run_with_iobinding()."""

    def __init__(self, overlap: Overlap) -> None:
        self.binding = FakeIOBinding()
        self.overlap = overlap
        self.armed = False

    def io_binding(self) -> FakeIOBinding:
        return self.binding

    def get_outputs(self) -> list[Any]:
        return [SimpleNamespace(name="y", type="tensor(float)")]

    def run_with_iobinding(self, binding: FakeIOBinding) -> None:
        if self.armed:
            self.overlap.meet()
        (shape, src), (_, dst) = binding.inputs["x"], binding.outputs["y"]
        if dst is not None:
            _copy(dst, src, shape)


def _graph() -> tuple[OnnxGraph, Any]:
    spec = normalise_samples(torch.randn(2, ROWS[1])).spec
    layout = output_layout(torch.zeros(1))
    return OnnxGraph(Path("m.onnx"), ("x",), ("y",), layout), spec


def _no_streams(monkeypatch: pytest.MonkeyPatch, module: Any) -> None:
    """The dedicated-stream joins (CUDA only) as no-ops: the fakes run on the host."""
    stream = SimpleNamespace(cuda_stream=0)
    monkeypatch.setattr(module, "dedicated_stream", lambda device: stream)
    monkeypatch.setattr(module, "enter", lambda s, device: s)
    monkeypatch.setattr(module, "leave", lambda caller, s: None)


def _two_calls(runner: Any) -> list[torch.Tensor]:
    """Two overlapping calls with rows of 1.0 and of 2.0; their outputs."""
    xs = [torch.full(ROWS, 1.0), torch.full(ROWS, 2.0)]
    outs: list[Any] = [None, None]

    def call(i: int) -> None:
        outs[i] = runner(xs[i])

    threads = [threading.Thread(target=call, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    return outs


def test_the_ort_cuda_runner_gives_each_overlapping_call_its_own_rows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two overlapping calls of one IO-binding runner each get their own rows back."""
    _no_streams(monkeypatch, _ort_runners)
    monkeypatch.setattr(_ort_runners, "device_index", lambda device: 0)
    session = FakeSession(Overlap())
    graph, spec = _graph()
    runner = _ort_runners.cuda_runner(session, graph, (0,), spec, torch.device("cpu"))
    runner(torch.zeros(ROWS))  # learns the output shape
    session.armed = True
    first, second = _two_calls(runner)
    assert torch.equal(first, torch.full(ROWS, 1.0))
    assert torch.equal(second, torch.full(ROWS, 2.0))


class FakeContext:
    """tensorrt.IExecutionContext: set_input_shape, set_tensor_address, get_tensor_shape,
    execute_async_v3 (reads the addresses it holds when the run starts)."""

    def __init__(self, overlap: Overlap) -> None:
        self.overlap = overlap
        self.shape: tuple[int, ...] = ()
        self.addresses: dict[str, int] = {}

    def set_input_shape(self, name: str, shape: tuple[int, ...]) -> bool:
        self.shape = shape
        return True

    def set_tensor_address(self, name: str, address: int) -> None:
        self.addresses[name] = address

    def get_tensor_shape(self, name: str) -> tuple[int, ...]:
        return self.shape

    def execute_async_v3(self, stream: int) -> bool:
        self.overlap.meet()
        _copy(self.addresses["y"], self.addresses["x"], self.shape)
        return True


def _fake_tensorrt(context: FakeContext) -> types.ModuleType:
    """The ``tensorrt`` names EngineRunner uses: ILogger, Runtime, the engine's IO API."""
    trt = types.ModuleType("tensorrt")
    for name in ("float32", "float16", "bfloat16", "int8", "int32", "int64", "bool", "uint8"):
        setattr(trt, name, name)
    severity = SimpleNamespace(INTERNAL_ERROR=0, ERROR=1, WARNING=2)
    trt.ILogger = type("ILogger", (), {"Severity": severity, "__init__": lambda self: None})  # type: ignore[attr-defined]
    trt.TensorIOMode = SimpleNamespace(INPUT="in", OUTPUT="out")  # type: ignore[attr-defined]
    engine = SimpleNamespace(
        num_io_tensors=2,
        get_tensor_name=lambda i: ("x", "y")[i],
        get_tensor_mode=lambda n: "in" if n == "x" else "out",
        get_tensor_dtype=lambda n: "float32",
        create_execution_context=lambda: context,
    )
    runtime = SimpleNamespace(deserialize_cuda_engine=lambda data: engine)
    trt.Runtime = lambda logger: runtime  # type: ignore[attr-defined]
    return trt


def test_the_tensorrt_runner_gives_each_overlapping_call_its_own_rows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two overlapping calls of one engine runner (one execution context) each get their
    own rows back."""
    monkeypatch.setitem(sys.modules, "tensorrt", _fake_tensorrt(FakeContext(Overlap())))
    monkeypatch.setattr(_trt_runtime, "_LOGGER", {})
    _no_streams(monkeypatch, _trt_runtime)
    graph, spec = _graph()
    log = SimpleNamespace(write=lambda line: None)
    runner = _trt_runtime.EngineRunner(b"plan", graph, spec, torch.device("cpu"), log)  # type: ignore[arg-type]
    first, second = _two_calls(runner)
    assert torch.equal(first, torch.full(ROWS, 1.0))
    assert torch.equal(second, torch.full(ROWS, 2.0))


@pytest.mark.gpu
def test_a_real_io_binding_runner_serves_two_threads_their_own_rows(
    mlp: torch.nn.Module,
    mlp_samples: Any,
    work_dir: Path,
    cuda: torch.device,
    skip_unless_available: Any,
) -> None:
    """On a GPU with onnxruntime-gpu, two threads calling one CUDA-provider runner with
    different inputs each get eager's outputs for their own rows, call after call."""
    from returns.unsafe import unsafe_perform_io

    from aitune_fp.effects.backends.ort import OnnxRuntime

    backend = OnnxRuntime(provider="cuda", max_batch_size=8)
    skip_unless_available(backend, cuda)
    built = unsafe_perform_io(backend.build(mlp, mlp_samples, cuda, work_dir).unwrap())
    model = mlp.to(cuda)
    inputs = [torch.randn(4, 4, device=cuda), torch.randn(2, 4, device=cuda)]
    with torch.inference_mode():
        wanted = [model(x) for x in inputs]
    wrong: list[int] = []

    def serve(i: int) -> None:
        for _ in range(50):
            out = built.runner(inputs[i])
            torch.cuda.current_stream(cuda).synchronize()
            if not torch.allclose(out, wanted[i], rtol=1e-3, atol=1e-4):
                wrong.append(i)

    threads = [threading.Thread(target=serve, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not wrong
