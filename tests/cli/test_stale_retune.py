"""The command line, end to end: a model edited where the cache key once could not see it
(a module-level helper function) and tuned again with the same cache gets a saved module
that computes the edited model, not the first one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

MODEL = """
import torch

SHIFT = {shift}


def helper(x):
    return x * {factor} + SHIFT


def build():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, x):
            return helper(self.net(x))

    return Model().eval()
"""
CHECK = """
import json, sys, importlib.util, torch, aitune_fp
spec = importlib.util.spec_from_file_location("edited_model", sys.argv[2])
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
model = mod.build()
tuned = aitune_fp.load(sys.argv[1], module=model)
x = torch.randn(1, 4)
print(json.dumps(float((tuned(x) - model(x)).abs().max())))
"""


def _tune(model_file: Path, root: Path, tag: str) -> None:
    command = [
        sys.executable, "-m", "aitune_fp.cli.main", "tune", f"{model_file}:build",
        "--input-shape", "2x4", "--backends", "onnxruntime", "--strategy", "min-latency",
        "--max-batch-size", "2", "--verify-seconds", "0", "--no-plot",
        "--cache-dir", str(root / "cache"), "--out", str(root / f"out-{tag}"),
        "--save", str(root / f"saved-{tag}"),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.heavy
def test_an_edited_helper_function_is_retuned_not_served_stale(tmp_path: Path) -> None:
    """Tune, edit the helper (×1 → ×3, +0 → +2), tune again with the same cache: the
    second saved module equals the edited model's eager outputs."""
    model_file = tmp_path / "model.py"
    model_file.write_text(MODEL.format(factor=1.0, shift=0.0))
    _tune(model_file, tmp_path, "first")
    model_file.write_text(MODEL.format(factor=3.0, shift=2.0))
    _tune(model_file, tmp_path, "second")
    check = [sys.executable, "-c", CHECK, str(tmp_path / "saved-second"), str(model_file)]
    done = subprocess.run(check, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) < 1e-4
