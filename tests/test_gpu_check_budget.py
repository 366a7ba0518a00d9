"""gpu-check finishes inside its budget with time for a rerun, and installs what is missing
or outdated from the package mirror without a wheelhouse (issue 46 §2, §3, §13)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "scripts"


def _load(name: str) -> ModuleType:
    """A script of scripts/ as a module (they are not a package)."""
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gpu_check, gpu_steps, gpu_deps, gpu_cases = (
    _load(n) for n in ("gpu_check", "gpu_steps", "gpu_deps", "gpu_cases")
)
needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def test_the_docs_step_table_is_the_scripts_own_limits() -> None:
    """docs/gpu.md's step table is the one generated from gpu-check.sh's STEPS and LIMIT,
    and those limits sum to the default budget, at most 360 s."""
    script = (SCRIPTS / "gpu-check.sh").read_text()
    limits, budget = gpu_steps.read_limits(script)
    assert sum(limits.values()) == budget <= 360
    assert gpu_steps.doc_table() == gpu_steps.table(script).strip()
    for step, limit in limits.items():
        assert f"| {step} | {limit} s |" in gpu_steps.doc_table()


class FakeClock:
    """A monotonic clock each case advances by what it spends (time.monotonic's role)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_each_backends_case_is_capped_at_the_steps_remaining_time(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every case is handed a deadline inside the step's time (never its own 150 s past it,
    as core cases were), cases after the time is spent are SKIPs, and the closing "not
    runnable here" line is printed before the step's limit."""
    monkeypatch.setenv("GPU_CHECK_STEP_S", "150")
    monkeypatch.delenv("GPU_CHECK_STEP_END", raising=False)
    clock = FakeClock()
    end = clock.now + 150.0
    untils: list[float] = []

    def slow_case(case: Any, device: torch.device, work: Path, until: float) -> tuple[str, str]:
        untils.append(until)
        if case[0].name == "tensorrt":
            return "SKIP", "tensorrt is not installed"
        clock.now = until  # a compile that runs to its deadline
        return "FAIL", "hung: killed when its time ran out"

    cases = [
        (SimpleNamespace(name=n, describe=lambda n=n: n), "mlp", "strict")
        for n in ("tensorrt", "inductor", "aot_inductor", "aot_inductor", "eager")
    ]
    monkeypatch.setattr(gpu_cases, "plan", lambda device_type: cases)
    monkeypatch.setitem(sys.modules, "gpu_cases", gpu_cases)
    assert gpu_check.backends("cpu", run_case=slow_case, clock=clock) == 1
    assert untils and all(u <= end - gpu_check.LAST_LINES_S for u in untils)
    lines = capsys.readouterr().out.splitlines()
    assert sum("not run: the step's time is spent" in ln for ln in lines) == 5 - len(untils)
    assert lines[-1].startswith("SKIP not runnable here: tensorrt is not installed")
    assert clock.now <= end


def test_the_plan_runs_cheap_cases_first() -> None:
    """The backends plan is ordered by build cost: eager and Inductor before AOTInductor,
    TensorRT and Torch-TensorRT last."""
    ranks = [gpu_cases.cost_rank(c) for c in gpu_cases.plan("cuda")]
    assert ranks == sorted(ranks)
    assert gpu_cases.plan("cuda")[0][0].name in ("eager", "inductor")


def test_gpu_tests_collects_only_the_files_that_hold_gpu_tests() -> None:
    """The gpu-tests step hands pytest only the files with a ``gpu`` mark (not ~190
    modules), this file's neighbours with gpu tests among them."""
    files = gpu_check.gpu_test_files(ROOT / "tests")
    names = {f.name for f in files}
    assert "test_gpu_check_script.py" in names and "test_fleet_gpu.py" in names
    assert "test_gpu_check_budget.py" not in names  # no gpu mark here, only fakes
    assert len(files) < len(list((ROOT / "tests").rglob("test_*.py"))) / 4
    assert gpu_check.GPU_TESTS_MARKS == "gpu and not heavy"


REQUIRES = {
    "onnxscript": ["onnx-ir>=0.1.9", "numpy", 'pytest; extra == "test"'],
    "returns": ['typing-extensions>=4.0; python_version >= "3.0"'],
}
VERSIONS = {"returns": "0.19.0", "onnxscript": "0.3.0", "onnx-ir": "0.1.2", "numpy": "2.1.0"}


def test_an_outdated_package_on_the_image_is_wanted_with_its_bound() -> None:
    """With versions and requirements read through fakes of ``importlib.metadata.version``
    and ``importlib.metadata.requires``: an installed but outdated distribution is wanted
    with its bound (the project's own, or another's Requires-Dist), a missing one is
    wanted, a satisfied one and an extra's requirement are not."""
    pairs = ["returns:returns", "onnxscript:onnxscript", "onnx_ir:onnx_ir", "numpy:numpy",
             "typing_extensions:typing_extensions", "pytest:pytest"]  # fmt: skip
    got = gpu_deps.wanted(
        pairs,
        ["returns>=0.30", "onnxscript>=0.2"],
        version_of=VERSIONS.get,
        requires_of=lambda d: REQUIRES.get(d, []),
        found=lambda m: m not in ("typing_extensions", "pytest"),
    )
    assert got == ["returns>=0.30", "onnx-ir>=0.1.9", "typing-extensions>=4.0", "pytest"]


FAKE_PY = """#!/usr/bin/env bash
# stands in for python: gpu_deps.py wants returns until pip ran; pip's argv is logged
if [ "$1" = scripts/gpu_deps.py ]; then [ -f "$STATE" ] || echo "returns>=0.30"; exit 0; fi
if [ "$1 $2" = "-m pip" ]; then echo "$*" >>"$PIP_LOG"; touch "$STATE"; exit 0; fi
exit 1
"""


def _install(tmp_path: Path, wheels: str) -> tuple[subprocess.CompletedProcess[str], str]:
    fake = tmp_path / "python"
    fake.write_text(FAKE_PY)
    fake.chmod(0o755)
    env = {**os.environ, "PY": str(fake), "WHEELS": wheels, "SITE": str(tmp_path / "site"),
           "STATE": str(tmp_path / "state"), "PIP_LOG": str(tmp_path / "pip.log"),
           "DEPS": "x:y"}  # fmt: skip
    done = subprocess.run(
        ["bash", "-c", "source scripts/gpu_deps.sh; install_missing"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=60,
    )  # fmt: skip
    return done, (tmp_path / "pip.log").read_text()


@needs_bash
def test_without_a_wheelhouse_the_deps_step_installs_from_the_package_index(
    tmp_path: Path,
) -> None:
    """No wheelhouse: pip installs the wanted requirement from the index (no --no-index),
    upgrading into SITE, and the step passes naming where they came from; with one it
    stays offline."""
    done, pip = _install(tmp_path, "")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "--no-index" not in pip and "--upgrade" in pip and "returns>=0.30" in pip
    assert "installed from the package index" in done.stdout
    (tmp_path / "state").unlink()
    (tmp_path / "wh").mkdir()
    done, pip = _install(tmp_path, str(tmp_path / "wh"))
    assert done.returncode == 0 and "--no-index" in pip.splitlines()[-1]


def test_a_partial_summary_after_each_step_has_no_verdict(tmp_path: Path) -> None:
    """After a step, summary.txt holds the table so far ending in "so far", never a
    verdict (the final summary's mark), and one line of counts is printed."""
    (tmp_path / "results.tsv").write_text("PASS\tdeps\t2\t\nSKIP\tcuda\t1\tno CUDA device\n")
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / "gpu_summary.py"), str(tmp_path), "--partial", "cuda"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.stdout.strip() == "so far, after cuda: 1 passed, 0 failed, 1 skipped"
    text = (tmp_path / "summary.txt").read_text()
    assert "no CUDA device" in text and "verdict" not in text
