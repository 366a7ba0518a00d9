"""Every backend by name, and the default candidate list for a device — all derived from
the backends' own declarations (:class:`~.base.Declaration`).

Rules:
- the shipped backends are the config classes (subclasses of
  :class:`~.base.ConfigIdentity`) defined in the public modules of this package, ordered
  by their declaration's ``order``; adding a backend is adding one module here, nothing
  else (:func:`shipped`); importing the registry imports them all (the workers' fork
  server preloads the registry, so a worker finds every backend module loaded);
- a backend from outside the package is named ``module:ClassName`` (``--backends
  my_pkg.fast:FastBackend``): the module is imported and the class must be a dataclass
  whose instances are :class:`~.base.Backend` configs (:func:`backend_type`);
- the default candidates on a device are every shipped backend's declared defaults for that
  device type, in order; eager declares none (it is the baseline). A default candidate
  whose library is missing stays in the list and fails its build with a clear reason, so
  the user sees what was not tried;
- ``backend_by_name`` builds a config from its name and keyword options, refusing unknown
  names and options with the valid ones listed;
- ``with_max_batch_size`` sets the batch range of backends whose engines fix it ahead of
  time (each config's own :meth:`~.base.Backend.with_batch_range`).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import pkgutil
from collections.abc import Iterable
from types import ModuleType
from typing import Any

import torch

from aitune_fp.effects.backends.base import Backend, ConfigIdentity, Declaration

PACKAGE = "aitune_fp.effects.backends"


def declared_in(module: ModuleType) -> tuple[type[Any], ...]:
    """The backend config classes ``module`` defines (not those it imports).

    >>> from aitune_fp.effects.backends import ort
    >>> [c.__name__ for c in declared_in(ort)]
    ['OnnxRuntime']
    """
    return tuple(
        value
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, ConfigIdentity)
        and value is not ConfigIdentity
        and value.__module__ == module.__name__
    )


@functools.cache
def shipped() -> tuple[type[Any], ...]:
    """The shipped backend config classes: those of this package's public modules, by
    their declared order.

    >>> [c().name for c in shipped()]  # doctest: +NORMALIZE_WHITESPACE
    ['eager', 'inductor', 'aot_inductor', 'onnxruntime', 'openvino', 'tensorrt',
     'torch_tensorrt']
    """
    package = importlib.import_module(PACKAGE)
    found: list[type[Any]] = []
    for info in pkgutil.iter_modules(package.__path__):
        if not info.name.startswith("_"):
            found.extend(declared_in(importlib.import_module(f"{PACKAGE}.{info.name}")))
    return tuple(sorted(found, key=lambda c: (c.declaration.order, c.__name__)))


def backend_types() -> dict[str, type[Any]]:
    """Every shipped backend's name and config class."""
    return {cls().name: cls for cls in shipped()}


def declarations(extra: Iterable[Backend] = ()) -> tuple[Declaration, ...]:
    """The declarations of the shipped backends, then of ``extra`` configs' own types."""
    types = [*shipped(), *(type(b) for b in extra)]
    return tuple(cls.declaration for cls in dict.fromkeys(types))


def sdk_owners(types: Iterable[type[Any]] = ()) -> dict[str, frozenset[str]]:
    """Each inference SDK a backend declares, with the only modules that may import it:
    the declaring backend's own module and its declaration's ``sdk_modules`` (the shipped
    backends', then those of ``types``).

    >>> sorted(sdk_owners()["torch_tensorrt"])
    ['aitune_fp.effects.backends.torch_trt']
    >>> "aitune_fp.effects.backends._trt_runtime" in sdk_owners()["tensorrt"]
    True
    """
    owners: dict[str, set[str]] = {}
    for cls in dict.fromkeys([*shipped(), *types]):
        declared = cls.declaration
        for sdk in declared.sdks:
            owners.setdefault(sdk, set()).update((cls.__module__, *declared.sdk_modules))
    return {sdk: frozenset(modules) for sdk, modules in owners.items()}


def source_of(backend: Backend) -> str:
    """Where ``backend``'s class comes from, as ``module:ClassName`` (stored in records).

    >>> from aitune_fp.effects.backends.eager import TorchEager
    >>> source_of(TorchEager())
    'aitune_fp.effects.backends.eager:TorchEager'
    """
    cls = type(backend)
    return f"{cls.__module__}:{cls.__qualname__}"


def backend_type(name: str) -> type[Any]:
    """The config class called ``name``: a shipped backend's name or ``module:ClassName``.

    >>> backend_type("aitune_fp.effects.backends.inductor:InductorJIT")().describe()
    'inductor'
    >>> backend_type("json:JSONDecoder")
    Traceback (most recent call last):
    ...
    ValueError: json:JSONDecoder is not a backend config (see docs/backends.md)
    """
    if ":" not in name:
        types = backend_types()
        if name not in types:
            raise ValueError(f"unknown backend {name!r}; known: {', '.join(sorted(types))}")
        return types[name]
    module_name, _, class_name = name.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"backend {name!r}: cannot import {module_name}: {error}") from None
    cls = vars(module).get(class_name)
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise ValueError(f"{name} is not a backend config (see docs/backends.md)")
    return cls


def all_backends() -> tuple[Backend, ...]:
    """One default config of every backend, plus the default candidates' variants.

    >>> [b.describe() for b in all_backends()][:4]
    ['eager', 'inductor', 'aot_inductor', 'onnxruntime']
    """
    configs: list[Backend] = []
    for cls in shipped():
        options = [dict(o) for opts in cls.declaration.defaults.values() for o in opts]
        configs.extend(dict.fromkeys(cls(**o) for o in [{}, *options]))
    return tuple(configs)


def default_backends(device: torch.device | str) -> tuple[Backend, ...]:
    """The candidates tried by default on ``device`` (eager excluded: it is the baseline).

    >>> [b.describe() for b in default_backends("cpu")]
    ['inductor', 'aot_inductor', 'onnxruntime', 'openvino']
    >>> len(default_backends("cuda"))
    7
    """
    kind = torch.device(device).type
    return tuple(cls(**o) for cls in shipped() for o in cls.declaration.default_options(kind))


def search_variants(level: str, kind: str) -> tuple[Backend, ...]:
    """The reduced-precision variants search level ``level`` adds on device type ``kind``,
    in backend order (see :mod:`.search_space`)."""
    return tuple(
        cls(**o) for cls in shipped() for o in cls.declaration.variant_options(level, kind)
    )


def backend_by_name(name: str, **options: Any) -> Backend:
    """The backend config called ``name`` (see :func:`backend_type`) with ``options`` as
    its fields.

    >>> backend_by_name("inductor", mode="max-autotune").describe()
    "inductor(mode='max-autotune')"
    >>> backend_by_name("onnx")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown backend 'onnx'; known: aot_inductor, eager, inductor, onnxruntime, ...
    >>> backend_by_name("eager", fast=True)
    Traceback (most recent call last):
    ...
    ValueError: eager takes no option 'fast'; it takes: precision, autocast, threads
    """
    kind = backend_type(name)
    fields = [f.name for f in dataclasses.fields(kind) if f.init]
    unknown = sorted(set(options) - set(fields))
    if unknown:
        raise ValueError(
            f"{name} takes no option {unknown[0]!r}; it takes: {', '.join(fields) or '(none)'}"
        )
    backend = kind(**options)
    if not isinstance(backend, Backend):
        raise ValueError(f"{name} is not a backend config (see docs/backends.md)")
    return backend


def with_max_batch_size(
    backend: Backend, max_batch_size: int, opt_batch_size: int | None = None
) -> Backend:
    """``backend`` with its ahead-of-time batch range set to ``1 … max_batch_size`` and, for a
    config with an ``opt_batch_size`` field the user left unset, its optimisation batch
    (:func:`aitune_fp.core.engine_batch.engine_opt_batch`), at most the range's top; a
    config that fixes no batch range ahead of time (``with_batch_range`` returns it as it
    is: ONNX Runtime's CPU and CUDA providers) gets no optimisation batch either.

    >>> from aitune_fp.effects.backends.inductor import InductorJIT
    >>> from aitune_fp.effects.backends.trt import TensorRT
    >>> with_max_batch_size(TensorRT(), 64).describe()
    'tensorrt(max_batch_size=64)'
    >>> with_max_batch_size(TensorRT(), 64, 1).opt_batch
    1
    >>> with_max_batch_size(TensorRT(opt_batch_size=8), 64, 1).opt_batch
    8
    >>> with_max_batch_size(InductorJIT(), 64, 1).describe()
    'inductor'
    >>> from aitune_fp.effects.backends.ort import OnnxRuntime
    >>> with_max_batch_size(OnnxRuntime(provider="tensorrt"), 64, 1).opt_batch
    1
    >>> with_max_batch_size(OnnxRuntime(), 64, 1).describe()
    'onnxruntime'
    """
    sized = backend.with_batch_range(max_batch_size)
    fields = {f.name for f in dataclasses.fields(sized)} if dataclasses.is_dataclass(sized) else ()
    if opt_batch_size is None or "opt_batch_size" not in fields or sized is backend:
        return sized
    if getattr(sized, "opt_batch_size", None) is not None:
        return sized
    opt = min(opt_batch_size, max_batch_size)
    return dataclasses.replace(sized, opt_batch_size=opt)  # type: ignore[type-var]


shipped()  # imported with the registry, as the fork server expects (it preloads the registry)
