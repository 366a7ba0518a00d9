"""The final rounds wired to the fold (real tiny runners): members, re-fold, notes."""

from __future__ import annotations

from returns.result import Failure, Result, Success

from aitune_fp.core.fold import TuneState, start, step
from aitune_fp.core.records import BackendFailure, Profile
from aitune_fp.core.strategies import min_latency
from aitune_fp.shell.standalone_rounds import AfterSweeps, final_rounds
from tests.effects.rounds_fixtures import CPU, PLAN, SAMPLES, SETTINGS, STRATEGY, Recorder


def _swept(ms: float, phase: int = 0) -> list[float]:
    """Five sweep samples wobbling by 2 % around ``ms``."""
    return [ms * (1.0 + 0.02 * (((i + phase) * 7) % 5 - 2) / 2) for i in range(5)]


def test_final_rounds_refold_with_round_samples_and_say_why() -> None:
    """final_rounds re-runs the fold with round samples attached and notes how it ended."""
    log: list[str] = []
    base = Profile("eager", {1: [1.0, 1.1, 0.9]})
    fed: list[Result[Profile, BackendFailure]] = [
        Success(Profile("a", {1: [1.0, 1.1, 0.9]})),
        Failure(BackendFailure("b", "build", "boom")),
    ]
    state: TuneState = start(STRATEGY, Success(base))
    for result in fed:
        state = step(STRATEGY, state, result)
    runners = {"eager": Recorder("eager", log), "a": Recorder("a", log)}
    after = AfterSweeps(STRATEGY, state, base, fed)
    new_state, outcome = final_rounds(after, runners, SAMPLES, CPU, SETTINGS)
    assert outcome is not None
    assert new_state.baseline is not None and len(new_state.baseline.result.rounds_ms) >= 4
    assert [s.backend for s in new_state.ranking] == ["a"]
    assert [f.backend for f in new_state.failures] == ["b"]
    assert new_state.notes[-1].startswith("final rounds (")


def test_a_baseline_settled_by_the_sweeps_is_judged_but_not_re_timed() -> None:
    """Close candidates far ahead of the baseline are re-timed without calling the baseline."""
    log: list[str] = []
    base = Profile("eager", {1: _swept(3.0)})
    fed: list[Result[Profile, BackendFailure]] = [
        Success(Profile("a", {1: _swept(1.0)})),
        Success(Profile("b", {1: _swept(1.0, phase=2)})),
    ]
    state: TuneState = start(STRATEGY, Success(base))
    for result in fed:
        state = step(STRATEGY, state, result)
    runners = {n: Recorder(n, log) for n in ("eager", "a", "b")}
    after = AfterSweeps(STRATEGY, state, base, fed)
    new_state, outcome = final_rounds(after, runners, SAMPLES, CPU, SETTINGS)
    assert outcome is not None and outcome.rounds >= PLAN.min_rounds
    assert "eager" not in log and {"a", "b"} <= set(log)
    assert new_state.baseline is not None and not new_state.baseline.result.rounds_ms
    assert "the sweeps settle a against eager" in new_state.notes[-1]


def test_a_lone_contender_settled_by_the_sweeps_runs_no_rounds() -> None:
    """A leader far ahead of the baseline in the sweeps is kept without any round call."""
    log: list[str] = []
    base = Profile("eager", {1: _swept(3.0)})
    fed: list[Result[Profile, BackendFailure]] = [Success(Profile("a", {1: _swept(1.0)}))]
    state = step(STRATEGY, start(STRATEGY, Success(base)), fed[0])
    runners = {n: Recorder(n, log) for n in ("eager", "a")}
    after = AfterSweeps(STRATEGY, state, base, fed)
    new_state, outcome = final_rounds(after, runners, SAMPLES, CPU, SETTINGS)
    assert outcome is None and log == []
    assert new_state.notes[-1].startswith("no final rounds: the sweeps settle a against eager")
    assert new_state.ranking == state.ranking


def test_final_rounds_do_nothing_without_a_plan_or_partners() -> None:
    """The reference rule, or a lone participant, leaves the state untouched."""
    base = Profile("eager", {1: [1.0, 1.1, 0.9]})
    fed: list[Result[Profile, BackendFailure]] = [Success(Profile("a", {1: [1.0]}))]
    state = step(min_latency, start(min_latency, Success(base)), fed[0])
    log: list[str] = []
    runners = {"eager": Recorder("eager", log), "a": Recorder("a", log)}
    after = AfterSweeps(min_latency, state, base, fed)
    assert final_rounds(after, runners, SAMPLES, CPU) == (state, None)
    lone = step(STRATEGY, start(STRATEGY, Success(base)), fed[0])
    assert final_rounds(AfterSweeps(STRATEGY, lone, base, fed), {}, SAMPLES, CPU) == (lone, None)
    assert log == []
