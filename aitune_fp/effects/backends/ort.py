"""ONNX Runtime: dynamo ONNX export with a dynamic batch axis, run by an InferenceSession.

Rules:
- ``provider``: ``"cpu"``, ``"cuda"``, ``"tensorrt"`` or ``"auto"`` (CUDA on a CUDA device,
  else CPU); CPU needs a CPU device, CUDA and TensorRT a CUDA device and a build with them;
- the session must run on the providers asked for (:mod:`._ort_session`): ONNX Runtime's
  quiet fallback is off and ``get_providers()`` is checked, so a provider that did not load
  is a build failure naming what was asked, what runs and ONNX Runtime's reason; the
  providers really used are recorded in the build's info;
- a GPU provider shadowed by another build, or whose library (CUDA, cuDNN, TensorRT) cannot
  load here, is unavailable with that reason before any export (:mod:`._ort_install`);
- the session's runner (:mod:`._ort_runners`) feeds numpy views on CPU and binds torch
  tensors in place with IO binding on CUDA, where the CUDA and TensorRT providers compute
  on the device's dedicated stream (:mod:`._streams`, ``user_compute_stream``); outputs
  come back in the eager module's structure (tensor, tuple, list or dict);
- the session runs the export, its int8 form (:mod:`.ort_quant`) or, for ``fp16`` on the
  CUDA provider, its float16 form (:mod:`._ort_fp16`); threads, graph optimisation and
  execution mode are session options outside the artifact's cache key;
- ``onnxruntime`` is imported only inside this module's functions; longer than 260 lines:
  one backend in one file, the house's rule (as ``openvino.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch
from returns.io import IOResult

from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends._availability import (
    cuda_unusable,
    first_reason,
    missing_library,
    needs_cuda,
)
from aitune_fp.effects.backends._build_guard import BuildLog, available_build
from aitune_fp.effects.backends._engine_settings import batch_range
from aitune_fp.effects.backends._onnx import OnnxGraph, export_onnx, saved_graph
from aitune_fp.effects.backends._ort_config import PROVIDERS, config_problem
from aitune_fp.effects.backends._ort_fp16 import session_graph
from aitune_fp.effects.backends._ort_info import ort_info, ort_precision
from aitune_fp.effects.backends._ort_install import (
    load_tensorrt_libraries,
    provider_missing,
    provider_unloadable,
)
from aitune_fp.effects.backends._ort_runners import session_runner
from aitune_fp.effects.backends._ort_session import (
    SaidDuringOpen,
    open_profiled_session,
    session_options,
    trt_cache_options,
    trt_profile_options,
)
from aitune_fp.effects.backends._runner import prepared
from aitune_fp.effects.backends._runtime_fields import keyed_when_set, runtime_option
from aitune_fp.effects.backends._streams import dedicated_stream, device_index
from aitune_fp.effects.backends._versions import unsupported
from aitune_fp.effects.backends.base import (
    Backend,
    Built,
    ConfigIdentity,
    Declaration,
    Library,
    LoadRequest,
)
from aitune_fp.effects.backends.ort_quant import QUANTIZED
from aitune_fp.effects.inputs.samples import InputSpec, Samples


def _load_saved(config: OnnxRuntime, request: LoadRequest) -> Built:
    """A session on a saved ONNX model with ``config``'s provider and options."""
    spec, device = request.spec, request.device
    graph = saved_graph(request.artifact, spec, request.outputs)
    session = config.open_session(graph, spec, device, request.work_dir, said := SaidDuringOpen())
    runner = session_runner(session, graph, spec, device)
    return Built(runner, artifact=request.artifact, info=ort_info(config, session, device, said))


@dataclass(frozen=True, slots=True)
class OnnxRuntime(ConfigIdentity):
    """Export to ``work_dir/model.onnx`` and run it with an ONNX Runtime session.

    Runtime options (session options, not part of the artifact's cache key:
    :mod:`._runtime_fields`): ``intra_op_threads`` (0 lets ONNX Runtime choose),
    ``graph_optimization`` (``disable``/``basic``/``extended``/``all``) and
    ``execution_mode`` (``sequential``/``parallel``); ``session_config`` holds extra
    ``(key, value)`` session config entries. ``fp16`` makes the TensorRT provider build
    fp16 engines and the CUDA provider run the graph converted to float16
    (:mod:`._ort_fp16`); ``max_batch_size`` and ``opt_batch_size`` set the TensorRT
    provider's optimisation profile (batch 1 / ``opt_batch`` / ``max_batch_size``: opt is
    the strategy's batch, :func:`aitune_fp.core.engine_batch.engine_opt_batch`, as for the
    TensorRT engines; it is the TensorRT provider's only and enters the keys only when set,
    so no CPU or CUDA config's cache key changed); ``tf32`` lets the CUDA provider use TF32
    matmuls.

    >>> OnnxRuntime().describe(), OnnxRuntime(provider="tensorrt", fp16=True).describe()
    ('onnxruntime', "onnxruntime(provider='tensorrt', fp16=True)")
    >>> OnnxRuntime(provider="gpu")
    Traceback (most recent call last):
    ...
    ValueError: onnxruntime provider must be one of ('auto', 'cpu', 'cuda', 'tensorrt'), got 'gpu'
    """

    declaration: ClassVar[Declaration] = Declaration(
        order=30,
        libraries=("torch.onnx", "onnxscript", "onnxruntime"),
        sdks=("onnxruntime", "tensorrt"),  # tensorrt: loads the TensorRT EP's libraries
        sdk_modules=(
            "aitune_fp.effects.backends.ort_quant",
            "aitune_fp.effects.backends._ort_fp16",
            "aitune_fp.effects.backends._ort_install",
            "aitune_fp.effects.generation.onnx_steps",  # generation: the cache as inputs/outputs
        ),
        versions=(
            Library("onnx", ("onnx",)),
            Library(
                "onnxruntime",
                ("onnxruntime", "onnxruntime-gpu", "onnxruntime-openvino"),
                supported=((1, 18), None),
            ),
        ),
        extra="onnx",
        loader=_load_saved,
        defaults={"cpu": ({},), "cuda": ({}, {"provider": "tensorrt"})},
        variants={
            "default": {
                "cpu": (
                    {"precision": "int8-dynamic"},
                    {"graph_optimization": "basic"},
                ),
                "cuda": (
                    {"provider": "tensorrt", "fp16": True},
                    {"provider": "cuda", "fp16": True},
                ),
            },
            "wide": {
                "cpu": (
                    {"precision": "int8-static"},
                    {"intra_op_threads": 1},
                    {"intra_op_threads": 1, "graph_optimization": "basic"},
                )
            },
        },
    )

    provider: str = "auto"
    intra_op_threads: int = runtime_option(0)
    graph_optimization: str = runtime_option("all")
    execution_mode: str = runtime_option("sequential")
    fp16: bool = False
    tf32: bool = False
    max_batch_size: int = 1024
    opt_batch_size: int | None = keyed_when_set()
    session_config: tuple[tuple[str, str], ...] = ()
    precision: str = "float32"
    """``float32``, or ``int8-dynamic``/``int8-static`` (:mod:`.ort_quant`, CPU provider)."""
    name: str = field(default="onnxruntime", init=False)

    def __post_init__(self) -> None:
        problem = config_problem(self)
        if problem is not None:
            raise ValueError(problem)

    @property
    def calibrated(self) -> bool:
        """Whether the artifact depends on the samples' values (static quantization)."""
        return self.precision == "int8-static"

    @property
    def computes_in(self) -> str:
        """``int8`` when quantized, ``float16`` with ``fp16``, else ``float32``.

        >>> OnnxRuntime(precision="int8-static").computes_in
        'int8'
        """
        if self.precision in QUANTIZED:
            return "int8"
        return "float16" if self.fp16 else "float32"

    @property
    def opt_batch(self) -> int:
        """The TensorRT provider's optimisation batch: ``opt_batch_size``, else the max.

        >>> OnnxRuntime(provider="tensorrt", max_batch_size=64, opt_batch_size=1).opt_batch
        1
        """
        return self.opt_batch_size if self.opt_batch_size is not None else self.max_batch_size

    def with_batch_range(self, max_batch_size: int) -> Backend:
        """The TensorRT provider's batch range set (an opt above it lowered to it); other
        providers fix none ahead of time (itself)."""
        if self.provider != "tensorrt":
            return self
        return batch_range(self, max_batch_size)

    def resolved_provider(self, device: torch.device) -> str:
        """The provider this config uses on ``device`` (``auto`` resolved).

        >>> OnnxRuntime().resolved_provider(torch.device("cpu"))
        'cpu'
        """
        if self.provider != "auto":
            return self.provider
        return "cuda" if device.type == "cuda" else "cpu"

    def unavailable_reason(self, device: torch.device) -> str | None:
        """Why this provider cannot run on ``device`` here, or None."""
        provider = self.resolved_provider(device)
        if self.precision != "float32" and provider != "cpu":
            return f"{self.precision} quantization is searched on the CPU provider only"
        if provider == "cpu":
            return first_reason(
                lambda: None if device.type == "cpu" else "the CPU provider needs a CPU device",
                lambda: missing_library("onnxruntime", "onnxscript"),
            )
        return first_reason(
            lambda: needs_cuda(device),
            lambda: missing_library("onnxruntime", "onnxscript"),
            lambda: unsupported("onnxruntime"),
            lambda: provider_missing(PROVIDERS[provider]),
            lambda: provider_unloadable(PROVIDERS[provider]),
            cuda_unusable,
        )

    def build(
        self, module: torch.nn.Module, samples: Samples, device: torch.device, work_dir: Path
    ) -> IOResult[Built, BackendFailure]:
        """Export to ONNX, open a session and run the first sample through it."""

        def build(log: BuildLog) -> Built:
            model = prepared(module, device)
            graph = export_onnx(model, samples, device, work_dir / "model.onnx", log)
            graph = session_graph(self, graph, samples, device, work_dir, log)
            said = SaidDuringOpen(log.write)
            with log.timed("compile"):
                session = self.open_session(graph, samples.spec, device, work_dir, said)
            info = ort_info(self, session, device, said)
            log.write(f"session providers: {info['providers']}")
            runner = session_runner(session, graph, samples.spec, device)
            samples.items[0].to(device).call(runner)
            return Built(runner, artifact=graph.path, info={**info, "export": graph.export})

        return available_build(self, device, work_dir, build)

    def _precision(self, device: torch.device) -> str:
        """The precision this config computes in on ``device`` (``int8`` when quantized)."""
        if self.precision in QUANTIZED:
            return "int8"
        return ort_precision(self.resolved_provider(device), fp16=self.fp16, tf32=self.tf32)

    def open_session(
        self,
        graph: OnnxGraph,
        spec: InputSpec,
        device: torch.device,
        work_dir: Path,
        said_to: Callable[[str], None] = lambda _: None,
    ) -> Any:
        """An ``InferenceSession`` on ``graph`` with this config's options and providers
        (the TensorRT provider caches its engines beside the graph, as files of the
        artifact: :func:`~._ort_session.trt_cache_options`); raises
        :class:`~._ort_session.ProviderMismatch` unless it runs on those providers."""
        import onnxruntime as ort

        options = session_options(ort, self)
        providers = self._providers(spec, device, graph.path)
        if self.resolved_provider(device) == "tensorrt":
            load_tensorrt_libraries()  # the EP dlopens libnvinfer by soname at session creation
        return open_profiled_session(ort, str(graph.path), options, providers, said_to)

    def _providers(self, spec: InputSpec, device: torch.device, graph: Path) -> list[Any]:
        provider = self.resolved_provider(device)
        if provider == "cpu":
            return ["CPUExecutionProvider"]
        index = device_index(device)
        stream = {"user_compute_stream": str(dedicated_stream(device).cuda_stream)}
        cuda = (
            "CUDAExecutionProvider",
            {"device_id": index, "use_tf32": int(self.tf32), **stream},
        )
        if provider == "cuda":
            return [cuda]
        trt = {"device_id": index, **stream, "trt_fp16_enable": self.fp16}
        profile = trt_profile_options(spec, self.max_batch_size, self.opt_batch)
        trt |= trt_cache_options(graph) | profile
        return [("TensorrtExecutionProvider", trt), cuda]
