"""Cheap, side-effect-free checks of whether a backend can run on a device.

Rules:
- a library counts as installed when ``importlib.util.find_spec`` finds it; it is never
  imported here, so asking costs nothing and loads no SDK;
- the reasons are fixed, human phrases: ``"<lib> is not installed"`` and
  ``"needs a CUDA device"`` (with what is missing when the device is CUDA but torch
  cannot use it).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable

import torch


def missing_library(*import_names: str) -> str | None:
    """``"<name> is not installed"`` for the first library that cannot be found, else None.

    >>> missing_library("json") is None
    True
    >>> missing_library("json", "no_such_lib_aitune")
    'no_such_lib_aitune is not installed'
    """
    for name in import_names:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return f"{name} is not installed"
    return None


def needs_cuda(device: torch.device) -> str | None:
    """``"needs a CUDA device"`` unless ``device`` is a CUDA device.

    >>> needs_cuda(torch.device("cpu"))
    'needs a CUDA device'
    >>> needs_cuda(torch.device("cuda", 0)) is None
    True
    """
    return None if device.type == "cuda" else "needs a CUDA device"


def cuda_unusable() -> str | None:
    """A reason when torch cannot use CUDA on this machine (no driver, CPU-only build)."""
    if torch.cuda.is_available():
        return None
    return "needs a CUDA device (torch reports CUDA as unavailable)"


def first_reason(*checks: Callable[[], str | None]) -> str | None:
    """The first reason a check gives, running the checks in order and stopping there.

    Checks are listed most fundamental first, so a later check may rely on earlier ones
    having passed (e.g. import a library only once it is known to be installed).

    >>> first_reason(lambda: None, lambda: "b", lambda: 1 / 0)
    'b'
    """
    for check in checks:
        reason = check()
        if reason is not None:
            return reason
    return None


def cuda_backend_reason(device: torch.device, *import_names: str) -> str | None:
    """Why a CUDA-only backend needing ``import_names`` cannot run on ``device``, or None:
    not a CUDA device, then a missing library, then torch unable to use CUDA.

    >>> cuda_backend_reason(torch.device("cpu"), "tensorrt")
    'needs a CUDA device'
    """
    return first_reason(
        lambda: needs_cuda(device),
        lambda: missing_library(*import_names),
        cuda_unusable,
    )
