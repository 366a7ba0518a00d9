"""ONNX Runtime's runtime options and its CUDA-provider float16 variant."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from returns.io import IOFailure, IOSuccess
from returns.unsafe import unsafe_perform_io
from torch import nn

from aitune_fp.core.accuracy import Search
from aitune_fp.effects.backends._build_guard import BuildLog
from aitune_fp.effects.backends._onnx import saved_graph
from aitune_fp.effects.backends._ort_fp16 import float16_graph, session_graph
from aitune_fp.effects.backends.base import Built
from aitune_fp.effects.backends.ort import OnnxRuntime
from aitune_fp.effects.backends.search_space import search_candidates
from aitune_fp.effects.cache.artifact_cache import cache_key
from aitune_fp.effects.checks.validate import validate
from aitune_fp.effects.inputs.samples import Samples
from tests.cache_builds import cached

CPU = torch.device("cpu")
OPTIONS = {"intra_op_threads": 1, "graph_optimization": "basic", "execution_mode": "parallel"}


def _built(result: Any) -> Built:
    assert isinstance(result, IOSuccess), result
    built: Built = unsafe_perform_io(result.unwrap())
    return built


def test_runtime_options_are_described_but_share_the_artifact_key(
    mlp: nn.Module, mlp_samples: Samples
) -> None:
    """Threads, optimisation level and execution mode show in describe() and key() but not
    in the artifact cache's key; fp16 and precision change the artifact, so its key too."""
    tuned = OnnxRuntime(**OPTIONS)  # type: ignore[arg-type]
    assert tuned.describe() == (
        "onnxruntime(intra_op_threads=1, graph_optimization='basic', execution_mode='parallel')"
    )
    assert tuned.key() != OnnxRuntime().key()
    base = cache_key(mlp, mlp_samples, OnnxRuntime(), CPU)
    assert cache_key(mlp, mlp_samples, tuned, CPU) == base
    assert cache_key(mlp, mlp_samples, OnnxRuntime(precision="int8-dynamic"), CPU) != base
    fp16 = OnnxRuntime(provider="cuda", fp16=True)
    assert cache_key(mlp, mlp_samples, fp16, CPU) != cache_key(
        mlp, mlp_samples, OnnxRuntime(provider="cuda"), CPU
    )
    with pytest.raises(ValueError, match="execution_mode"):
        OnnxRuntime(execution_mode="eager")


@pytest.mark.heavy
def test_a_runtime_variant_reuses_the_cached_export_and_applies_its_options(
    mlp: nn.Module, mlp_samples: Samples, tmp_path: Path
) -> None:
    """The threads/optimisation variant is a cache hit on the plain config's entry, and its
    session runs with its own options (read back from the session)."""
    import onnxruntime as ort

    cache = tmp_path / "cache"
    first = _built(cached(OnnxRuntime(), mlp, mlp_samples, CPU, tmp_path / "a", cache))
    assert first.info.get("cache") == "stored"
    variant = OnnxRuntime(**OPTIONS)  # type: ignore[arg-type]
    hit = _built(cached(variant, mlp, mlp_samples, CPU, tmp_path / "b", cache))
    assert hit.info.get("cache") == "hit"
    session = variant.open_session(
        saved_graph(hit.artifact, mlp_samples.spec, _outputs(mlp, mlp_samples)),  # type: ignore[arg-type]
        mlp_samples.spec,
        CPU,
        tmp_path / "c",
    )
    options = session.get_session_options()
    assert options.intra_op_num_threads == 1
    assert options.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    assert options.execution_mode == ort.ExecutionMode.ORT_PARALLEL
    x = torch.randn(3, 4)
    torch.testing.assert_close(hit.runner(x), mlp(x), rtol=1e-4, atol=1e-5)


def _outputs(module: nn.Module, samples: Samples) -> Any:
    from torch.utils import _pytree as pytree

    with torch.inference_mode():
        return pytree.tree_flatten(samples.items[0].call(module))[1]


@pytest.mark.heavy
def test_the_float16_conversion_keeps_float32_io_and_only_the_cuda_provider_converts(
    mlp: nn.Module, mlp_samples: Samples, tmp_path: Path
) -> None:
    """ONNX Runtime's converter gives a float16 graph with float32 inputs and outputs that
    still computes the module; only fp16 on the CUDA provider converts (a graph rewrite,
    so it is checked here on a CUDA device object without a GPU)."""
    import onnx
    import onnxruntime as ort

    built = _built(OnnxRuntime().build(mlp, mlp_samples, CPU, tmp_path / "w"))
    assert built.artifact is not None
    graph = saved_graph(built.artifact, mlp_samples.spec, _outputs(mlp, mlp_samples))
    cuda = torch.device("cuda", 0)
    log = BuildLog()
    half = session_graph(
        OnnxRuntime(provider="cuda", fp16=True), graph, mlp_samples, cuda, tmp_path, log
    )
    assert half.path.name == "model.float16.onnx" and "convert" in log.seconds
    model = onnx.load(str(half.path))
    io = [*model.graph.input, *model.graph.output]
    assert {v.type.tensor_type.elem_type for v in io} == {onnx.TensorProto.FLOAT}
    weights = {t.data_type for t in model.graph.initializer if len(t.dims) == 2}
    assert weights == {onnx.TensorProto.FLOAT16}
    x = torch.randn(5, 4)
    session = ort.InferenceSession(str(half.path), providers=["CPUExecutionProvider"])
    got = torch.from_numpy(session.run(None, {model.graph.input[0].name: x.numpy()})[0])
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, mlp(x).detach(), rtol=2e-2, atol=2e-2)
    trt = OnnxRuntime(provider="tensorrt", fp16=True)
    assert session_graph(trt, graph, mlp_samples, cuda, tmp_path, BuildLog()) == graph
    assert session_graph(OnnxRuntime(), graph, mlp_samples, CPU, tmp_path, BuildLog()) == graph
    assert float16_graph(graph, tmp_path / "w", BuildLog()).path.is_file()


def test_cuda_float16_on_a_cpu_is_a_recorded_failure(
    mlp: nn.Module, mlp_samples: Samples, tmp_path: Path
) -> None:
    """Without a CUDA device the variant fails at build saying it needs one; on CUDA it is
    in the default search, computing in float16."""
    fp16 = OnnxRuntime(provider="cuda", fp16=True)
    result = fp16.build(mlp, mlp_samples, CPU, tmp_path)
    assert isinstance(result, IOFailure)
    failure = unsafe_perform_io(result.failure())
    assert failure.stage == "build" and "needs a CUDA device" in failure.message
    assert fp16.computes_in == "float16"
    assert fp16 in search_candidates(Search("default"), "cuda")
    assert fp16 not in search_candidates(Search("default"), "cpu")


@pytest.mark.gpu
def test_cuda_float16_builds_runs_float32_io_and_validates_at_the_float16_bound(
    mlp: nn.Module,
    mlp_samples: Samples,
    work_dir: Path,
    cuda: torch.device,
    skip_unless_available: Callable[[Any, torch.device], None],
) -> None:
    """On a GPU the converted graph runs on the CUDA provider with float32 tensors in and
    out, records float16, and passes validation at the float16 tolerance."""
    backend = OnnxRuntime(provider="cuda", fp16=True)
    skip_unless_available(backend, cuda)
    built = _built(backend.build(mlp, mlp_samples, cuda, work_dir))
    out = built.runner(torch.randn(3, 4, device=cuda))
    assert out.dtype == torch.float32 and out.device.type == "cuda"
    assert built.info["precision"] == "float16"
    assert built.info["providers"][0] == "CUDAExecutionProvider"
    result = validate("onnxruntime", built, mlp, mlp_samples, cuda, batch_sizes=(1, 8))
    assert isinstance(result, IOSuccess), result
