"""TensorRT: ONNX → engine with one optimisation profile over the batch axis, run in place.

Rules:
- the module is exported to ``work_dir/model.onnx`` (dynamo exporter, dynamic batch) and
  parsed by TensorRT's ONNX parser; the engine gets one optimisation profile with batch
  ``1`` (min), ``opt_batch_size`` (opt, default ``max_batch_size``) and ``max_batch_size``
  (max) on every input's batch axis, and is serialised to ``work_dir/model.engine``;
- ``fp16`` lets TensorRT choose half-precision kernels; TF32 is off unless ``tf32``;
- the engine is run by :class:`~._trt_runtime.EngineRunner` on torch CUDA tensors; a
  batch beyond the profile is an error naming it;
- ``tensorrt`` is imported only inside this module's functions (TensorRT 10 API).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import torch
from returns.io import IOResult

from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends._availability import cuda_backend_reason
from aitune_fp.effects.backends._engine_settings import EngineSettings
from aitune_fp.effects.backends._guard import BuildLog, available_build
from aitune_fp.effects.backends._onnx import OnnxGraph, export_onnx
from aitune_fp.effects.backends._runner import prepared
from aitune_fp.effects.backends._trt_runtime import EngineRunner, engine_logger
from aitune_fp.effects.backends.base import Built, ConfigIdentity
from aitune_fp.effects.inputs import InputSpec, Samples


@dataclass(frozen=True, slots=True)
class TensorRT(ConfigIdentity, EngineSettings):
    """Build a TensorRT engine from the ONNX export and run it with torch tensors.

    ``workspace_mib`` caps TensorRT's scratch memory (None: TensorRT's default).

    >>> TensorRT(fp16=True).describe()
    'tensorrt(fp16=True)'
    >>> TensorRT().unavailable_reason(torch.device("cpu"))
    'needs a CUDA device'
    >>> TensorRT(max_batch_size=8, opt_batch_size=16)
    Traceback (most recent call last):
    ...
    ValueError: need 1 <= opt_batch_size <= max_batch_size, got 16 and 8
    """

    libraries: ClassVar[tuple[str, ...]] = ("torch.onnx", "onnxscript", "tensorrt")
    """Modules the build imports (see :mod:`aitune_fp.effects.preload`)."""

    fp16: bool = False
    tf32: bool = False
    workspace_mib: int | None = None
    max_batch_size: int = 1024
    opt_batch_size: int | None = None
    name: str = field(default="tensorrt", init=False)

    def __post_init__(self) -> None:
        self.check_batch_range()
        if self.workspace_mib is not None and self.workspace_mib < 1:
            raise ValueError(f"workspace_mib must be >= 1, got {self.workspace_mib}")

    def unavailable_reason(self, device: torch.device) -> str | None:
        """Needs a CUDA device, ``tensorrt`` and the ONNX exporter's ``onnxscript``."""
        return cuda_backend_reason(device, "tensorrt", "onnxscript")

    def build(
        self, module: torch.nn.Module, samples: Samples, device: torch.device, work_dir: Path
    ) -> IOResult[Built, BackendFailure]:
        """Export to ONNX, build and save the engine, load it and run the first sample."""

        def build(log: BuildLog) -> Built:
            model = prepared(module, device)
            graph = export_onnx(
                model,
                samples,
                device,
                work_dir / "model.onnx",
                log,
                max_batch_size=self.max_batch_size,
            )
            with torch.cuda.device(device):
                engine_bytes = self._engine(graph, samples.spec, log)
                path = work_dir / "model.engine"
                path.write_bytes(engine_bytes)
                runner = EngineRunner(engine_bytes, graph, samples.spec, device, log)
                samples.items[0].to(device).call(runner)
            info = {
                "precision": self.precision,
                "max_batch_size": self.max_batch_size,
                "device": str(device),
            }
            return Built(runner, runner.close, artifact=path, info=info)

        return available_build(self, device, work_dir, build)

    def _engine(self, graph: OnnxGraph, spec: InputSpec, log: BuildLog) -> bytes:
        """Parse the ONNX file and build a serialised engine with the batch profile."""
        import tensorrt as trt

        logger = engine_logger(log)
        builder = trt.Builder(logger)
        network = builder.create_network(0)
        parser = trt.OnnxParser(network, logger)
        if not parser.parse_from_file(str(graph.path)):
            errors = "; ".join(str(parser.get_error(i)) for i in range(parser.num_errors))
            raise RuntimeError(f"TensorRT could not parse the ONNX graph: {errors}")
        config = builder.create_builder_config()
        if self.workspace_mib is not None:
            config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, self.workspace_mib << 20)
        if self.fp16:
            config.set_flag(trt.BuilderFlag.FP16)
        if not self.tf32:
            config.clear_flag(trt.BuilderFlag.TF32)
        profile = builder.create_optimization_profile()
        rows = {t.name: t for t in spec.tensors}
        axis = spec.batch_axis
        for i in range(network.num_inputs):
            name = network.get_input(i).name
            row = rows[name]
            profile.set_shape(
                name,
                row.shape(1, axis),
                row.shape(self.opt_batch, axis),
                row.shape(self.max_batch_size, axis),
            )
        config.add_optimization_profile(profile)
        serialized = builder.build_serialized_network(network, config)
        if serialized is None:
            raise RuntimeError("TensorRT could not build the engine (its log is above)")
        log.write(
            f"engine built: {network.num_inputs} inputs, profile max batch {self.max_batch_size}"
        )
        return bytes(serialized)
