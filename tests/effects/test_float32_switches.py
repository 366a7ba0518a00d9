"""torch's float32 switches (TF32, the float32 matmul precision) as the caller set them hold
where candidates are validated and timed (issue 37 §4, §8).

Sources checked: ATen's ``Context.cpp`` (torch 2.13): ``setAllowTF32CuBLAS(b)``, behind
``torch.backends.cuda.matmul.allow_tf32 = b``, sets the float32 matmul precision to HIGH
(``b``) or HIGHEST; ``allowTF32CuBLAS()`` reads ``precision != HIGHEST``. These flags are
process-wide and settable on a CPU build, so the tests run the real torch here.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch
from returns.io import IOResult

from aitune_fp.core.records import BackendFailure
from aitune_fp.core.strategies import max_throughput
from aitune_fp.effects.backends.base import Built
from aitune_fp.effects.build_request import BuildRequest, Candidate
from aitune_fp.effects.checks.tf32 import Tf32Switches, use_switches
from aitune_fp.effects.checks.validate import Tolerance
from aitune_fp.effects.inputs.samples import Samples, normalise_samples
from aitune_fp.effects.isolation import isolated_candidate
from aitune_fp.effects.measure.timing import ProfileSettings
from tests.faults.faulty import Plain

CPU = torch.device("cpu")


@contextlib.contextmanager
def matmul_precision(value: str) -> Iterator[None]:
    """torch's float32 matmul precision is ``value`` while open (restored after)."""
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(value)
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)


def test_use_switches_keeps_a_users_medium_inside_and_after() -> None:
    """With the user's "medium" (bf16 matmuls), switches asking for bf16 keep "medium"
    inside, and the user's "medium" is back afterwards (not turned into "high")."""
    with matmul_precision("medium"):
        with use_switches(Tf32Switches("bf16", "tf32")):
            assert torch.get_float32_matmul_precision() == "medium"
            assert Tf32Switches.now().matmul == "bf16"
        assert torch.get_float32_matmul_precision() == "medium"
        with use_switches(Tf32Switches("ieee", "ieee")):
            assert torch.get_float32_matmul_precision() == "highest"
        assert torch.get_float32_matmul_precision() == "medium"


@dataclass(frozen=True, slots=True)
class SwitchReader(Plain):
    """The eager module, recording torch's float32 switches as its build saw them."""

    name: str = field(default="switch_reader", init=False)

    def build(
        self, module: torch.nn.Module, samples: Samples, device: torch.device, work_dir: Path
    ) -> IOResult[Built, BackendFailure]:
        """Plain's runner; ``info`` holds the switches in force during the build."""
        now = Tf32Switches.now()
        seen = {"matmul_precision": torch.get_float32_matmul_precision(),
                "switches": f"{now.matmul}/{now.conv}"}  # fmt: skip
        built = Plain.build(self, module, samples, device, work_dir)
        return built.map(lambda b: dataclasses.replace(b, info={**b.info, **seen}))


@pytest.mark.parametrize(("precision", "matmul"), [("high", "tf32"), ("medium", "bf16")])
def test_an_isolated_worker_runs_under_the_callers_switches(
    tmp_path: Path, precision: str, matmul: str
) -> None:
    """A candidate built in an isolated worker sees the tune process's float32 matmul
    precision (the fork server it comes from was started with torch's defaults)."""
    torch.manual_seed(0)
    module = torch.nn.Linear(4, 2).eval()
    samples = normalise_samples([torch.randn(1, 4)])
    with matmul_precision(precision):
        run = isolated_candidate(
            BuildRequest(module, samples, CPU, max_throughput.plan, (1,), (1,), None,
                         ProfileSettings(max_pool=2, max_seconds_per_batch=0.2), Tolerance()),
            Candidate(SwitchReader(), "switch_reader", tmp_path / "w"),
        )  # fmt: skip
    assert run.built is not None, run.outcome
    assert run.built.info["matmul_precision"] == precision
    assert run.built.info["switches"].startswith(matmul)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_cuda_a_worker_computes_with_the_callers_tf32(tmp_path: Path) -> None:
    """On a GPU, with "high" set by the caller, the worker's build sees TF32 matmuls."""
    module = torch.nn.Linear(64, 64).eval().cuda()
    samples = normalise_samples([torch.randn(1, 64)])
    with matmul_precision("high"):
        run = isolated_candidate(
            BuildRequest(module, samples, torch.device("cuda"), max_throughput.plan, (1,), (1,)),
            Candidate(SwitchReader(), "switch_reader", tmp_path / "w"),
        )
    assert run.built is not None, run.outcome
    assert run.built.info["switches"].startswith("tf32")
