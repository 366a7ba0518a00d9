"""Cache keys are stable across processes and import paths: a second tune rebuilds nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aitune_fp.cli.factory import module_name

MODEL = """
import torch

def build():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    return net, [torch.randn(2, 4) for _ in range(2)]
"""
CACHEABLE = ("aot_inductor", "onnxruntime")
API = """
import importlib.util, logging, sys
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
spec = importlib.util.spec_from_file_location("imported_under_another_name", sys.argv[1])
user = importlib.util.module_from_spec(spec)
spec.loader.exec_module(user)
from aitune_fp.shell.tune_module import tune_module
module, samples = user.build()
tune_module(module, samples, backends=["eager", *sys.argv[4:]], cache_dir=sys.argv[2],
            max_batch_size=2, record_path=sys.argv[3], fresh=True).unwrap()
"""


def _cli(
    model: Path, cache: Path, out: Path, ahead: str = "", fresh: bool = False
) -> dict[str, Any]:
    """Run one CLI tune in a fresh process (``AITUNE_FP_PREBUILD=ahead`` when given, in full
    past a stored decision when ``fresh``); its run record."""
    env = {**os.environ, "AITUNE_FP_PREBUILD": ahead} if ahead else None
    command = [sys.executable, "-m", "aitune_fp", "--debug", "tune", f"{model}:build"]
    command += ["--backends", ",".join(("eager", *CACHEABLE)), "--max-batch-size", "2"]
    command += ["--cache-dir", str(cache), "--out", str(out), "--no-plot"]
    command += ["--verify-seconds", "0"]  # the point is the cache, not the verification
    command += ["--fresh"] if fresh else []  # a stored decision's hit builds nothing at all
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False,
                          env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    record: dict[str, Any] = json.loads((out / "run.json").read_text())
    return record


def _api(model: Path, cache: Path, record: Path) -> dict[str, Any]:
    """Run one API tune in a fresh process, the file imported under another module name and
    tuned in full past the stored decision; its run record."""
    command = [sys.executable, "-c", API, str(model), str(cache), str(record), *CACHEABLE]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(record.read_text())
    return result


def _hits(record: dict[str, Any]) -> set[str]:
    """The backends the cache served: their record shows a cache lookup and no export or
    compile (the log line saying so is written in the isolated worker, not here)."""
    hits = set()
    for candidate in record["candidates"]:
        stages = candidate["stage_seconds"]
        served = stages["cache"] is not None and stages["export"] is None
        if candidate["backend"] in CACHEABLE and served and stages["compile"] is None:
            hits.add(candidate["backend"])
    return hits


def _cached_references(record: dict[str, Any]) -> set[str]:
    """The cacheable backends validated against the eager outputs stored in their entry."""
    return {
        c["backend"]
        for c in record["candidates"]
        if c["backend"] in CACHEABLE and c["validation"].get("cached_reference") == 1.0
    }


def _account_adds_up(record: dict[str, Any]) -> None:
    """A CLI run's wall account counts from the process start, names the wait for the
    workers' server as a stage (the tune process imports no backend library up front, so
    no import is joined), and leaves under 5 % unaccounted."""
    wall = record["wall"]
    names = [stage["stage"] for stage in wall["stages"]]
    assert wall["from_process_start"] and names[:3] == ["startup", "setup", "worker_pool_start"]
    assert "preload_join" not in names
    assert 0.0 <= wall["unaccounted_s"] < 0.05 * wall["wall_s"]


def test_module_name_is_a_digest_of_the_resolved_path(tmp_path: Path) -> None:
    """The file's import name depends on its resolved path only, never on a salted hash()."""
    inner = tmp_path / "a"
    inner.mkdir()
    assert module_name(inner / "m.py") == module_name(inner / ".." / "a" / "m.py")
    assert module_name(inner / "m.py") != module_name(tmp_path / "m.py")
    fresh = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys;from pathlib import Path;"
            "from aitune_fp.cli.factory import module_name;print(module_name(Path(sys.argv[1])))",
            str(inner / "m.py"),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert fresh.stdout.strip() == module_name(inner / "m.py")


@pytest.mark.heavy
def test_second_fresh_process_hits_the_cache_for_every_cacheable_backend(tmp_path: Path) -> None:
    """Two CLI tunes in fresh processes, then an API tune importing the file under another
    name, share one artifact cache: after the first (which builds nothing ahead), a full
    re-tune (``--fresh``: past the stored decision, which would build nothing) finds every cacheable
    backend is a hit (one entry each), validated against the eager outputs stored with its
    entry, and the second builds nothing ahead (its artifacts are cached already)."""
    model = tmp_path / "my_model.py"
    model.write_text(MODEL)
    cache = tmp_path / "cache"
    first = _cli(model, cache, tmp_path / "out1", ahead="0")
    assert _hits(first) == set()
    assert _cached_references(first) == set()
    second = _cli(model, cache, tmp_path / "out2", fresh=True)
    assert _hits(second) == set(CACHEABLE) and _cached_references(second) == set(CACHEABLE)
    assert all(e["event"] != "prebuilt" for e in second["events"])
    _account_adds_up(second)
    api = _api(model, cache, tmp_path / "api.json")
    assert _hits(api) == set(CACHEABLE) and _cached_references(api) == set(CACHEABLE)
    assert len(list((cache / "artifacts").iterdir())) == len(CACHEABLE)
