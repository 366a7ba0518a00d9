"""ONNX Runtime's TensorRT provider profile is tuned at the strategy's batch (issue 46 §6),
and the field that carries it changes no CPU or CUDA config's cache key."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest
import torch

from aitune_fp import max_throughput, min_latency
from aitune_fp.core.strategy import ProfilingPlan
from aitune_fp.effects.backends import _ort_session, ort
from aitune_fp.effects.backends._runtime_fields import artifact_key
from aitune_fp.effects.inputs.samples import normalise_samples
from aitune_fp.shell.tune_run import _sized

CUDA0 = torch.device("cuda", 0)


class FakeOrt:
    """The ``onnxruntime`` names ``OnnxRuntime.open_session`` uses (onnxruntime's Python
    API: ``SessionOptions``, ``GraphOptimizationLevel``, ``ExecutionMode`` and
    ``InferenceSession(path, sess_options=, providers=[(name, options), ...])``, whose
    ``get_providers()`` lists the providers in use); each session's providers are kept."""

    opened: ClassVar[list[list[Any]]] = []
    SessionOptions = SimpleNamespace
    GraphOptimizationLevel = SimpleNamespace(ORT_ENABLE_ALL=99, ORT_ENABLE_BASIC=1)
    ExecutionMode = SimpleNamespace(ORT_SEQUENTIAL=0, ORT_PARALLEL=1)

    @staticmethod
    def InferenceSession(path: str, sess_options: Any, providers: list[Any], **kw: Any) -> Any:
        FakeOrt.opened.append(providers)
        return SimpleNamespace(get_providers=lambda: _ort_session.provider_names(providers))


def _trt_options(config: ort.OnnxRuntime, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The TensorRT provider options ``config`` opens a session with on cuda:0 (fakes of
    onnxruntime, the dedicated stream and the TensorRT library loader)."""
    FakeOrt.opened = []
    monkeypatch.setitem(sys.modules, "onnxruntime", FakeOrt)
    monkeypatch.setattr(ort, "dedicated_stream", lambda device: SimpleNamespace(cuda_stream=7))
    monkeypatch.setattr(ort, "device_index", lambda device: 0)
    monkeypatch.setattr(ort, "load_tensorrt_libraries", lambda: None)
    spec = normalise_samples([torch.zeros(1, 8)]).spec
    graph: Any = SimpleNamespace(path=Path("/w/model.onnx"))
    config.open_session(graph, spec, CUDA0, Path("/w"))
    (name, options), _cuda = FakeOrt.opened[0]
    assert name == "TensorrtExecutionProvider"
    return dict(options)


def test_the_tensorrt_providers_profile_opts_at_the_strategys_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Sized as a tune sizes its candidates, ONNX Runtime's TensorRT provider gets the
    profile min 1, opt the strategy's batch (1 for a latency strategy sweeping to 4096, the
    largest for a throughput one), max the largest; a user's own opt is kept."""
    swept_latency = dataclasses.replace(min_latency, plan=ProfilingPlan())
    trt = ort.OnnxRuntime(provider="tensorrt", fp16=True)
    (latency,) = _sized([trt], 4096, swept_latency)
    options = _trt_options(latency, monkeypatch)  # type: ignore[arg-type]
    assert options["trt_profile_min_shapes"] == "input_0:1x8"
    assert options["trt_profile_opt_shapes"] == "input_0:1x8"
    assert options["trt_profile_max_shapes"] == "input_0:4096x8"
    (throughput,) = _sized([trt], 256, max_throughput)
    options = _trt_options(throughput, monkeypatch)  # type: ignore[arg-type]
    assert options["trt_profile_opt_shapes"] == "input_0:256x8"
    (own,) = _sized([dataclasses.replace(trt, opt_batch_size=16)], 4096, swept_latency)
    assert _trt_options(own, monkeypatch)["trt_profile_opt_shapes"] == "input_0:16x8"  # type: ignore[arg-type]


KEYS_BEFORE = {
    # describe(): (key(), artifact_key()) as they were before opt_batch_size existed
    "onnxruntime": ("adcf4fac86d4dcc1", "aceb6052a2856ea4"),
    "onnxruntime(provider='cpu', precision='int8-dynamic')": (
        "144e60713e60f14c",
        "160b4ed78b120f3e",
    ),
    "onnxruntime(graph_optimization='basic')": ("7cb5e9c695e2445d", "aceb6052a2856ea4"),
    "onnxruntime(provider='cuda', fp16=True)": ("0f09ee01e7d650d5", "2d66b74e8fbb5691"),
    "onnxruntime(provider='tensorrt', fp16=True, max_batch_size=64)": (
        "f4618381d5d3b4ee",
        "b0bcc297c1a3682c",
    ),
}


def test_cpu_and_cuda_configs_keep_their_cache_keys_under_any_strategy() -> None:
    """Every ONNX Runtime config that sets no opt batch (all CPU and CUDA ones, sized by a
    latency or a throughput tune alike) keeps the key and artifact key it had before the
    field existed; a TensorRT config given an opt batch gets keys of its own."""
    configs = [
        ort.OnnxRuntime(),
        ort.OnnxRuntime(provider="cpu", precision="int8-dynamic"),
        ort.OnnxRuntime(graph_optimization="basic"),
        ort.OnnxRuntime(provider="cuda", fp16=True),
    ]
    for strategy in (min_latency, max_throughput):
        for config in _sized(configs, 64, strategy):
            assert (config.key(), artifact_key(config)) == KEYS_BEFORE[config.describe()]
    trt = ort.OnnxRuntime(provider="tensorrt", fp16=True, max_batch_size=64)
    assert (trt.key(), artifact_key(trt)) == KEYS_BEFORE[trt.describe()]
    opt = dataclasses.replace(trt, opt_batch_size=1)
    assert opt.key() != trt.key() and artifact_key(opt) != artifact_key(trt)


def test_an_opt_batch_is_the_tensorrt_providers_only_and_within_its_range() -> None:
    """``opt_batch_size`` on another provider, or outside 1 … ``max_batch_size``, is
    refused when the config is made; a smaller batch range lowers it."""
    with pytest.raises(ValueError, match="TensorRT provider only"):
        ort.OnnxRuntime(opt_batch_size=1)
    with pytest.raises(ValueError, match="need 1 <= opt_batch_size <= max_batch_size"):
        ort.OnnxRuntime(provider="tensorrt", max_batch_size=8, opt_batch_size=16)
    lowered = ort.OnnxRuntime(provider="tensorrt", opt_batch_size=64).with_batch_range(16)
    assert lowered.opt_batch == 16  # type: ignore[attr-defined]
