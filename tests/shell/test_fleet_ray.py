"""The Ray executor on a local Ray started by the test: same jobs, lost workers retried."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from aitune_fp.core.fleet import expand
from aitune_fp.core.record.run_record import loads
from aitune_fp.shell.fleet.run_plan import load_plan, run_plan
from aitune_fp.shell.fleet.store import read_index

ray = pytest.importorskip("ray", reason="the ray extra is not installed")

MODELS = """
import os, signal
from pathlib import Path

import torch

HERE = Path(__file__).parent


def _tiny():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU()), [torch.randn(2, 4)] * 2


def kills_its_worker_once():
    marker = HERE / "once.parents"
    seen = marker.read_text().split() if marker.exists() else []
    marker.write_text(" ".join([*seen, str(os.getppid())]))
    if not seen:
        os.kill(os.getppid(), signal.SIGKILL)   # the Ray worker running this job
    return _tiny()


def kills_its_worker_always():
    os.kill(os.getppid(), signal.SIGKILL)
"""


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """A local Ray instance for the module's tests, stopped afterwards."""
    ray.init(
        num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=256 * 1024**2
    )
    yield
    ray.shutdown()


@pytest.mark.heavy
def test_ray_runs_the_plan_and_retries_a_killed_worker(tmp_path: Path, local_ray: None) -> None:
    """Every job of the plan runs as a Ray task; a worker killed mid-job is replaced and the
    job completes; a worker killed on every attempt ends as a failed job after the retries."""
    (tmp_path / "zoo.py").write_text(MODELS)
    plan_file = tmp_path / "plan.toml"
    plan_file.write_text(
        'strategies = ["min-latency"]\nbackends = ["eager"]\nmax_batch_size = 2\nplot = false\n'
        'retries = 1\n[[models]]\nname = "mlp"\n'
        '[[models]]\nname = "once"\nfactory = "zoo.py:kills_its_worker_once"\n'
        '[[models]]\nname = "always"\nfactory = "zoo.py:kills_its_worker_always"\n'
        '[[targets]]\ndevice = "cpu"\n'
    )
    out = tmp_path / "out"
    index = run_plan(plan_file, out, executor="ray", cache_dir=str(tmp_path / "cache"))
    assert [e.job for e in index.entries] == [j.job_id for j in expand(load_plan(plan_file))]
    status = {e.model: e.status for e in index.entries}
    assert status == {"mlp": "complete", "once": "complete", "always": "failed"}
    parents = (tmp_path / "once.parents").read_text().split()
    assert len(parents) == 2 and parents[0] != parents[1] and str(os.getpid()) not in parents
    always = next(e for e in index.entries if e.model == "always")
    assert always.message.startswith("ray: ") and always.attempts == 2
    for entry in index.entries[:2]:
        record = loads((out / entry.job / "run.json").read_text())
        assert record.model == entry.model and record.selection is not None
    stored = read_index(out)
    assert stored is not None and stored.executor == "ray" and stored.entries == index.entries
