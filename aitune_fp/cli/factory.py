"""Load a user's model for ``aitune-fp tune``: ``file.py:factory`` → module and samples.

Rules:
- ``path/to/file.py:factory`` imports the file as a fresh module (its folder first on
  ``sys.path`` while it imports) named from a sha256 of its resolved path, so the name is
  the same in every process (Python's ``hash()`` is salted per process);
  ``package.module:factory`` imports a module by name;
- the factory is called without arguments and returns the ``nn.Module``, or a pair
  ``(module, samples)``;
- without samples from the factory, ``--input-shape`` (one per positional input, batch
  axis first) and ``--dtype`` (one for all inputs or one per input) make
  :data:`SAMPLE_COUNT` distinct random samples: normal floats, integers in ``[0, 2)`` and
  booleans, from a fixed seed;
- every problem (file missing, no such factory, wrong return, missing shape, a factory or
  model file that calls ``sys.exit``) is a :class:`FactoryError` with one line saying
  what to fix.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

SAMPLE_COUNT = 4


class FactoryError(Exception):
    """The model factory could not give a module (the message says why)."""


def module_name(path: Path) -> str:
    """The import name of a model file: a sha256 of its resolved path, stable across processes.

    >>> module_name(Path("m.py")) == module_name(Path("./m.py")), module_name(Path("m.py"))[:15]
    (True, 'aitune_fp_user_')
    """
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
    return f"aitune_fp_user_{digest}"


def _spec_of(path: Path) -> ModuleSpec:
    """The import spec of a model file; a ``FactoryError`` when it is none."""
    if not path.is_file():
        raise FactoryError(f"model file {str(path)!r} does not exist")
    spec = importlib.util.spec_from_file_location(module_name(path), path)
    if spec is None or spec.loader is None:
        raise FactoryError(f"cannot import {str(path)!r} as a Python module")
    return spec


def _import_file(path: Path) -> ModuleType:
    spec = _spec_of(path)
    assert spec.loader is not None  # _spec_of refuses a spec without one
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    sys.path.insert(0, str(path.resolve().parent))
    try:
        spec.loader.exec_module(module)
    except SystemExit as error:
        raise FactoryError(f"importing {path} called sys.exit({error.code!r})") from None
    except Exception as error:
        raise FactoryError(f"importing {path} raised {type(error).__name__}: {error}") from error
    finally:
        sys.path.remove(str(path.resolve().parent))
    return module


def _import(source: str) -> ModuleType:
    if source.endswith(".py") or "/" in source or "\\" in source:
        return _import_file(Path(source))
    try:
        return importlib.import_module(source)
    except ImportError as error:
        raise FactoryError(f"cannot import module {source!r}: {error}") from error


def call_target(target: str) -> Any:
    """What the factory named by ``target`` returns, called without arguments (any object:
    a tokenizer factory returns a tokenizer)."""
    source, _, name = target.rpartition(":")
    factory = getattr(_import(source), name, None)
    if not callable(factory):
        raise FactoryError(f"{source} has no callable {name!r}")
    try:
        return factory()
    except SystemExit as error:
        raise FactoryError(f"{name}() called sys.exit({error.code!r})") from None
    except Exception as error:
        raise FactoryError(f"{name}() raised {type(error).__name__}: {error}") from error


def call_factory(target: str) -> tuple[torch.nn.Module, Any | None]:
    """The module (and samples, when the factory returns them) named by ``target``."""
    made = call_target(target)
    name = target.rpartition(":")[2]
    module, samples = made if isinstance(made, tuple) and len(made) == 2 else (made, None)
    if not isinstance(module, torch.nn.Module):
        raise FactoryError(
            f"{name}() must return an nn.Module or (module, samples), got {type(module).__name__}"
        )
    return module, samples


def _random(shape: Sequence[int], dtype: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    if dtype.is_floating_point:
        return torch.randn(*shape, generator=gen).to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, tuple(shape), generator=gen).bool()
    return torch.randint(0, 2, tuple(shape), generator=gen, dtype=dtype)


def synthetic_samples(
    shapes: Sequence[tuple[int, ...]], dtypes: Sequence[str]
) -> list[tuple[torch.Tensor, ...]]:
    """:data:`SAMPLE_COUNT` random samples, each a tuple of one tensor per shape.

    >>> s = synthetic_samples([(2, 3)], ["float32"])
    >>> len(s), tuple(s[0][0].shape), s[0][0].dtype
    (4, (2, 3), torch.float32)
    """
    names = _dtype_names(shapes, dtypes)
    gen = torch.Generator().manual_seed(0)
    kinds = [getattr(torch, n) for n in names]
    return [
        tuple(_random(shape, kind, gen) for shape, kind in zip(shapes, kinds, strict=True))
        for _ in range(SAMPLE_COUNT)
    ]


def _dtype_names(shapes: Sequence[tuple[int, ...]], dtypes: Sequence[str]) -> list[str]:
    """One dtype name per shape (one given: for all; none: ``float32``); a
    ``FactoryError`` for no shapes or a count that matches neither."""
    if not shapes:
        raise FactoryError("the factory returned no samples: pass --input-shape, e.g. 8x3x64x64")
    names = list(dtypes) or ["float32"]
    if len(names) == 1:
        names = names * len(shapes)
    if len(names) != len(shapes):
        raise FactoryError(
            f"got {len(names)} --dtype values for {len(shapes)} --input-shape values; "
            "give one dtype for all inputs or one per input"
        )
    return names
