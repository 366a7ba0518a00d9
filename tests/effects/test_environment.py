"""The environment fingerprint: JSON-able facts, no SDK imported to learn a version."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from aitune_fp.effects.machine.environment import (
    cpu_model,
    environment_fingerprint,
    nvidia_driver_version,
)


def test_fingerprint_is_json_and_names_every_library() -> None:
    """The fingerprint serialises to JSON and lists torch, onnxruntime and tensorrt."""
    facts = environment_fingerprint("cpu")
    assert json.loads(json.dumps(facts)) == facts
    for key in ["python", "torch", "onnxruntime", "tensorrt", "cpu", "gpu", "gpu_driver"]:
        assert key in facts
    assert facts["torch"] is not None


def test_fingerprint_imports_no_inference_sdk() -> None:
    """Learning versions never imports onnxruntime, tensorrt or torch_tensorrt."""
    code = (
        "import sys; from aitune_fp.effects.machine.environment import environment_fingerprint; "
        "environment_fingerprint(); "
        "print(sorted(m for m in ('onnxruntime', 'tensorrt', 'torch_tensorrt', 'onnx') "
        "if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_cpu_model_and_driver_are_read_from_their_files(tmp_path: Path) -> None:
    """/proc-style files are parsed; a missing driver file means no driver."""
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: Example CPU 9000 @ 3.0GHz\n")
    assert cpu_model(info) == "Example CPU 9000 @ 3.0GHz"
    version = tmp_path / "version"
    version.write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar\n")
    assert nvidia_driver_version(version) == "550.54.15"
    assert nvidia_driver_version(tmp_path / "absent") is None
