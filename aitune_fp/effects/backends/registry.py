"""Every backend by name, and the default candidate list for a device.

Rules:
- the default candidates on a device are every backend that targets that device type,
  eager excluded (it is the baseline): on CPU inductor, aot_inductor and onnxruntime (CPU
  provider); on CUDA also onnxruntime with the TensorRT provider, tensorrt and
  torch_tensorrt (AOT and JIT). A default candidate whose library is missing stays in the
  list and fails its build with a clear reason, so the user sees what was not tried;
- ``backend_by_name`` builds a config from its name and keyword options, refusing unknown
  names and options with the valid ones listed;
- ``with_max_batch_size`` sets the batch range of backends whose engines fix it ahead of
  time (tensorrt, torch_tensorrt, onnxruntime's TensorRT provider) and leaves others as is.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from aitune_fp.effects.backends.aot_inductor import AOTInductor
from aitune_fp.effects.backends.base import Backend
from aitune_fp.effects.backends.eager import TorchEager
from aitune_fp.effects.backends.inductor import InductorJIT
from aitune_fp.effects.backends.ort import OnnxRuntime
from aitune_fp.effects.backends.torch_trt import TorchTensorRT
from aitune_fp.effects.backends.trt import TensorRT

BACKEND_TYPES: dict[str, type[Any]] = {
    "eager": TorchEager,
    "inductor": InductorJIT,
    "aot_inductor": AOTInductor,
    "onnxruntime": OnnxRuntime,
    "tensorrt": TensorRT,
    "torch_tensorrt": TorchTensorRT,
}


def all_backends() -> tuple[Backend, ...]:
    """One default config of every backend, plus the variants users commonly ask for.

    >>> [b.describe() for b in all_backends()][:4]
    ['eager', 'inductor', 'aot_inductor', 'onnxruntime']
    """
    return (
        TorchEager(),
        InductorJIT(),
        AOTInductor(),
        OnnxRuntime(),
        OnnxRuntime(provider="tensorrt"),
        TensorRT(),
        TorchTensorRT(),
        TorchTensorRT(ir="torch_compile"),
    )


def default_backends(device: torch.device | str) -> tuple[Backend, ...]:
    """The candidates tried by default on ``device`` (eager excluded: it is the baseline).

    >>> [b.describe() for b in default_backends("cpu")]
    ['inductor', 'aot_inductor', 'onnxruntime']
    >>> len(default_backends("cuda"))
    7
    """
    kind = torch.device(device).type
    portable: tuple[Backend, ...] = (InductorJIT(), AOTInductor())
    if kind == "cpu":
        return (*portable, OnnxRuntime())
    if kind == "cuda":
        return (
            *portable,
            OnnxRuntime(),
            OnnxRuntime(provider="tensorrt"),
            TensorRT(),
            TorchTensorRT(),
            TorchTensorRT(ir="torch_compile"),
        )
    return portable


def backend_by_name(name: str, **options: Any) -> Backend:
    """The backend config called ``name`` with ``options`` as its fields.

    >>> backend_by_name("inductor", mode="max-autotune").describe()
    "inductor(mode='max-autotune')"
    >>> backend_by_name("onnx")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown backend 'onnx'; known: aot_inductor, eager, inductor, onnxruntime, ...
    >>> backend_by_name("eager", fast=True)
    Traceback (most recent call last):
    ...
    ValueError: eager takes no option 'fast'; it takes: precision, autocast
    """
    if name not in BACKEND_TYPES:
        raise ValueError(f"unknown backend {name!r}; known: {', '.join(sorted(BACKEND_TYPES))}")
    kind = BACKEND_TYPES[name]
    fields = [f.name for f in dataclasses.fields(kind) if f.init]
    unknown = sorted(set(options) - set(fields))
    if unknown:
        raise ValueError(
            f"{name} takes no option {unknown[0]!r}; it takes: {', '.join(fields) or '(none)'}"
        )
    backend: Backend = kind(**options)
    return backend


def with_max_batch_size(backend: Backend, max_batch_size: int) -> Backend:
    """``backend`` with its ahead-of-time batch range set to ``1 … max_batch_size``.

    >>> with_max_batch_size(TensorRT(), 64).describe()
    'tensorrt(max_batch_size=64)'
    >>> with_max_batch_size(InductorJIT(), 64).describe()
    'inductor'
    """
    names = {f.name for f in dataclasses.fields(backend)}  # type: ignore[arg-type]
    if "max_batch_size" not in names:
        return backend
    if isinstance(backend, OnnxRuntime) and backend.provider != "tensorrt":
        return backend  # only the TensorRT provider builds engines for a batch range
    changes: dict[str, Any] = {"max_batch_size": max_batch_size}
    opt = getattr(backend, "opt_batch_size", None)
    if opt is not None and opt > max_batch_size:
        changes["opt_batch_size"] = max_batch_size
    replaced: Backend = dataclasses.replace(backend, **changes)  # type: ignore[type-var]
    return replaced
