"""TensorRT: ONNX → engine with one optimisation profile over the batch axis, run in place.

Rules:
- the module is exported to ``work_dir/model.onnx`` (dynamo exporter, dynamic batch) and
  parsed by TensorRT's ONNX parser; the engine gets one optimisation profile with batch
  ``1`` (min), ``opt_batch_size`` (opt, default ``max_batch_size``) and ``max_batch_size``
  (max) on every input's batch axis, and is serialised to ``work_dir/model.engine``;
- ``fp16`` lets TensorRT choose half-precision kernels; TF32 is off unless ``tf32``;
- the runner binds torch CUDA tensors by address (``set_input_shape``,
  ``set_tensor_address``), allocates outputs with torch and enqueues on the current torch
  stream with ``execute_async_v3``; a batch beyond the profile is an error naming it;
- ``tensorrt`` is imported only inside this module's functions (TensorRT 10 API).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from returns.io import IOResult

from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends._availability import (
    cuda_unusable,
    first_reason,
    missing_library,
    needs_cuda,
)
from aitune_fp.effects.backends._export import flat_inputs
from aitune_fp.effects.backends._guard import BuildLog, guarded_build, unavailable
from aitune_fp.effects.backends._onnx import OnnxGraph, export_onnx
from aitune_fp.effects.backends._runner import prepared
from aitune_fp.effects.backends.base import Built, config_key, describe_config
from aitune_fp.effects.inputs import InputSpec, Samples


@dataclass(frozen=True, slots=True)
class TensorRT:
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

    fp16: bool = False
    tf32: bool = False
    workspace_mib: int | None = None
    max_batch_size: int = 1024
    opt_batch_size: int | None = None
    name: str = field(default="tensorrt", init=False)

    def __post_init__(self) -> None:
        if not 1 <= self.opt_batch <= self.max_batch_size:
            raise ValueError(
                "need 1 <= opt_batch_size <= max_batch_size, "
                f"got {self.opt_batch_size} and {self.max_batch_size}"
            )
        if self.workspace_mib is not None and self.workspace_mib < 1:
            raise ValueError(f"workspace_mib must be >= 1, got {self.workspace_mib}")

    @property
    def opt_batch(self) -> int:
        """The batch size the profile is tuned for."""
        return self.opt_batch_size if self.opt_batch_size is not None else self.max_batch_size

    @property
    def precision(self) -> str:
        """The least precise arithmetic the engine may use."""
        return "float16" if self.fp16 else "tf32" if self.tf32 else "float32"

    def describe(self) -> str:
        """``tensorrt`` plus the fields that differ from the defaults."""
        return describe_config(self)

    def key(self) -> str:
        """A stable hash of this config."""
        return config_key(self)

    def unavailable_reason(self, device: torch.device) -> str | None:
        """Needs a CUDA device, ``tensorrt`` and the ONNX exporter's ``onnxscript``."""
        return first_reason(
            lambda: needs_cuda(device),
            lambda: missing_library("tensorrt", "onnxscript"),
            cuda_unusable,
        )

    def build(
        self, module: torch.nn.Module, samples: Samples, device: torch.device, work_dir: Path
    ) -> IOResult[Built, BackendFailure]:
        """Export to ONNX, build and save the engine, load it and run the first sample."""
        reason = self.unavailable_reason(device)
        if reason is not None:
            return unavailable(self.describe(), reason)

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
                runner = _EngineRunner(engine_bytes, graph, samples.spec, device, log)
                samples.items[0].to(device).call(runner)
            info = {
                "precision": self.precision,
                "max_batch_size": self.max_batch_size,
                "device": str(device),
            }
            return Built(runner, runner.close, artifact=path, info=info)

        return guarded_build(self.describe(), work_dir, build)

    def _engine(self, graph: OnnxGraph, spec: InputSpec, log: BuildLog) -> bytes:
        """Parse the ONNX file and build a serialised engine with the batch profile."""
        import tensorrt as trt

        logger = _logger(log)
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


def _logger(log: BuildLog) -> Any:
    """A TensorRT logger writing warnings and errors into the build log."""
    import tensorrt as trt

    kept = (
        trt.ILogger.Severity.INTERNAL_ERROR,
        trt.ILogger.Severity.ERROR,
        trt.ILogger.Severity.WARNING,
    )

    class _Logger(trt.ILogger):  # type: ignore[misc]
        def __init__(self) -> None:
            trt.ILogger.__init__(self)

        def log(self, severity: Any, msg: str) -> None:
            if severity in kept:
                log.write(f"tensorrt {severity}: {msg}")

    return _Logger()


def _torch_dtype(trt_dtype: Any) -> torch.dtype:
    """The torch dtype of a TensorRT tensor dtype."""
    import tensorrt as trt

    table = {
        trt.float32: torch.float32,
        trt.float16: torch.float16,
        trt.bfloat16: torch.bfloat16,
        trt.int8: torch.int8,
        trt.int32: torch.int32,
        trt.int64: torch.int64,
        trt.bool: torch.bool,
        trt.uint8: torch.uint8,
    }
    if trt_dtype not in table:
        raise TypeError(f"TensorRT tensor type {trt_dtype} has no torch equivalent here")
    return table[trt_dtype]


class _EngineRunner:
    """Runs a deserialised engine on torch CUDA tensors; ``close()`` frees the engine."""

    def __init__(
        self,
        engine_bytes: bytes,
        graph: OnnxGraph,
        spec: InputSpec,
        device: torch.device,
        log: BuildLog,
    ) -> None:
        import tensorrt as trt

        self._logger = _logger(log)  # TensorRT keeps a pointer to it: keep it alive
        self._runtime = trt.Runtime(self._logger)
        self._engine = self._runtime.deserialize_cuda_engine(engine_bytes)
        if self._engine is None:
            raise RuntimeError("TensorRT could not deserialise the engine it just built")
        self._context = self._engine.create_execution_context()
        names = [self._engine.get_tensor_name(i) for i in range(self._engine.num_io_tensors)]
        is_input = {n: self._engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT for n in names}
        self._inputs = tuple(
            (n, graph.input_names.index(n), _torch_dtype(self._engine.get_tensor_dtype(n)))
            for n in names
            if is_input[n]
        )
        outputs = sorted((n for n in names if not is_input[n]), key=graph.output_names.index)
        self._outputs = tuple((n, _torch_dtype(self._engine.get_tensor_dtype(n))) for n in outputs)
        self._flatten = flat_inputs(spec)
        self._rebuild = graph.layout.rebuild
        self._device = device

    def __call__(self, *args: torch.Tensor, **kwargs: torch.Tensor) -> Any:
        """Run the engine on the call's tensors; outputs in the eager structure."""
        context = self._context
        flat = self._flatten(*args, **kwargs)
        held = [flat[p].to(dtype).contiguous() for _, p, dtype in self._inputs]
        for (name, _, _), t in zip(self._inputs, held, strict=True):
            if not context.set_input_shape(name, tuple(t.shape)):
                raise RuntimeError(
                    f"input {name!r} of shape {tuple(t.shape)} is outside the engine's "
                    "optimisation profile (rebuild with a larger max_batch_size)"
                )
            context.set_tensor_address(name, t.data_ptr())
        outputs = []
        for name, dtype in self._outputs:
            shape = tuple(context.get_tensor_shape(name))
            if any(d < 0 for d in shape):
                raise RuntimeError(f"output {name!r} has a data-dependent shape {shape}")
            out = torch.empty(shape, dtype=dtype, device=self._device)
            context.set_tensor_address(name, out.data_ptr())
            outputs.append(out)
        if not context.execute_async_v3(torch.cuda.current_stream(self._device).cuda_stream):
            raise RuntimeError("TensorRT execute_async_v3 reported a failure")
        return self._rebuild(outputs)

    def close(self) -> None:
        """Drop the execution context, engine and runtime (frees their device memory)."""
        self._context = None
        self._engine = None
        self._runtime = None
