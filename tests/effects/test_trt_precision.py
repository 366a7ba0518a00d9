"""TensorRT reduced precision on both API generations, checked on CPU against small fakes.

The fakes mirror the TensorRT Python bindings' signatures used by ``trt.py``:
``FakeTrt10`` mirrors TensorRT 10.16 (``BuilderFlag.FP16``/``BF16``/``INT8``/``TF32``,
``NetworkDefinitionCreationFlag.STRONGLY_TYPED`` = 1, inspector JSON with
``Format/Datatype``); ``FakeTrt11`` mirrors TensorRT 11.0–11.4 (no precision builder flags,
``TF32`` kept, ``STRONGLY_TYPED`` accepted, inspector JSON with a separate ``DataType``).
"""

from __future__ import annotations

import enum
import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from torch import nn

from aitune_fp.effects.backends._build_guard import BuildLog
from aitune_fp.effects.backends._export import OutputLayout, output_layout
from aitune_fp.effects.backends._onnx import OnnxGraph
from aitune_fp.effects.backends._precision import (
    ComputeIn,
    engine_precision,
    network_flags,
    output_dtypes,
    trt_precision_plan,
)
from aitune_fp.effects.backends.trt import TensorRT, check_effective
from aitune_fp.effects.inputs.samples import Samples


class _Flags10(enum.IntEnum):
    FP16 = 0
    BF16 = 1
    INT8 = 2
    TF32 = 7


class _Flags11(enum.IntEnum):
    TF32 = 7


class _NetworkFlags(enum.IntEnum):
    STRONGLY_TYPED = 1


class _Config:
    def __init__(self) -> None:
        self.set: list[str] = []
        self.cleared: list[str] = []
        self.profiling_verbosity: Any = None
        self.profiles: list[Any] = []

    def set_flag(self, flag: enum.IntEnum) -> None:
        self.set.append(flag.name)

    def clear_flag(self, flag: enum.IntEnum) -> None:
        self.cleared.append(flag.name)

    def set_memory_pool_limit(self, pool: Any, size: int) -> None:
        pass

    def add_optimization_profile(self, profile: Any) -> int:
        self.profiles.append(profile)
        return 0


class _Profile:
    def __init__(self) -> None:
        self.shapes: dict[str, tuple[Any, ...]] = {}

    def set_shape(self, name: str, lo: Any, opt: Any, hi: Any) -> None:
        self.shapes[name] = (lo, opt, hi)


class _Network:
    def __init__(self, flags: int) -> None:
        self.flags = flags
        self.num_inputs = 1

    def get_input(self, i: int) -> Any:
        return SimpleNamespace(name="input_0")


class _Builder:
    def __init__(self, logger: Any) -> None:
        self.config = _Config()
        self.network: _Network | None = None

    def create_network(self, flags: int = 0) -> _Network:
        self.network = _Network(flags)
        return self.network

    def create_builder_config(self) -> _Config:
        return self.config

    def create_optimization_profile(self) -> _Profile:
        return _Profile()

    def build_serialized_network(self, network: _Network, config: _Config) -> bytes:
        return b"engine"


class _Parser:
    def __init__(self, network: Any, logger: Any) -> None:
        self.num_errors = 0

    def parse_from_file(self, path: str) -> bool:
        return True


def _fake_trt(version: str, flags: type[enum.IntEnum]) -> Any:
    builders: list[_Builder] = []

    def builder(logger: Any) -> _Builder:
        builders.append(_Builder(logger))
        return builders[-1]

    class _ILogger:
        Severity = SimpleNamespace(INTERNAL_ERROR=0, ERROR=1, WARNING=2)

        def __init__(self) -> None:
            pass

    return SimpleNamespace(
        __version__=version,
        BuilderFlag=flags,
        NetworkDefinitionCreationFlag=_NetworkFlags,
        ProfilingVerbosity=SimpleNamespace(DETAILED="detailed"),
        LayerInformationFormat=SimpleNamespace(JSON="json"),
        MemoryPoolType=SimpleNamespace(WORKSPACE=0),
        ILogger=_ILogger,
        Builder=builder,
        OnnxParser=_Parser,
        builders=builders,
    )


FAKES = {
    "10.16": lambda: _fake_trt("10.16.1.11", _Flags10),
    "11.4": lambda: _fake_trt("11.4.0.106", _Flags11),
}


def _graph(tmp_path: Path, mlp: nn.Module) -> OnnxGraph:
    layout: OutputLayout = output_layout(mlp(torch.zeros(1, 4)))
    return OnnxGraph(tmp_path / "model.onnx", ("input_0",), ("output_0",), layout)


@pytest.mark.parametrize(
    ("generation", "mechanism", "set_flags", "network_mask"),
    [("10.16", "builder_flag", ["FP16"], 0), ("11.4", "strongly_typed_cast", [], 1 << 1)],
)
def test_fp16_engine_build_uses_the_mechanism_each_tensorrt_offers(
    generation: str,
    mechanism: str,
    set_flags: list[str],
    network_mask: int,
    mlp: nn.Module,
    mlp_samples: Samples,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """fp16 sets BuilderFlag.FP16 on TensorRT 10 and, on 11 (where that flag is gone and
    touching it would raise), builds a strongly typed network instead; TF32 is cleared."""
    trt = FAKES[generation]()
    monkeypatch.setitem(sys.modules, "tensorrt", trt)
    plan = trt_precision_plan(trt, fp16=True, tf32=False)
    assert plan.mechanism == mechanism
    backend = TensorRT(fp16=True, max_batch_size=8)
    engine = backend._engine(_graph(tmp_path, mlp), mlp_samples.spec, BuildLog(), plan)
    built = trt.builders[-1]
    assert engine == b"engine"
    assert built.config.set == set_flags and built.config.cleared == ["TF32"]
    assert built.network.flags == network_mask
    assert built.config.profiling_verbosity == "detailed"


@pytest.mark.parametrize("generation", sorted(FAKES))
def test_fp32_and_tf32_requests_set_no_precision_flag(generation: str) -> None:
    """Without fp16 no precision flag and no cast is planned; TF32 is cleared unless asked."""
    trt = FAKES[generation]()
    plain = trt_precision_plan(trt, fp16=False, tf32=False)
    tf32 = trt_precision_plan(trt, fp16=False, tf32=True)
    assert (plain.mechanism, plain.set_flags, plain.clear_flags, plain.cast_to) == (
        "none",
        (),
        ("TF32",),
        None,
    )
    assert (tf32.requested, tf32.clear_flags) == ("tf32", ())
    assert network_flags(trt, plain) == 0


def _engine_with(info: dict[str, Any], io_dtype: str = "DataType.FLOAT") -> Any:
    inspector = SimpleNamespace(get_engine_information=lambda fmt: json.dumps(info))
    return SimpleNamespace(
        create_engine_inspector=lambda: inspector,
        num_io_tensors=1,
        get_tensor_name=lambda i: "input_0",
        get_tensor_dtype=lambda name: io_dtype,
    )


@pytest.mark.parametrize(
    ("generation", "info"),
    [
        ("10.16", {"Layers": [{"Outputs": [{"Format/Datatype": "Row major linear FP16 format"}]}]}),
        ("11.4", {"Layers": [{"Outputs": [{"Format": "kLINEAR", "DataType": "Half"}]}]}),
    ],
)
def test_effective_precision_is_read_from_the_engine_layers(
    generation: str, info: dict[str, Any]
) -> None:
    """The engine's precision comes from its inspector JSON in either generation's schema,
    even when its I/O tensors are float32."""
    trt = FAKES[generation]()
    assert engine_precision(trt, _engine_with(info), tf32=False) == ("float16", "engine_layers")


def test_without_layer_detail_the_io_tensor_types_are_used() -> None:
    """An inspector that names no data types falls back to the engine's I/O tensor types."""
    trt = FAKES["11.4"]()
    engine = _engine_with({"Layers": ["fc1", "relu"]}, io_dtype="DataType.HALF")
    assert engine_precision(trt, engine, tf32=False) == ("float16", "io_tensors")


def test_a_strongly_typed_fp16_engine_without_fp16_layers_is_refused() -> None:
    """On the cast path a float32 engine means the request was dropped: the build fails;
    on the flag path TensorRT may keep float32, which is recorded, not refused."""
    typed = trt_precision_plan(FAKES["11.4"](), fp16=True, tf32=False)
    flagged = trt_precision_plan(FAKES["10.16"](), fp16=True, tf32=False)
    with pytest.raises(RuntimeError, match="but the engine's layers are float32"):
        check_effective(typed, "float32")
    check_effective(typed, "float16")
    check_effective(flagged, "float32")


def test_compute_in_casts_a_copy_and_keeps_the_eager_dtypes(
    structured_module: nn.Module, structured_samples: Samples
) -> None:
    """The wrapper computes in bfloat16 on a cast copy, returns float32/int64 like eager,
    stays close to eager, and leaves the caller's module in float32."""
    batch = structured_samples.items[1]
    eager = batch.call(structured_module)
    wrapped = ComputeIn(structured_module, torch.bfloat16, output_dtypes(eager))
    got = batch.call(wrapped)
    assert next(wrapped.inner.parameters()).dtype == torch.bfloat16
    assert next(structured_module.parameters()).dtype == torch.float32
    assert got[0].dtype == torch.float32 and got[1]["argmax"].dtype == torch.int64
    torch.testing.assert_close(got[0], eager[0], rtol=5e-2, atol=5e-2)


@pytest.mark.heavy
def test_the_cast_module_exports_a_typed_onnx_graph_with_eager_io(
    mlp: nn.Module, mlp_samples: Samples, tmp_path: Path
) -> None:
    """What TensorRT 11 parses: float16 weights inside, float32 inputs and outputs, and the
    graph (run by ONNX Runtime on CPU) still matches eager."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from aitune_fp.effects.backends._onnx import export_onnx

    eager = mlp_samples.items[0].call(mlp)
    wrapped = ComputeIn(mlp, torch.float16, output_dtypes(eager)).eval()
    graph = export_onnx(wrapped, mlp_samples, torch.device("cpu"), tmp_path / "m.onnx", BuildLog())
    model = onnx.load(str(graph.path))
    float16, float32 = onnx.TensorProto.FLOAT16, onnx.TensorProto.FLOAT
    assert {i.data_type for i in model.graph.initializer} == {float16}
    assert [i.type.tensor_type.elem_type for i in model.graph.input] == [float32]
    assert [o.type.tensor_type.elem_type for o in model.graph.output] == [float32]
    session = ort.InferenceSession(str(graph.path), providers=["CPUExecutionProvider"])
    x = mlp_samples.items[1].args[0]
    (out,) = session.run(None, {"input_0": x.numpy()})
    torch.testing.assert_close(torch.from_numpy(out), mlp(x), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize(
    ("generation", "mechanism", "set_flags", "network_mask", "cast_to"),
    [
        ("10.16", "builder_flag", ["BF16"], 0, None),
        ("11.4", "strongly_typed_cast", [], 1 << 1, torch.bfloat16),
    ],
)
def test_bf16_engine_build_uses_the_mechanism_each_tensorrt_offers(
    generation: str,
    mechanism: str,
    set_flags: list[str],
    network_mask: int,
    cast_to: torch.dtype | None,
    mlp: nn.Module,
    mlp_samples: Samples,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """bf16 sets BuilderFlag.BF16 on TensorRT 10 (never FP16) and, on 11, casts the module
    to bfloat16 and builds a strongly typed network; TF32 is cleared."""
    trt = FAKES[generation]()
    monkeypatch.setitem(sys.modules, "tensorrt", trt)
    plan = trt_precision_plan(trt, fp16=False, tf32=False, bf16=True)
    assert (plan.mechanism, plan.requested, plan.cast_to) == (mechanism, "bfloat16", cast_to)
    backend = TensorRT(bf16=True, max_batch_size=8)
    backend._engine(_graph(tmp_path, mlp), mlp_samples.spec, BuildLog(), plan)
    built = trt.builders[-1]
    assert built.config.set == set_flags and built.config.cleared == ["TF32"]
    assert built.network.flags == network_mask


def test_the_bf16_cast_module_computes_in_bfloat16_with_eager_io(
    mlp: nn.Module, mlp_samples: Samples
) -> None:
    """On the strongly typed path the module exported is a bfloat16 copy with float32 I/O."""
    plan = trt_precision_plan(FAKES["11.4"](), fp16=False, tf32=False, bf16=True)
    typed = TensorRT._typed(mlp, mlp_samples, torch.device("cpu"), plan)
    assert isinstance(typed, ComputeIn) and typed.dtype == torch.bfloat16
    x = mlp_samples.items[0].args[0]
    assert typed(x).dtype == torch.float32
    torch.testing.assert_close(typed(x), mlp(x), rtol=5e-2, atol=5e-2)


def test_bf16_read_back_and_refusal() -> None:
    """An engine with BFloat16 layers reads bfloat16; a strongly typed bf16 engine whose
    layers are float32 is refused; fp16 and bf16 together are refused at planning."""
    info = {"Layers": [{"Outputs": [{"Format": "kLINEAR", "DataType": "BFloat16"}]}]}
    trt = FAKES["11.4"]()
    assert engine_precision(trt, _engine_with(info), tf32=False) == ("bfloat16", "engine_layers")
    typed = trt_precision_plan(trt, fp16=False, tf32=False, bf16=True)
    with pytest.raises(RuntimeError, match=r"asked for bfloat16 .* float32"):
        check_effective(typed, "float32")
    check_effective(typed, "bfloat16")
    with pytest.raises(ValueError, match="exclusive"):
        trt_precision_plan(trt, fp16=True, tf32=False, bf16=True)
