"""TorchInductor JIT: compiles at build, runs dynamic batch sizes, validates against eager."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from returns.io import IOSuccess
from returns.unsafe import unsafe_perform_io
from torch import nn

from aitune_fp.effects.backends.inductor import InductorJIT
from aitune_fp.effects.checks.validate import validate
from aitune_fp.effects.inputs.samples import Samples


@pytest.mark.heavy
def test_inductor_builds_and_validates_a_tiny_mlp(
    mlp: nn.Module, mlp_samples: Samples, cpu: torch.device, work_dir: Path, max_batch: int
) -> None:
    """torch.compile of a tiny MLP passes validation at batch 1 and the max batch."""
    built = unsafe_perform_io(InductorJIT().build(mlp, mlp_samples, cpu, work_dir).unwrap())
    assert built.info["mode"] == "default"
    result = validate("inductor", built, mlp, mlp_samples, cpu, batch_sizes=(1, max_batch))
    assert isinstance(result, IOSuccess), result
    assert unsafe_perform_io(result.unwrap()).max_abs_error < 1e-4


def test_unknown_modes_are_refused() -> None:
    """A mode torch.compile does not know is refused when the config is made."""
    with pytest.raises(ValueError, match="inductor mode must be one of"):
        InductorJIT(mode="turbo")


def test_cuda_graph_mode_on_cpu_is_a_recorded_failure(
    mlp: nn.Module, mlp_samples: Samples, cpu: torch.device, work_dir: Path
) -> None:
    """reduce-overhead (CUDA graphs) on CPU fails at build with the reason, building nothing."""
    result = InductorJIT(mode="reduce-overhead").build(mlp, mlp_samples, cpu, work_dir)
    failure = unsafe_perform_io(result.failure())
    assert failure.backend == "inductor(mode='reduce-overhead')"
    assert failure.message == "mode 'reduce-overhead' (CUDA graphs) needs a CUDA device"
    assert not work_dir.exists()
