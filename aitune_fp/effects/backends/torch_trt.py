"""Torch-TensorRT, ahead of time (``ir="dynamo"``) or just in time (``ir="torch_compile"``).

Rules:
- ``dynamo`` (AOT): the program is the shared ``torch.export`` of the module's own call
  (:mod:`._shared_export`) with one dynamic ``batch`` dimension in ``[1, max_batch_size]``
  and the input spec's dynamic dimensions over their ranges (shared with every backend
  exporting the same module, dtype and batch bound; ``info["export"]`` says shared or
  fresh), compiled by ``torch_tensorrt.dynamo.compile`` with ``torch_tensorrt.Input``
  ranges (batch: min 1, opt ``opt_batch_size``, max ``max_batch_size``; dynamic
  dimensions: their min, opt and max),
  and saved to ``work_dir/model.ep`` (saving is best effort: a failure is logged and the
  backend still runs, without an artifact);
- ``torch_compile`` (JIT): ``torch.compile(backend="torch_tensorrt")``; engines are built
  on the first call of each new shape, which the build triggers once and the profiler's
  warm-up absorbs, and each new shape is checked again on its second call
  (:func:`._torch_trt_io.checked_per_shape`: no engine, or the wrong precision, raises);
- both get the tuned ``device`` as a compilation setting and ``pass_through_build_failures``
  on (Torch-TensorRT's default, off, quietly leaves a block that fails to build to PyTorch);
  compilation, the build's calls and every runner call happen with that CUDA device
  current (:func:`._streams.on_device`);
- Torch-TensorRT 2.12–2.14 is supported (:mod:`._versions`); ``fp16`` and ``bf16`` are
  honoured the way all of them do: explicit typing of a module cast to float16 or
  bfloat16 (a copy; floating inputs are cast on the way in, outputs back to the eager
  dtypes on the way out). ``enabled_precisions`` is never passed (2.13/2.14 dropped it,
  the JIT path ignores unknown keys, 2.12.1 asserts on it under explicit typing);
  ``fp16`` is in the default search on CUDA, ``bf16`` in the wide one;
- what ran is read back, not trusted (:mod:`._torch_trt_io`): after the first call (which
  compiles, for JIT) a second one records every TensorRT engine module that runs and the
  dtypes it received and produced; no engine (the whole module left in PyTorch: with
  ``MIN_BLOCK_SIZE`` 5 a small graph can end up so even without a failure), or an fp16
  (bf16) request whose engines saw no float16 (bfloat16), is a build failure;
- TF32 is off unless ``tf32`` (``disable_tf32``, where the installed version has it);
  ``options`` are extra ``(name, value)`` compilation settings; one the installed
  version's ``CompilationSettings`` does not have is a build failure, never dropped;
- ``torch_tensorrt`` is imported only inside this module's functions.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch
from returns.io import IOResult

from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends._availability import cuda_backend_reason
from aitune_fp.effects.backends._build_guard import BuildLog, available_build
from aitune_fp.effects.backends._engine_settings import EngineConfig
from aitune_fp.effects.backends._export import example_batch, spec_dynamic_shapes
from aitune_fp.effects.backends._precision import output_dtypes
from aitune_fp.effects.backends._runner import prepared
from aitune_fp.effects.backends._shared_export import on_program
from aitune_fp.effects.backends._streams import device_context, on_device
from aitune_fp.effects.backends._torch_trt_io import (
    called_engines,
    cast_batch,
    cast_io,
    check_precision,
    checked_per_shape,
    compilation_settings,
    shape_key,
)
from aitune_fp.effects.backends._versions import installed_version, unsupported
from aitune_fp.effects.backends.base import (
    Built,
    ConfigIdentity,
    Declaration,
    Library,
)
from aitune_fp.effects.inputs.samples import Samples, TensorSpec

IRS = ("dynamo", "torch_compile")
__all__ = ["IRS", "TorchTensorRT", "compilation_settings"]


@dataclass(frozen=True, slots=True)
class TorchTensorRT(EngineConfig, ConfigIdentity):
    """Compile the module with Torch-TensorRT.

    >>> TorchTensorRT().describe(), TorchTensorRT(ir="torch_compile").describe()
    ('torch_tensorrt', "torch_tensorrt(ir='torch_compile')")
    >>> TorchTensorRT(bf16=True).describe(), TorchTensorRT(bf16=True).dtype
    ('torch_tensorrt(bf16=True)', torch.bfloat16)
    >>> TorchTensorRT().unavailable_reason(torch.device("cpu"))
    'needs a CUDA device'
    """

    declaration: ClassVar[Declaration] = Declaration(
        order=50,
        compiles=True,
        libraries=("torch.export", "torch_tensorrt"),
        server_skips=("torch_tensorrt",),  # it may touch CUDA on import
        sdks=("torch_tensorrt",),
        versions=(
            Library(
                "torch_tensorrt", ("torch-tensorrt", "torch_tensorrt"), supported=((2, 12), (2, 15))
            ),
        ),
        extra="torch-tensorrt",
        defaults={"cuda": ({}, {"ir": "torch_compile"})},
        variants={"default": {"cuda": ({"fp16": True},)}, "wide": {"cuda": ({"bf16": True},)}},
        times_kernels=True,  # TensorRT times tactics under it
    )

    ir: str = "dynamo"
    fp16: bool = False
    tf32: bool = False
    max_batch_size: int = 1024
    opt_batch_size: int | None = None
    options: tuple[tuple[str, Any], ...] = ()
    bf16: bool = False
    name: str = field(default="torch_tensorrt", init=False)

    def __post_init__(self) -> None:
        if self.ir not in IRS:
            raise ValueError(f"torch_tensorrt ir must be one of {IRS}, got {self.ir!r}")
        self.engine  # noqa: B018  (checks the batch range)

    def unavailable_reason(self, device: torch.device) -> str | None:
        """Needs a CUDA device, ``torch_tensorrt`` and ``tensorrt``, in supported versions."""
        return cuda_backend_reason(device, "torch_tensorrt", "tensorrt") or unsupported(
            "torch_tensorrt", "tensorrt"
        )

    def build(
        self, module: torch.nn.Module, samples: Samples, device: torch.device, work_dir: Path
    ) -> IOResult[Built, BackendFailure]:
        """Compile (AOT: and save) the module, then run the first sample through it."""

        def build(log: BuildLog) -> Built:
            eager = prepared(module, device)
            first = samples.items[0].to(device)
            with torch.inference_mode():
                dtypes = output_dtypes(first.call(eager))
            cast = self.fp16 or self.bf16
            model = copy.deepcopy(eager).to(self.dtype) if cast else eager
            seen: list[torch.dtype] = []
            engines: list[torch.nn.Module] = []
            with device_context(device):
                if self.ir == "torch_compile":
                    compiled, artifact, export = self._jit(model, device), None, None
                else:
                    compiled, artifact, export = self._aot(model, samples, device, work_dir, log)
                runner = on_device(cast_io(compiled, self.dtype, dtypes), device)
                first.call(runner)  # JIT: compiles (no hook in the way of dynamo's tracing)
                with called_engines(engines, seen.extend):
                    first.call(runner)
            where = f"{len(engines)} TensorRT engine(s)"
            effective = check_precision(self.precision, seen, engines)
            log.write(f"effective precision {effective} (read from {where})")
            info = {
                "ir": self.ir,
                "torch_tensorrt_version": installed_version("torch_tensorrt"),
                "precision_mechanism": "explicit_typing_cast" if cast else "none",
                "requested_precision": self.precision,
                "precision": effective,
                "precision_source": where,
                "device": str(device),
            }
            if export is not None:
                info["export"] = export
            if self.ir == "torch_compile":
                runner = checked_per_shape(runner, self.precision, [first.call(shape_key)])
            return Built(runner, artifact=artifact, info=info)

        return available_build(self, device, work_dir, build)

    @property
    def dtype(self) -> torch.dtype:
        """The dtype the engines compute in."""
        return {"float16": torch.float16, "bfloat16": torch.bfloat16}.get(
            self.precision, torch.float32
        )

    def _settings(self, device: torch.device) -> dict[str, Any]:
        import torch_tensorrt

        known = {f.name for f in dataclasses.fields(torch_tensorrt.dynamo.CompilationSettings)}
        return compilation_settings(known, tf32=self.tf32, options=self.options, device=device)

    def _jit(self, model: torch.nn.Module, device: torch.device) -> Any:
        import torch_tensorrt  # noqa: F401  (registers the "torch_tensorrt" backend)

        return torch.compile(model, backend="torch_tensorrt", options=self._settings(device))

    def _input(self, row: TensorSpec, axis: int) -> Any:
        import torch_tensorrt

        low, opt, high = row.profile((1, self.opt_batch, self.max_batch_size), axis)
        return torch_tensorrt.Input(
            min_shape=low,
            opt_shape=opt,
            max_shape=high,
            dtype=self.dtype
            if getattr(torch, row.dtype).is_floating_point
            else getattr(torch, row.dtype),
        )

    def _aot(
        self,
        model: torch.nn.Module,
        samples: Samples,
        device: torch.device,
        work_dir: Path,
        log: BuildLog,
    ) -> tuple[Any, Path | None, str]:
        import torch_tensorrt

        spec = samples.spec
        batch = cast_batch(example_batch(samples, device), self.dtype)
        n_positional = len(spec.positional)
        rows = spec.tensors

        def compile_program(program: Any, _shared: object = None) -> Any:
            with log.timed("compile"):
                return torch_tensorrt.dynamo.compile(
                    program,
                    arg_inputs=[self._input(r, spec.batch_axis) for r in rows[:n_positional]],
                    kwarg_inputs={
                        r.name: self._input(r, spec.batch_axis) for r in rows[n_positional:]
                    },
                    **self._settings(device),
                )

        compiled, source = on_program(
            model, batch, spec, device, work_dir, log, compile_program, bound=self.max_batch_size
        )
        shapes = spec_dynamic_shapes(model, spec, self.max_batch_size)
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
        return compiled, path, source
