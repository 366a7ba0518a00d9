"""The shell's final-rounds hook, checked with fake backends (fast, no compilers)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import torch
from returns.unsafe import unsafe_perform_io

from aitune_fp import ProfilingPlan, min_latency
from aitune_fp.core.measure.stop_rules import fixed_steps
from aitune_fp.core.rounds.rounds_plan import RoundsPlan
from aitune_fp.core.strategies import confident
from aitune_fp.shell.tune_module import TuneOptions, TuningRun, run_tuning
from tests.shell.fakes import FakeBackend

# settled_speedup=None: these fakes are all the same module, so the rounds must always run
# (a stall in a 4-call sweep could otherwise settle one against eager)
PLAN = RoundsPlan(min_rounds=3, max_rounds=4, judge_every=1, warmup_calls=0, settled_speedup=None)


def quick_confident(rounds: RoundsPlan = PLAN) -> object:
    """confident(min_latency) with a short sweep and a short round budget."""
    s = confident(min_latency, resamples=50, rounds=rounds)
    plan = dataclasses.replace(s.plan, call_rule=fixed_steps(warmup=1, steps=4))
    return dataclasses.replace(s, plan=plan)


def test_final_rounds_run_and_are_recorded(module, samples, tmp_path: Path) -> None:
    """With rounds planned, the contenders and the baseline get round samples in the run
    record, the selection notes say how the rounds ended, and the winner still runs."""
    backends = [FakeBackend("a"), FakeBackend("b")]
    run: TuningRun = unsafe_perform_io(
        run_tuning(module, samples, quick_confident(), backends, TuneOptions(cache_dir=tmp_path))
    ).unwrap()
    record = run.record
    assert record.baseline is not None and record.baseline.profile is not None
    assert len(record.baseline.profile.rounds_ms[1]) >= PLAN.min_rounds
    assert any(c.profile is not None and c.profile.rounds_ms for c in record.candidates)
    assert record.selection is not None
    assert any(n.startswith("final rounds (") for n in record.selection.notes)
    timed = [o for o in record.outcomes if o.profile is not None and o.profile.rounds_ms]
    assert timed and all(o.stage_seconds["rounds"] > 0 for o in timed)
    assert all("rounds" not in o.stage_seconds for o in record.outcomes if o not in timed)
    assert run.tuned is not None
    x = torch.randn(3, 8)
    torch.testing.assert_close(run.tuned(x), module(x))


def test_the_reference_rule_runs_no_rounds(module, samples, tmp_path: Path) -> None:
    """Without a rounds plan nothing is timed again and no note is added."""
    strategy = dataclasses.replace(
        min_latency, plan=ProfilingPlan(batching=False, call_rule=fixed_steps(warmup=1, steps=4))
    )
    run: TuningRun = unsafe_perform_io(
        run_tuning(module, samples, strategy, [FakeBackend("a")], TuneOptions(cache_dir=tmp_path))
    ).unwrap()
    assert run.record.selection is not None
    assert not any("final rounds" in n for n in run.record.selection.notes)
    assert all(c.profile is None or not c.profile.rounds_ms for c in run.record.candidates)
    assert all("rounds" not in o.stage_seconds for o in run.record.outcomes)


def test_a_candidate_settled_by_the_sweeps_runs_no_rounds(module, samples, tmp_path: Path) -> None:
    """A candidate far slower than eager in the sweeps is settled there: no round is timed,
    eager is kept, and the selection's notes say why."""
    backends = [FakeBackend("slow", sleep_ms=20.0)]  # far beyond a scheduler stall
    run: TuningRun = unsafe_perform_io(
        run_tuning(
            module,
            samples,
            quick_confident(dataclasses.replace(PLAN, settled_speedup=1.25)),
            backends,
            TuneOptions(cache_dir=tmp_path),
        )
    ).unwrap()
    record = run.record
    assert record.selection is not None and record.selection.backend == "eager"
    assert record.baseline is not None and record.baseline.profile is not None
    assert not record.baseline.profile.rounds_ms
    assert any(n.startswith("no final rounds: the sweeps settle") for n in record.selection.notes)
