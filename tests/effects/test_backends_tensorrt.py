"""TensorRT and Torch-TensorRT: clear recorded failures without a GPU; real builds on one."""

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

from aitune_fp.effects.backends.base import Backend, Built
from aitune_fp.effects.backends.torch_trt import TorchTensorRT
from aitune_fp.effects.backends.trt import TensorRT
from aitune_fp.effects.checks.validate import validate
from aitune_fp.effects.inputs.samples import Samples

CPU = torch.device("cpu")
CUDA = torch.device("cuda", 0)
GPU_BACKENDS = [
    TensorRT(),
    TensorRT(bf16=True),
    TorchTensorRT(),
    TorchTensorRT(ir="torch_compile"),
    TorchTensorRT(bf16=True),
]


def _hide(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Make ``find_spec`` report ``names`` as not installed."""
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name in names else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=lambda b: b.describe())
def test_cpu_device_is_a_recorded_build_failure(
    backend: Backend, mlp: nn.Module, mlp_samples: Samples, work_dir: Path
) -> None:
    """On a CPU device each TensorRT backend fails its build with "needs a CUDA device"."""
    result = backend.build(mlp, mlp_samples, CPU, work_dir)
    failure = unsafe_perform_io(result.failure())
    assert (failure.stage, failure.message) == ("build", "needs a CUDA device")
    assert failure.backend == backend.describe()
    assert not work_dir.exists()


@pytest.mark.parametrize(
    ("backend", "library"),
    [
        (TensorRT(), "tensorrt"),
        (TensorRT(bf16=True), "tensorrt"),
        (TorchTensorRT(), "torch_tensorrt"),
        (TorchTensorRT(bf16=True), "torch_tensorrt"),
    ],
    ids=["tensorrt", "tensorrt-bf16", "torch_tensorrt", "torch_tensorrt-bf16"],
)
def test_missing_library_on_a_cuda_device_is_named(
    backend: Backend, library: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a CUDA device without the library, the reason is "<library> is not installed"."""
    _hide(monkeypatch, library)
    assert backend.unavailable_reason(CUDA) == f"{library} is not installed"


def test_bad_batch_ranges_are_refused() -> None:
    """An opt batch above the max batch, or an unknown IR, is refused at construction."""
    with pytest.raises(ValueError, match="opt_batch_size <= max_batch_size"):
        TensorRT(max_batch_size=4, opt_batch_size=8)
    with pytest.raises(ValueError, match="opt_batch_size <= max_batch_size"):
        TorchTensorRT(max_batch_size=4, opt_batch_size=8)
    with pytest.raises(ValueError, match="ir must be one of"):
        TorchTensorRT(ir="ts")


def test_precision_is_declared_for_validation() -> None:
    """fp16, bf16 and tf32 configs declare the precision validation loosens its bounds
    for; fp16 and bf16 together are refused."""
    assert (TensorRT().precision, TensorRT(tf32=True).precision) == ("float32", "tf32")
    assert TorchTensorRT(fp16=True).precision == "float16"
    for bf16 in (TensorRT(bf16=True), TorchTensorRT(bf16=True)):
        assert bf16.computes_in == "bfloat16" and bf16.describe().endswith("(bf16=True)")
    assert TorchTensorRT(bf16=True).dtype == torch.bfloat16
    for config in (TensorRT, TorchTensorRT):
        with pytest.raises(ValueError, match="fp16 and bf16 are exclusive"):
            config(fp16=True, bf16=True)


def test_bf16_builds_are_wide_search_variants_on_cuda_only() -> None:
    """The wide search adds the bf16 builds of both backends on CUDA (default keeps fp16);
    on CPU neither level has them."""
    from aitune_fp.core.accuracy import Search
    from aitune_fp.effects.backends.search_space import search_candidates

    def names(level: str, device: str) -> set[str]:
        return {b.describe() for b in search_candidates(Search(level), device)}

    bf16 = {"tensorrt(bf16=True)", "torch_tensorrt(bf16=True)"}
    assert bf16 <= names("wide", "cuda") and not bf16 & names("default", "cuda")
    assert "tensorrt(fp16=True)" in names("default", "cuda")
    assert not bf16 & names("wide", "cpu")


def _build_and_validate(
    backend: Backend, module: nn.Module, samples: Samples, device: torch.device, work_dir: Path
) -> Built:
    built: Built = unsafe_perform_io(backend.build(module, samples, device, work_dir).unwrap())
    result = validate(backend.describe(), built, module, samples, device, batch_sizes=(1, 8))
    assert isinstance(result, IOSuccess), result
    return built


@pytest.mark.gpu
@pytest.mark.parametrize(
    "backend",
    [
        TensorRT(max_batch_size=8),
        TensorRT(max_batch_size=8, fp16=True),
        TorchTensorRT(max_batch_size=8),
        TorchTensorRT(ir="torch_compile"),
    ],
    ids=lambda b: b.describe(),
)
def test_gpu_backends_build_and_validate_the_mlp(
    backend: Backend,
    mlp: nn.Module,
    mlp_samples: Samples,
    work_dir: Path,
    cuda: torch.device,
    skip_unless_available: Callable[[Any, torch.device], None],
) -> None:
    """Each TensorRT backend builds the tiny MLP on the GPU and matches eager."""
    skip_unless_available(backend, cuda)
    module = mlp.to(cuda)
    try:
        built = _build_and_validate(backend, module, mlp_samples, cuda, work_dir)
        out = built.runner(torch.randn(3, 4, device=cuda))
        assert out.device.type == "cuda" and out.shape == (3, 3)
        built.close()
    finally:
        mlp.to(CPU)


@pytest.mark.gpu
def test_tensorrt_engine_handles_nested_outputs_and_profile_limits(
    structured_module: nn.Module,
    structured_samples: Samples,
    work_dir: Path,
    cuda: torch.device,
    skip_unless_available: Callable[[Any, torch.device], None],
) -> None:
    """The engine rebuilds eager's tuple-with-dict, saves model.engine, refuses batches > max."""
    backend = TensorRT(max_batch_size=8)
    skip_unless_available(backend, cuda)
    module = structured_module.to(cuda)
    try:
        built = _build_and_validate(backend, module, structured_samples, cuda, work_dir)
        assert built.artifact == work_dir / "model.engine" and built.artifact.exists()
        x = torch.randn(9, 4, device=cuda)
        with pytest.raises(RuntimeError, match="outside the engine's optimisation profile"):
            built.runner(x, x)
    finally:
        structured_module.to(CPU)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "backend",
    [
        TensorRT(max_batch_size=8, fp16=True),
        TorchTensorRT(max_batch_size=8, fp16=True),
        TensorRT(max_batch_size=8, bf16=True),
        TorchTensorRT(max_batch_size=8, bf16=True),
    ],
    ids=lambda b: b.describe(),
)
def test_reduced_precision_builds_record_the_precision_read_back_from_the_engines(
    backend: Backend,
    mlp: nn.Module,
    mlp_samples: Samples,
    work_dir: Path,
    cuda: torch.device,
    skip_unless_available: Callable[[Any, torch.device], None],
) -> None:
    """An fp16 (bf16) build records the library version, the mechanism used and the
    precision read back from what it built (float16, bfloat16, unless TensorRT 10 kept
    float32 kernels), and validates."""
    skip_unless_available(backend, cuda)
    module = mlp.to(cuda)
    try:
        built = _build_and_validate(backend, module, mlp_samples, cuda, work_dir)
        info = built.info
        assert info["requested_precision"] == backend.computes_in
        assert info["precision_mechanism"] in {
            "builder_flag",
            "strongly_typed_cast",
            "explicit_typing_cast",
        }
        if info["precision_mechanism"] != "builder_flag":
            assert info["precision"] == backend.computes_in
        out = built.runner(torch.randn(3, 4, device=cuda))
        assert out.dtype == torch.float32
        built.close()
    finally:
        mlp.to(CPU)


@pytest.mark.gpu
def test_runners_share_one_dedicated_non_default_stream_per_device(cuda: torch.device) -> None:
    """The dedicated stream is not the legacy default stream and is the same object each time."""
    from aitune_fp.effects.backends._streams import dedicated_stream

    stream = dedicated_stream(cuda)
    assert stream is dedicated_stream(cuda)
    assert stream.cuda_stream != torch.cuda.default_stream(cuda).cuda_stream
    assert stream.device == cuda
