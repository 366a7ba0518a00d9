"""Confidence bounds on accuracy figures, the policy judging them, and the rows to decide."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.accuracy import AccuracyPolicy, judge
from aitune_fp.core.accuracy.bounds import (
    agreement_lower,
    agreement_upper,
    beta_cdf,
    cosine_of,
    rms_of,
    row_bootstrap,
    rows_needed,
)
from aitune_fp.core.accuracy.claims import claimed, optimistic
from aitune_fp.core.accuracy.evidence import (
    MAX_HELD_OUT_ROWS,
    rows_wanted,
    undecided,
    undecided_reason,
)
from aitune_fp.core.record.json_codec import from_json, to_json
from aitune_fp.core.records import Profile

confidences = st.sampled_from([0.8, 0.9, 0.95, 0.99])


@st.composite
def counts(draw: st.DrawFn) -> tuple[int, int]:
    """``(agree, rows)`` with ``0 <= agree <= rows``."""
    rows = draw(st.integers(min_value=1, max_value=3000))
    return draw(st.integers(min_value=0, max_value=rows)), rows


def _binomial_tail(p: float, n: int, k: int) -> float:
    """P(X >= k) for X ~ Binomial(n, p), summed in log space."""
    terms = [
        math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1)
        + j * math.log(p) + (n - j) * math.log1p(-p)
        for j in range(k, n + 1)
    ]  # fmt: skip
    top = max(terms)
    return math.exp(top) * math.fsum(math.exp(t - top) for t in terms)


@given(counts(), confidences)
def test_bounds_bracket_the_estimate(count: tuple[int, int], confidence: float) -> None:
    """A lower bound is never above the point estimate, an upper bound never below it,
    and both lie in [0, 1]."""
    agree, rows = count
    low, high = agreement_lower(agree, rows, confidence), agreement_upper(agree, rows, confidence)
    assert 0.0 <= low <= agree / rows <= high <= 1.0


@given(counts(), confidences)
def test_more_agreeing_rows_never_lower_the_bound(
    count: tuple[int, int], confidence: float
) -> None:
    """An agreeing row added, or a disagreeing row turned agreeing, never lowers either bound."""
    agree, rows = count
    low = agreement_lower(agree, rows, confidence)
    assert agreement_lower(agree + 1, rows + 1, confidence) >= low
    assert agreement_upper(agree + 1, rows + 1, confidence) >= agreement_upper(
        agree, rows, confidence
    )
    if agree < rows:
        assert agreement_lower(agree + 1, rows, confidence) >= low


@given(st.integers(min_value=1, max_value=5000), confidences)
def test_bounds_are_exact_at_the_extremes(rows: int, confidence: float) -> None:
    """Every row agreeing gives ``(1 − c)^(1/n)`` and an upper bound of 1; none agreeing
    gives 0 and ``1 − (1 − c)^(1/n)``."""
    alpha = 1.0 - confidence
    assert agreement_lower(rows, rows, confidence) == alpha ** (1.0 / rows)
    assert agreement_upper(rows, rows, confidence) == 1.0
    assert agreement_lower(0, rows, confidence) == 0.0
    assert agreement_upper(0, rows, confidence) == 1.0 - alpha ** (1.0 / rows)


@given(st.integers(min_value=2, max_value=400).flatmap(
    lambda n: st.tuples(st.integers(min_value=1, max_value=n - 1), st.just(n))
))  # fmt: skip
def test_lower_bound_is_the_clopper_pearson_one(count: tuple[int, int]) -> None:
    """At the lower bound, seeing at least ``agree`` agreeing rows has probability 1 − c
    (the exact binomial tail the Clopper–Pearson bound is defined by)."""
    agree, rows = count
    low = agreement_lower(agree, rows, 0.95)
    assert _binomial_tail(low, rows, agree) == pytest.approx(0.05, rel=1e-6)


def test_beta_cdf_matches_a_closed_form() -> None:
    """``I_x(a, 1) = x^a`` and ``I_x(1, b) = 1 − (1 − x)^b`` on a grid."""
    for x in (0.01, 0.3, 0.5, 0.9, 0.999):
        for k in (1.0, 2.0, 7.0, 300.0):
            assert beta_cdf(x, k, 1.0) == pytest.approx(x**k, rel=1e-9, abs=1e-300)
            assert beta_cdf(x, 1.0, k) == pytest.approx(1.0 - (1.0 - x) ** k, rel=1e-9)


@given(st.integers(min_value=0, max_value=20), st.sampled_from([0.9, 0.95, 0.99, 0.995]))
def test_rows_needed_is_the_fewest(disagree: int, floor: float) -> None:
    """``rows_needed`` rows meet the floor with that many disagreements, one row fewer does not."""
    n = rows_needed(disagree, floor)
    assert n is not None
    assert agreement_lower(n - disagree, n) >= floor
    if n - 1 > disagree:
        assert agreement_lower(n - 1 - disagree, n - 1) < floor


row_sums = st.tuples(
    st.floats(min_value=0.0, max_value=10.0), st.floats(min_value=0.01, max_value=10.0)
)


@given(st.lists(row_sums, min_size=1, max_size=40))
def test_row_bootstrap_brackets_the_estimate(rows: list[tuple[float, float]]) -> None:
    """The bootstrap's lower bound is never above the RMS over every row, its upper never
    below, and the same rows give the same bounds."""
    low, high = row_bootstrap(rms_of, rows)
    point = rms_of([math.fsum(r[0] for r in rows), math.fsum(r[1] for r in rows)])
    assert low <= point <= high
    assert row_bootstrap(rms_of, rows) == (low, high)


def test_cosine_bootstrap_is_one_for_identical_rows() -> None:
    """Rows where the candidate equals eager bound the cosine at 1 on both sides."""
    rows = [(0.0, float(i + 1), float(i + 1), float(i + 1)) for i in range(10)]
    low, high = row_bootstrap(cosine_of, rows)
    assert low == pytest.approx(1.0) and high == pytest.approx(1.0)


def _classifier(agree: int, rows: int) -> dict[str, float]:
    """The figures of an int8 classifier with ``agree`` of ``rows`` rows agreeing."""
    return {
        "top1_agreement": agree / rows,
        "top1_agreement_lower": agreement_lower(agree, rows),
        "top1_agreement_upper": agreement_upper(agree, rows),
        "top1_rows": float(rows),
        "judged_rows": float(rows),
        "fp64_rms_rel_error": 0.01,
        "eager_fp64_rms_rel_error": 1e-7,
        "bound_confidence": 0.95,
    }


def test_the_policy_judges_the_bound_not_the_estimate() -> None:
    """Eight agreeing rows (100 % observed) do not show 99 %; 600 do."""
    policy = AccuracyPolicy()
    refused = judge(policy, "int8", _classifier(8, 8))
    assert refused is not None and "lower bound 68.77%" in refused and "8 rows" in refused
    assert judge(policy, "int8", _classifier(600, 600)) is None
    assert judge(policy, "float32", _classifier(8, 8)) is None


def test_a_record_without_bounds_is_judged_on_its_estimate() -> None:
    """Figures recorded before the bounds claim their point estimate, as they did."""
    old = {"top1_agreement": 1.0, "fp64_rms_rel_error": 0.01, "eager_fp64_rms_rel_error": 0.0}
    assert claimed(old, "top1_agreement") == 1.0
    assert judge(AccuracyPolicy(), "int8", old) is None
    assert not undecided(AccuracyPolicy(), "int8", old)


@given(counts())
def test_more_rows_are_asked_only_while_undecided(count: tuple[int, int]) -> None:
    """Rows are asked for exactly when the bound refuses and its optimistic side admits,
    never past the cap, and then strictly more than were judged."""
    agree, rows = count
    rows = min(rows, MAX_HELD_OUT_ROWS)
    agree = min(agree, rows)
    f, policy = _classifier(agree, rows), AccuracyPolicy()
    open_ = judge(policy, "int8", f) is not None and judge(policy, "int8", optimistic(f)) is None
    want = rows_wanted(policy, "int8", f)
    if open_ and rows < MAX_HELD_OUT_ROWS:
        assert rows < want <= MAX_HELD_OUT_ROWS
    else:
        assert want == rows


def test_a_candidate_undecided_at_the_cap_says_the_rows_it_would_need() -> None:
    """At the cap, 99.5 % observed on 1024 rows is refused with the rows that rate needs."""
    f = _classifier(1019, 1024)
    assert undecided(AccuracyPolicy(), "int8", f)
    reason = undecided_reason(AccuracyPolicy(), f)
    need = int(reason.rsplit("about ", 1)[1].split()[0])
    assert need > 1024
    assert agreement_lower(math.floor(f["top1_agreement"] * need), need) >= 0.99


@given(counts())
def test_bounded_figures_read_back_from_run_json_give_the_same_verdict(
    count: tuple[int, int],
) -> None:
    """A profile's bounds survive run.json, and the verdict and the rows asked for on the
    figures read back equal those on the originals."""
    f = _classifier(*count)
    back = from_json(to_json(Profile("x", {1: [1.0]}, accuracy=f)), Profile, "profile").accuracy
    assert dict(back) == f
    policy = AccuracyPolicy()
    assert judge(policy, "int8", back) == judge(policy, "int8", f)
    assert rows_wanted(policy, "int8", back) == rows_wanted(policy, "int8", f)
