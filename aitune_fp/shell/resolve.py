"""Resolving a tune's arguments: the cache folder, the device, the backends and their names."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import torch
from returns.result import Failure, Result, Success

from aitune_fp.core.records import TuneError
from aitune_fp.effects.backends.base import Backend
from aitune_fp.effects.backends.registry import backend_by_name, default_backends


def default_cache_dir() -> Path:
    """``$AITUNE_FP_CACHE``, else ``$XDG_CACHE_HOME/aitune_fp``, else ``~/.cache/aitune_fp``.

    >>> from unittest import mock
    >>> with mock.patch.dict(os.environ, {"AITUNE_FP_CACHE": "/c", "XDG_CACHE_HOME": "/x"}):
    ...     print(default_cache_dir())
    /c
    >>> with mock.patch.dict(os.environ, {"AITUNE_FP_CACHE": "", "XDG_CACHE_HOME": "/x"}):
    ...     print(default_cache_dir())
    /x/aitune_fp
    """
    if env := os.environ.get("AITUNE_FP_CACHE"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "aitune_fp"


def resolve_device(device: str | torch.device) -> Result[torch.device, TuneError]:
    """The torch device, or an error when it is not present on this machine.

    >>> resolve_device("cpu").unwrap().type, resolve_device("tpu").failure().message[:20]
    ('cpu', "unknown device 'tpu'")
    """
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as error:
        return Failure(TuneError(f"unknown device {device!r}: {error}"))
    if dev.type == "cuda" and not torch.cuda.is_available():
        return Failure(TuneError(f"device {device!r} needs CUDA, which is not available here"))
    if dev.type not in {"cpu", "cuda"}:
        return Failure(TuneError(f"device {device!r} is not supported (use cpu or cuda)"))
    return Success(dev)


def resolve_backends(
    backends: Sequence[Backend | str] | None, device: torch.device
) -> tuple[Backend, ...]:
    """The candidate configs: the user's (names resolved) or every backend for the device.

    >>> cpu = torch.device("cpu")
    >>> [b.describe() for b in resolve_backends(["eager", "onnxruntime"], cpu)]
    ['eager', 'onnxruntime']
    >>> [b.describe() for b in resolve_backends(None, cpu)]  # eager is the baseline
    ['inductor', 'aot_inductor', 'onnxruntime', 'openvino']
    """
    if backends is None:
        return tuple(default_backends(device))
    return tuple(backend_by_name(b) if isinstance(b, str) else b for b in backends)


def _unique_names(backends: Sequence[Backend]) -> tuple[str, ...]:
    """Each backend's description, suffixed ``#2``, ``#3`` … when repeated."""
    seen: dict[str, int] = {}
    names = []
    for b in backends:
        base = b.describe()
        seen[base] = seen.get(base, 0) + 1
        names.append(base if seen[base] == 1 else f"{base}#{seen[base]}")
    return tuple(names)
