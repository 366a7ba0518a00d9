"""Strategies and combinators as values: confident, first_wins, one_backend,
with_min_speedup, percentile latency, and the fold's handling of them."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Failure, Success

from aitune_fp.core.fold import TuneState, settled, start, step, tune
from aitune_fp.core.records import BackendFailure, BackendProfilingResult, Candidate, Profile
from aitune_fp.core.strategies import (
    confident,
    first_wins,
    latency_budget,
    max_throughput,
    min_latency,
    min_latency_at,
    one_backend,
    with_min_speedup,
)
from aitune_fp.core.strategy import Metric, Strategy
from aitune_fp.testing import check_all_laws

R = BackendProfilingResult


def noisy(name: str, ms: float, n: int = 20, spread: float = 0.02, bs: int = 1) -> Profile:
    """A profile whose ``n`` samples wobble deterministically by ``spread`` around ``ms``."""
    wobble = [1.0 + spread * ((i * 7919) % 11 - 5) / 5 for i in range(n)]
    return Profile(name, {bs: [ms * w for w in wobble]})


def ok(profile: Profile) -> Candidate:
    """A successful candidate."""
    return Success(profile)


def winner(strategy: Strategy, cands: Sequence[Candidate], base: Profile | None) -> str:
    """The selected backend's name."""
    return tune(strategy, cands, ok(base) if base else None).unwrap().backend


# --------------------------------------------------------------------------- confident
def test_confident_keeps_the_reference_rule_available() -> None:
    """Wrapping leaves the reference strategy untouched: mean metric, strict > compare."""
    wrapped = confident(min_latency)
    assert min_latency.confidence is None and wrapped.confidence is not None
    a, b = R(1.0, 1, 1.0, 1000.0), R(1.001, 1, 1.001, 999.0)
    assert min_latency.compare(a, b)
    assert not wrapped.compare(a, b)


def test_a_tiny_difference_is_a_tie_resolved_for_the_baseline() -> None:
    """A candidate 0.5 % faster than the baseline ties, so the baseline is kept."""
    base = noisy("eager", 1.0)
    fast = noisy("onnxruntime", 0.995)
    assert winner(min_latency, [ok(fast)], base) == "onnxruntime"
    assert winner(confident(min_latency), [ok(fast)], base) == "eager"


def test_a_clear_speedup_wins() -> None:
    """A candidate 30 % faster with little noise wins under the confident rule."""
    base = noisy("eager", 1.3)
    assert winner(confident(min_latency), [ok(noisy("onnxruntime", 1.0))], base) == "onnxruntime"


def test_a_tie_between_candidates_goes_to_the_earlier_one() -> None:
    """Two candidates equally fast (both beating the baseline): the earlier one wins."""
    base = noisy("eager", 2.0)
    cands = [ok(noisy("inductor", 1.0)), ok(noisy("onnxruntime", 0.998))]
    assert winner(confident(min_latency), cands, base) == "inductor"


def test_a_significant_winner_is_not_shadowed_by_an_earlier_tie() -> None:
    """An early candidate that only ties with the baseline cannot hide a later one that
    beats the baseline significantly, even if the two candidates tie with each other."""
    base = noisy("eager", 1.0, spread=0.01)
    tied = noisy("inductor", 0.97, n=4, spread=0.3)  # ties with the baseline
    clear = noisy("onnxruntime", 0.93, spread=0.01)  # beats the baseline, ties with inductor
    s = confident(min_latency)
    tied_r, clear_r, base_r = (s.measure(p).unwrap() for p in (tied, clear, base))
    assert not s.compare(tied_r, base_r) and s.compare(clear_r, base_r)
    assert not s.compare(clear_r, tied_r)
    assert winner(s, [ok(tied), ok(clear)], base) == "onnxruntime"


def test_outliers_do_not_flip_the_confident_decision() -> None:
    """One huge outlier in the faster backend flips the mean rule but not the confident one."""
    base = noisy("eager", 1.1)
    fast_samples = list(noisy("onnxruntime", 1.0).samples(1))
    fast_samples[4] = 30.0
    fast = Profile("onnxruntime", {1: fast_samples})
    assert winner(min_latency, [ok(fast)], base) == "eager"
    assert winner(confident(min_latency), [ok(fast)], base) == "onnxruntime"


def test_confident_measure_restates_the_metric_and_carries_rounds() -> None:
    """The metric is recomputed with the rule's statistic; round samples are attached."""
    profile = Profile("x", {1: [1.0] * 8 + [9.0, 9.0]}, rounds_ms={1: [1.0, 1.1, 0.9]})
    result = confident(min_latency).measure(profile).unwrap()
    assert result.metric == 1.0  # trimmed mean drops the two outliers
    assert result.rounds_ms == (1.0, 1.1, 0.9)
    throughput = confident(max_throughput).measure(Profile("x", {4: [2.0] * 5})).unwrap()
    assert throughput.metric == 2000.0


def test_the_seed_and_rule_are_part_of_the_value() -> None:
    """Parameters are visible in params; different seeds make different values."""
    a, b = confident(min_latency, seed=1), confident(min_latency, seed=2)
    assert a.params["seed"] == 1 and b.params["seed"] == 2
    assert a.confidence != b.confidence
    assert a.params["statistic"] == "trimmed"
    assert confident(min_latency_at(99)).params["statistic"] == "p99"


@given(seed=st.integers(0, 2**32))
def test_confident_decisions_are_deterministic(seed: int) -> None:
    """Tuning twice with the same seed gives the same selection and speedups."""
    s = confident(min_latency, seed=seed, resamples=50)
    cands = [ok(noisy("a", 1.0, spread=0.1)), ok(noisy("b", 0.97, spread=0.1))]
    base = ok(noisy("eager", 1.0, spread=0.1))
    assert tune(s, cands, base) == tune(s, cands, base)


def test_confident_needs_a_throughput_or_latency_metric() -> None:
    """A custom metric label cannot be compared statistically: a clear ValueError."""
    odd = Strategy(
        name="memory",
        title="Memory",
        description="",
        metric=Metric("memory", "MB", ".1f"),
        measure=min_latency.measure,
        compare=min_latency.compare,
        speedup=min_latency.speedup,
    )
    with pytest.raises(ValueError, match="throughput' or 'latency'"):
        confident(odd)


scales = st.floats(0.2, 20.0)
spreads = st.floats(0.0, 0.3)


@st.composite
def noisy_profiles(draw: st.DrawFn, name: str) -> Profile:
    """A profile at batch size 1 with 2-20 samples of some spread around some scale."""
    ms, spread = draw(scales), draw(spreads)
    n = draw(st.integers(2, 20))
    factors = draw(st.lists(st.floats(1 - spread, 1 + spread), min_size=n, max_size=n))
    return Profile(name, {1: [ms * f for f in factors]})


@st.composite
def confident_cases(draw: st.DrawFn) -> tuple[Strategy, Profile, list[Candidate]]:
    """A confident strategy, a baseline and 0-4 candidates (some failed)."""
    s = confident(
        draw(st.sampled_from((min_latency, max_throughput))),
        confidence=draw(st.sampled_from((0.8, 0.9, 0.95))),
        min_speedup=draw(st.sampled_from((0.0, 0.01, 0.05))),
        resamples=50,
        seed=draw(st.integers(0, 1000)),
    )
    base = draw(noisy_profiles("eager"))
    names = ("inductor", "onnxruntime", "tensorrt", "aot")[: draw(st.integers(0, 4))]
    cands: list[Candidate] = []
    for name in names:
        if draw(st.booleans()) and draw(st.booleans()):
            cands.append(Failure(BackendFailure(name, "build", "boom")))
        else:
            cands.append(ok(draw(noisy_profiles(name))))
    return s, base, cands


@given(case=confident_cases())
def test_the_confident_winner_is_a_success_or_the_baseline(
    case: tuple[Strategy, Profile, list[Candidate]],
) -> None:
    """The winner is the baseline or a measured candidate; failures never win."""
    s, base, cands = case
    chosen = winner(s, cands, base)
    successes = {c.unwrap().backend for c in cands if isinstance(c, Success)}
    assert chosen in successes | {"eager"}


@given(case=confident_cases())
def test_the_confident_winner_beats_the_baseline_or_is_it(
    case: tuple[Strategy, Profile, list[Candidate]],
) -> None:
    """A selected candidate significantly beats the baseline; otherwise the baseline stays."""
    s, base, cands = case
    selection = tune(s, cands, ok(base)).unwrap()
    assert selection.baseline is not None
    if not selection.fell_back_to_baseline:
        assert s.compare(selection.result, selection.baseline.result)


@given(case=confident_cases(), factor=st.floats(1.5, 4.0))
def test_adding_a_dominated_candidate_keeps_the_winner(
    case: tuple[Strategy, Profile, list[Candidate]], factor: float
) -> None:
    """A new candidate whose every sample is far slower than the winner's changes nothing."""
    s, base, cands = case
    before = tune(s, cands, ok(base)).unwrap()
    worst = max(before.result.samples_ms) / before.result.selected_batch_size
    slow = Profile("slowpoke", {1: [worst * (1 + s.params["min_speedup"]) * factor] * 3})
    assert winner(s, [*cands, ok(slow)], base) == before.backend


# --------------------------------------------------------------------------- first_wins
def counting(cands: Sequence[Candidate], pulled: list[str]) -> Iterator[Candidate]:
    """Yield ``cands`` lazily, recording which were pulled."""
    for c in cands:
        pulled.append(c.unwrap().backend if isinstance(c, Success) else c.failure().backend)
        yield c


def test_first_wins_never_pulls_candidates_after_the_first_that_passes() -> None:
    """Once a candidate beats the baseline, later candidates are not consumed (not built)."""
    cands = [ok(noisy("a", 3.0)), ok(noisy("b", 1.0)), ok(noisy("c", 0.5))]
    pulled: list[str] = []
    s = first_wins(confident(min_latency))
    assert tune(s, counting(cands, pulled), ok(noisy("eager", 2.0))).unwrap().backend == "b"
    assert pulled == ["a", "b"]


def test_first_wins_without_a_baseline_takes_the_first_success() -> None:
    """With no baseline to beat, the first candidate that succeeds wins."""
    cands = [Failure(BackendFailure("a", "build", "x")), ok(noisy("b", 5.0)), ok(noisy("c", 1.0))]
    pulled: list[str] = []
    assert tune(first_wins(min_latency), counting(cands, pulled)).unwrap().backend == "b"
    assert pulled == ["a", "b"]


@given(case=confident_cases())
def test_first_wins_agrees_with_the_plain_rule_when_nothing_passes(
    case: tuple[Strategy, Profile, list[Candidate]],
) -> None:
    """If no candidate beats the baseline, first_wins selects what the strategy selects."""
    s, base, cands = case
    plain = tune(s, cands, ok(base)).unwrap()
    if plain.fell_back_to_baseline:
        assert tune(first_wins(s), cands, ok(base)).unwrap().backend == plain.backend


def test_settled_is_false_for_ordinary_strategies() -> None:
    """The fold only stops early for strategies that declare ``settled``."""
    state = step(min_latency, start(min_latency), ok(noisy("a", 1.0)))
    assert not settled(min_latency, state)
    assert settled(first_wins(min_latency), state)
    assert not settled(first_wins(min_latency), TuneState())


# --------------------------------------------------------------------------- one_backend
def test_one_backend_only_lets_the_named_backend_compete() -> None:
    """Others fail at stage measure, the named one is selected, and nothing after it is
    pulled."""
    cands = [ok(noisy("a", 0.1)), ok(noisy("b", 1.0)), ok(noisy("c", 0.01))]
    pulled: list[str] = []
    selection = tune(one_backend(min_latency, "b"), counting(cands, pulled)).unwrap()
    assert selection.backend == "b"
    assert [(f.backend, f.stage) for f in selection.failures] == [("a", "measure")]
    assert pulled == ["a", "b"]


def test_one_backend_admits_only_its_name_and_keeps_validation() -> None:
    """``admits`` names the one backend; with validation on it must still beat the baseline."""
    s = one_backend(min_latency, "b")
    assert s.admits is not None and s.admits("b") and not s.admits("a")
    assert winner(s, [ok(noisy("b", 2.0))], noisy("eager", 1.0)) == "eager"


def test_one_backend_refuses_an_empty_name() -> None:
    """An empty backend name is refused at construction."""
    with pytest.raises(ValueError, match="non-empty backend name"):
        one_backend(min_latency, "")


def test_one_backend_that_fails_is_an_error_naming_it() -> None:
    """Without validation, when the named backend fails there is no backend to select."""
    s = one_backend(min_latency, "b")
    result = tune(s, [Failure(BackendFailure("b", "build", "boom"))])
    assert isinstance(result, Failure)
    assert "b" in result.failure().message


# --------------------------------------------------------------------------- with_min_speedup
def test_with_min_speedup_of_one_is_the_strategy_itself() -> None:
    """Asking for a speedup above 1 adds nothing to a strict compare."""
    assert with_min_speedup(min_latency, 1.0) is min_latency


@pytest.mark.parametrize("ratio", [0.5, 0.0, float("nan"), float("inf"), True])
def test_with_min_speedup_refuses_ratios_below_one(ratio: float) -> None:
    """A ratio that is not a finite number >= 1 is refused with a ValueError."""
    with pytest.raises(ValueError, match="ratio"):
        with_min_speedup(min_latency, ratio)


metrics = st.floats(0.1, 100.0)


@given(ratio=st.floats(1.0, 2.0), a=metrics, b=metrics)
def test_with_min_speedup_wins_need_the_ratio(ratio: float, a: float, b: float) -> None:
    """compare(a, b) holds exactly when the strategy's compare holds and speedup > ratio;
    it is irreflexive and asymmetric."""
    s = with_min_speedup(min_latency, ratio)
    ra, rb = R(a, 1, a, 1000 / a), R(b, 1, b, 1000 / b)
    assert s.compare(ra, rb) == (
        min_latency.compare(ra, rb) and min_latency.speedup(ra, rb) > ratio
    )
    assert not s.compare(ra, ra)
    assert not (s.compare(ra, rb) and s.compare(rb, ra))


def test_with_min_speedup_keeps_the_baseline_on_a_small_gain() -> None:
    """A 5 % faster candidate does not pass a 1.1× requirement; a 20 % faster one does."""
    s = with_min_speedup(min_latency, 1.1)
    assert winner(s, [ok(noisy("a", 0.95))], noisy("eager", 1.0)) == "eager"
    assert winner(s, [ok(noisy("a", 0.8))], noisy("eager", 1.0)) == "a"


# --------------------------------------------------------------------------- percentiles
def test_min_latency_at_ranks_by_the_tail() -> None:
    """At p99 a backend with a heavy tail loses to a steadier one with a worse mean."""
    steady = Profile("steady", {1: [1.2] * 50})
    spiky = Profile("spiky", {1: [1.0] * 47 + [3.0] * 3})
    assert winner(min_latency, [ok(spiky)], steady) == "spiky"
    assert winner(min_latency_at(99), [ok(spiky)], steady) == "steady"


def test_min_latency_at_needs_batch_size_one() -> None:
    """A profile without batch size 1 fails at stage measure."""
    outcome = min_latency_at(90).measure(Profile("x", {2: [1.0]}))
    assert isinstance(outcome, Failure) and outcome.failure().stage == "measure"


def test_latency_budget_stays_backward_compatible() -> None:
    """``latency_budget(budget)`` keeps its name, params, title and mean-based filter."""
    s = latency_budget(5.0)
    assert (s.name, dict(s.params), s.title) == (
        "latency_budget",
        {"budget_ms": 5.0},
        "Latency budget (5 ms)",
    )
    profile = Profile("x", {1: [1.0, 1.0, 1.0, 9.0], 8: [4.0] * 4, 16: [6.0] * 4})
    assert s.measure(profile).unwrap().selected_batch_size == 8


def test_latency_budget_on_a_percentile_filters_by_the_tail() -> None:
    """With percentile=99 a batch size whose tail exceeds the budget does not count."""
    profile = Profile("x", {1: [1.0] * 10, 8: [4.0] * 9 + [7.0]})
    assert latency_budget(5.0).measure(profile).unwrap().selected_batch_size == 8
    assert latency_budget(5.0, percentile=99).measure(profile).unwrap().selected_batch_size == 1
    failing = latency_budget(0.5, percentile=99)
    assert "p99 latency budget" in (failing.no_winner_message or "")
    assert failing.params["percentile"] == 99.0


@pytest.mark.parametrize("q", [0, -1, 101, float("nan"), True])
def test_percentiles_outside_0_100_are_refused(q: float) -> None:
    """A percentile outside (0, 100] is refused by both percentile strategies."""
    with pytest.raises(ValueError, match="percentile"):
        min_latency_at(q)
    with pytest.raises(ValueError, match="percentile"):
        latency_budget(5.0, percentile=q)


# --------------------------------------------------------------------------- shipped laws
STATISTICAL = (
    "compare_transitive",  # significant wins need not chain
    "incomparability_transitive",  # ties are not transitive
    "speedup_agrees_with_compare",  # a win implies speedup > 1, not the converse
    "agrees_with_reference",  # the naive oracle assumes a strict weak order
    "order_independent_without_ties",  # ties are not transitive, so order can matter
    "nothing_beats_winner",  # a candidate that does not beat the baseline may beat the winner
    # a worse candidate pulled early can lead, and a later better one may not beat it
    # significantly where it beat the old leader (ties are not transitive): Hypothesis found
    # it (extra 2000/s first; 124000/s (1 call) then leads; 708000/s with a 4 ms outlier
    # does not beat it at 90 %)
    "adding_worse_keeps_winner",
)
SEMIORDER = (
    "incomparability_transitive",
    "speedup_agrees_with_compare",
    "agrees_with_reference",
    "order_independent_without_ties",
)


@pytest.mark.parametrize(
    ("strategy", "skip"),
    [
        (min_latency_at(99), ()),
        (min_latency_at(50), ()),
        (latency_budget(5.0, percentile=99), ()),
        (confident(min_latency, resamples=30), STATISTICAL),
        (confident(max_throughput, resamples=30), STATISTICAL),
        (with_min_speedup(min_latency, 1.05), SEMIORDER),
    ],
    ids=lambda v: v.name if isinstance(v, Strategy) else "",
)
def test_new_strategies_keep_the_core_laws(strategy: Strategy, skip: tuple[str, ...]) -> None:
    """Every law of aitune_fp.core.laws holds, except those a statistical or margin compare
    gives up by design (listed, with the reason, above)."""
    check_all_laws(
        strategy, skip=skip, hypothesis_settings=settings(max_examples=40, deadline=None)
    )
