"""Torch eager: runs the module itself under inference mode; module faults fail the build."""

from __future__ import annotations

from pathlib import Path

import torch
from returns.io import IOSuccess
from returns.unsafe import unsafe_perform_io
from torch import nn

from aitune_fp.effects.backends.base import Built
from aitune_fp.effects.backends.eager import TorchEager
from aitune_fp.effects.checks.validate import validate
from aitune_fp.effects.inputs.samples import Samples, normalise_samples


def test_eager_runs_the_module_under_inference_mode(
    mlp: nn.Module, mlp_samples: Samples, cpu: torch.device, work_dir: Path
) -> None:
    """The eager runner returns the module's outputs, computed under inference mode."""
    built: Built = unsafe_perform_io(TorchEager().build(mlp, mlp_samples, cpu, work_dir).unwrap())
    x = torch.randn(5, 4)
    out = built.runner(x)
    assert out.is_inference()
    with torch.inference_mode():
        assert torch.equal(out, mlp(x))
    assert (work_dir / "build.log").exists()


def test_eager_validates_with_zero_error(
    mlp: nn.Module, mlp_samples: Samples, cpu: torch.device, work_dir: Path, max_batch: int
) -> None:
    """Eager validated against the module itself passes with no error."""
    built = unsafe_perform_io(TorchEager().build(mlp, mlp_samples, cpu, work_dir).unwrap())
    result = validate("eager", built, mlp, mlp_samples, cpu, batch_sizes=(1, max_batch))
    assert isinstance(result, IOSuccess)
    assert unsafe_perform_io(result.unwrap()).max_abs_error == 0.0


def test_a_module_that_cannot_run_fails_the_build(
    mlp: nn.Module, cpu: torch.device, work_dir: Path
) -> None:
    """Samples the module cannot take give a build failure with the error, not an exception."""
    wrong = normalise_samples(torch.randn(1, 5))
    result = TorchEager().build(mlp, wrong, cpu, work_dir)
    failure = unsafe_perform_io(result.failure())
    assert failure.stage == "build"
    assert failure.message.startswith("RuntimeError: mat1 and mat2 shapes cannot be multiplied")
    assert "Traceback" in (work_dir / "build.log").read_text()
