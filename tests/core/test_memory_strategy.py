"""within_memory: refusing candidates over a peak-memory budget, as a lawful value."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Failure, Success

from aitune_fp import (
    BackendProfilingResult,
    Profile,
    confident,
    latency_budget,
    max_throughput,
    min_latency,
    tune,
    within_memory,
)
from aitune_fp.core.record.json_codec import from_json, to_json
from aitune_fp.core.record.run_record import (
    BackendOutcome,
    RunRecord,
    decode,
    dumps,
    encode,
    loads,
    reselect,
    with_strategy,
)
from aitune_fp.core.strategies.registry import parse_strategy, strategy_config, strategy_from_config
from aitune_fp.core.strategy import Strategy
from aitune_fp.testing import check_all_laws, profiles


def prof(name: str, ms: float, peak: float | None) -> Profile:
    """A batch-size-1 profile of ``ms`` per call with a peak memory figure."""
    return Profile(name, {1: [ms, ms]}, peak_memory_mb=peak)


def test_over_budget_candidate_is_refused_at_measure() -> None:
    """A profile whose peak exceeds the budget is a measure failure naming peak and budget."""
    failure = within_memory(min_latency, 512).measure(prof("onnxruntime", 1.0, 812.4)).failure()
    assert (failure.backend, failure.stage) == ("onnxruntime", "measure")
    assert failure.message == "peak memory 812.4 MiB exceeds the budget of 512 MiB"


def test_the_budget_is_inclusive_and_keeps_the_inner_result() -> None:
    """A peak equal to the budget is admitted and measured exactly as the inner strategy does."""
    p = prof("inductor", 1.5, 512.0)
    got = within_memory(min_latency, 512).measure(p).unwrap()
    assert got == min_latency.measure(p).unwrap() and got.peak_memory_mb == 512.0


def test_unknown_memory_is_admitted_unless_strict() -> None:
    """A profile without a memory figure passes by default and is refused with strict=True."""
    p = prof("onnxruntime", 1.0, None)
    assert isinstance(within_memory(min_latency, 512).measure(p), Success)
    refused = within_memory(min_latency, 512, strict=True).measure(p).failure()
    assert "not measured" in refused.message and refused.stage == "measure"


def test_the_baseline_is_never_refused_and_stays_the_fallback() -> None:
    """When every candidate is over budget, the over-budget eager baseline is still selected."""
    s = within_memory(min_latency, 100, strict=True)
    base = Success(prof("eager", 2.0, 900.0))
    cands = [Success(prof("onnxruntime", 1.0, 400.0)), Success(prof("inductor", 3.0, 50.0))]
    selection = tune(s, cands, baseline=base).unwrap()
    assert selection.fell_back_to_baseline and selection.backend == "eager"
    assert [f.backend for f in selection.failures] == ["onnxruntime"]


def test_a_faster_over_budget_candidate_loses_to_a_slower_one_within_it() -> None:
    """The memory budget changes the winner: the fastest backend is skipped for memory."""
    base = Success(prof("eager", 5.0, 10.0))
    cands = [Success(prof("onnxruntime", 1.0, 900.0)), Success(prof("inductor", 2.0, 300.0))]
    assert tune(min_latency, cands, baseline=base).unwrap().backend == "onnxruntime"
    assert tune(within_memory(min_latency, 512), cands, baseline=base).unwrap().backend == (
        "inductor"
    )


def test_all_refused_without_validation_is_an_error() -> None:
    """With performance validation off and every candidate over budget, nothing is selected."""
    s = dataclasses.replace(within_memory(min_latency, 10), validate_performance=False)
    outcome = tune(s, [Success(prof("onnxruntime", 1.0, 50.0))])
    assert isinstance(outcome, Failure) and "no correct backend found" in outcome.failure().message


@pytest.mark.parametrize("budget", [0, -1.0, float("nan"), float("inf"), True, "512"])
def test_bad_budgets_are_refused_at_construction(budget: object) -> None:
    """A budget that is not a finite number > 0 is a ValueError."""
    with pytest.raises(ValueError, match="budget_mb must be a finite number > 0"):
        within_memory(min_latency, budget)  # type: ignore[arg-type]


def test_wrapping_twice_is_refused() -> None:
    """A strategy already bounded by within_memory cannot be wrapped again."""
    with pytest.raises(ValueError, match="already has a memory budget"):
        within_memory(within_memory(min_latency, 512), 256)


def test_name_params_and_title_describe_the_budget() -> None:
    """The wrapped strategy names itself and stores its budget and strictness."""
    s = within_memory(max_throughput, 1536, strict=True)
    assert s.name == "within_memory(max_throughput)"
    assert (s.params["budget_mb"], s.params["strict_memory"]) == (1536.0, True)
    assert "1536 MiB" in s.title and "memory_baseline" not in s.params
    assert s.compare is max_throughput.compare and s.speedup is max_throughput.speedup


@pytest.mark.parametrize(
    "strategy",
    [
        within_memory(max_throughput, 512),
        within_memory(min_latency, 256, strict=True),
        within_memory(latency_budget(5.0), 1024),
    ],
    ids=lambda s: f"{s.name}-{s.params['budget_mb']:g}",
)
def test_within_memory_keeps_the_core_laws(strategy: Strategy) -> None:
    """Every law of aitune_fp.core.laws holds for the memory-bounded strategies."""
    check_all_laws(strategy, hypothesis_settings=settings(max_examples=60, deadline=None))


@given(profiles(), st.floats(min_value=1.0, max_value=2048.0), st.booleans())
def test_refusal_matches_the_rule(profile: Profile, budget: float, strict: bool) -> None:
    """A non-baseline profile is refused exactly when its peak is over budget, or unknown
    under strict; otherwise the result is the inner strategy's."""
    got = within_memory(max_throughput, budget, strict=strict).measure(profile)
    peak = profile.peak_memory_mb
    refused = (peak is None and strict) or (peak is not None and peak > budget)
    if refused:
        assert isinstance(got, Failure) and got.failure().stage == "measure"
    else:
        assert got == max_throughput.measure(profile)


@pytest.mark.parametrize(
    ("spec", "name", "budget", "strict"),
    [
        ("within-memory=512:max-throughput", "within_memory(max_throughput)", 512.0, False),
        ("within_memory=1.5GiB,strict:min-latency", "within_memory(min_latency)", 1536.0, True),
        (
            "within-memory=256MiB:confident:min-latency",
            "within_memory(confident(min_latency))",
            256.0,
            False,
        ),
        (
            "confident:within-memory=64:latency-budget=5ms",
            "confident(within_memory(latency_budget))",
            64.0,
            False,
        ),
    ],
)
def test_specs_parse_and_round_trip_through_the_stored_config(
    spec: str, name: str, budget: float, strict: bool
) -> None:
    """A within-memory spec parses to the wrapper and its stored config rebuilds it."""
    s = parse_strategy(spec)
    assert (s.name, s.params["budget_mb"], s.params["strict_memory"]) == (name, budget, strict)
    again = strategy_from_config(strategy_config(s))
    assert strategy_config(again) == strategy_config(s)
    assert again.measure(prof("ort", 1.0, budget * 2)).failure().stage == "measure"


def test_a_custom_baseline_name_is_stored_and_rebuilt() -> None:
    """A non-default exempt baseline name survives the stored configuration."""
    s = within_memory(min_latency, 100, baseline="torch")
    again = strategy_from_config(strategy_config(s))
    assert again.params["memory_baseline"] == "torch"
    assert isinstance(again.measure(prof("torch", 1.0, 500.0)), Success)
    assert isinstance(again.measure(prof("eager", 1.0, 500.0)), Failure)


@pytest.mark.parametrize(
    "spec",
    [
        "within-memory=0:min-latency",
        "within-memory=abc:min-latency",
        "within-memory=512:",
        "within-memory=512,loose:min-latency",
        "within-memory=5TB:min-latency",
    ],
)
def test_bad_memory_specs_say_what_is_accepted(spec: str) -> None:
    """A malformed within-memory spec is a ValueError naming the accepted form."""
    with pytest.raises(ValueError, match=r"memory budget|within-memory|unknown strategy"):
        parse_strategy(spec)


# --------------------------------------------------------------------------- JSON
def test_profile_and_result_round_trip_keeps_the_peak() -> None:
    """Encoding then decoding a profile and a result keeps peak_memory_mb."""
    p = prof("onnxruntime", 1.0, 321.5)
    assert from_json(to_json(p), Profile, "p").peak_memory_mb == 321.5
    r = BackendProfilingResult(1.0, 1, 1.0, 1000.0, peak_memory_mb=12.25)
    assert from_json(to_json(r), BackendProfilingResult, "r").peak_memory_mb == 12.25


def _record(peak: float | None) -> RunRecord:
    """A one-candidate record selected by within_memory(min_latency, 512)."""
    outcome = BackendOutcome("ort", "onnxruntime", "k", {}, profile=prof("ort", 1.0, peak))
    base = BackendOutcome("eager", "eager", "k", {}, profile=prof("eager", 2.0, 5.0))
    plain = RunRecord("m", "cpu", {}, base, (outcome,), None, None, {}, {}, None)
    return with_strategy(plain, within_memory(min_latency, 512))


def test_run_record_json_keeps_peak_memory_of_profiles_and_results() -> None:
    """dumps/loads keeps peak_memory_mb in the outcomes' profiles and the selection's results."""
    record = _record(300.0)
    again = loads(dumps(record))
    assert again == record
    assert again.candidates[0].profile is not None
    assert again.candidates[0].profile.peak_memory_mb == 300.0
    assert again.selection is not None and again.selection.result.peak_memory_mb == 300.0
    assert json.loads(dumps(record))["candidates"][0]["profile"]["peak_memory_mb"] == 300.0


def test_an_old_record_without_the_key_loads_with_unknown_memory() -> None:
    """A run.json written before peak_memory_mb existed loads, with the figure None."""
    doc = encode(_record(300.0))
    for outcome in [doc["baseline"], *doc["candidates"]]:
        del outcome["profile"]["peak_memory_mb"]
    for scored in [doc["selection"]["baseline"], *doc["selection"]["ranking"]]:
        del scored["result"]["peak_memory_mb"]
    del doc["selection"]["result"]["peak_memory_mb"]
    old = decode(doc)
    assert old.candidates[0].profile is not None
    assert old.candidates[0].profile.peak_memory_mb is None
    assert old.selection is not None and old.selection.result.peak_memory_mb is None


@pytest.mark.parametrize("bad", [-1.0, True, "lots", "NaN"])
def test_a_bad_stored_peak_is_a_value_error_naming_its_path(bad: object) -> None:
    """A negative, boolean, textual or non-finite stored peak is refused with its path."""
    doc = encode(_record(300.0))
    doc["candidates"][0]["profile"]["peak_memory_mb"] = bad
    with pytest.raises(ValueError, match=r"run record\.candidates\[0\]\.profile"):
        decode(doc)


def test_reselecting_a_stored_run_with_a_budget_uses_the_stored_figures() -> None:
    """A stored run re-selected with a tighter budget refuses the candidate offline."""
    record = _record(300.0)
    assert reselect(record, within_memory(min_latency, 512)).unwrap().backend == "ort"
    tighter = reselect(record, within_memory(min_latency, 100)).unwrap()
    assert tighter.fell_back_to_baseline and tighter.backend == "eager"


def test_confident_keeps_the_peak_on_its_restated_results() -> None:
    """confident(within_memory(...)) still carries the profile's peak on the result."""
    s = confident(within_memory(min_latency, 512), resamples=20)
    assert s.measure(prof("inductor", 1.0, 42.0)).unwrap().peak_memory_mb == 42.0
