"""Example-based tests, one per selection rule of BEHAVIOUR.md §3 (and the §2 formats)."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterator

import pytest
from returns.result import Failure, Result, Success

from aitune_fp import (
    BackendFailure,
    BackendProfilingResult,
    Profile,
    Strategy,
    latency_budget,
    max_throughput,
    min_latency,
    tune,
)
from aitune_fp.core.records import Candidate
from aitune_fp.core.report.lines import (
    baseline_selected_line,
    describe_parts,
    selected_line,
    speedup_line,
    summary_lines,
)
from aitune_fp.core.strategies.registry import strategy_config


def ok(name: str, ms: float, batch_sizes: tuple[int, ...] = (1,)) -> Candidate:
    """A profiled candidate whose every batch size takes ``ms`` per call."""
    return Success(Profile(name, {bs: [ms] for bs in batch_sizes}))


def failed(name: str, stage: str = "build") -> Candidate:
    """A candidate that failed at ``stage``."""
    return Failure(BackendFailure(name, stage, f"{name} broke"))


def test_baseline_is_measured_before_any_candidate_and_is_not_one() -> None:
    """Rule 1: the baseline is measured before the first candidate is pulled and never ranked."""
    events: list[str] = []

    def measure(profile: Profile) -> Result[BackendProfilingResult, BackendFailure]:
        events.append(f"measure {profile.backend}")
        return min_latency.measure(profile)

    def candidates() -> Iterator[Candidate]:
        events.append("pull a")
        yield ok("a", 1.0)

    strategy = dataclasses.replace(min_latency, measure=measure)
    selection = tune(strategy, candidates(), baseline=ok("eager", 2.0)).unwrap()
    assert events == ["measure eager", "pull a", "measure a"]
    assert [s.backend for s in selection.ranking] == ["a"]


def test_failures_are_recorded_in_order_and_the_fold_goes_on() -> None:
    """Rule 2: failed candidates are recorded, in order, and later candidates still compete."""
    given = [failed("a", "build"), failed("b", "validate"), failed("c", "profile"), ok("d", 1.0)]
    selection = tune(min_latency, given).unwrap()
    assert selection.backend == "d"
    assert [(f.backend, f.stage) for f in selection.failures] == [
        ("a", "build"),
        ("b", "validate"),
        ("c", "profile"),
    ]


def test_a_measure_failure_is_recorded_like_any_other() -> None:
    """Rule 2: a profile the strategy cannot measure (no batch size 1) is a measure failure."""
    selection = tune(min_latency, [ok("a", 1.0, (2,)), ok("b", 3.0)]).unwrap()
    assert selection.backend == "b"
    assert [(f.backend, f.stage) for f in selection.failures] == [("a", "measure")]


@pytest.mark.parametrize("strategy", [max_throughput, min_latency, latency_budget(10.0)])
def test_ties_between_candidates_go_to_the_earlier_one(strategy: Strategy) -> None:
    """Rule 3: among equally good candidates the earliest in the user's order wins."""
    selection = tune(strategy, [ok("slow", 4.0), ok("first", 2.0), ok("second", 2.0)]).unwrap()
    assert selection.backend == "first"


def test_validation_on_a_strictly_better_candidate_wins() -> None:
    """Rule 4: with validation on, a candidate strictly better than the baseline is selected."""
    selection = tune(min_latency, [ok("a", 1.0)], baseline=ok("eager", 2.0)).unwrap()
    assert (selection.backend, selection.fell_back_to_baseline) == ("a", False)


def test_validation_on_a_tie_goes_to_the_baseline() -> None:
    """Rule 4: a candidate only as good as the baseline loses to it."""
    selection = tune(min_latency, [ok("a", 2.0)], baseline=ok("eager", 2.0)).unwrap()
    assert (selection.backend, selection.fell_back_to_baseline) == ("eager", True)


def test_validation_on_all_failed_falls_back_to_the_baseline() -> None:
    """Rule 4: with validation on and every candidate failed, the baseline is selected."""
    selection = tune(max_throughput, [failed("a"), failed("b")], baseline=ok("eager", 2.0))
    assert selection.unwrap().backend == "eager"
    assert selection.unwrap().fell_back_to_baseline


def test_validation_off_the_best_candidate_wins_however_slow() -> None:
    """Rule 5: with validation off the baseline is ignored and the best candidate wins."""
    off = dataclasses.replace(max_throughput, validate_performance=False)
    selection = tune(off, [ok("slow", 9.0), ok("slower", 10.0)], baseline=ok("eager", 1.0))
    assert (selection.unwrap().backend, selection.unwrap().fell_back_to_baseline) == (
        "slow",
        False,
    )
    assert selection.unwrap().perf_results == ()


def test_validation_off_all_failed_names_every_backend() -> None:
    """Rule 5: with validation off and every candidate failed, the error names the backends."""
    off = dataclasses.replace(min_latency, validate_performance=False)
    error = tune(off, [failed("onnxruntime"), failed("tensorrt")], baseline=ok("eager", 1.0))
    message = error.failure().message
    assert message.startswith("no correct backend found")
    assert "onnxruntime" in message and "tensorrt" in message
    assert [f.backend for f in error.failure().failures] == ["onnxruntime", "tensorrt"]


def test_no_candidates_and_no_baseline_is_an_error() -> None:
    """Rule 5: with nothing to choose from the result is a 'no correct backend found' error."""
    assert tune(max_throughput, []).failure().message.startswith("no correct backend found")


def test_failed_baseline_is_a_note_and_tuning_goes_on() -> None:
    """Rule 6: a baseline that failed is noted and tuning goes on without the check."""
    selection = tune(min_latency, [ok("a", 5.0)], baseline=failed("eager", "baseline")).unwrap()
    assert (selection.backend, selection.fell_back_to_baseline) == ("a", False)
    assert selection.baseline is None and selection.perf_results == ()
    assert any("baseline" in note and "eager" in note for note in selection.notes)


def test_latency_budget_nobody_meets_it_names_the_budget() -> None:
    """Rule 7: no candidate within budget is an error naming it, even if the baseline fits."""
    outcome = tune(latency_budget(2.5), [ok("a", 3.0), ok("b", 4.0)], baseline=ok("eager", 1.0))
    assert "2.5 ms" in outcome.failure().message
    assert [f.stage for f in outcome.failure().failures] == ["measure", "measure"]


def test_latency_budget_is_inclusive() -> None:
    """Rule 7 and §2: a batch size exactly on the budget counts as within it."""
    selection = tune(latency_budget(2.0), [ok("a", 2.0, (1, 2, 4))]).unwrap()
    assert selection.result.selected_batch_size == 4


@pytest.mark.parametrize("budget", [0, -1.0, math.nan, math.inf, True, "5"])
def test_latency_budget_refuses_a_bad_budget(budget: object) -> None:
    """Rule 7: a non-positive, non-finite or non-numeric budget is refused, naming the value."""
    with pytest.raises(ValueError, match="budget_ms must be a finite number > 0"):
        latency_budget(budget)  # type: ignore[arg-type]


def test_perf_results_per_profiled_candidate_with_passed_as_speedup_at_least_one() -> None:
    """Rule 8: each measured candidate gets a perf record; passed is speedup >= 1."""
    given = [ok("fast", 1.0), failed("broken"), ok("equal", 2.0), ok("slow", 4.0)]
    selection = tune(min_latency, given, baseline=ok("eager", 2.0)).unwrap()
    records = [(p.backend_description, p.speedup, p.passed) for p in selection.perf_results]
    assert records == [("fast", 2.0, True), ("equal", 1.0, True), ("slow", 0.5, False)]
    assert all(p.baseline_metric == 2.0 for p in selection.perf_results)


def test_perf_results_need_a_baseline_metric() -> None:
    """Rule 8: without a baseline metric (none given) there are no perf records."""
    assert tune(min_latency, [ok("a", 1.0)]).unwrap().perf_results == ()


def test_a_baseline_metric_is_always_positive() -> None:
    """Rule 8: a non-positive metric cannot even be recorded, so perf ratios are well defined."""
    with pytest.raises(ValueError, match="metric must be finite and > 0"):
        BackendProfilingResult(0.0, 1, 1.0, 1.0)


def test_selected_and_speedup_lines() -> None:
    """Rule 9: one line names the winner, batch size and metric; one gives the speedup."""
    selection = tune(max_throughput, [ok("ort", 2.0, (1, 8))], baseline=ok("eager", 4.0)).unwrap()
    assert selected_line(max_throughput, selection) == (
        "Selected ort (batch size 8): throughput 4000.00 samples/s"
    )
    assert speedup_line(max_throughput, selection) == (
        "Speedup: 250.00 samples/s → 4000.00 samples/s (16.00×)"
    )
    assert baseline_selected_line(selection) is None


def test_baseline_selected_is_said_explicitly() -> None:
    """Rule 9: when the baseline is selected the report says so."""
    selection = tune(min_latency, [ok("a", 3.0)], baseline=ok("eager", 1.0)).unwrap()
    line = baseline_selected_line(selection)
    assert line is not None and "eager" in line and "baseline" in line
    assert speedup_line(min_latency, selection) == "Speedup: 1.000 ms → 1.000 ms (1.00×)"
    assert line in summary_lines(min_latency, selection)


def test_metric_strings_use_the_strategy_format() -> None:
    """§2: a metric string is format(value, fmt) plus the unit."""
    assert max_throughput.fmt(12.344) == "12.34 samples/s"
    assert min_latency.fmt(0.1234) == "0.123 ms"
    assert latency_budget(1.0).fmt(12.345678) == "12.35 samples/s"


def test_strategy_describes_itself_and_serialises_its_config() -> None:
    """Rule 10: description parts and a JSON-able config with backends, plan and parameters."""
    strategy = latency_budget(5.0)
    title, _, backends, params = describe_parts(strategy, ["onnxruntime", "tensorrt"])
    assert title == "Latency budget (5 ms)"
    assert backends == "backends: onnxruntime, tensorrt"
    assert "budget_ms=5.0" in params
    config = json.loads(json.dumps(strategy_config(strategy, ["onnxruntime"])))
    assert config["parameters"] == {"budget_ms": 5.0}
    assert config["backends"] == ["onnxruntime"]
    assert config["profiling"]["call_rule"] == {
        "name": "fixed_steps",
        "warmup": 10,
        "min_samples": 20,
        "max_samples": 20,
    }


def test_replace_turns_validation_off() -> None:
    """A variant is a dataclasses.replace away; the original strategy is untouched."""
    off = dataclasses.replace(max_throughput, validate_performance=False)
    assert (off.validate_performance, max_throughput.validate_performance) == (False, True)
    assert tune(off, [ok("a", 9.0)], baseline=ok("eager", 1.0)).unwrap().backend == "a"


class OnceIterable:
    """An iterable that counts how many times it is iterated and how many items are pulled."""

    def __init__(self, items: list[Candidate]) -> None:
        self.items = items
        self.iterations = 0
        self.pulled = 0

    def __iter__(self) -> Iterator[Candidate]:
        self.iterations += 1
        for item in self.items:
            self.pulled += 1
            yield item


def test_candidates_are_consumed_exactly_once() -> None:
    """The candidates iterable is iterated once and every item is pulled once."""
    given = OnceIterable([ok("a", 2.0), failed("b"), ok("c", 1.0)])
    assert tune(min_latency, given, baseline=ok("eager", 3.0)).unwrap().backend == "c"
    assert (given.iterations, given.pulled) == (1, 3)


def test_a_generator_is_enough() -> None:
    """A one-shot generator gives the same selection as a list of the same candidates."""
    items = [ok("a", 2.0), ok("b", 1.0), failed("c")]
    assert tune(min_latency, (c for c in items)) == tune(min_latency, items)
