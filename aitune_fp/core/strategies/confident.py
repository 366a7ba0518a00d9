"""Confident: a candidate wins only when its speedup is significant, otherwise preference.

Rule: ``confident(strategy)`` keeps the strategy's metric and batch-size choice but decides
with :mod:`aitune_fp.core.stats.confidence`: ``a`` beats ``b`` only when the bootstrap interval
of ``a``'s speedup over ``b`` (default: 90 %, i.e. a one-sided 95 % lower bound; 20 %
trimmed means; 1000 resamples; seed 0) lies entirely above ``1 + min_speedup`` (default
1 %). Anything else is a tie, and the fold gives ties to the baseline, then to the earlier
candidate. The metric is restated with the rule's statistic (the trimmed mean by default,
robust to rare outliers; the strategy's own percentile for ``min_latency_at``), so the
reported metric, the speedup and the interval agree. Paired interleaved rounds are judged by
the per-round median ratio instead (``paired_statistic``; see
:func:`default_paired_statistic`). By default the leaders are timed again
in interleaved final rounds (:mod:`aitune_fp.core.rounds.rounds_plan`), paid for by a sweep of
5 instead of 20 timed calls per batch size. The sweep's stop rules see each batch size's
latency by the same statistic, and so do the batch-size choice of max throughput and a
mean latency budget (:func:`~aitune_fp.core.strategies.robust.robust`): in a 5-call sweep
one stalled call would otherwise end the sweep early or move the pick.
``speedup`` is the interval's point estimate. Interleaved-round samples, when a profile
has them, make the interval paired. The reference rule (mean, strict ``>``) is the plain
strategy itself, unwrapped.

Laws (checked in the tests): ``compare`` is irreflexive and asymmetric, a tie is
symmetric, ``compare(a, b)`` implies ``speedup(a, b) > 1 + min_speedup > 1``,
``speedup(a, a) == 1``, samples that dominate by more than the margin always win, and
scaling every sample of both sides by a power of two never changes a decision. Unlike the
reference rule, ties are not transitive (a semiorder-like relation), so
``speedup(a, b) > 1`` no longer implies ``compare(a, b)``.

>>> from aitune_fp.core.records import Profile
>>> from aitune_fp.core.strategies.min_latency import min_latency
>>> s = confident(min_latency)
>>> fast = s.measure(Profile("a", {1: [1.0, 1.01, 0.99, 1.0] * 4 + [9.0]})).unwrap()
>>> slow = s.measure(Profile("b", {1: [1.5, 1.49, 1.51, 1.5] * 4 + [1.5]})).unwrap()
>>> round(fast.metric, 2), s.compare(fast, slow), s.compare(slow, fast)
(1.0, True, False)
"""

from __future__ import annotations

from dataclasses import replace

from returns.result import Result

from aitune_fp.core.bound import bind
from aitune_fp.core.measure.stop_rules import fixed_steps
from aitune_fp.core.records import BackendFailure, BackendProfilingResult, Profile
from aitune_fp.core.rounds.rounds_plan import RoundsPlan
from aitune_fp.core.stats.confidence import (
    ConfidenceRule,
    MetricKind,
    beats,
    speedup_point,
)
from aitune_fp.core.stats.statistics import statistic_value
from aitune_fp.core.strategies.declared import Combinator, Params, no_argument, number, text
from aitune_fp.core.strategies.robust import judged_by
from aitune_fp.core.strategy import Measure, ProfilingPlan, Strategy


def metric_kind(strategy: Strategy) -> MetricKind:
    """``throughput`` or ``latency``: the strategy's metric kind, which a statistical
    compare needs (a ``ValueError`` for a custom metric without one).

    >>> from aitune_fp import max_throughput
    >>> metric_kind(max_throughput)
    'throughput'
    """
    if strategy.metric.kind is None:
        raise ValueError(
            "a statistical compare needs a strategy whose metric kind is 'throughput' or "
            f"'latency', got metric {strategy.metric.label!r} without a kind"
        )
    return strategy.metric.kind


def default_statistic(strategy: Strategy) -> str:
    """The strategy's percentile for a percentile latency metric, else the trimmed mean.

    >>> from aitune_fp.core.strategies.latency_percentile import min_latency_at
    >>> default_statistic(min_latency_at(99)), default_statistic(min_latency_at(50.5))
    ('p99', 'p50.5')
    """
    q = strategy.params.get("percentile")
    if strategy.metric.kind == "latency" and isinstance(q, int | float):
        return f"p{q:g}"
    return "trimmed"


def default_paired_statistic(statistic: str) -> str:
    """The statistic of paired rounds: the median for a mean-like ``statistic``, else itself.

    A round's ratio is spoilt when either of its two calls stalls, so rounds are
    contaminated about twice as often as single calls: on a loaded two-core machine about
    a fifth of them, the 20 %-trimmed mean's breakdown point. The per-round median (50 %)
    still holds there; a percentile statistic asks for that percentile and keeps it.

    >>> default_paired_statistic("trimmed"), default_paired_statistic("p99")
    ('median', 'p99')
    """
    return "median" if statistic in ("trimmed", "mean") else statistic


def restate(
    kind: MetricKind, statistic: str, profile: Profile, result: BackendProfilingResult
) -> BackendProfilingResult:
    """``result`` with its metric recomputed by ``statistic`` and its round samples attached."""
    bs = result.selected_batch_size
    samples = result.samples_ms or (profile.samples(bs) if bs in profile.latencies_ms else ())
    rounds = tuple(profile.rounds_ms.get(bs, ()))
    if not samples:
        return replace(result, rounds_ms=rounds)
    value = statistic_value(statistic, samples)
    metric = bs * 1000.0 / value if kind == "throughput" else value
    return replace(result, metric=metric, samples_ms=samples, rounds_ms=rounds)


def _measure(
    inner: Measure, kind: MetricKind, statistic: str, profile: Profile
) -> Result[BackendProfilingResult, BackendFailure]:
    return inner(profile).map(bind(restate, kind, statistic, profile))


def _compare(
    rule: ConfidenceRule, kind: MetricKind, a: BackendProfilingResult, b: BackendProfilingResult
) -> bool:
    return beats(rule, kind, a, b)


def _speedup(
    rule: ConfidenceRule, kind: MetricKind, a: BackendProfilingResult, b: BackendProfilingResult
) -> float:
    return speedup_point(rule, kind, a, b)


def confident(
    strategy: Strategy,
    *,
    confidence: float = 0.90,
    min_speedup: float = 0.01,
    resamples: int = 1000,
    seed: int = 0,
    statistic: str | None = None,
    paired_statistic: str | None = None,
    rounds: RoundsPlan | None = RoundsPlan(),
    sweep_steps: int = 5,
    robust_batches: bool = True,
) -> Strategy:
    """``strategy`` deciding by significant speedups only (see the module rule).

    ``rounds`` plans the interleaved final rounds that a driver (``tune_module``) runs
    after the sweeps; ``None`` decides on the sweeps' samples alone. With rounds planned,
    a fixed-steps sweep times at most ``sweep_steps`` calls per batch size (warm-up kept),
    so the rounds are paid for by a shorter sweep. ``robust_batches=False`` judges batch
    sizes (sweep points, the pick, a budget) by the mean, as before the robust sweeps,
    and is stored as the parameter ``robust_batches: False``. The stored config keeps the
    rule and the rounds plan (restored without its burst shape); ``sweep_steps`` is not
    restored.
    """
    kind = metric_kind(strategy)
    chosen = statistic or default_statistic(strategy)
    strategy = judged_by(strategy, chosen) if robust_batches else strategy
    rule = ConfidenceRule(
        confidence=confidence,
        min_speedup=min_speedup,
        resamples=resamples,
        seed=seed,
        statistic=chosen,
        paired_statistic=paired_statistic or default_paired_statistic(chosen),
    )
    return replace(
        strategy,
        name=f"confident({strategy.name})",
        title=f"{strategy.title}, significant wins only",
        description=(
            f"{strategy.description} A candidate wins only when the "
            f"{rule.confidence * 100:g} % bootstrap interval of its speedup ({_stats(rule)}) "
            f"lies above {rule.threshold:g}×; otherwise the baseline, then the earlier "
            "candidate, is kept."
        ),
        measure=bind(_measure, strategy.measure, kind, rule.statistic),
        compare=bind(_compare, rule, kind),
        speedup=bind(_speedup, rule, kind),
        params=strategy.params.update(
            {
                "confidence": rule.confidence,
                "min_speedup": rule.min_speedup,
                "resamples": rule.resamples,
                "seed": rule.seed,
                "statistic": rule.statistic,
                "paired_statistic": rule.round_statistic,
            }
        ).update({} if robust_batches else {"robust_batches": False}),
        confidence=rule,
        plan=_plan(strategy.plan, rounds, sweep_steps),
    )


def _stats(rule: ConfidenceRule) -> str:
    """The statistics named in the description: the sweeps' and, when it differs, the rounds'."""
    if rule.round_statistic == rule.statistic:
        return rule.statistic
    return f"{rule.statistic}; per-round {rule.round_statistic} in interleaved rounds"


def _plan(plan: ProfilingPlan, rounds: RoundsPlan | None, sweep_steps: int) -> ProfilingPlan:
    """The plan with ``rounds``; a fixed-steps sweep shortened when rounds follow."""
    if sweep_steps < 2:
        raise ValueError(f"sweep_steps must be >= 2, got {sweep_steps}")
    rule = plan.call_rule
    if rounds is not None and rule.name == "fixed_steps" and rule.max_samples > sweep_steps:
        rule = fixed_steps(warmup=rule.warmup, steps=sweep_steps)
    return replace(plan, rounds=rounds, call_rule=rule)


_RULE_KEYS = ("confidence", "min_speedup", "resamples", "seed", "statistic")


def _restore(params: Params, inner: Strategy) -> Strategy:
    missing = [k for k in _RULE_KEYS if k not in params]
    if missing:
        raise ValueError(f"confident config lacks {', '.join(missing)}")
    statistic = text(params, "statistic", "confident")
    return confident(
        inner,
        confidence=number(params, "confidence", "confident"),
        min_speedup=number(params, "min_speedup", "confident"),
        resamples=int(number(params, "resamples", "confident")),
        seed=int(number(params, "seed", "confident")),
        statistic=statistic,
        # records from before paired rounds had their own statistic used the same one
        paired_statistic=str(params.get("paired_statistic", statistic)),
        robust_batches=bool(params.get("robust_batches", True)),
    )


def _parse(arg: str | None, inner: Strategy) -> Strategy:
    no_argument("confident", arg)
    return confident(inner)


DECLARED = (
    Combinator(
        "confident",
        _restore,
        own=(*_RULE_KEYS, "paired_statistic", "robust_batches"),
        spec="confident",
        parse=_parse,
        example="confident:<spec>",
        rank=900,
    ),
)
