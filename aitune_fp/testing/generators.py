"""Hypothesis generators for aitune_fp's values: profiles, failures, candidates, strategies.

Rules:
- every generator is a function returning a ``SearchStrategy``; bounds are keyword-only;
- latencies and metrics are drawn partly from a small pool of round values so that ties
  (the interesting case for selection rules) come up often, partly from a fine grid
  around 1 (near-ties, where a thresholded ``compare`` breaks transitivity), and partly
  from a wide range of finite positive floats;
- a profile carries a generation profile (TTFT and ITL points at its batch sizes) about one
  time in two, so the generation strategies meet profiles they can measure;
- a profile's peak memory is ``None`` (not measured) about one time in three, else drawn
  from a small pool of round MiB values (so budget boundaries come up) or any range;
- candidate lists carry unique backend names, and the baseline is always ``eager``, so a
  law can tell backends apart by name.

>>> from hypothesis import find
>>> from aitune_fp.core.laws import name_of
>>> [name_of(c) for c in find(candidate_lists(min_size=3), lambda cs: True)]
['inductor', 'onnxruntime', 'tensorrt']

Longer than 260 lines: Hypothesis generators for every record type, which users import from
one module.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st
from returns.pipeline import is_successful
from returns.result import Failure, Success

from aitune_fp.core.laws import FoldCase, name_of
from aitune_fp.core.measure.generation_profile import GenerationPoint, GenerationProfile
from aitune_fp.core.records import (
    STAGES,
    BackendFailure,
    BackendProfilingResult,
    Candidate,
    Profile,
)
from aitune_fp.core.strategies import latency_budget, max_throughput, min_latency
from aitune_fp.core.strategy import Strategy

TIE_POOL = (0.5, 1.0, 2.0, 4.0, 5.0, 8.0)
BACKEND_NAMES = ("inductor", "onnxruntime", "tensorrt", "aot_inductor", "torch_tensorrt")
BASELINE_NAME = "eager"
MEMORY_POOL = (0.0, 64.0, 256.0, 512.0, 1024.0)


def near_one() -> st.SearchStrategy[float]:
    """Values on a 1 % grid from 0.90 to 1.10: near-ties.

    >>> from hypothesis import find
    >>> find(near_one(), lambda x: x > 1.05)
    1.06
    """
    return st.integers(90, 110).map(lambda k: k / 100)


def latencies() -> st.SearchStrategy[float]:
    """Finite positive latencies in ms: pooled round values, near-ties, or any range."""
    return st.one_of(
        st.sampled_from(TIE_POOL), near_one(), st.floats(min_value=1e-3, max_value=1e4)
    )


def budgets() -> st.SearchStrategy[float]:
    """Valid latency budgets in ms (finite, > 0), often equal to a pooled latency."""
    return st.one_of(st.sampled_from(TIE_POOL), st.floats(min_value=1e-2, max_value=1e3))


def batch_sizes() -> st.SearchStrategy[int]:
    """Batch sizes >= 1, mostly powers of two as the sweep uses."""
    return st.one_of(st.sampled_from((1, 2, 4, 8, 16, 32, 64)), st.integers(1, 1024))


def peak_memories() -> st.SearchStrategy[float | None]:
    """Peak memory figures in MiB: ``None`` (not measured), pooled round values, any range."""
    return st.one_of(
        st.none(), st.sampled_from(MEMORY_POOL), st.floats(min_value=0.0, max_value=1e5)
    )


@st.composite
def profiles(
    draw: st.DrawFn, *, backend: str | None = None, max_batch_sizes: int = 4, max_samples: int = 5
) -> Profile:
    """A valid :class:`Profile`; batch size 1 is present three times in four or more."""
    name = backend if backend is not None else draw(st.sampled_from(BACKEND_NAMES))
    sizes = set(draw(st.lists(batch_sizes(), min_size=1, max_size=max_batch_sizes)))
    if draw(st.integers(0, 3)) < 3:
        sizes.add(1)
    samples = st.lists(latencies(), min_size=1, max_size=max_samples)
    latencies_ms = {bs: draw(samples) for bs in sorted(sizes)}
    generation = draw(st.none() | generation_profiles(batches=sorted(sizes)))
    return Profile(name, latencies_ms, peak_memory_mb=draw(peak_memories()), generation=generation)


def generation_points(*, batches: list[int]) -> st.SearchStrategy[GenerationPoint]:
    """A generation point at one of ``batches``: TTFT and ITL pooled, near-tied or any."""
    itl = st.one_of(st.just(0.0), latencies())
    lengths = st.sampled_from((1, 8, 32, 128))
    return st.builds(GenerationPoint, st.sampled_from(batches), lengths, lengths, latencies(), itl)


def generation_profiles(*, batches: list[int]) -> st.SearchStrategy[GenerationProfile]:
    """A :class:`GenerationProfile` of one to three points at ``batches``."""
    points = st.lists(generation_points(batches=batches), min_size=1, max_size=3).map(tuple)
    return st.builds(GenerationProfile, points, st.just("eager"), st.just("inductor"))


def failures(*, backend: str | None = None) -> st.SearchStrategy[BackendFailure]:
    """A :class:`BackendFailure` at any stage, with a short message."""
    names = st.just(backend) if backend is not None else st.sampled_from(BACKEND_NAMES)
    stages = st.sampled_from(sorted(STAGES))
    return st.builds(BackendFailure, names, stages, st.text(min_size=1, max_size=20))


def _ok(profile: Profile) -> Candidate:
    return Success(profile)


def _err(failure: BackendFailure) -> Candidate:
    return Failure(failure)


@st.composite
def candidates(draw: st.DrawFn, *, backend: str | None = None) -> Candidate:
    """``Success(Profile)`` three times out of four, else ``Failure(BackendFailure)``."""
    if draw(st.integers(0, 3)) == 3:
        return _err(draw(failures(backend=backend)))
    return _ok(draw(profiles(backend=backend)))


def backend_name(index: int) -> str:
    """The unique name of the ``index``-th generated candidate.

    >>> backend_name(0), backend_name(5)
    ('inductor', 'inductor_1')
    """
    base = BACKEND_NAMES[index % len(BACKEND_NAMES)]
    return base if index < len(BACKEND_NAMES) else f"{base}_{index // len(BACKEND_NAMES)}"


@st.composite
def _with_clones(
    draw: st.DrawFn, given: tuple[Candidate, ...], seeds: tuple[Profile, ...]
) -> tuple[Candidate, ...]:
    """``given`` with about one candidate in three replaced by a renamed copy of an earlier
    profile (or of a ``seeds`` profile), so exact ties between backends come up often."""
    pool = list(seeds)
    out: list[Candidate] = []
    for candidate in given:
        if pool and draw(st.integers(0, 2)) == 2:
            source = draw(st.sampled_from(pool))
            candidate = _ok(replace(source, backend=name_of(candidate)))
        out.append(candidate)
        pool.extend(_profiles_in((candidate,)))
    return tuple(out)


def _profiles_in(given: tuple[Candidate | None, ...]) -> tuple[Profile, ...]:
    """The profiles of the successful candidates in ``given``."""
    return tuple(c.unwrap() for c in given if c is not None and is_successful(c))


@st.composite
def candidate_lists(
    draw: st.DrawFn, *, min_size: int = 0, max_size: int = 6
) -> tuple[Candidate, ...]:
    """Candidates in user order with unique backend names (never the baseline's name).

    Some candidates are renamed copies of earlier ones, so ties come up often.
    """
    size = draw(st.integers(min_size, max_size))
    given = tuple(draw(candidates(backend=backend_name(i))) for i in range(size))
    return draw(_with_clones(given, ()))


@st.composite
def baselines(draw: st.DrawFn) -> Candidate | None:
    """A baseline named ``eager``: absent one time in four, else profiled or failed."""
    if draw(st.integers(0, 3)) == 3:
        return None
    return draw(candidates(backend=BASELINE_NAME))


@st.composite
def fold_cases(draw: st.DrawFn, *, max_size: int = 6) -> FoldCase:
    """Inputs for the fold laws: candidates, baseline, an extra candidate and an order.

    Some candidates (and the extra one) copy the baseline's profile: ties with it matter.
    """
    baseline = draw(baselines())
    seeds = _profiles_in((baseline,))
    given = draw(_with_clones(draw(candidate_lists(max_size=max_size)), seeds))
    extra = draw(_with_clones((draw(candidates(backend="extra")),), seeds + _profiles_in(given)))
    return FoldCase(
        candidates=given,
        baseline=baseline,
        extra=extra[0],
        position=draw(st.integers(0, len(given))),
        order=tuple(draw(st.permutations(range(len(given))))),
    )


def profiling_results() -> st.SearchStrategy[BackendProfilingResult]:
    """Any valid :class:`BackendProfilingResult`, metrics often tied."""
    metrics = st.one_of(
        st.sampled_from(TIE_POOL), near_one(), st.floats(min_value=1e-6, max_value=1e9)
    )
    positive = st.floats(min_value=1e-6, max_value=1e9)
    samples = st.lists(latencies(), max_size=4).map(tuple)
    return st.builds(BackendProfilingResult, metrics, batch_sizes(), positive, positive, samples)


@st.composite
def measured_results(draw: st.DrawFn, strategy: Strategy) -> BackendProfilingResult:
    """A result ``strategy.measure`` produced from a generated profile (or any result)."""
    measured = strategy.measure(draw(profiles()))
    match measured:
        case Success(result):
            return result  # type: ignore[no-any-return]
    return draw(profiling_results())


def results_for(strategy: Strategy) -> st.SearchStrategy[BackendProfilingResult]:
    """Results for ``strategy``'s laws: arbitrary ones and ones its own ``measure`` made."""
    return st.one_of(profiling_results(), measured_results(strategy))


def nudged(result: BackendProfilingResult) -> st.SearchStrategy[BackendProfilingResult]:
    """``result`` with its metric scaled by a near-one factor (0.90 … 1.10)."""
    return near_one().map(lambda k: replace(result, metric=result.metric * k))


def chain_ratios() -> st.SearchStrategy[float]:
    """Ratios between neighbours of an evenly spaced chain of results, above or below 1."""
    up = st.one_of(
        st.sampled_from((1.05, 1.01, 1.1, 1.02, 1.03, 1.005, 1.2, 1.5, 1.001)),
        st.floats(min_value=1.0, max_value=2.0),
    )
    return st.tuples(up, st.booleans()).map(lambda ud: ud[0] if ud[1] else 1.0 / ud[0])


@st.composite
def result_triples(
    draw: st.DrawFn, strategy: Strategy
) -> tuple[BackendProfilingResult, BackendProfilingResult, BackendProfilingResult]:
    """Three results for the order laws, in any order.

    Half of the time they form a chain ``m, m·r, m·r²`` of near-ties, the case where a
    thresholded ``compare`` ("better by more than 5 %") breaks transitivity of ties.
    """
    a = draw(results_for(strategy))
    if draw(st.booleans()):
        ratio = draw(chain_ratios())
        triple = (a, replace(a, metric=a.metric * ratio), replace(a, metric=a.metric * ratio**2))
    else:
        b = draw(st.one_of(results_for(strategy), nudged(a)))
        triple = (a, b, draw(st.one_of(results_for(strategy), nudged(b))))
    i, j, k = draw(st.permutations(range(3)))
    return triple[i], triple[j], triple[k]


SHIPPED = ("max_throughput", "min_latency", "latency_budget")


def shipped_strategies(
    *, validate_performance: bool | None = True, only: str | None = None
) -> st.SearchStrategy[Strategy]:
    """The shipped strategies, ``latency_budget(b)`` for generated ``b`` included.

    ``validate_performance=None`` draws both settings; ``only`` names one of ``SHIPPED``.
    """
    choices = {
        "max_throughput": st.just(max_throughput),
        "min_latency": st.just(min_latency),
        "latency_budget": budgets().map(latency_budget),
    }
    if only is not None and only not in choices:
        raise ValueError(f"only must be one of {SHIPPED}, got {only!r}")
    base = choices[only] if only is not None else st.one_of(*choices.values())
    flags = st.booleans() if validate_performance is None else st.just(validate_performance)
    return st.tuples(base, flags).map(lambda sv: replace(sv[0], validate_performance=sv[1]))
