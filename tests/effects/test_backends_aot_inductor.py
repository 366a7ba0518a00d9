"""AOTInductor: export with a dynamic batch, package to .pt2, run the loaded package.

Builds are shared per module (session fixtures) because each compiles C++; export faults
fail fast and are not heavy.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from returns.io import IOSuccess
from returns.unsafe import unsafe_perform_io
from torch import nn

from aitune_fp.effects.backends.aot_inductor import AOTInductor
from aitune_fp.effects.backends.base import Built
from aitune_fp.effects.checks.validate import validate
from aitune_fp.effects.inputs.samples import Samples

CPU = torch.device("cpu")


def _build(module: nn.Module, samples: Samples, work_dir: Path) -> Built:
    built: Built = unsafe_perform_io(AOTInductor().build(module, samples, CPU, work_dir).unwrap())
    return built


@pytest.fixture(scope="session")
def aoti_mlp(
    mlp: nn.Module, mlp_samples: Samples, tmp_path_factory: pytest.TempPathFactory
) -> Built:
    """The tiny MLP built once with AOTInductor."""
    return _build(mlp, mlp_samples, tmp_path_factory.mktemp("aoti_mlp"))


@pytest.mark.heavy
def test_mlp_package_validates_at_both_batch_extremes(
    aoti_mlp: Built, mlp: nn.Module, mlp_samples: Samples, max_batch: int
) -> None:
    """The loaded package matches eager on every sample, at batch 1 and at the max batch."""
    result = validate("aot_inductor", aoti_mlp, mlp, mlp_samples, CPU, batch_sizes=(1, max_batch))
    assert isinstance(result, IOSuccess), result
    assert unsafe_perform_io(result.unwrap()).max_abs_error < 1e-4


@pytest.mark.heavy
def test_the_artifact_is_a_loadable_package(aoti_mlp: Built, mlp: nn.Module) -> None:
    """The .pt2 artifact loads on its own and computes what eager computes at a new batch size."""
    assert aoti_mlp.artifact is not None and aoti_mlp.artifact.suffix == ".pt2"
    loaded = torch._inductor.aoti_load_package(str(aoti_mlp.artifact))
    x = torch.randn(13, 4)
    with torch.inference_mode():
        torch.testing.assert_close(loaded(x), mlp(x), rtol=1e-4, atol=1e-5)


@pytest.mark.heavy
def test_keyword_inputs_validate(
    keyword_module: nn.Module, keyword_samples: Samples, tmp_path: Path, max_batch: int
) -> None:
    """A module fed a dict of keyword tensors builds and validates through AOTInductor."""
    built = _build(keyword_module, keyword_samples, tmp_path)
    result = validate(
        "aot_inductor", built, keyword_module, keyword_samples, CPU, batch_sizes=(1, max_batch)
    )
    assert isinstance(result, IOSuccess), result


@pytest.mark.heavy
def test_nested_outputs_keep_their_structure(
    structured_module: nn.Module, structured_samples: Samples, tmp_path: Path, max_batch: int
) -> None:
    """A tuple-with-dict output comes back in eager's structure and validates."""
    built = _build(structured_module, structured_samples, tmp_path)
    h, d = built.runner(torch.randn(5, 4), torch.randn(5, 4))
    assert h.shape == (5, 2) and sorted(d) == ["argmax", "total"]
    assert d["argmax"].dtype == torch.int64
    result = validate(
        "aot_inductor",
        built,
        structured_module,
        structured_samples,
        CPU,
        batch_sizes=(1, max_batch),
    )
    assert isinstance(result, IOSuccess), result
