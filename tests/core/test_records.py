"""Records: invariants checked once at construction, values frozen and hashable."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aitune_fp import BackendFailure, BackendProfilingResult, Profile
from aitune_fp.core.laws import FoldCase
from aitune_fp.core.records import STAGES
from aitune_fp.testing import batch_sizes, failures, latencies, profiles, profiling_results

latency_maps = st.dictionaries(batch_sizes(), st.lists(latencies(), min_size=1), min_size=1)


@given(latencies_ms=latency_maps)
def test_profile_keeps_every_sample(latencies_ms: dict[int, list[float]]) -> None:
    """A Profile keeps every sample per batch size and lists batch sizes ascending."""
    profile = Profile("x", latencies_ms)
    assert profile.batch_sizes == tuple(sorted(latencies_ms))
    assert all(profile.samples(bs) == tuple(v) for bs, v in latencies_ms.items())


@given(latencies_ms=latency_maps)
def test_profile_does_not_share_the_callers_lists(latencies_ms: dict[int, list[float]]) -> None:
    """Mutating the caller's lists after construction does not change the Profile."""
    profile = Profile("x", latencies_ms)
    before = {bs: profile.samples(bs) for bs in profile.batch_sizes}
    for samples in latencies_ms.values():
        samples.append(123.0)
    assert {bs: profile.samples(bs) for bs in profile.batch_sizes} == before


@given(profile=profiles())
def test_profiles_are_frozen_and_hashable(profile: Profile) -> None:
    """A Profile is immutable and hashable, and equal to a copy of itself."""
    assert hash(profile) == hash(dataclasses.replace(profile))
    with pytest.raises(dataclasses.FrozenInstanceError):
        profile.backend = "other"  # type: ignore[misc]


@given(
    bad=st.one_of(
        st.just(0.0),
        st.floats(max_value=0.0),
        st.just(math.nan),
        st.just(math.inf),
        st.just(-math.inf),
    )
)
def test_profile_refuses_bad_latencies(bad: float) -> None:
    """A non-finite or non-positive latency is refused with ValueError naming it."""
    with pytest.raises(ValueError, match="latencies must be finite and > 0 ms"):
        Profile("x", {1: [1.0, bad]})


@pytest.mark.parametrize(
    ("latencies_ms", "message"),
    [
        ({}, "at least one batch size"),
        ({1: []}, "batch size 1 has no latency samples"),
        ({0: [1.0]}, "batch size must be an integer >= 1, got 0"),
        ({-3: [1.0]}, "batch size must be an integer >= 1, got -3"),
        ({True: [1.0]}, "batch size must be an integer >= 1, got True"),
        ({1.5: [1.0]}, "batch size must be an integer >= 1, got 1.5"),
    ],
)
def test_profile_refuses_bad_batches(latencies_ms: dict[int, list[float]], message: str) -> None:
    """Empty profiles, empty batch sizes and batch sizes < 1 (or not ints) are refused."""
    with pytest.raises(ValueError, match=message):
        Profile("x", latencies_ms)


def test_profile_refuses_an_empty_backend_name() -> None:
    """A Profile must name its backend."""
    with pytest.raises(ValueError, match="non-empty backend name"):
        Profile("", {1: [1.0]})


@given(stage=st.text().filter(lambda s: s not in STAGES))
def test_failure_refuses_unknown_stages(stage: str) -> None:
    """A BackendFailure's stage is one of build/validate/profile/measure/baseline."""
    with pytest.raises(ValueError, match="stage must be one of"):
        BackendFailure("x", stage, "why")


@given(failure=failures())
def test_failure_describe_names_backend_stage_and_reason(failure: BackendFailure) -> None:
    """A failure's description names its backend, its stage and its message."""
    text = failure.describe()
    assert text == f"{failure.backend} failed at {failure.stage}: {failure.message}"


@pytest.mark.parametrize("metric", [0.0, -1.0, math.nan, math.inf])
def test_profiling_result_refuses_bad_metrics(metric: float) -> None:
    """A result's metric must be finite and > 0."""
    with pytest.raises(ValueError, match="metric must be finite and > 0"):
        BackendProfilingResult(metric, 1, 1.0, 1.0)


def test_profiling_result_refuses_batch_size_zero() -> None:
    """A result's selected batch size must be >= 1."""
    with pytest.raises(ValueError, match="selected_batch_size must be >= 1"):
        BackendProfilingResult(1.0, 0, 1.0, 1.0)


@given(result=profiling_results(), label=st.sampled_from(["throughput", "latency"]))
def test_to_json_dict_carries_the_metric_under_its_label(
    result: BackendProfilingResult, label: str
) -> None:
    """to_json_dict stores the batch size and the metric under the strategy's label."""
    out = result.to_json_dict(label)
    assert out["selected_batch_size"] == result.selected_batch_size
    assert out[label] == result.metric
    assert set(out) == {"selected_batch_size", "latency", "throughput"}


def test_fold_case_refuses_a_non_permutation() -> None:
    """A FoldCase's order must be a permutation of the candidates' indices."""
    with pytest.raises(ValueError, match="order must be a permutation of range"):
        FoldCase((), order=(0,))
