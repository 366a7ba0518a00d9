"""The policy law "stricter admits no more" made live for reduced precision: figures drawn
on and beside the looser policy's own limits, so both admissions and refusals are common."""

from __future__ import annotations

import dataclasses
import math

from hypothesis import event, given
from hypothesis import strategies as st

from aitune_fp.core.accuracy import AccuracyPolicy, EagerRelative, ErrorBound, judge, metric
from aitune_fp.core.accuracy.policy import REDUCED
from tests.core.shares import share
from tests.core.test_accuracy_policy import policy_pairs

Pair = tuple[AccuracyPolicy, AccuracyPolicy]


def _near(draw: st.DrawFn, limit: float, below_passes: bool) -> float:
    """A figure on ``limit``, one float beside it, or clearly on its passing side."""
    inside = math.nextafter(limit, -1.0 if below_passes else 2.0)
    outside = math.nextafter(limit, 2.0 if below_passes else -1.0)
    clear = limit * 0.5 if below_passes else limit + (1.0 - limit) * 0.5
    return max(0.0, draw(st.sampled_from((limit, inside, outside, *(clear,) * 6))))


@st.composite
def tightened(draw: st.DrawFn, loose: AccuracyPolicy) -> AccuracyPolicy:
    """``loose`` with some of its limits tightened a little (by ``t`` in ``[0.8, 1]``) and
    others kept: a stricter policy that still admits the clearly passing figures."""
    t = lambda: draw(st.sampled_from((1.0, 1.0, 0.95, 0.8)))  # noqa: E731
    bounds = {p: ErrorBound(b.max_rms_rel * t(), b.min_cosine) for p, b in loose.bounds.items()}
    rule, user = loose.eager_relative, loose.user_metric
    return dataclasses.replace(
        loose,
        bounds=bounds,
        eager_relative=None if rule is None else EagerRelative(
            rule.k * t(), {p: v * t() for p, v in rule.floors.items()}),
        min_top1=loose.min_top1 + (1.0 - loose.min_top1) * (1.0 - t()),
        user_metric=None if user is None else metric(user.fn, (), max_drop=user.max_drop * t()),
    )  # fmt: skip


@st.composite
def anchored(draw: st.DrawFn) -> tuple[Pair, str, dict[str, float]]:
    """A policy pair, a reduced precision and figures placed at the looser policy's limits
    for that precision (error, cosine, fp64 rule, top-1, row cosine, user metric)."""
    loose, strict = draw(policy_pairs())
    if draw(st.integers(0, 3)) > 0:  # most pairs tighten only a little: both often admit
        strict = draw(tightened(loose))
    precision = draw(st.sampled_from(sorted(REDUCED)))
    f: dict[str, float] = {"eager_fp64_rms_rel_error": draw(st.floats(0.0, 1e-3))}
    bound = loose.bounds.get(precision)
    f["rms_rel_error"] = _near(draw, bound.max_rms_rel if bound else 0.05, True)
    f["cosine"] = _near(draw, (bound.min_cosine if bound else None) or 0.99, False)
    rule = loose.eager_relative
    limit = (
        rule.k * f["eager_fp64_rms_rel_error"] + rule.floors.get(precision, 0.0) if rule else 0.03
    )
    f["fp64_rms_rel_error"] = _near(draw, limit, True)
    if draw(st.booleans()):
        f["top1_agreement"] = min(1.0, _near(draw, loose.min_top1, False))
    floors = loose.features
    if draw(st.integers(0, 2)) == 0:  # an output without a class axis: the feature floors
        low = floors.min_row_cosine.get(precision, 0.9998) if floors else 0.9998
        f["row_cosine"] = min(1.0, _near(draw, low, False))
    f["metric_eager"] = 0.9
    user = loose.user_metric
    f["metric_candidate"] = 0.9 - _near(draw, user.max_drop if user else 0.0, True)
    return (loose, strict), precision, f


@given(anchored())
def test_a_stricter_policy_never_admits_more_at_the_limits(
    case: tuple[Pair, str, dict[str, float]],
) -> None:
    """A reduced-precision candidate the stricter policy admits, the looser one admits."""
    (loose, strict), precision, f = case
    strict_ok, loose_ok = judge(strict, precision, f) is None, judge(loose, precision, f) is None
    event(f"looser admits: {loose_ok}; stricter admits: {strict_ok}")
    assert loose_ok or not strict_ok


def test_the_generator_makes_reduced_precision_admissions_common() -> None:
    """Of the seeded draws, at least 25 % are admitted by the looser policy, 8 % by the
    stricter and 10 % by the looser only, so the law above tests its premise."""

    def admits(c: tuple[Pair, str, dict[str, float]], which: int) -> bool:
        return judge(c[0][which], c[1], c[2]) is None

    assert share(anchored(), lambda c: admits(c, 0)) >= 0.25
    assert share(anchored(), lambda c: admits(c, 1)) >= 0.08
    assert share(anchored(), lambda c: admits(c, 0) and not admits(c, 1)) >= 0.10
