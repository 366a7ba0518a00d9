"""What GPU stack this environment really has: ``python -m aitune_fp.effects.backends.stack``.

Rules:
- versions come from distribution metadata (as in the run's environment fingerprint), with
  the ONNX Runtime builds installed, the active one and why GPU providers are shadowed;
- each SDK that is installed is then imported, inside a guard, to report what it offers:
  ONNX Runtime's available providers, TensorRT's version and the reduced-precision
  mechanism its API allows (builder flag on 10.x, strongly typed cast on 11.x),
  Torch-TensorRT's version and whether it is in the supported range; an import that fails
  is reported with its error, never raised;
- the supported ranges and the pip extras come from the backends' declarations;
- ``gpu_set``: the ``[gpu-torch2NN]`` extra for this torch and whether it is the one
  installed (:mod:`._gpu_sets`);
- every default backend's ``unavailable_reason on the first CUDA device (or the CPU when
  there is none) is listed, so one JSON document says what a tune would try and why not.
"""

from __future__ import annotations

import importlib
import json
import sys
from typing import Any

import torch

from aitune_fp.effects.backends._availability import missing_library
from aitune_fp.effects.backends._gpu_sets import gpu_set_report
from aitune_fp.effects.backends._versions import (
    installed_version,
    outside_range,
    supported_ranges,
)
from aitune_fp.effects.backends._versions import range_text as _range
from aitune_fp.effects.machine.environment import library_versions, onnxruntime_facts


def _imported(name: str) -> tuple[Any, str | None]:
    """``(module, None)``, or ``(None, reason)`` when it is missing or fails to import."""
    reason = missing_library(name)
    if reason is not None:
        return None, reason
    try:
        return importlib.import_module(name), None
    except Exception as error:  # a broken install is a fact to report, not a crash
        return None, f"import {name} failed: {type(error).__name__}: {error}"


def onnxruntime_report() -> dict[str, Any]:
    """The ONNX Runtime builds and the providers the active one offers."""
    ort, reason = _imported("onnxruntime")
    facts: dict[str, Any] = onnxruntime_facts()
    if ort is None:
        return {**facts, "providers": None, "error": reason}
    return {**facts, "version": ort.__version__, "providers": ort.get_available_providers()}


def tensorrt_report() -> dict[str, Any]:
    """TensorRT's version and which reduced-precision mechanism its API allows."""
    trt, reason = _imported("tensorrt")
    if trt is None:
        return {"version": installed_version("tensorrt"), "error": reason}
    from aitune_fp.effects.backends._precision import trt_precision_plan

    version = str(trt.__version__)
    return {
        "version": version,
        "supported": outside_range("tensorrt", version) or f"yes ({_range('tensorrt')})",
        "has_builder_flag_fp16": hasattr(trt.BuilderFlag, "FP16"),
        "fp16_mechanism": trt_precision_plan(trt, fp16=True, tf32=False).mechanism,
    }


def torch_tensorrt_report() -> dict[str, Any]:
    """Torch-TensorRT's version and whether aitune_fp supports it."""
    version = installed_version("torch_tensorrt")
    reason = missing_library("torch_tensorrt")
    if reason is not None:
        return {"version": None, "error": reason}
    supported = outside_range("torch_tensorrt", version) or f"yes ({_range('torch_tensorrt')})"
    return {"version": version, "supported": supported}


def backend_reasons(device: torch.device) -> dict[str, str | None]:
    """Every shipped backend config with why it cannot run on ``device`` (None: it can)."""
    from aitune_fp.effects.backends.registry import all_backends

    return {b.describe(): b.unavailable_reason(device) for b in all_backends()}


def _version_of(name: str) -> str | None:
    """torch's own version, else the library's from its distribution metadata."""
    return torch.__version__ if name == "torch" else installed_version(name)


def install_hints() -> dict[str, str]:
    """Every shipped backend that needs an SDK, with the pip command that installs it."""
    from aitune_fp.effects.backends.registry import shipped

    hints = {cls().name: cls.declaration.install_hint for cls in shipped()}
    return {name: hint for name, hint in hints.items() if hint is not None}


def gpu_stack() -> dict[str, Any]:
    """The whole report as one JSON-able dict."""
    cuda = torch.cuda.is_available()
    device = torch.device("cuda", 0) if cuda else torch.device("cpu")
    return {
        "python": sys.version.split()[0],
        "libraries": library_versions(),
        "supported_ranges": {lib: _range(lib) for lib in supported_ranges()},
        "install": install_hints(),
        "torch_cuda": torch.version.cuda,
        "cuda_available": cuda,
        "cuda_devices": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        if cuda
        else [],
        "onnxruntime": onnxruntime_report(),
        "tensorrt": tensorrt_report(),
        "torch_tensorrt": torch_tensorrt_report(),
        "gpu_set": gpu_set_report(_version_of),
        "backends_on": str(device),
        "backends": backend_reasons(device),
    }


def main() -> int:
    """Print :func:`gpu_stack` as JSON."""
    print(json.dumps(gpu_stack(), indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
