"""The accuracy policy, the search space and within_accuracy: rules and laws."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyrsistent import pmap
from returns.result import Success

from aitune_fp.core.accuracy import (
    DEFAULT_POLICY,
    AccuracyPolicy,
    EagerRelative,
    ErrorBound,
    FeatureFloors,
    Search,
    accuracy_drop,
    judge,
    metric,
    parse_precisions,
    parse_search,
)
from aitune_fp.core.accuracy.policy import REDUCED
from aitune_fp.core.fold import tune
from aitune_fp.core.record.json_codec import from_json, to_json
from aitune_fp.core.records import Profile
from aitune_fp.core.strategies import max_throughput, within_accuracy
from aitune_fp.core.strategies.registry import (
    parse_strategy,
    strategy_config,
    strategy_from_config,
)

unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
small = st.floats(min_value=0.0, max_value=0.5, allow_nan=False)
precisions = st.sampled_from(["float32", "tf32", "float64", "bfloat16", "float16", "int8"])


@st.composite
def figures(draw: st.DrawFn) -> dict[str, float]:
    """Recorded figures of one candidate, some possibly missing."""
    out = {
        "rms_rel_error": draw(small),
        "cosine": draw(unit),
        "fp64_rms_rel_error": draw(small),
        "eager_fp64_rms_rel_error": draw(st.floats(0.0, 1e-3)),
        "metric_eager": draw(unit),
        "metric_candidate": draw(unit),
    }
    if draw(st.booleans()):
        out["top1_agreement"] = draw(unit)
    if draw(st.booleans()):
        out["row_cosine"] = draw(st.sampled_from((1.0, 0.99999, 0.9998, 0.999))) if draw(
            st.booleans()) else draw(unit)  # fmt: skip
    dropped = draw(st.sets(st.sampled_from(sorted(out))))
    return {k: v for k, v in out.items() if k not in dropped}


@st.composite
def policy_pairs(draw: st.DrawFn) -> tuple[AccuracyPolicy, AccuracyPolicy]:
    """A policy and a stricter one (every bound tightened or removed, never loosened)."""
    k = draw(st.floats(0.0, 10.0))
    floors = {p: draw(small) for p in ("bfloat16", "float16", "int8")}
    bound = {
        p: ErrorBound(draw(small), draw(st.none() | unit))
        for p in draw(st.sets(st.sampled_from(sorted(REDUCED))))
    }
    floors_drawn = FeatureFloors(
        {p: draw(small) for p in ("bfloat16", "int8")}, {p: draw(unit) for p in ("float16", "int8")}
    )
    loose = AccuracyPolicy(
        features=floors_drawn if draw(st.booleans()) else None,
        bounds=pmap(bound),
        eager_relative=EagerRelative(k, pmap(floors)) if draw(st.booleans()) else None,
        min_top1=draw(unit),
        user_metric=metric(lambda o, t: 0.0, (), max_drop=draw(small))
        if draw(st.booleans())
        else None,
    )
    strict_bounds = {
        p: ErrorBound(
            b.max_rms_rel * draw(unit),
            None
            if b.min_cosine is None and draw(st.booleans())
            else max(b.min_cosine or 0.0, draw(unit)),
        )
        for p, b in bound.items()
        if draw(st.booleans())
    }
    rule = loose.eager_relative
    strict_rule = None
    if rule is not None and draw(st.booleans()):
        strict_rule = EagerRelative(
            rule.k * draw(unit), pmap({p: v * draw(unit) for p, v in rule.floors.items()})
        )
    features = loose.features
    strict_features = features  # kept, tightened, or added where the looser has none
    if features is not None and draw(st.booleans()):
        strict_features = FeatureFloors(
            {p: v * draw(unit) for p, v in features.max_rms_rel.items()},
            {p: v + (1.0 - v) * draw(unit) for p, v in features.min_row_cosine.items()},
        )
    elif features is None and draw(st.booleans()):
        strict_features = FeatureFloors()
    user = loose.user_metric
    strict = AccuracyPolicy(
        features=strict_features,
        bounds=pmap(strict_bounds),
        eager_relative=strict_rule,
        min_top1=loose.min_top1 + (1.0 - loose.min_top1) * draw(unit),
        user_metric=(
            metric(user.fn, (), max_drop=user.max_drop * draw(unit))
            if user is not None
            else (
                metric(lambda o, t: 0.0, (), max_drop=draw(small)) if draw(st.booleans()) else None
            )
        ),
    )
    return loose, strict


@given(policy_pairs(), precisions, figures())
def test_a_stricter_policy_never_admits_more(
    pair: tuple[AccuracyPolicy, AccuracyPolicy], precision: str, f: dict[str, float]
) -> None:
    """Whatever the figures, a candidate the stricter policy admits the looser one admits."""
    loose, strict = pair
    if judge(strict, precision, f) is None:
        assert judge(loose, precision, f) is None


@given(st.sampled_from(["float32", "tf32", "float64"]), figures())
def test_full_precision_passing_today_passes_the_default_policy(
    precision: str, f: dict[str, float]
) -> None:
    """The default policy adds nothing to today's elementwise check for full precision."""
    assert judge(DEFAULT_POLICY, precision, f) is None
    assert judge(DEFAULT_POLICY, None, f) is None


@given(precisions, figures())
def test_the_verdict_depends_only_on_the_recorded_figures(
    precision: str, f: dict[str, float]
) -> None:
    """The verdict on figures read back from a stored profile equals that on the originals."""
    stored = to_json(Profile("x", {1: [1.0]}, accuracy=f))
    back = from_json(stored, Profile, "profile").accuracy
    assert judge(DEFAULT_POLICY, precision, back) == judge(DEFAULT_POLICY, precision, f)


def test_reduced_precision_needs_a_bound_or_the_eager_relative_rule() -> None:
    """Without the rule and without a bound int8 is refused; a bound alone admits it."""
    f = {"rms_rel_error": 0.01, "top1_agreement": 1.0}
    bare = AccuracyPolicy(eager_relative=None)
    assert "explicit bound" in (judge(bare, "int8", f) or "")
    bounded = AccuracyPolicy(bounds={"int8": ErrorBound(0.02)}, eager_relative=None)
    assert judge(bounded, "int8", f) is None
    assert "> bound" in (
        judge(AccuracyPolicy(bounds={"int8": ErrorBound(0.005)}, eager_relative=None), "int8", f)
        or ""
    )


def test_the_eager_relative_rule_compares_with_eager_s_own_error_plus_a_floor() -> None:
    """err(candidate, fp64) ≤ k·err(eager, fp64) + floor admits; beyond it refuses, naming both."""
    ok = {"fp64_rms_rel_error": 0.04, "eager_fp64_rms_rel_error": 1e-7}
    assert judge(DEFAULT_POLICY, "int8", ok) is None
    bad = {"fp64_rms_rel_error": 0.2, "eager_fp64_rms_rel_error": 1e-7}
    reason = judge(DEFAULT_POLICY, "int8", bad) or ""
    assert "0.2" in reason and "floor 0.05" in reason
    assert "no fp64 reference" in (judge(DEFAULT_POLICY, "bfloat16", {}) or "")


def test_low_top1_agreement_refuses_reduced_precision() -> None:
    """A classifier whose top-1 agreement falls below min_top1 is refused even within the rule."""
    f = {"fp64_rms_rel_error": 0.01, "eager_fp64_rms_rel_error": 1e-7, "top1_agreement": 0.9}
    assert "top-1 agreement 90.00%" in (judge(DEFAULT_POLICY, "int8", f) or "")


def test_a_user_metric_refuses_beyond_max_drop_absolute_and_relative() -> None:
    """The user metric's drop is eager's score minus the candidate's (relative on request)."""
    f = {"metric_eager": 0.8, "metric_candidate": 0.76}
    absolute = AccuracyPolicy(user_metric=metric(lambda o, t: 0.0, (), max_drop=0.03))
    assert "dropped 0.04" in (judge(absolute, "float32", f) or "")
    relative = AccuracyPolicy(
        user_metric=metric(lambda o, t: 0.0, (), max_drop=0.06, relative=True)
    )
    assert judge(relative, "float32", f) is None
    assert "not computed" in (judge(absolute, "float32", {}) or "")


def test_policies_refuse_malformed_numbers() -> None:
    """Negative or non-finite bounds and unknown precisions are ValueErrors naming them."""
    with pytest.raises(ValueError, match="max_rms_rel"):
        ErrorBound(-1.0)
    with pytest.raises(ValueError, match="bounds are for"):
        AccuracyPolicy(bounds={"float32": ErrorBound(0.1)})
    with pytest.raises(ValueError, match="min_top1"):
        AccuracyPolicy(min_top1=1.5)


def test_the_accuracy_drop_prefers_the_metric_then_top1_then_rms() -> None:
    """The drop is read from the metric, else top-1 agreement, else the RMS error."""
    assert (
        accuracy_drop({"metric_eager": 1.0, "metric_candidate": 0.5, "metric_relative": 1.0}) == 0.5
    )
    assert accuracy_drop({"top1_agreement": 0.75, "rms_rel_error": 0.5}) == 0.25
    assert accuracy_drop({"rms_rel_error": 0.5}) == 0.5
    assert accuracy_drop({}) is None


def _p(name: str, ms: float, top1: float | None) -> Profile:
    acc = {} if top1 is None else {"top1_agreement": top1, "rms_rel_error": 0.01}
    return Profile(name, {8: [ms]}, accuracy=acc)


def test_within_accuracy_picks_the_fastest_candidate_within_the_drop() -> None:
    """A faster candidate beyond max_drop is refused at measure and the next fastest wins."""
    fast, slow = _p("int8", 1.0, 0.99), _p("fp32", 2.0, 1.0)
    eager = _p("eager", 4.0, None)
    assert (
        tune(max_throughput, [Success(fast), Success(slow)], Success(eager)).unwrap().backend
        == "int8"
    )
    bounded = within_accuracy(0.005, max_throughput)
    selection = tune(bounded, [Success(fast), Success(slow)], Success(eager)).unwrap()
    assert selection.backend == "fp32"
    assert any("accuracy drop 0.01" in f.message for f in selection.failures)
    assert within_accuracy(0.02, max_throughput).measure(fast).unwrap().throughput > 0


@given(st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.lists(unit, min_size=1, max_size=5))
def test_a_tighter_max_drop_never_admits_more(a: float, b: float, agreements: list[float]) -> None:
    """Every candidate within the tighter drop is within the looser one too."""
    tight, loose = sorted((a, b))
    for i, top1 in enumerate(agreements):
        p = _p(f"c{i}", 1.0, top1)
        if isinstance(within_accuracy(tight, max_throughput).measure(p), Success):
            assert isinstance(within_accuracy(loose, max_throughput).measure(p), Success)


def test_within_accuracy_round_trips_through_its_spec_and_config() -> None:
    """The spec within-accuracy=0.5%:min-latency and the stored config give the same bound."""
    s = parse_strategy("within-accuracy=0.5%:min-latency")
    assert s.params["max_drop"] == 0.005 and s.name == "within_accuracy(min_latency)"
    back = strategy_from_config(strategy_config(s))
    assert back.params["max_drop"] == 0.005 and back.name == s.name
    twice = within_accuracy(0.01, within_accuracy(0.002, max_throughput))
    assert twice.params["max_drop"] == 0.002 and twice.name == "within_accuracy(max_throughput)"
    unknown = dataclasses.replace(_p("x", 1.0, None))
    assert isinstance(within_accuracy(0.001, max_throughput).measure(unknown), Success)
    strict = within_accuracy(0.001, max_throughput, strict=True)
    assert "strict" in strict.measure(unknown).failure().message


def test_search_parsing_names_the_valid_choices() -> None:
    """--precision and --search read the documented spellings and refuse others."""
    assert parse_precisions("fp32,bf16,int8") == frozenset({"float32", "bfloat16", "int8"})
    assert parse_search("none").level == "none"
    with pytest.raises(ValueError, match="choose from"):
        parse_precisions("fp8")
    with pytest.raises(ValueError, match="none, default, wide"):
        Search("huge")
    assert not Search(precisions=frozenset({"int8"})).admits("float32")
