"""The fourth GPU review's small defects, each against a fake of the library API it meets
(issue 46 §4, §5, §10, §11, §12): TensorRT cache hits judged as builds, one build at a time
on a CUDA device, the providers step's TensorRT SKIP, ORT provider libraries loaded before
a config is offered, and the shape-lazy TensorRT EP recorded."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from aitune_fp.effects.backends import _ort_install, _ort_session, ort, trt
from aitune_fp.effects.backends.base import LoadRequest
from aitune_fp.shell import prebuild

CUDA0 = torch.device("cuda", 0)


def _fake_tensorrt() -> types.ModuleType:
    """The names ``trt_precision_plan`` reads (TensorRT Python API: ``__version__``,
    ``BuilderFlag.FP16``/``TF32``; TensorRT 10 still has the FP16 builder flag)."""
    fake = types.ModuleType("tensorrt")
    fake.__version__ = "10.16.0"  # type: ignore[attr-defined]
    fake.BuilderFlag = SimpleNamespace(FP16=0, BF16=1, TF32=2)  # type: ignore[attr-defined]
    return fake


class ReadsFloat32:
    """An ``EngineRunner`` whose engine inspector lists every layer as float32 (fused
    Myelin ``ForeignNode`` layers of an fp16 engine read so)."""

    def __init__(self, *args: Any) -> None:
        self.args = args

    def precision(self, *, tf32: bool) -> tuple[str | None, str]:
        return "float32", "engine_layers"

    def close(self) -> None:
        pass


def test_a_tensorrt_cache_hit_is_judged_at_the_precision_its_build_was(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An fp16 engine loaded back whose layers read as float32 is judged at float16, as its
    build recorded it (not at float32, which fails the bound and rebuilds on every hit);
    the read-back is kept beside it."""
    monkeypatch.setitem(sys.modules, "tensorrt", _fake_tensorrt())
    monkeypatch.setattr(trt, "EngineRunner", ReadsFloat32)
    monkeypatch.setattr(trt, "saved_graph", lambda *args: None)
    engine = tmp_path / "model.engine"
    engine.write_bytes(b"plan")
    log = SimpleNamespace(write=lambda line: None)
    request = LoadRequest(engine, None, None, CUDA0, tmp_path, log)  # type: ignore[arg-type]
    info = trt._load_engine(trt.TensorRT(fp16=True), request).info
    assert info["precision"] == "float16" and info["precision_read_back"] == "float32"
    assert trt._load_engine(trt.TensorRT(), request).info["precision"] == "float32"


def test_a_cuda_tune_runs_one_build_at_a_time_on_its_device() -> None:
    """On a CUDA device at most one build runs at once (Inductor/AOTI autotune on the
    device), so nothing is built ahead; the CPU keeps its cores' rule and an explicit
    ``AITUNE_FP_PREBUILD`` still wins."""
    assert prebuild.builds_at_once({}, 16, 0.0, "cuda") == 1
    assert prebuild.builds_at_once({}, 16, 0.0, "cpu") == 8
    assert prebuild.builds_at_once({"AITUNE_FP_PREBUILD": "3"}, 16, 0.0, "cuda") == 3


def _load_gpu_check() -> types.ModuleType:
    scripts = Path(__file__).resolve().parents[2] / "scripts"
    spec = importlib.util.spec_from_file_location("gpu_check_r4", scripts / "gpu_check.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_providers_step_skips_a_tensorrt_ep_whose_tensorrt_cannot_load(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With a GPU onnxruntime offering both providers (``get_available_providers``) but no
    ``libnvinfer.so.10`` loadable, the providers step says SKIP with the tuner's reason
    instead of opening the TensorRT EP and failing; the CUDA session still runs."""
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    opened: list[list[str]] = []

    def session(ort_: Any, path: str, options: Any, asked: list[str]) -> Any:
        opened.append(asked)
        if asked[0] == "TensorrtExecutionProvider":  # what ONNX Runtime raises then
            raise _ort_session.ProviderMismatch("Failed to load libnvinfer.so.10")
        return SimpleNamespace(get_providers=lambda: asked)

    def no_nvinfer(name: str) -> None:
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(_ort_install, "provider_missing", lambda provider: None)
    monkeypatch.setattr(_ort_session, "open_checked_session", session)
    real = _ort_install.tensorrt_ep_unloadable
    monkeypatch.setattr(_ort_install, "tensorrt_ep_unloadable", lambda load=None: real(no_nvinfer))
    assert _load_gpu_check().providers() == 0
    out = capsys.readouterr().out
    assert "SKIP provider tensorrt: onnxruntime's TensorRT EP needs libnvinfer.so.10" in out
    assert "PASS provider cuda" in out and "FAIL" not in out
    assert [a[0] for a in opened] == ["CUDAExecutionProvider"]


def test_an_ort_provider_whose_library_cannot_load_is_unavailable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``libonnxruntime_providers_cuda.so`` failing to load (``ctypes.CDLL`` raising
    ``OSError`` as dlopen does for a CUDA-12 build beside a CUDA-13 torch) makes the
    provider unavailable with that reason, before any export; the config's availability
    consults it ahead of CUDA's own."""
    (tmp_path / "libonnxruntime_providers_cuda.so").write_bytes(b"")
    (tmp_path / "libonnxruntime_providers_shared.so").write_bytes(b"")
    loaded: list[str] = []

    def dlopen(path: str) -> None:
        loaded.append(Path(path).name)
        if path.endswith("cuda.so"):
            raise OSError("libcudart.so.12: cannot open shared object file")

    why = _ort_install.provider_unloadable("CUDAExecutionProvider", tmp_path, dlopen)
    assert why is not None and "libcudart.so.12" in why and "CUDAExecutionProvider" in why
    assert loaded == ["libonnxruntime_providers_shared.so", "libonnxruntime_providers_cuda.so"]
    assert _ort_install.provider_unloadable("CUDAExecutionProvider", tmp_path, len) is None
    pytest.importorskip("onnxruntime")
    monkeypatch.setattr(ort, "provider_missing", lambda provider: None)
    monkeypatch.setattr(ort, "unsupported", lambda name: None)
    monkeypatch.setattr(ort, "provider_unloadable", lambda provider: f"{provider} cannot load")
    reason = ort.OnnxRuntime(provider="cuda").unavailable_reason(CUDA0)
    assert reason == "CUDAExecutionProvider cannot load"


class PartitionedOrt:
    """``onnxruntime`` as the TensorRT EP answers a partitioned graph: explicit profiles
    refused with its own words, the session opened without them."""

    @staticmethod
    def InferenceSession(
        path: str, sess_options: Any, providers: list[Any], enable_fallback: int
    ) -> Any:
        options = providers[0][1]
        if "trt_profile_min_shapes" in options:
            raise RuntimeError(f"[ONNXRuntimeError] {_ort_session.PARTITIONED_PROFILES} ...")
        return SimpleNamespace(get_providers=lambda: _ort_session.provider_names(providers))


def test_a_partitioned_graphs_tensorrt_ep_is_recorded_as_shape_lazy() -> None:
    """When the TensorRT EP refuses explicit profiles (a partitioned graph) the session is
    opened without them and the record says the engines are shape-lazy (built per larger
    shape, in production too); an accepted profile is recorded as explicit."""
    said = _ort_session.SaidDuringOpen()
    trt_options = {"trt_profile_min_shapes": "x:1x4", "device_id": 0}
    providers = [("TensorrtExecutionProvider", trt_options), "CUDAExecutionProvider"]
    _ort_session.open_profiled_session(PartitionedOrt, "m.onnx", None, providers, said)
    facts = said.profile_facts("tensorrt")
    assert facts["trt_profiles"].startswith("shape-lazy: the graph is partitioned")
    config = ort.OnnxRuntime(provider="tensorrt")
    session = SimpleNamespace(get_providers=lambda: ["TensorrtExecutionProvider"])
    info = ort.ort_info(config, session, CUDA0, said)
    assert info["trt_profiles"] == facts["trt_profiles"]
    assert ort.ort_info(config, session, CUDA0, _ort_session.SaidDuringOpen())["trt_profiles"] == (
        "explicit"
    )


class FakeTorchTensorRTModule(torch.nn.Module):
    """Named as Torch-TensorRT's runtime engine module (``TorchTensorRTModule``), which the
    build's forward hook recognises by its class."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2.0


class FallsBackAtLargerBatches(torch.nn.Module):
    """A ``torch.compile(backend="torch_tensorrt")`` graph whose recompile for a larger batch
    fell back to PyTorch: an engine at batch 1, plain torch ops beyond it."""

    def __init__(self) -> None:
        super().__init__()
        self.engine = FakeTorchTensorRTModule()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.engine(x) if x.shape[0] == 1 else x * 2.0


def test_a_torch_tensorrt_jit_shape_that_fell_back_to_pytorch_raises() -> None:
    """The JIT runner is checked again at each new input shape: a batch size whose graph
    has no TensorRT engine raises on its second call (the first compiles) instead of being
    timed as ``torch_tensorrt``; a shape with an engine keeps running."""
    from aitune_fp.effects.backends._torch_trt_io import checked_per_shape, shape_key

    one, eight = torch.ones(1, 4), torch.ones(8, 4)
    runner = checked_per_shape(FallsBackAtLargerBatches(), "float32", [shape_key(one)])
    for _ in range(3):
        assert torch.equal(runner(one), one * 2.0)
    assert torch.equal(runner(eight), eight * 2.0)  # compiles: not checked yet
    with pytest.raises(RuntimeError, match=r"at input shapes \[\(8, 4\)\]: Torch-TensorRT built"):
        runner(eight)
    fresh = checked_per_shape(FallsBackAtLargerBatches(), "float32")
    fresh(torch.ones(1, 4))
    assert torch.equal(fresh(torch.ones(1, 4)), torch.full((1, 4), 2.0))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_real_jit_build_runs_engines_at_every_swept_batch(tmp_path: Path) -> None:
    """On a GPU with Torch-TensorRT, the JIT runner passes its per-shape check at each batch
    a sweep would time (two calls each: compile, then the checked one)."""
    pytest.importorskip(
        "torch_tensorrt", reason="needs an optional GPU library: Torch-TensorRT is not installed"
    )
    from aitune_fp.effects.backends.torch_trt import TorchTensorRT
    from aitune_fp.effects.inputs.samples import normalise_samples
    from aitune_fp.shell.io import perform

    module = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU()).eval()
    samples = normalise_samples(torch.randn(1, 64))
    config = TorchTensorRT(ir="torch_compile")
    built = perform(config.build(module, samples, CUDA0, tmp_path)).unwrap()
    for batch in (1, 8, 32):
        x = torch.randn(batch, 64, device=CUDA0)
        for _ in range(2):
            assert built.runner(x).shape == (batch, 64)


def test_engines_are_tuned_at_the_batch_the_strategy_judges() -> None:
    """A latency strategy that sweeps batch sizes (a user's, composed from ``min_latency``)
    gets TensorRT and Torch-TensorRT profiles tuned at batch 1, not at the sweep's largest
    (4096 on CUDA); a throughput strategy at the largest; a user's own opt is kept and
    backends without a profile are untouched."""
    import dataclasses

    from aitune_fp import max_throughput, min_latency
    from aitune_fp.core.strategy import ProfilingPlan
    from aitune_fp.effects.backends.inductor import InductorJIT
    from aitune_fp.effects.backends.torch_trt import TorchTensorRT
    from aitune_fp.shell.tune_run import _sized

    swept_latency = dataclasses.replace(min_latency, plan=ProfilingPlan())
    configs = [trt.TensorRT(), TorchTensorRT(), trt.TensorRT(opt_batch_size=16), InductorJIT()]
    sized = _sized(configs, 4096, swept_latency)
    assert [getattr(c, "opt_batch", None) for c in sized] == [1, 1, 16, None]
    assert all(c.max_batch_size == 4096 for c in sized[:3])  # type: ignore[attr-defined]
    assert [c.opt_batch for c in _sized(configs[:2], 256, max_throughput)] == [256, 256]  # type: ignore[attr-defined]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_the_provider_library_check_predicts_the_session(tmp_path: Path) -> None:
    """On a GPU with a GPU onnxruntime, ``provider_unloadable`` says None exactly when a
    session on that provider opens (a loadable library that fails the session, or the
    reverse, would make the check useless)."""
    onnx = pytest.importorskip("onnx")
    onnxruntime = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = str(tmp_path / "relu.onnx")
    onnx.save(model, path)
    checked = 0
    for provider in ("CUDAExecutionProvider", "TensorrtExecutionProvider"):
        if provider not in onnxruntime.get_available_providers():
            continue
        checked += 1
        why = _ort_install.provider_unloadable(provider)
        asked = [provider, "CUDAExecutionProvider"][: 1 + (provider != "CUDAExecutionProvider")]
        try:
            _ort_session.open_checked_session(
                onnxruntime, path, onnxruntime.SessionOptions(), asked
            )
            opened = True
        except _ort_session.ProviderMismatch:
            opened = False
        assert opened is (why is None), why
    if not checked:
        pytest.skip("this onnxruntime has no GPU provider")
