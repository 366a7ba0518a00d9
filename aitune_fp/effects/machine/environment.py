"""The environment fingerprint stored with every run: library versions, CPU, GPU.

Rules:
- the libraries are aitune_fp, torch and every library a backend declares
  (:class:`~aitune_fp.effects.backends.base.Library` in its declaration's ``versions``):
  the shipped backends', plus those of the backends a run was given;
- library versions come from installed distribution metadata (``importlib.metadata``); an
  inference SDK is never imported to learn its version, and a missing one is ``None``;
- ONNX Runtime's version is that of the build the ``onnxruntime`` package really holds
  (:mod:`~aitune_fp.effects.backends._ort_install`); every installed build is listed under
  ``onnxruntime_builds``, and ``onnxruntime_shadowed`` says why the GPU providers are
  missing when ``onnxruntime-gpu`` is installed but another build's files won;
- the CPU model is read from ``/proc/cpuinfo`` (``platform.processor()`` elsewhere);
- the GPU name, CUDA runtime and driver are recorded only when torch sees a CUDA device;
  the driver version is read from ``/proc/driver/nvidia/version``;
- every value is JSON-able; an unknown fact is ``None``, never an exception.
"""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import torch

from aitune_fp.effects.backends._ort_install import ort_install, shadow_reason

if TYPE_CHECKING:
    from aitune_fp.effects.backends.base import Backend

# The package and torch, whatever the backends; each with the distributions that may
# provide it, first found wins.
CORE_LIBRARIES: Final = {"aitune_fp": ("aitune_fp", "aitune-fp"), "torch": ("torch",)}


def libraries(backends: Iterable[Backend] = ()) -> dict[str, tuple[str, ...]]:
    """Each library whose version is reported, with its distributions: aitune_fp, torch,
    then what the shipped backends and ``backends`` declare (the first declaration of a
    name wins).

    >>> sorted(libraries())
    ['aitune_fp', 'nncf', 'onnx', 'onnxruntime', 'openvino', 'tensorrt', 'torch', 'torch_tensorrt']
    """
    from aitune_fp.effects.backends.registry import declarations

    found = dict(CORE_LIBRARIES)
    for declaration in declarations(backends):
        for library in declaration.versions:
            found.setdefault(library.name, library.distributions)
    return found


def distribution_version(*names: str) -> str | None:
    """The version of the first installed distribution among ``names``, else ``None``.

    >>> distribution_version("surely-not-installed-xyz") is None
    True
    """
    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def library_versions(backends: Iterable[Backend] = ()) -> dict[str, str | None]:
    """Every library of :func:`libraries` with its installed version (``None`` if absent);
    ONNX Runtime's is that of the build the ``onnxruntime`` package really holds.

    >>> library_versions()["torch"] is not None
    True
    """
    listed = sorted(libraries(backends).items())
    versions = {lib: distribution_version(*dists) for lib, dists in listed}
    versions["onnxruntime"] = ort_install().version
    return versions


def onnxruntime_facts() -> dict[str, Any]:
    """Every installed ONNX Runtime build, the active one and why GPU providers are shadowed.

    >>> sorted(onnxruntime_facts())
    ['onnxruntime_build', 'onnxruntime_builds', 'onnxruntime_shadowed']
    """
    install = ort_install()
    return {
        "onnxruntime_build": install.active,
        "onnxruntime_builds": dict(install.installed),
        "onnxruntime_shadowed": shadow_reason(install),
    }


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str | None:
    """The CPU model name (``model name`` in ``/proc/cpuinfo``), else ``platform.processor()``."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    match = re.search(r"^(?:model name|Model|Hardware)\s*:\s*(.+)$", text, re.MULTILINE)
    if match:
        return match.group(1).strip()
    return platform.processor() or None


def nvidia_driver_version(path: Path = Path("/proc/driver/nvidia/version")) -> str | None:
    """The NVIDIA kernel driver version, or ``None`` without the driver."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    match = re.search(r"Kernel Module(?: for \w+)?\s+([0-9][0-9.]+)", text)
    return match.group(1) if match else None


def gpu_facts(device: torch.device) -> dict[str, Any]:
    """GPU name, capability, CUDA runtime and driver when a CUDA device is visible."""
    if not torch.cuda.is_available():
        return {"gpu": None, "gpu_driver": None, "cuda": None}
    index = device.index if device.type == "cuda" and device.index is not None else 0
    props = torch.cuda.get_device_properties(index)
    return {
        "gpu": props.name,
        "gpu_capability": f"{props.major}.{props.minor}",
        "gpu_memory_gib": round(props.total_memory / 1024**3, 2),
        "gpu_driver": nvidia_driver_version(),
        "cuda": torch.version.cuda,
    }


def environment_fingerprint(
    device: torch.device | str = "cpu", backends: Iterable[Backend] = ()
) -> dict[str, Any]:
    """Python, platform, library versions (also those ``backends`` declare), CPU model and
    count, GPU facts, as a dict.

    >>> sorted(environment_fingerprint())[:4]
    ['aitune_fp', 'cpu', 'cpu_count', 'cuda']
    """
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        **library_versions(backends),
        **onnxruntime_facts(),
        "torch_threads": torch.get_num_threads(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "device": str(device),
        **gpu_facts(torch.device(device)),
    }
