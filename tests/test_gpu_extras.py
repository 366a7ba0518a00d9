"""The GPU extras are split by torch version, each a set pip can install without changing
torch, and the GPU check reports which set is installed (issue 46 §9)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import torch

from aitune_fp.effects.backends._gpu_sets import GPU_SETS

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _extras() -> dict[str, list[str]]:
    extras: dict[str, list[str]] = tomllib.loads(PYPROJECT.read_text())["project"][
        "optional-dependencies"
    ]
    return extras


def _pin(extra: list[str], name: str) -> str:
    """The one requirement on ``name`` in ``extra`` (its specifier)."""
    (found,) = [r for r in extra if re.split(r"[<>=\[ ]", r, maxsplit=1)[0] == name]
    return found.removeprefix(name)


def _set_of(extra: list[str]) -> tuple[str, str]:
    """(Torch-TensorRT minor, TensorRT lower bound) an extra pins."""
    tt = _pin(extra, "torch-tensorrt")
    trt = _pin(extra, "tensorrt")
    return tt.split(",")[0].removeprefix(">="), trt.split(",")[0].removeprefix(">=")


def test_each_torch_minor_has_one_consistent_gpu_extra() -> None:
    """Every ``gpu-torch2NN`` extra pins the Torch-TensorRT of its torch minor (one minor,
    so pip never swaps torch) and the TensorRT that Torch-TensorRT links, as GPU_SETS says
    (torch-tensorrt 2.12 → TensorRT 10.16, 2.13 → 11.0, 2.14 → 11.1, from their wheels)."""
    extras = _extras()
    for minor, (name, tt_minor, trt_prefix) in GPU_SETS.items():
        major, sub = tt_minor.split(".")
        assert _pin(extras[name], "torch-tensorrt") == f">={tt_minor},<{major}.{int(sub) + 1}"
        assert _set_of(extras[name])[1].startswith(trt_prefix.rstrip(".")), name
        assert "aitune_fp[ort-gpu]" in extras[name] and minor == tt_minor


def test_the_gpu_extra_no_longer_conflicts_with_itself() -> None:
    """``[gpu]`` pins one Torch-TensorRT minor whose TensorRT is the one it pins (the torch
    2.12 set: TensorRT 10, which ONNX Runtime's TensorRT EP also links), instead of
    Torch-TensorRT 2.12–2.14 beside TensorRT < 11."""
    gpu = _extras()["gpu"]
    assert _set_of(gpu) == _set_of(_extras()["gpu-torch212"])
    assert _pin(gpu, "tensorrt") == ">=10.0,<11"


def test_the_check_reports_which_gpu_set_is_installed() -> None:
    """The versions step's JSON (``gpu_stack``) names the set for this torch and whether
    its Torch-TensorRT and TensorRT are installed (never with either missing)."""
    from aitune_fp.effects.backends.stack import gpu_stack

    report = gpu_stack()["gpu_set"]
    minor = ".".join(torch.__version__.split(".")[:2])
    assert report["extra"] == GPU_SETS[minor][0]
    if report["torch_tensorrt"] is None or report["tensorrt"] is None:
        assert report["installed"] is False
