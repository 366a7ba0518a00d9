"""A fleet plan's precision choices reach each job's tune exactly as the CLI flags would."""

from __future__ import annotations

from pathlib import Path

import pytest

from aitune_fp.cli.main import main
from aitune_fp.cli.parser import build_parser
from aitune_fp.cli.precision_options import bounded, search_of
from aitune_fp.core.accuracy import AccuracyPolicy, Search
from aitune_fp.core.fleet import expand
from aitune_fp.core.record.run_record import loads
from aitune_fp.core.strategies.registry import parse_strategy, strategy_config
from aitune_fp.core.strategies.within_accuracy import within_accuracy
from aitune_fp.shell.fleet.run_plan import job_spec, load_plan
from aitune_fp.shell.fleet.store import read_index

ZOO = """
import torch


def tiny():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU()), [torch.randn(2, 4)] * 2
"""
PLAN = """
strategies = ["max-throughput"]
backends = ["eager"]
max_batch_size = 2
plot = false
search = "none"
max_drop = "1%"

[[models]]
name = "tiny"
factory = "zoo.py:tiny"
min_top1 = "97%"

[[targets]]
device = "cpu"
precision = ["fp32", "int8"]
"""


def _plan(tmp_path: Path) -> Path:
    (tmp_path / "zoo.py").write_text(ZOO)
    path = tmp_path / "plan.toml"
    path.write_text(PLAN)
    return path


def test_a_jobs_tune_parses_to_the_plans_search_policy_and_bound(tmp_path: Path) -> None:
    """The job's tune command line, read by the CLI's own parser, gives the plan's Search,
    accuracy policy and within-accuracy bound."""
    job = expand(load_plan(_plan(tmp_path)))[0]
    spec = job_spec(job, tmp_path, tmp_path / "out", None, force=False, cache_dir=None)
    args = build_parser().parse_args([*spec.argv, "--out", str(tmp_path / "run")])
    chosen = search_of(args)
    assert chosen["search"] == Search("none", frozenset({"float32", "int8"}))
    assert chosen["accuracy"] == AccuracyPolicy(min_top1=0.97)
    strategy = bounded(parse_strategy("max-throughput"), args)
    expected = within_accuracy(0.01, parse_strategy("max-throughput"))
    assert strategy_config(strategy) == strategy_config(expected)


@pytest.mark.heavy
def test_a_local_fleet_run_tunes_under_the_plans_bound(tmp_path: Path) -> None:
    """Run by the local executor, the job's run.json holds the plan's max_drop strategy."""
    out = tmp_path / "out"
    code = main(["fleet", "run", str(_plan(tmp_path)), "--out", str(out)])
    assert code == 0
    index = read_index(out)
    assert index is not None and [e.status for e in index.entries] == ["complete"]
    record = loads((out / index.entries[0].job / "run.json").read_text())
    assert record.strategy["strategy"] == "within_accuracy(max_throughput)"
    assert record.strategy["parameters"]["max_drop"] == 0.01
