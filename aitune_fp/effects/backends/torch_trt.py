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
  warm-up absorbs;
- Torch-TensorRT 2.12–2.14 is supported (:mod:`._versions`); ``fp16`` is honoured the way
  all of them do: explicit typing of a module cast to float16 (a copy; floating inputs are
  cast on the way in, outputs back to the eager dtypes on the way out).
  ``enabled_precisions`` is never passed (2.13/2.14 dropped it, the JIT path ignores
  unknown keys, 2.12.1 asserts on it under explicit typing);
- what ran is read back, not trusted: AOT records the dtypes the TensorRT engine
  submodules received and produced on the first call, and a compiled module with no
  TensorRT engine, or an fp16 request whose engines saw no float16, is a build failure; JIT
  checks the dtypes of the compiled function's floating outputs before they are cast back;
- TF32 is off unless ``tf32`` (``disable_tf32``, where the installed version has it);
  ``options`` are extra ``(name, value)`` compilation settings; one the installed
  version's ``CompilationSettings`` does not have is a build failure, never dropped;
- ``torch_tensorrt`` is imported only inside this module's functions.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch
import torch.utils._pytree as pytree
from returns.io import IOResult

from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends._availability import cuda_backend_reason
from aitune_fp.effects.backends._engine_settings import EngineSettings
from aitune_fp.effects.backends._export import example_batch, spec_dynamic_shapes
from aitune_fp.effects.backends._guard import BuildLog, available_build
from aitune_fp.effects.backends._precision import output_dtypes
from aitune_fp.effects.backends._runner import in_inference_mode, prepared
from aitune_fp.effects.backends._shared_export import on_program
from aitune_fp.effects.backends._versions import installed_version, unsupported
from aitune_fp.effects.backends.base import Built, ConfigIdentity
from aitune_fp.effects.inputs import Batch, Samples, TensorSpec

IRS = ("dynamo", "torch_compile")


@dataclass(frozen=True, slots=True)
class TorchTensorRT(ConfigIdentity):
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
        self.engine  # noqa: B018  (checks the batch range)

    @property
    def engine(self) -> EngineSettings:
        """This config's precision and batch-range settings, as one value."""
        return EngineSettings(self.fp16, self.tf32, self.max_batch_size, self.opt_batch_size)

    @property
    def opt_batch(self) -> int:
        """The batch size the optimisation profile is tuned for."""
        return self.engine.opt_batch

    @property
    def precision(self) -> str:
        """The requested precision (the least precise arithmetic allowed)."""
        return self.engine.precision

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
            model = copy.deepcopy(eager).to(self.dtype) if self.fp16 else eager
            seen: list[torch.dtype] = []
            if self.ir == "torch_compile":
                compiled, artifact, export = self._jit(model), None, None
                runner = cast_io(compiled, self.dtype, dtypes, seen.extend)
                samples.items[0].to(device).call(runner)
                where, engines = "compiled outputs", None
            else:
                compiled, artifact, export = self._aot(model, samples, device, work_dir, log)
                runner = cast_io(compiled, self.dtype, dtypes, lambda _: None)
                engines = trt_engine_modules(compiled)
                with engine_dtypes(engines, seen.extend):
                    samples.items[0].to(device).call(runner)
                where = f"{len(engines)} TensorRT engine(s)"
            effective = check_precision(self.precision, seen, engines)
            log.write(f"effective precision {effective} (read from {where})")
            info = {
                "ir": self.ir,
                "torch_tensorrt_version": installed_version("torch_tensorrt"),
                "precision_mechanism": "explicit_typing_cast" if self.fp16 else "none",
                "requested_precision": self.precision,
                "precision": effective,
                "precision_source": where,
                "device": str(device),
            }
            if export is not None:
                info["export"] = export
            return Built(runner, artifact=artifact, info=info)

        return available_build(self, device, work_dir, build)

    @property
    def dtype(self) -> torch.dtype:
        """The dtype the engines compute in."""
        return torch.float16 if self.fp16 else torch.float32

    def _settings(self) -> dict[str, Any]:
        import torch_tensorrt

        known = {f.name for f in dataclasses.fields(torch_tensorrt.dynamo.CompilationSettings)}
        return compilation_settings(known, tf32=self.tf32, options=self.options)

    def _jit(self, model: torch.nn.Module) -> Any:
        import torch_tensorrt  # noqa: F401  (registers the "torch_tensorrt" backend)

        return torch.compile(model, backend="torch_tensorrt", options=self._settings())

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

        def compile_program(program: Any) -> Any:
            with log.timed("compile"):
                return torch_tensorrt.dynamo.compile(
                    program,
                    arg_inputs=[self._input(r, spec.batch_axis) for r in rows[:n_positional]],
                    kwarg_inputs={
                        r.name: self._input(r, spec.batch_axis) for r in rows[n_positional:]
                    },
                    **self._settings(),
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


def compilation_settings(
    known: set[str], *, tf32: bool, options: tuple[tuple[str, Any], ...]
) -> dict[str, Any]:
    """The settings passed to Torch-TensorRT: TF32 policy where supported, plus ``options``;
    an option the installed version does not know is refused (it would be dropped quietly).

    >>> compilation_settings({"disable_tf32", "min_block_size"}, tf32=False,
    ...                      options=(("min_block_size", 1),))
    {'disable_tf32': True, 'min_block_size': 1}
    >>> compilation_settings({"min_block_size"}, tf32=False, options=(("enabled_precisions", 1),))
    Traceback (most recent call last):
    ...
    ValueError: this Torch-TensorRT has no compilation setting 'enabled_precisions'
    """
    settings: dict[str, Any] = {"disable_tf32": not tf32} if "disable_tf32" in known else {}
    for name, value in options:
        if name not in known:
            raise ValueError(f"this Torch-TensorRT has no compilation setting {name!r}")
        settings[name] = value
    return settings


def cast_batch(batch: Batch, dtype: torch.dtype) -> Batch:
    """``batch`` with its floating tensors in ``dtype`` (integers untouched)."""

    def cast(t: torch.Tensor) -> torch.Tensor:
        return t.to(dtype) if t.is_floating_point() else t

    return Batch(
        tuple(cast(a) for a in batch.args),
        {k: cast(v) for k, v in batch.kwargs.items()},
        batch.size,
    )


def cast_io(
    compiled: Callable[..., Any],
    dtype: torch.dtype,
    eager_dtypes: tuple[torch.dtype, ...],
    saw: Callable[[list[torch.dtype]], None],
) -> Callable[..., Any]:
    """A runner feeding ``compiled`` floating inputs in ``dtype`` and returning its outputs
    in the eager dtypes; ``saw`` gets the dtypes of the floating outputs before the cast.

    >>> run = cast_io(lambda x: x * 2, torch.float16, (torch.float32,), print)
    >>> run(torch.ones(2)).dtype
    [torch.float16]
    torch.float32
    """

    def cast_in(t: Any) -> Any:
        return t.to(dtype) if isinstance(t, torch.Tensor) and t.is_floating_point() else t

    def run(*args: Any, **kwargs: Any) -> Any:
        out = compiled(*pytree.tree_map(cast_in, args), **pytree.tree_map(cast_in, kwargs))
        leaves, spec = pytree.tree_flatten(out)
        saw([t.dtype for t in leaves if isinstance(t, torch.Tensor) and t.is_floating_point()])
        wanted = iter(eager_dtypes)
        back = [t.to(next(wanted)) if isinstance(t, torch.Tensor) else t for t in leaves]
        return pytree.tree_unflatten(back, spec)

    return in_inference_mode(run)


def trt_engine_modules(compiled: Any) -> list[torch.nn.Module]:
    """The TensorRT engine submodules of a compiled module (Torch-TensorRT's C++ or Python
    runtime module classes, ``TorchTensorRTModule`` / ``PythonTorchTensorRTModule``)."""
    if not isinstance(compiled, torch.nn.Module):
        return []
    return [m for m in compiled.modules() if type(m).__name__.endswith("TorchTensorRTModule")]


@contextlib.contextmanager
def engine_dtypes(
    engines: list[torch.nn.Module], saw: Callable[[list[torch.dtype]], None]
) -> Iterator[None]:
    """While open, every call of an engine module reports its floating tensors' dtypes."""

    def hook(module: torch.nn.Module, args: Any, output: Any) -> None:
        leaves = [*pytree.tree_leaves(args), *pytree.tree_leaves(output)]
        saw([t.dtype for t in leaves if isinstance(t, torch.Tensor) and t.is_floating_point()])

    handles = [m.register_forward_hook(hook) for m in engines]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def check_precision(
    requested: str, seen: list[torch.dtype], engines: list[torch.nn.Module] | None
) -> str:
    """The effective precision from the dtypes seen; refuse a build that did not honour it.

    ``engines`` is None for JIT (no engine modules to inspect), else the AOT engine modules.

    >>> check_precision("float16", [torch.float16, torch.float16], [torch.nn.Identity()])
    'float16'
    >>> check_precision("float32", [], [])
    Traceback (most recent call last):
    ...
    RuntimeError: Torch-TensorRT built no TensorRT engine: the whole module runs in PyTorch
    >>> check_precision("float16", [torch.float32], None)
    Traceback (most recent call last):
    ...
    RuntimeError: asked for float16 but the compiled outputs are float32
    """
    if engines is not None and not engines:
        raise RuntimeError(
            "Torch-TensorRT built no TensorRT engine: the whole module runs in PyTorch"
        )
    kinds = sorted({str(d).removeprefix("torch.") for d in seen})
    effective = "float16" if "float16" in kinds else "bfloat16" if "bfloat16" in kinds else None
    if requested == "float16" and effective != "float16":
        where = "compiled outputs" if engines is None else "TensorRT engines' tensors"
        raise RuntimeError(f"asked for float16 but the {where} are {', '.join(kinds) or 'none'}")
    return effective or requested
