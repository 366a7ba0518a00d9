"""Torch-TensorRT, ahead of time (``ir="dynamo"``) or just in time (``ir="torch_compile"``).

Rules:
- ``dynamo`` (AOT): the module is exported with ``torch.export`` and one dynamic ``batch``
  dimension in ``[1, max_batch_size]``, compiled by ``torch_tensorrt.dynamo.compile`` with
  ``torch_tensorrt.Input`` ranges (min 1, opt ``opt_batch_size``, max ``max_batch_size``),
  and saved to ``work_dir/model.ep`` (saving is best effort: a failure is logged and the
  backend still runs, without an artifact);
- ``torch_compile`` (JIT): ``torch.compile(backend="torch_tensorrt")``; engines are built
  on the first call of each new shape, which the build triggers once and the profiler's
  warm-up absorbs;
- ``fp16`` adds half precision to the enabled precisions; TF32 is off unless ``tf32``;
  ``options`` are extra ``(name, value)`` compilation settings passed through unchanged
  (e.g. ``("min_block_size", 1)`` or ``("use_explicit_typing", False)``);
- ``torch_tensorrt`` is imported only inside this module's functions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch
from returns.io import IOResult

from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends._availability import cuda_backend_reason
from aitune_fp.effects.backends._engine_settings import EngineSettings
from aitune_fp.effects.backends._export import (
    batch_dim,
    example_batch,
    signature_dynamic_shapes,
)
from aitune_fp.effects.backends._guard import BuildLog, available_build
from aitune_fp.effects.backends._runner import in_inference_mode, prepared
from aitune_fp.effects.backends.base import Built, ConfigIdentity
from aitune_fp.effects.inputs import Samples, TensorSpec

IRS = ("dynamo", "torch_compile")


@dataclass(frozen=True, slots=True)
class TorchTensorRT(ConfigIdentity, EngineSettings):
    """Compile the module with Torch-TensorRT.

    >>> TorchTensorRT().describe(), TorchTensorRT(ir="torch_compile").describe()
    ('torch_tensorrt', "torch_tensorrt(ir='torch_compile')")
    >>> TorchTensorRT().unavailable_reason(torch.device("cpu"))
    'needs a CUDA device'
    """

    libraries: ClassVar[tuple[str, ...]] = ("torch.export", "torch_tensorrt")
    """Modules the build imports (see :mod:`aitune_fp.effects.preload`)."""

    ir: str = "dynamo"
    fp16: bool = False
    tf32: bool = False
    max_batch_size: int = 1024
    opt_batch_size: int | None = None
    options: tuple[tuple[str, Any], ...] = ()
    name: str = field(default="torch_tensorrt", init=False)

    def __post_init__(self) -> None:
        if self.ir not in IRS:
            raise ValueError(f"torch_tensorrt ir must be one of {IRS}, got {self.ir!r}")
        self.check_batch_range()

    def unavailable_reason(self, device: torch.device) -> str | None:
        """Needs a CUDA device, ``torch_tensorrt`` and ``tensorrt``."""
        return cuda_backend_reason(device, "torch_tensorrt", "tensorrt")

    def build(
        self, module: torch.nn.Module, samples: Samples, device: torch.device, work_dir: Path
    ) -> IOResult[Built, BackendFailure]:
        """Compile (AOT: and save) the module, then run the first sample through it."""

        def build(log: BuildLog) -> Built:
            model = prepared(module, device)
            if self.ir == "torch_compile":
                runner, artifact = self._jit(model), None
            else:
                runner, artifact = self._aot(model, samples, device, work_dir, log)
            samples.items[0].to(device).call(runner)
            info = {"ir": self.ir, "precision": self.precision, "device": str(device)}
            return Built(runner, artifact=artifact, info=info)

        return available_build(self, device, work_dir, build)

    def _settings(self) -> dict[str, Any]:
        precisions = {torch.float16, torch.float32} if self.fp16 else {torch.float32}
        return {"enabled_precisions": precisions, "disable_tf32": not self.tf32} | dict(
            self.options
        )

    def _jit(self, model: torch.nn.Module) -> Any:
        import torch_tensorrt  # noqa: F401  (registers the "torch_tensorrt" backend)

        compiled = torch.compile(model, backend="torch_tensorrt", options=self._settings())
        return in_inference_mode(compiled)

    def _input(self, row: TensorSpec, axis: int) -> Any:
        import torch_tensorrt

        return torch_tensorrt.Input(
            min_shape=row.shape(1, axis),
            opt_shape=row.shape(self.opt_batch, axis),
            max_shape=row.shape(self.max_batch_size, axis),
            dtype=getattr(torch, row.dtype),
        )

    def _aot(
        self,
        model: torch.nn.Module,
        samples: Samples,
        device: torch.device,
        work_dir: Path,
        log: BuildLog,
    ) -> tuple[Any, Path | None]:
        import torch_tensorrt

        spec = samples.spec
        batch = example_batch(samples, device)
        shapes = signature_dynamic_shapes(
            model, batch, spec.batch_axis, batch_dim(self.max_batch_size)
        )
        program = torch.export.export(
            model, batch.args, dict(batch.kwargs), dynamic_shapes=shapes, strict=False
        )
        n_positional = len(spec.positional)
        rows = spec.tensors
        compiled = torch_tensorrt.dynamo.compile(
            program,
            arg_inputs=[self._input(r, spec.batch_axis) for r in rows[:n_positional]],
            kwarg_inputs={r.name: self._input(r, spec.batch_axis) for r in rows[n_positional:]},
            **self._settings(),
        )
        path: Path | None = work_dir / "model.ep"
        try:
            torch_tensorrt.save(
                compiled,
                str(path),
                output_format="exported_program",
                arg_inputs=list(batch.args),
                kwarg_inputs=dict(batch.kwargs),
                dynamic_shapes=shapes,
            )
            log.write(f"saved to {path}")
        except Exception as error:
            log.write(f"could not save the compiled program (runs without artifact): {error!r}")
            path = None
        return in_inference_mode(compiled), path
