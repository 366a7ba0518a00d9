"""A CUDA target on a real GPU: the job tunes on the device and Ray gives it the GPU."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from aitune_fp.core.record.run_record import loads
from aitune_fp.shell.fleet.run_plan import run_plan

PLAN = """strategies = ["min-latency"]
backends = ["eager", "onnxruntime"]
max_batch_size = 4
plot = false
[[models]]
name = "mlp"
[[targets]]
device = "cuda"
"""


@pytest.mark.gpu
@pytest.mark.heavy  # a whole fleet tune: gpu-check's gpu-tests step leaves it out (issue 46)
@pytest.mark.parametrize("executor", ["local", "ray"])
def test_a_cuda_target_tunes_on_the_gpu(executor: str, tmp_path: Path) -> None:
    """The cuda job completes and its run was measured on a CUDA device (Ray: num_gpus=1)."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device: torch.cuda.is_available() is False")
    if executor == "ray":
        pytest.importorskip("ray", reason="the ray extra is not installed")
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    index = run_plan(plan, tmp_path / "out", executor=executor, cache_dir=str(tmp_path / "c"))
    assert [e.status for e in index.entries] == ["complete"]
    record = loads((tmp_path / "out" / index.entries[0].job / "run.json").read_text())
    assert record.device.startswith("cuda") and record.environment["gpu"] is not None
