"""Pure statistics for noisy decisions: the PRNG, summaries and bootstrap intervals."""

from __future__ import annotations

import math
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.stats.bootstrap import Interval, ratio_interval
from aitune_fp.core.stats.prng import derive, random_indices, splitmix64
from aitune_fp.core.stats.statistics import (
    coefficient_of_variation,
    iqr,
    mad,
    mean,
    percentile,
    sorted_statistic,
    statistic_value,
)
from aitune_fp.core.stats.summary import summarize

positive = st.floats(min_value=0.01, max_value=1000.0, allow_nan=False, allow_infinity=False)
samples = st.lists(positive, min_size=1, max_size=30)
statistics_names = st.sampled_from(("mean", "median", "trimmed", "p90", "p99"))
keys = st.integers(min_value=0, max_value=2**64 - 1)


# --------------------------------------------------------------------------- prng
def test_splitmix64_matches_the_published_sequence() -> None:
    """SplitMix64 from state 0 yields the published first outputs."""
    first, state = splitmix64(0)
    second, _ = splitmix64(state)
    assert (first, second) == (0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4)


@given(key=keys, n=st.integers(1, 5000), count=st.integers(0, 300))
def test_random_indices_are_in_range_and_reproducible(key: int, n: int, count: int) -> None:
    """Indices lie in range(n), there are exactly ``count`` of them, and a key fixes them."""
    drawn = list(random_indices(key, n, count))
    assert len(drawn) == count
    assert all(0 <= i < n for i in drawn)
    assert drawn == list(random_indices(key, n, count))


@given(key=keys, count=st.integers(1, 200))
def test_a_longer_draw_extends_a_shorter_one(key: int, count: int) -> None:
    """Counter-based draws are prefix-stable: asking for more keeps the first ones."""
    assert list(random_indices(key, 7, count)) == list(random_indices(key, 7, count + 50))[:count]


@pytest.mark.parametrize("n", [1, 2, 3, 7, 200, 256, 257, 1000])
def test_random_indices_are_close_to_uniform(n: int) -> None:
    """Every index is drawn about equally often (fixed key: deterministic, within 6 sigma)."""
    per_index = 400
    counts = Counter(random_indices(12345, n, n * per_index))
    sigma = math.sqrt(per_index)
    assert set(counts) == set(range(n))
    assert all(abs(c - per_index) < 6 * sigma for c in counts.values())


def test_sibling_keys_give_different_streams() -> None:
    """Derived keys for different paths give different index streams."""
    a = list(random_indices(derive(1, 1), 100, 50))
    b = list(random_indices(derive(1, 2), 100, 50))
    assert a != b
    assert derive(1, 1) == derive(1, 1)


@pytest.mark.parametrize(("n", "count"), [(0, 1), (2**32 + 1, 1), (3, -1)])
def test_random_indices_refuse_bad_arguments(n: int, count: int) -> None:
    """A range outside [1, 2**32] or a negative count is refused with a ValueError."""
    with pytest.raises(ValueError):
        random_indices(1, n, count)


# --------------------------------------------------------------------------- summaries
@given(values=samples)
def test_summary_agrees_with_the_statistics_module(values: list[float]) -> None:
    """A summary reports the same numbers as the shared statistics functions."""
    s = summarize(values)
    assert s.count == len(values)
    assert s.mean == mean(values)
    assert s.median == percentile(values, 50)
    assert (s.p90, s.p99) == (percentile(values, 90), percentile(values, 99))
    assert (s.iqr, s.mad, s.cv) == (iqr(values), mad(values), coefficient_of_variation(values))


@given(values=samples)
def test_summary_quantiles_are_ordered(values: list[float]) -> None:
    """min <= median <= p90 <= p99 <= max, and spreads are never negative."""
    s = summarize(values)
    assert s.minimum <= s.median <= s.p90 <= s.p99 <= s.maximum
    assert s.iqr >= 0 and s.mad >= 0 and s.cv >= 0 and s.relative_iqr >= 0


def test_summary_of_nothing_is_refused() -> None:
    """Summarising no samples is a ValueError."""
    with pytest.raises(ValueError):
        summarize([])


# --------------------------------------------------------------------------- statistics
@given(values=samples, name=statistics_names)
def test_statistics_lie_within_the_samples(values: list[float], name: str) -> None:
    """Every statistic of some samples lies between their minimum and maximum."""
    v = statistic_value(name, values)
    assert min(values) - 1e-9 * max(values) <= v <= max(values) * (1 + 1e-12)


def test_trimmed_mean_ignores_a_minority_of_outliers() -> None:
    """The trimmed mean cuts 20 % at each end, so two outliers in ten leave it unchanged."""
    assert statistic_value("trimmed", [1.0] * 8 + [50.0, 90.0]) == 1.0


@pytest.mark.parametrize("name", ["max", "p101", "p-1", "pxx", ""])
def test_unknown_statistics_are_refused(name: str) -> None:
    """A statistic name outside mean/median/trimmed/p<q> is a ValueError naming it."""
    with pytest.raises(ValueError, match="statistic must be"):
        sorted_statistic(name)


# --------------------------------------------------------------------------- intervals
@given(a=samples, b=samples, name=statistics_names, key=keys, paired=st.booleans())
def test_interval_contains_its_point_and_is_reproducible(
    a: list[float], b: list[float], name: str, key: int, paired: bool
) -> None:
    """low <= point <= high, and the same inputs and key give the same interval."""
    ci = ratio_interval(a, b, statistic=name, key=key, resamples=50, paired=paired)
    assert 0 < ci.low <= ci.point <= ci.high
    assert ci == ratio_interval(a, b, statistic=name, key=key, resamples=50, paired=paired)


@given(a=samples, b=samples, name=statistics_names, k=st.integers(-4, 4), paired=st.booleans())
def test_scaling_both_sides_by_a_power_of_two_changes_nothing(
    a: list[float], b: list[float], name: str, k: int, paired: bool
) -> None:
    """Multiplying every sample by 2**k (exact in floats) leaves the interval unchanged."""
    f = 2.0**k
    one = ratio_interval(a, b, statistic=name, resamples=50, paired=paired)
    two = ratio_interval(
        [x * f for x in a], [x * f for x in b], statistic=name, resamples=50, paired=paired
    )
    assert one == two


@given(value=positive, other=positive, n=st.integers(1, 20), name=statistics_names)
def test_constant_samples_give_a_point_interval(
    value: float, other: float, n: int, name: str
) -> None:
    """Without spread, the interval collapses onto the exact ratio."""
    ci = ratio_interval([value] * n, [other] * n, statistic=name, resamples=30)
    assert ci.low == ci.point == ci.high == pytest.approx(value / other, rel=1e-12)


def test_single_samples_give_a_point_interval_with_no_resamples() -> None:
    """With one sample on both sides there is nothing to resample: a point, zero resamples."""
    ci = ratio_interval([2.0], [1.0])
    assert (ci.low, ci.point, ci.high, ci.resamples) == (2.0, 2.0, 2.0, 0)


def test_a_single_sample_side_is_held_while_the_other_varies() -> None:
    """One sample against several: the interval reflects the spread of the other side."""
    ci = ratio_interval([2.0], [1.0, 1.5, 0.5, 1.2, 0.8], statistic="mean")
    assert ci.low < ci.point == 2.0 < ci.high
    assert ci.resamples == 1000


def _drifting(true_ratio: float, rounds: int) -> tuple[list[float], list[float]]:
    """Paired rounds under a strong deterministic drift, the numerator ``true_ratio`` slower."""
    drift = [1.0 + 0.5 * math.sin(i / 3.0) for i in range(rounds)]
    wobble = [1.0 + 0.01 * math.cos(i * 2.7) for i in range(rounds)]
    top = [true_ratio * d * w for d, w in zip(drift, wobble, strict=True)]
    bottom = [d / w for d, w in zip(drift, wobble, strict=True)]
    return top, bottom


@pytest.mark.parametrize("name", ["median", "trimmed", "mean"])
def test_pairing_cancels_drift_shared_by_a_round(name: str) -> None:
    """Under drift common to each round, the paired interval is tight around the truth
    while the unpaired one, blind to the pairing, is much wider."""
    top, bottom = _drifting(1.3, 40)
    paired = ratio_interval(top, bottom, statistic=name, paired=True)
    unpaired = ratio_interval(top, bottom, statistic=name, paired=False)
    assert paired.low <= 1.3 <= paired.high
    assert paired.high - paired.low < 0.05
    assert unpaired.high - unpaired.low > 4 * (paired.high - paired.low)


def test_paired_intervals_use_the_common_prefix() -> None:
    """A side with extra rounds is cut to the rounds both sides have."""
    top, bottom = _drifting(1.1, 30)
    assert ratio_interval(top, bottom[:20], paired=True) == ratio_interval(
        top[:20], bottom[:20], paired=True
    )


def test_an_outlier_moves_the_mean_but_not_the_trimmed_interval() -> None:
    """One huge outlier widens the mean's interval past 1 but not the trimmed mean's."""
    fast = [1.0 + 0.01 * (i % 5) for i in range(20)]
    slow = [1.2 + 0.01 * (i % 5) for i in range(20)]
    fast[3] = 40.0
    trimmed = ratio_interval(slow, fast, statistic="trimmed")
    averaged = ratio_interval(slow, fast, statistic="mean")
    assert trimmed.low > 1.1
    assert averaged.low < 1.0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"confidence": 1.0},
        {"confidence": 0.0},
        {"resamples": 0},
        {"statistic": "mode"},
    ],
)
def test_bad_interval_arguments_are_refused(kwargs: dict[str, object]) -> None:
    """Confidence outside (0, 1), no resamples or an unknown statistic: a ValueError."""
    with pytest.raises(ValueError):
        ratio_interval([1.0, 2.0], [1.0, 2.0], **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(("a", "b"), [([], [1.0]), ([1.0], []), ([0.0, 1.0], [1.0])])
def test_empty_or_non_positive_samples_are_refused(a: list[float], b: list[float]) -> None:
    """An empty side or a non-positive sample cannot make a ratio: a ValueError."""
    with pytest.raises(ValueError):
        ratio_interval(a, b)


def test_interval_invariant_is_checked() -> None:
    """An interval whose point lies outside [low, high] cannot be built."""
    with pytest.raises(ValueError):
        Interval(point=2.0, low=1.0, high=1.5, confidence=0.9, resamples=10)


@given(point=positive, spread=st.floats(1.0, 3.0))
def test_inverse_swaps_and_inverts_the_ends(point: float, spread: float) -> None:
    """The inverse interval is [1/high, 1/low] around 1/point, and inverting twice is close."""
    ci = Interval(point, point / spread, point * spread, 0.9, 10)
    inv = ci.inverse()
    assert (inv.low, inv.point, inv.high) == (1 / ci.high, 1 / ci.point, 1 / ci.low)
    assert inv.inverse().point == pytest.approx(point, rel=1e-12)


@given(a=st.lists(positive, min_size=2, max_size=30), name=statistics_names, key=keys)
def test_equal_sides_share_a_stream_and_give_exactly_one(
    a: list[float], name: str, key: int
) -> None:
    """Unpaired sides with equal data are resampled alike: the interval is exactly [1, 1]."""
    ci = ratio_interval(a, list(a), statistic=name, key=key, resamples=40)
    assert (ci.low, ci.point, ci.high) == (1.0, 1.0, 1.0)
