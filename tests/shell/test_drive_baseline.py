"""The interpreter builds the baseline the plan names from the config it was given under
that name (no backend implied), the tuned module falls back to that same config, and a
plan whose baseline names no config is refused before anything is built."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
from pyrsistent import pmap
from returns.result import Success

from aitune_fp import ProfilingPlan, min_latency
from aitune_fp.core.measure.stop_rules import fixed_steps
from aitune_fp.core.record.derive import built_rows
from aitune_fp.core.session import SessionPlan
from aitune_fp.effects.build_request import BuildRequest
from aitune_fp.effects.inputs.samples import normalise_samples
from aitune_fp.shell.drive import drive
from aitune_fp.shell.run_end import make_winner
from aitune_fp.shell.setup import RunState, Setup
from tests.shell.fakes import FakeBackend

QUICK = dataclasses.replace(
    min_latency, plan=ProfilingPlan(batching=False, call_rule=fixed_steps(warmup=1, steps=3))
)
BASE = FakeBackend("base")
SLOW = FakeBackend("slow", sleep_ms=20.0)


def _setup(tmp_path: Path) -> Setup:
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()).eval()
    samples = normalise_samples(torch.randn(4, 8))
    request = BuildRequest(module, samples, torch.device("cpu"), QUICK.plan, (1,), (1,), tmp_path)
    return Setup(request, QUICK, lambda _e: None, total=2)


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[Setup, RunState]:
    """A run whose plan names ``base`` (a fake, not eager) as its baseline; the one
    candidate is far slower, so the selection falls back to the baseline."""
    setup = _setup(tmp_path_factory.mktemp("drive"))
    plan = SessionPlan(QUICK, ("slow",), baseline="base")
    return setup, drive(setup, plan, {"base": BASE, "slow": SLOW})


def test_the_baseline_is_built_from_the_config_named_by_the_plan(
    ran: tuple[Setup, RunState],
) -> None:
    """The first row is the plan's baseline, built from the config given under its name."""
    _, run = ran
    assert run.session is not None
    assert [r.backend for r in built_rows(run.session)] == ["base", "slow"]
    assert dict(run.configs) == {"base": BASE, "slow": SLOW}
    assert run.done is not None and run.done.selection.unwrap().fell_back_to_baseline


def test_the_winner_falls_back_to_the_baselines_own_config(ran: tuple[Setup, RunState]) -> None:
    """A fallback winner is run with the baseline's config, also when its runner is gone
    (then that config is built again here)."""
    setup, run = ran
    assert run.done is not None
    winner, outcome = make_winner(setup, run, run.done.selection)
    assert winner is not None and winner[1] == BASE and outcome == run.done.selection
    gone = dataclasses.replace(run, live=pmap())
    rebuilt, _ = make_winner(setup, gone, run.done.selection)
    assert rebuilt is not None and rebuilt[1] == BASE
    assert rebuilt[0].runner(torch.ones(1, 8)).shape == (1, 8)


def test_a_winner_never_built_has_no_runner(ran: tuple[Setup, RunState]) -> None:
    """A selection naming a backend with no run and no runner is the failure that says so."""
    setup, run = ran
    assert run.done is not None
    ghost = dataclasses.replace(run.done.selection.unwrap(), backend="ghost",
                                fell_back_to_baseline=False)  # fmt: skip
    _, outcome = make_winner(setup, run, Success(ghost))
    assert outcome.failure().message == "ghost has no runner left to run the tuned module"


def test_a_plan_whose_baseline_names_no_config_is_refused(tmp_path: Path) -> None:
    """Nothing is built when the plan's baseline has no config: the run ends with the
    error naming it."""
    plan = SessionPlan(QUICK, ("slow",), baseline="eager")
    run = drive(_setup(tmp_path), plan, {"slow": SLOW})
    assert not run.configs and run.session is not None and not run.session.events
    assert run.done is not None
    message = run.done.selection.failure().message
    assert message == "the baseline 'eager' names no backend of this run (it has: slow)"
