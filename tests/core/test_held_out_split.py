"""The held-out split of the samples' rows and the feature floors: rules and laws."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from aitune_fp.core.accuracy import (
    DEFAULT_POLICY,
    AccuracyPolicy,
    ErrorBound,
    FeatureFloors,
    judge,
    metric,
)
from aitune_fp.core.accuracy.split import FRESH_BATCHES, MIN_ROWS, split_rows

rows = st.integers(min_value=1, max_value=400)


@given(rows)
def test_the_parts_are_disjoint_ordered_and_cover_every_row(n: int) -> None:
    """Seen and held-out rows never overlap, each keeps the samples' order, and together
    they are every row exactly once."""
    split = split_rows(n)
    assert not set(split.seen) & set(split.held_out)
    assert sorted(split.seen + split.held_out) == list(range(n))
    assert list(split.seen) == sorted(split.seen)
    assert list(split.held_out) == sorted(split.held_out)


@given(st.integers(min_value=MIN_ROWS, max_value=400))
def test_enough_rows_give_two_balanced_non_empty_parts(n: int) -> None:
    """From MIN_ROWS rows on, both parts hold rows, differ in size by at most one, and no
    fresh draws are asked for."""
    split = split_rows(n)
    assert split.seen and split.held_out and split.fresh == 0
    assert abs(len(split.seen) - len(split.held_out)) <= 1


@given(st.integers(min_value=1, max_value=MIN_ROWS - 1))
def test_too_few_rows_are_all_seen_and_the_verdict_uses_fresh_draws(n: int) -> None:
    """Below MIN_ROWS every row calibrates and FRESH_BATCHES fresh batches stand in for the
    held-out part."""
    split = split_rows(n)
    assert split.seen == tuple(range(n)) and split.held_out == ()
    assert split.fresh == FRESH_BATCHES


@given(rows, st.integers(min_value=0, max_value=399))
def test_both_parts_reach_every_stretch_of_sorted_samples(n: int, start: int) -> None:
    """Interleaving: any two consecutive rows of a split sample set fall in different
    parts, so samples sorted by kind give every kind to both parts."""
    split = split_rows(n)
    if split.fresh or start + 1 >= n:
        return
    event("split pair")
    assert (start in split.seen) != (start + 1 in split.seen)


def test_no_rows_is_an_error() -> None:
    """A split of zero rows is refused (there is nothing to calibrate on)."""
    with pytest.raises(ValueError, match="rows must be >= 1"):
        split_rows(0)


FIT = {"rms_rel_error": 0.002, "fp64_rms_rel_error": 0.002, "eager_fp64_rms_rel_error": 1e-7}


@given(st.sampled_from(["bfloat16", "float16", "int8"]), st.floats(0.0, 1.0))
def test_outputs_without_a_class_axis_need_the_row_cosine_floor(
    precision: str, cosine: float
) -> None:
    """A reduced-precision output without a class axis is admitted by default exactly when
    its smallest row cosine meets the floor (its RMS being within both rules)."""
    floor = DEFAULT_POLICY.features.min_row_cosine[precision]  # type: ignore[union-attr]
    refused = judge(DEFAULT_POLICY, precision, {**FIT, "row_cosine": cosine})
    event("admitted" if refused is None else "refused")
    assert (refused is None) == (cosine >= floor)


@pytest.mark.parametrize("rms", [0.009, 0.011, 0.03, 0.049])
def test_the_int8_rms_floor_for_features_is_tighter_than_the_old_five_percent(rms: float) -> None:
    """Under 5 % RMS the eager-relative rule admits int8, but an output without a class
    axis needs the 1 % feature floor; a classifier (no row cosine) keeps the old rule."""
    f = {"rms_rel_error": rms, "fp64_rms_rel_error": rms, "eager_fp64_rms_rel_error": 1e-7}
    assert judge(DEFAULT_POLICY, "int8", {**f, "top1_agreement": 1.0}) is None
    refused = judge(DEFAULT_POLICY, "int8", {**f, "row_cosine": 1.0})
    assert (refused is None) == (rms <= 0.01), refused


def test_an_explicit_bound_replaces_the_feature_floors_and_a_metric_can() -> None:
    """The user's own bound for the precision decides in place of the feature floors; a
    user metric decides alone once the floors are dropped; full precision is never held
    to them."""
    f = {**FIT, "rms_rel_error": 0.03, "row_cosine": 0.99, "metric_eager": 0.9,
         "metric_candidate": 0.9}  # fmt: skip
    assert judge(DEFAULT_POLICY, "int8", f) is not None
    assert judge(AccuracyPolicy(bounds={"int8": ErrorBound(0.05)}), "int8", f) is None
    user = AccuracyPolicy(user_metric=metric(lambda o, t: 0.0, (), max_drop=0.01))
    assert judge(user, "int8", f) is not None
    assert judge(dataclasses.replace(user, features=None), "int8", f) is None
    assert judge(DEFAULT_POLICY, "float32", f) is None
    assert judge(AccuracyPolicy(features=None), "int8", f) is None


def test_feature_floors_refuse_a_missing_rms_and_validate_their_values() -> None:
    """A row cosine without an RMS figure is refused by name; a negative floor is an error."""
    refused = judge(DEFAULT_POLICY, "int8", {"row_cosine": 1.0, **{
        k: v for k, v in FIT.items() if k != "rms_rel_error"}})  # fmt: skip
    assert refused is not None and "RMS relative error None" in refused
    with pytest.raises(ValueError):
        FeatureFloors(max_rms_rel={"int8": -0.1})
