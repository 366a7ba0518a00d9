"""ONNX Runtime's GPU path, third review (issue 37 §5, §6, §7, §13), on CPU.

Sources checked: microsoft/onnxruntime ``onnxruntime/python/tools/transformers/float16.py``
(``convert_float_to_float16(model, ..., keep_io_types, disable_shape_infer)``: on a
``ModelProto`` it runs ``onnx.shape_inference.infer_shapes`` in memory unless
``disable_shape_infer``; ``infer_shapes`` refuses a model over protobuf's 2 GiB, while
``infer_shapes_path`` works on the file), ``tensorrt_execution_provider.cc`` (explicit
profiles on a partitioned graph: "User needs to provide all the dynamic shape inputs with
associated profiles if they want to explicitly set profiles through provider options.")
and ``tensorrt_execution_provider_info.cc`` (``trt_engine_cache_path``,
``trt_engine_cache_prefix``). The TensorRT EP dlopens ``libnvinfer.so.10`` when a session is
created, not when ``get_available_providers()`` lists it.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from torch import nn

import aitune_fp.effects.backends._ort_install as ort_install
import aitune_fp.effects.backends.ort as ort_module
from aitune_fp.effects.backends._build_guard import BuildLog
from aitune_fp.effects.backends._onnx import OnnxGraph, export_onnx
from aitune_fp.effects.backends._ort_session import (
    PARTITIONED_PROFILES,
    ProviderMismatch,
    open_profiled_session,
)
from aitune_fp.effects.backends.ort import OnnxRuntime
from aitune_fp.effects.cache.artifacts import artifact_files
from aitune_fp.effects.inputs.samples import Samples

CUDA = torch.device("cuda", 0)
CPU = torch.device("cpu")


def test_a_model_over_two_gib_converts_to_float16(
    mlp: nn.Module, mlp_samples: Samples, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the in-memory shape inference refusing the model as it refuses one over 2 GiB,
    the conversion still succeeds (shapes inferred on the file, the converter told not to
    infer), and a result above the protobuf limit is saved with external data that ONNX
    Runtime runs, inputs and outputs still float32."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from aitune_fp.effects.backends import _ort_fp16

    graph = export_onnx(mlp, mlp_samples, CPU, tmp_path / "model.onnx", BuildLog())

    def too_large(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("Message onnx.ModelProto exceeds maximum protobuf size of 2GB")

    monkeypatch.setattr(onnx.shape_inference, "infer_shapes", too_large)
    monkeypatch.setattr(_ort_fp16, "_PROTOBUF_LIMIT", 16)  # the result counts as large too
    half = _ort_fp16.float16_graph(graph, tmp_path, BuildLog())
    assert (tmp_path / "model.float16.onnx.data").is_file()
    assert not list(tmp_path.glob("*.shapes.onnx"))
    model = onnx.load(str(half.path))
    assert {v.type.tensor_type.elem_type for v in model.graph.input} == {onnx.TensorProto.FLOAT}
    x = torch.randn(3, 4)
    session = ort.InferenceSession(str(half.path), providers=["CPUExecutionProvider"])
    got = torch.from_numpy(session.run(None, {model.graph.input[0].name: x.numpy()})[0])
    torch.testing.assert_close(got, mlp(x).detach(), rtol=2e-2, atol=2e-2)


def _available_on_fake_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every check before the TensorRT EP's own passes: a CUDA device, the libraries, a
    supported version, the provider listed by ``get_available_providers()``."""
    for name in ("needs_cuda", "missing_library", "unsupported", "provider_missing"):
        monkeypatch.setattr(ort_module, name, lambda *a, **k: None)
    monkeypatch.setattr(ort_module, "cuda_unusable", lambda *a, **k: None)


def test_a_listed_tensorrt_ep_whose_libnvinfer_cannot_load_is_unavailable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The TensorRT EP listed but libnvinfer.so.10 not loadable: the config is unavailable
    with a reason naming the library and the fix; loadable: available; the CUDA provider
    never asks."""
    _available_on_fake_cuda(monkeypatch)
    asked: list[str] = []

    def cannot(name: str) -> Any:
        asked.append(name)
        raise OSError(f"{name}: cannot open shared object file: No such file or directory")

    monkeypatch.setattr(ort_install.ctypes, "CDLL", cannot)
    reason = OnnxRuntime(provider="tensorrt").unavailable_reason(CUDA)
    assert reason is not None and "libnvinfer.so.10" in reason and "LD_LIBRARY_PATH" in reason
    assert asked == ["libnvinfer.so.10"]
    assert OnnxRuntime(provider="cuda").unavailable_reason(CUDA) is None
    monkeypatch.setattr(ort_install.ctypes, "CDLL", lambda name: object())
    assert OnnxRuntime(provider="tensorrt").unavailable_reason(CUDA) is None


def test_tensorrt_is_loaded_before_a_tensorrt_ep_session_opens(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Opening a TensorRT-provider session first loads pip's TensorRT libraries, then
    creates the session; the engine cache lies beside the graph, named after it."""
    order: list[str] = []
    monkeypatch.setattr(ort_module, "load_tensorrt_libraries", lambda: order.append("load"))
    monkeypatch.setattr(ort_module, "dedicated_stream", lambda d: SimpleNamespace(cuda_stream=7))

    def opened(ort: Any, path: str, options: Any, providers: Any, said: Any) -> Any:
        order.append("session")
        return providers

    monkeypatch.setattr(ort_module, "open_profiled_session", opened)
    monkeypatch.setattr(ort_module, "session_options", lambda ort, config: None)
    monkeypatch.setitem(__import__("sys").modules, "onnxruntime", _fake_ort([]))
    graph = OnnxGraph(tmp_path / "model.onnx", ("input_0",), ("output_0",), None)  # type: ignore[arg-type]
    spec = _spec()
    providers = OnnxRuntime(provider="tensorrt").open_session(graph, spec, CUDA, tmp_path / "x")
    assert order == ["load", "session"]
    options = providers[0][1]
    assert options["trt_engine_cache_path"] == str(tmp_path)
    assert options["trt_engine_cache_prefix"] == "model.onnx.trt"


def test_the_engine_cache_travels_with_the_artifact(tmp_path: Path) -> None:
    """Engine and profile files the EP writes under the prefix are files of the ONNX
    artifact, so the artifact cache and ``save`` keep them with the graph."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    relu = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    graph = tmp_path / "model.onnx"
    onnx.save(helper.make_model(relu), str(graph))
    options = ort_module.trt_cache_options(graph)
    stem = Path(options["trt_engine_cache_path"]) / options["trt_engine_cache_prefix"]
    engine = Path(f"{stem}_1234567890_0_0_sm90.engine")
    profile = Path(f"{stem}_1234567890_0_0_sm90.profile")
    engine.write_bytes(b"e")
    profile.write_bytes(b"p")
    assert set(artifact_files(graph)) == {graph, engine, profile}


def _spec() -> Any:
    from aitune_fp.effects.inputs.samples import normalise_samples

    return normalise_samples(torch.zeros(1, 4)).spec


def _fake_ort(calls: list[list[Any]], refuse: str = "profiles") -> Any:
    """An ``onnxruntime`` whose ``InferenceSession`` refuses explicit profiles as the
    TensorRT EP does on a partitioned graph (``refuse="profiles"``; fallback off: it
    raises), refuses every session (``"always"``) or fails otherwise (``"other"``)."""

    class Session:
        def __init__(self, path: str, sess_options: Any, providers: Any, **kw: Any) -> None:
            calls.append(providers)
            trt = providers[0][1] if isinstance(providers[0], tuple) else {}
            if refuse == "other":
                raise RuntimeError("[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : out of memory")
            if refuse == "always" or "trt_profile_min_shapes" in trt:
                raise RuntimeError(f"[ONNXRuntimeError] : 1 : FAIL : {PARTITIONED_PROFILES} "
                                   "if they want to explicitly set profiles")  # fmt: skip
            self.names = [p[0] if isinstance(p, tuple) else p for p in providers]

        def get_providers(self) -> list[str]:
            return self.names

    return SimpleNamespace(InferenceSession=Session, SessionOptions=lambda: None)


TRT = {"device_id": 0, "trt_fp16_enable": True, "trt_profile_min_shapes": "x:1x4",
       "trt_profile_opt_shapes": "x:8x4", "trt_profile_max_shapes": "x:8x4"}  # fmt: skip
PROVIDERS = [("TensorrtExecutionProvider", TRT), ("CUDAExecutionProvider", {})]


def test_a_partitioned_graph_refusing_explicit_profiles_is_retried_without_them() -> None:
    """The EP's "provide all the dynamic shape inputs with associated profiles" refusal
    opens the session again without the three profile options (everything else kept) and
    says so."""
    calls: list[list[Any]] = []
    said: list[str] = []
    session = open_profiled_session(_fake_ort(calls), "m.onnx", None, PROVIDERS, said.append)
    assert session.get_providers() == ["TensorrtExecutionProvider", "CUDAExecutionProvider"]
    assert len(calls) == 2 and calls[1][0][1] == {"device_id": 0, "trt_fp16_enable": True}
    assert calls[1][1] == ("CUDAExecutionProvider", {})
    assert any("retrying without explicit profiles" in s for s in said)


@pytest.mark.parametrize(("refuse", "tries"), [("always", 2), ("other", 1)])
def test_other_session_failures_are_not_hidden_by_the_retry(refuse: str, tries: int) -> None:
    """A refusal that stands without profiles fails after the one retry; any other failure
    is raised at once, never retried."""
    calls: list[list[Any]] = []
    with pytest.raises(ProviderMismatch):
        open_profiled_session(_fake_ort(calls, refuse), "m.onnx", None, PROVIDERS)
    assert len(calls) == tries
