"""scripts/gpu-check.sh on a machine without a GPU: valid bash, a plan, a clean skip."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "gpu-check.sh"
STEPS = ["deps", "versions", "cuda", "providers", "backends", "gpu-tests", "overhead", "demo"]

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHON": sys.executable, **(env or {})}
    return subprocess.run(
        ["bash", str(SCRIPT), *args], capture_output=True, text=True, env=full, timeout=240
    )


def test_the_script_is_valid_bash() -> None:
    """``bash -n`` finds no syntax error."""
    done = subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_dry_run_prints_every_step_within_the_nine_minute_budget() -> None:
    """The plan names every step with its limit, the limits fit the budget, nothing runs."""
    done = _run("--dry-run", env={"OUT": "/nonexistent/never-written"})
    assert done.returncode == 0, done.stderr
    limits = {}
    for line in done.stdout.splitlines():
        if line.startswith("step "):
            _, name, rest = line.split(" ", 2)
            limits[name] = int(rest.removeprefix("(limit ").removesuffix("s)"))
    assert list(limits) == STEPS
    assert "budget: 530s" in done.stdout and 530 < 9 * 60
    assert not Path("/nonexistent/never-written").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is present here")
def test_without_a_cuda_device_it_reports_versions_and_stops_cleanly(tmp_path: Path) -> None:
    """Without CUDA the run exits 0, writes the versions as JSON and says "no CUDA device"."""
    done = _run(env={"OUT": str(tmp_path)})
    assert done.returncode == 0, done.stdout + done.stderr
    summary = (tmp_path / "summary.txt").read_text()
    assert "PASS versions" in summary and "SKIP cuda" in summary
    assert "no CUDA device" in summary and "FAIL" not in summary
    stack = json.loads((tmp_path / "stack.json").read_text())
    assert stack["cuda_available"] is False and stack["libraries"]["torch"] == torch.__version__


def test_the_providers_step_names_what_the_cpu_build_lacks() -> None:
    """On the CPU onnxruntime, the providers step fails each GPU provider with the reason."""
    ort = pytest.importorskip("onnxruntime")
    if "CUDAExecutionProvider" in ort.get_available_providers():
        pytest.skip("this onnxruntime has the CUDA provider")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gpu_check.py"), "providers"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 1
    assert "FAIL provider cuda: asked ONNX Runtime for ['CUDAExecutionProvider']" in done.stdout
    assert "FAIL provider tensorrt" in done.stdout


def test_every_name_the_gpu_steps_import_exists() -> None:
    """The backends and providers steps import only modules and names that exist (a moved
    module would otherwise surface only on a GPU machine)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gpu_check.py"), "imports"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS imports" in done.stdout


@pytest.mark.heavy
def test_the_backends_step_rehearsed_on_cpu_builds_validates_and_times() -> None:
    """The backends step's code path (build, validate, time, print) runs end to end on CPU."""
    pytest.importorskip("onnxruntime")
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gpu_check.py"), "backends-cpu"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS onnxruntime(provider='cpu')" in done.stdout
    assert "bs1 median" in done.stdout
