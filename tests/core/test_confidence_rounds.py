"""Pure decisions around the interleaved final rounds, and the noise report data."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Success

from aitune_fp.core.fold import TuneState, start, step, tune
from aitune_fp.core.records import BackendProfilingResult, Profile, Selection
from aitune_fp.core.report.stats import backend_stats, decision_line, noise_report, stats_line
from aitune_fp.core.rounds.round_members import (
    RoundMembers,
    contenders,
    judge_rounds,
    round_members,
    settled_by_sweeps,
)
from aitune_fp.core.rounds.rounds_plan import RoundsPlan, rotation
from aitune_fp.core.strategies import confident, max_throughput, min_latency

R = BackendProfilingResult
S = confident(min_latency, resamples=200)


def wobbly(ms: float, n: int, spread: float = 0.02, phase: int = 0) -> list[float]:
    """``n`` deterministic samples wobbling by ``spread`` around ``ms``."""
    return [ms * (1.0 + spread * (((i + phase) * 7919) % 11 - 5) / 5) for i in range(n)]


def with_rounds(name: str, ms: float, rounds: int, drift: float = 0.0) -> Profile:
    """A profile with a short sweep and ``rounds`` interleaved samples under shared drift."""
    shared = [1.0 + drift * ((i * 31) % 7) / 7 for i in range(rounds)]
    samples = [ms * d * w / ms for d, w in zip(shared, wobbly(ms, rounds), strict=True)]
    return Profile(name, {1: wobbly(ms, 5)}, rounds_ms={1: samples})


def fold_state(base: Profile, *cands: Profile) -> TuneState:
    """The fold's state after the baseline and ``cands``."""
    state = start(S, Success(base))
    for c in cands:
        state = step(S, state, Success(c))
    return state


# --------------------------------------------------------------------------- plan
@given(
    names=st.lists(st.text(min_size=1, max_size=3), max_size=5, unique=True), i=st.integers(0, 50)
)
def test_rotation_is_a_permutation_that_cycles(names: list[str], i: int) -> None:
    """Each round times everyone once; the order repeats after len(names) rounds."""
    order = rotation(tuple(names), i)
    assert sorted(order) == sorted(names)
    if names:
        assert order == rotation(tuple(names), i + len(names))
        assert order[0] == names[i % len(names)]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"contenders": 0},
        {"min_rounds": 1},
        {"min_rounds": 10, "max_rounds": 5},
        {"max_seconds": 0.0},
        {"warmup_calls": -1},
        {"judge_every": 0},
        {"settled_speedup": 1.0},
        {"settled_speedup": float("inf")},
    ],
)
def test_invalid_round_plans_are_refused(kwargs: dict[str, float]) -> None:
    """A plan with an out-of-range budget is refused at construction."""
    with pytest.raises(ValueError):
        RoundsPlan(**kwargs)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- contenders
def test_contenders_leave_out_clear_losers_and_keep_user_order() -> None:
    """The leader and the candidates it does not clearly beat join, in user order."""
    base = Profile("eager", {1: wobbly(2.0, 10)})
    state = fold_state(
        base,
        Profile("slow", {1: wobbly(3.0, 10)}),
        Profile("b", {1: wobbly(1.0, 10, phase=3)}),
        Profile("a", {1: wobbly(1.005, 10)}),
    )
    assert contenders(S, state, 3) == ("b", "a")
    assert contenders(S, state, 1) == ("b",)


def test_no_candidate_no_contenders() -> None:
    """Without a measured candidate nobody joins the rounds."""
    assert contenders(S, TuneState(), 3) == ()


# --------------------------------------------------------------------------- members
def test_a_lone_contender_settled_by_the_sweeps_runs_no_rounds() -> None:
    """A leader far faster than the baseline in the sweeps leaves nobody to re-time."""
    state = fold_state(Profile("eager", {1: wobbly(3.0, 5)}), Profile("a", {1: wobbly(1.0, 5)}))
    members = round_members(S, state, RoundsPlan())
    assert members.candidates == ("a",) and not members.baseline and members.size == 1
    assert members.reason.startswith("the sweeps settle a against eager")


def test_close_contenders_are_re_timed_without_a_settled_baseline() -> None:
    """Two close candidates both far ahead of the baseline are re-timed without it."""
    state = fold_state(
        Profile("eager", {1: wobbly(3.0, 5)}),
        Profile("a", {1: wobbly(1.0, 5)}),
        Profile("b", {1: wobbly(1.005, 5, phase=2)}),
    )
    members = round_members(S, state, RoundsPlan())
    assert members.candidates == ("a", "b") and not members.baseline


def test_an_open_contender_brings_the_baseline() -> None:
    """A contender whose gap to the baseline the sweeps cannot settle re-times the baseline."""
    state = fold_state(Profile("eager", {1: wobbly(1.2, 5)}), Profile("a", {1: wobbly(1.0, 5)}))
    members = round_members(S, state, RoundsPlan())
    assert members == RoundMembers(("a",), True)
    assert round_members(S, state, RoundsPlan(settled_speedup=1.1)).baseline is False


def test_contenders_settled_slower_than_the_baseline_leave() -> None:
    """Contenders the baseline beats by the settled margin cannot win, so none are timed."""
    state = fold_state(
        Profile("eager", {1: wobbly(1.0, 5)}),
        Profile("a", {1: wobbly(3.0, 5)}),
        Profile("b", {1: wobbly(3.01, 5, phase=2)}),
    )
    members = round_members(S, state, RoundsPlan())
    assert members.candidates == () and not members.baseline


def test_without_a_settled_margin_everyone_joins() -> None:
    """``settled_speedup=None`` keeps the old rule: the contenders and the baseline."""
    state = fold_state(Profile("eager", {1: wobbly(3.0, 5)}), Profile("a", {1: wobbly(1.0, 5)}))
    assert round_members(S, state, RoundsPlan(settled_speedup=None)) == RoundMembers(("a",), True)


@given(
    x=st.floats(0.1, 10.0),
    y=st.floats(0.1, 10.0),
    margin=st.floats(1.05, 3.0),
)
def test_settled_by_sweeps_is_antisymmetric(x: float, y: float, margin: float) -> None:
    """Swapping the two sides flips a settled verdict and keeps an open one open."""
    a = S.measure(Profile("a", {1: wobbly(x, 5)})).unwrap()
    b = S.measure(Profile("b", {1: wobbly(y, 5, phase=1)})).unwrap()
    assert settled_by_sweeps(S, a, b, margin) == -settled_by_sweeps(S, b, a, margin)
    if settled_by_sweeps(S, a, b, margin) == 1:
        assert y / x > margin * 0.9  # a settled gap is a real gap, not noise


# --------------------------------------------------------------------------- the judge
PLAN = RoundsPlan(min_rounds=4, max_rounds=40, max_seconds=10.0, judge_every=1)


def test_the_judge_never_stops_before_the_minimum() -> None:
    """Before ``min_rounds`` rounds everyone stays and nothing is decided."""
    base, cand = with_rounds("eager", 2.0, 3), with_rounds("a", 1.0, 3)
    verdict = judge_rounds(S, base, [cand], 3, 0.0, PLAN)
    assert not verdict.stop and verdict.active == ("eager", "a")


def test_a_clear_win_stops_the_rounds() -> None:
    """A candidate twice as fast is clear after the minimum number of rounds."""
    verdict = judge_rounds(
        S, with_rounds("eager", 2.0, 6), [with_rounds("a", 1.0, 6)], 6, 0.1, PLAN
    )
    assert verdict.stop and verdict.winner == "a"
    assert verdict.reason.startswith("clear after 6 rounds: a 2.000×")
    assert "over eager (beyond the margin)" in verdict.reason


def test_a_clear_tie_stops_the_rounds_for_the_baseline() -> None:
    """Identical speeds are a settled tie: the rounds stop and the baseline stays winner;
    an interval within ± the margin is an equivalence, so the line calls it clear."""
    verdict = judge_rounds(
        S, with_rounds("eager", 1.0, 12), [with_rounds("a", 1.0, 12)], 12, 0.1, PLAN
    )
    assert verdict.stop and verdict.winner == "eager"
    assert verdict.reason.startswith("clear after 12 rounds: eager") and "equivalent" in (
        verdict.reason
    )


def test_a_wide_interval_that_cannot_win_is_settled_not_clear() -> None:
    """A contender whose interval cannot reach the margin but straddles it below stops the
    rounds as settled: the line never calls a straddling interval clear."""
    base = Profile("eager", {1: wobbly(1.0, 5)}, rounds_ms={1: [1.0] * 12})
    ratios = [1.0, 0.99, 0.95, 1.0, 0.93, 1.0, 0.97, 1.0, 0.99, 0.96, 1.0, 0.94]
    slower = Profile("a", {1: wobbly(1.05, 5)}, rounds_ms={1: [1 / r for r in ratios]})
    verdict = judge_rounds(S, base, [slower], 12, 0.1, PLAN)
    assert verdict.stop and verdict.winner == "eager"
    assert verdict.reason.startswith("settled after 12 rounds: eager; no contender")


def test_an_open_question_goes_on_until_the_round_budget() -> None:
    """A noisy near-tie stays open, then stops at max_rounds saying so."""
    base = Profile("eager", {1: wobbly(1.0, 5)}, rounds_ms={1: wobbly(1.0, 40, 0.3)})
    cand = Profile("a", {1: wobbly(1.0, 5)}, rounds_ms={1: wobbly(0.98, 40, 0.3, phase=5)})
    going = judge_rounds(S, base, [cand], 10, 0.1, PLAN)
    assert not going.stop and set(going.active) == {"eager", "a"}
    done = judge_rounds(S, base, [cand], 40, 0.1, PLAN)
    assert done.stop and done.reason.startswith("budget spent (40 of 40 rounds")
    assert "undecided between eager and a, a " in done.reason


def test_the_time_budget_stops_the_rounds() -> None:
    """Once the time budget is spent the rounds stop with that reason."""
    base = Profile("eager", {1: wobbly(1.0, 5)}, rounds_ms={1: wobbly(1.0, 10, 0.3)})
    cand = Profile("a", {1: wobbly(1.0, 5)}, rounds_ms={1: wobbly(0.98, 10, 0.3, phase=5)})
    verdict = judge_rounds(S, base, [cand], 10, 11.0, PLAN)
    assert verdict.stop and verdict.reason.startswith("budget spent (11 s of 10 s, 10 rounds)")


def test_clear_losers_leave_and_never_rejoin() -> None:
    """A candidate the winner clearly beats leaves; one that left is not timed again."""
    base = with_rounds("eager", 2.0, 8)
    fast, slow = with_rounds("a", 1.0, 8), with_rounds("b", 3.0, 8)
    near = Profile("c", {1: wobbly(1.0, 5)}, rounds_ms={1: wobbly(1.0, 8, 0.3, phase=2)})
    verdict = judge_rounds(S, base, [fast, slow, near], 8, 0.0, PLAN)
    assert "b" not in verdict.active and "a" in verdict.active
    again = judge_rounds(S, base, [fast, slow, near], 8, 0.0, PLAN, still_timed=("a",))
    assert set(again.active) <= {"a"}


def test_the_baseline_stays_while_a_candidate_win_over_it_is_undecided() -> None:
    """The baseline keeps being timed while an open candidate might still beat it."""
    base = Profile("eager", {1: wobbly(1.0, 5)}, rounds_ms={1: wobbly(1.0, 8, 0.01)})
    clear = Profile("a", {1: wobbly(0.8, 5)}, rounds_ms={1: wobbly(0.8, 8, 0.01)})
    unsure = Profile("b", {1: wobbly(0.9, 5)}, rounds_ms={1: wobbly(0.9, 8, 0.8, phase=3)})
    verdict = judge_rounds(S, base, [clear, unsure], 8, 0.0, PLAN)
    assert verdict.winner == "a"
    assert set(verdict.active) == {"eager", "a", "b"}


# --------------------------------------------------------------------------- report data
def _selection(strategy: object, base: Profile, *cands: Profile) -> Selection:
    return tune(strategy, [Success(c) for c in cands], Success(base)).unwrap()  # type: ignore[arg-type]


def test_backend_stats_list_the_baseline_first_with_summaries() -> None:
    """One row per measured backend, baseline first, with counts and a speedup interval."""
    base = Profile("eager", {1: wobbly(2.0, 10)})
    sel = _selection(S, base, Profile("a", {1: wobbly(1.0, 12)}))
    rows = backend_stats(S, sel)
    assert [(r.backend, r.is_baseline, r.selected) for r in rows] == [
        ("eager", True, False),
        ("a", False, True),
    ]
    assert rows[0].summary is not None and rows[0].summary.count == 10
    assert rows[1].speedup is not None and rows[1].speedup.low > 1.9
    assert "n=12" in stats_line(S, rows[1]) and "speedup 2.0" in stats_line(S, rows[1])


def test_decision_line_for_a_significant_win() -> None:
    """A significant win is reported with its interval and the confidence."""
    sel = _selection(S, Profile("eager", {1: wobbly(2.0, 10)}), Profile("a", {1: wobbly(1.0, 10)}))
    line = decision_line(S, sel)
    assert line.startswith("a beats eager significantly: 2.00× [")
    assert "90 %" in line and "above 1.01×" in line


def test_decision_line_for_a_tie_resolved_by_preference() -> None:
    """A tie names the best candidate, its interval and the kept baseline."""
    sel = _selection(
        S, Profile("eager", {1: wobbly(1.0, 10)}), Profile("a", {1: wobbly(0.999, 10, phase=4)})
    )
    line = decision_line(S, sel)
    assert line.startswith("tie resolved by preference: best candidate a at ")
    assert line.endswith("so the baseline eager is kept")


def test_decision_line_for_the_reference_rule_says_so() -> None:
    """A reference decision is labelled as such, with whether it would be significant."""
    base = Profile("eager", {1: wobbly(1.0, 10, 0.2)})
    sel = _selection(min_latency, base, Profile("a", {1: wobbly(0.99, 10, 0.2, phase=3)}))
    line = decision_line(min_latency, sel)
    assert "by the reference rule (mean, strict >)" in line


def test_noise_report_without_samples_or_baseline() -> None:
    """Results without raw samples and selections without a baseline still report."""
    sel = Selection("a", R(10.0, 4, 400.0, 10.0), False)
    lines = noise_report(max_throughput, sel)
    assert lines[0] == "a selected without a performance check (no baseline)"
    with_rounds_row = replace(
        backend_stats(S, _selection(S, with_rounds("eager", 2.0, 6), with_rounds("a", 1.0, 6)))[1]
    )
    assert with_rounds_row.rounds == 6
    assert "6 interleaved rounds" in stats_line(S, with_rounds_row)


def test_paired_rounds_are_judged_by_the_median_of_round_ratios() -> None:
    """With a fifth of the rounds spoilt by stalls, the per-round median still sees the win
    that the trimmed mean of round ratios (at its breakdown point) cannot confirm."""
    fast = [1.0] * 16 + [9.0, 9.0, 9.0, 9.0]  # every fifth round stalls the candidate
    slow = [1.2] * 20
    cand = S.measure(Profile("a", {1: [1.0] * 5}, rounds_ms={1: fast})).unwrap()
    base = S.measure(Profile("eager", {1: [1.2] * 5}, rounds_ms={1: slow})).unwrap()
    trimmed = confident(min_latency, resamples=200, paired_statistic="trimmed")
    assert S.confidence is not None and S.confidence.round_statistic == "median"
    assert S.compare(cand, base)
    assert not trimmed.compare(
        trimmed.measure(Profile("a", {1: [1.0] * 5}, rounds_ms={1: fast})).unwrap(),
        trimmed.measure(Profile("eager", {1: [1.2] * 5}, rounds_ms={1: slow})).unwrap(),
    )
