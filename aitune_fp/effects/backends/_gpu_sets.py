"""The ``[gpu-torch2NN]`` extras: one consistent GPU set per torch minor version, and which
one this environment has.

Rules:
- Torch-TensorRT pins the torch minor it was built for and the TensorRT it links
  (torch-tensorrt 2.12 → TensorRT 10.16, 2.13 → TensorRT 11.0, 2.14 → TensorRT 11.1, per
  their wheels' ``Requires-Dist``), so one ``[gpu]`` extra cannot hold every torch: each
  torch minor has its own extra, :data:`GPU_SETS` (pyproject.toml holds the same pins;
  tests/test_extras.py keeps the two equal); ``[gpu]`` is the torch 2.12 set, the last
  whose TensorRT (10) is also the one ONNX Runtime's TensorRT EP links;
- :func:`gpu_set_report` names the set for the installed torch and whether the installed
  Torch-TensorRT and TensorRT are that set's (the GPU check prints it with the versions).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

GPU_SETS: Final = {
    "2.12": ("gpu-torch212", "2.12", "10."),
    "2.13": ("gpu-torch213", "2.13", "11.0"),
    "2.14": ("gpu-torch214", "2.14", "11.1"),
}
"""torch minor → (extra, Torch-TensorRT minor, TensorRT version prefix)."""


def gpu_set_report(version_of: Callable[[str], str | None]) -> dict[str, Any]:
    """The ``[gpu-torch2NN]`` set for the installed torch and whether it is installed;
    ``version_of`` reads a distribution's version (``torch``, ``torch_tensorrt``,
    ``tensorrt``).

    >>> versions = {"torch": "2.13.0+cu130", "torch_tensorrt": "2.13.0", "tensorrt": "11.0.2"}
    >>> gpu_set_report(versions.get)["extra"], gpu_set_report(versions.get)["installed"]
    ('gpu-torch213', True)
    >>> gpu_set_report({"torch": "2.13.0", "tensorrt": "10.16.1"}.get)["installed"]
    False
    >>> gpu_set_report({"torch": "2.9.1"}.get)["extra"] is None
    True
    """
    torch_version = version_of("torch") or ""
    minor = ".".join(torch_version.split(".")[:2])
    have = {"torch_tensorrt": version_of("torch_tensorrt"), "tensorrt": version_of("tensorrt")}
    if minor not in GPU_SETS:
        known = ", ".join(GPU_SETS)
        return {
            "extra": None,
            "installed": False,
            "why": f"no GPU set for torch {minor or '?'} (sets for torch {known})",
            **have,
        }
    extra, tt_minor, trt_prefix = GPU_SETS[minor]
    installed = (have["torch_tensorrt"] or "").startswith(f"{tt_minor}.") and (
        have["tensorrt"] or ""
    ).startswith(trt_prefix)
    return {"extra": extra, "installed": installed, **have}
