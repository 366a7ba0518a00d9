"""Backends that trace with ``torch.export`` refuse untraceable modules at build, cheaply."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from returns.unsafe import unsafe_perform_io
from torch import nn

from aitune_fp.effects.backends.aot_inductor import AOTInductor
from aitune_fp.effects.backends.base import Backend
from aitune_fp.effects.backends.ort import OnnxRuntime
from aitune_fp.effects.inputs.samples import normalise_samples

CPU = torch.device("cpu")


@pytest.mark.parametrize(
    ("backend", "artifact"), [(AOTInductor(), "model.pt2"), (OnnxRuntime(), "model.onnx")]
)
@pytest.mark.parametrize("reason", ["item branch", "numpy inside"])
def test_untraceable_modules_fail_the_build(
    backend: Backend,
    artifact: str,
    reason: str,
    untraceable_modules: dict[str, nn.Module],
    work_dir: Path,
) -> None:
    """A module torch.export cannot trace is a build failure value with the traceback in the
    log, and no artifact (no silent fallback tracer)."""
    samples = normalise_samples(torch.randn(2, 4))
    result = backend.build(untraceable_modules[reason], samples, CPU, work_dir)
    failure = unsafe_perform_io(result.failure())
    assert (failure.backend, failure.stage) == (backend.name, "build")
    assert f"(full log: {work_dir / 'build.log'})" in failure.message
    assert "Traceback" in (work_dir / "build.log").read_text()
    assert not (work_dir / artifact).exists()
