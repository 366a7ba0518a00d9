"""Report data about noise: per-backend statistics, speedups with intervals, the decision.

Rules:
- per backend (baseline first, then candidates in user order): batch size, median, p90,
  p99, IQR, CV and the sample count of its raw samples at the selected batch size (for the
  winner, the batch size the decision ended on, after a verification too), and its
  speedup over the baseline with a confidence interval and what it was computed from
  (``paired final rounds`` or ``sweep samples``), and its peak memory in MiB
  (``peak memory —`` when unknown);
- intervals use the strategy's own confidence rule; a strategy deciding by the reference
  rule gets the default rule with the mean, for information only;
- the decision line says whether the win is significant ("1.42× [1.38, 1.47], 90 %"), or
  a tie resolved by preference, or a decision taken by the reference rule;
- everything is data or text; nothing here prints.
"""

from __future__ import annotations

from dataclasses import dataclass

from aitune_fp.core.records import BackendProfilingResult, Scored, Selection
from aitune_fp.core.stats.bootstrap import Interval
from aitune_fp.core.stats.confidence import ConfidenceRule, MetricKind, speedup_interval
from aitune_fp.core.stats.summary import SampleSummary, summarize
from aitune_fp.core.strategy import Strategy


@dataclass(frozen=True, slots=True)
class BackendStats:
    """One backend's statistics and its speedup over the baseline (``None`` for none)."""

    backend: str
    batch_size: int
    summary: SampleSummary | None
    speedup: Interval | None
    is_baseline: bool
    selected: bool
    rounds: int = 0
    peak_memory_mb: float | None = None
    paired: bool = False


def report_rule(strategy: Strategy) -> ConfidenceRule:
    """The rule used for intervals: the strategy's, else the default rule on the mean."""
    return strategy.confidence or ConfidenceRule(statistic="mean")


def _kind(strategy: Strategy) -> MetricKind | None:
    return strategy.metric.kind


def _interval(
    strategy: Strategy, result: BackendProfilingResult, base: BackendProfilingResult | None
) -> Interval | None:
    kind = _kind(strategy)
    if base is None or kind is None:
        return None
    return speedup_interval(report_rule(strategy), kind, result, base)


def backend_stats(strategy: Strategy, selection: Selection) -> tuple[BackendStats, ...]:
    """Statistics of the baseline (first, when measured) and of every measured candidate.

    >>> from aitune_fp import BackendProfilingResult as R, Selection, min_latency
    >>> from aitune_fp.core.records import Scored
    >>> base = Scored("eager", R(2.0, 1, 2.0, 500.0, samples_ms=(2.0, 2.1, 1.9)))
    >>> fast = R(1.0, 1, 1.0, 1000.0, samples_ms=(1.0, 1.1, 0.9))
    >>> sel = Selection("x", fast, False, baseline=base, ranking=(Scored("x", fast),))
    >>> [(s.backend, s.summary.median, s.speedup.point) for s in backend_stats(min_latency, sel)]
    [('eager', 2.0, 1.0), ('x', 1.0, 2.0)]
    """
    base = selection.baseline.result if selection.baseline else None
    won = Scored(selection.backend, selection.result)
    ranked = [won if s.backend == won.backend else s for s in selection.ranking]
    rows = [*((selection.baseline,) if selection.baseline else ()), *ranked]
    return tuple(
        BackendStats(
            backend=row.backend,
            batch_size=row.result.selected_batch_size,
            summary=summarize(row.result.samples_ms) if row.result.samples_ms else None,
            speedup=_interval(strategy, row.result, base),
            is_baseline=selection.baseline is not None and index == 0,
            selected=row.backend == selection.backend,
            rounds=len(row.result.rounds_ms),
            peak_memory_mb=row.result.peak_memory_mb,
            paired=base is not None and min(len(row.result.rounds_ms), len(base.rounds_ms)) >= 2,
        )
        for index, row in enumerate(rows)
    )


def _samples_text(s: SampleSummary | None) -> str:
    """The raw samples' spread in one phrase."""
    if s is None:
        return "no raw samples"
    return (
        f"median {s.median:.3f} ms, p90 {s.p90:.3f} ms, p99 {s.p99:.3f} ms, "
        f"IQR {s.iqr:.3f} ms, CV {s.cv:.1%}, n={s.count}"
    )


def stats_line(strategy: Strategy, stats: BackendStats) -> str:
    """One line for one backend: its statistics and its speedup over the baseline."""
    mark = " (baseline)" if stats.is_baseline else ""
    head = f"{stats.backend}{mark}, batch size {stats.batch_size}"
    body = _samples_text(stats.summary)
    rounds = f", {stats.rounds} interleaved rounds" if stats.rounds else ""
    where = "paired final rounds" if stats.paired else "sweep samples"
    peak = stats.peak_memory_mb
    memory = "; peak memory —" if peak is None else f"; peak memory {peak:.1f} MiB"
    speed = "" if stats.speedup is None else f"; speedup {stats.speedup.describe()} ({where})"
    return f"{head}: {body}{rounds}{memory}{speed}"


def _leader(
    strategy: Strategy, selection: Selection, base: BackendProfilingResult
) -> tuple[str, Interval] | None:
    """The candidate with the highest point speedup over the baseline."""
    scored = [
        (s.backend, iv)
        for s in selection.ranking
        if (iv := _interval(strategy, s.result, base)) is not None
    ]
    return max(scored, key=lambda ni: ni[1].point, default=None)


def decision_line(strategy: Strategy, selection: Selection) -> str:
    """Whether the selection is a significant win, a tie resolved by preference, or neither.

    >>> from aitune_fp import BackendProfilingResult as R, Selection, min_latency
    >>> from aitune_fp.core.records import Scored
    >>> base = Scored("eager", R(2.0, 1, 2.0, 500.0, samples_ms=(2.0,) * 5))
    >>> win = R(1.0, 1, 1.0, 1000.0, samples_ms=(1.0,) * 5)
    >>> decision_line(min_latency, Selection("x", win, False, baseline=base))
    'x beats eager by the reference rule (mean, strict >): 2.00× [2.00, 2.00], 90 % (significant)'
    """
    rule = report_rule(strategy)
    if selection.baseline is None:
        return f"{selection.backend} selected without a performance check (no baseline)"
    base_name, base = selection.baseline.backend, selection.baseline.result
    if not selection.fell_back_to_baseline:
        interval = _interval(strategy, selection.result, base)
        shown = "" if interval is None else f": {interval.describe()}"
        if strategy.confidence is None:
            verdict = "" if interval is None else _significance(rule, interval)
            return (
                f"{selection.backend} beats {base_name} by the reference rule "
                f"(mean, strict >){shown}{verdict}"
            )
        return (
            f"{selection.backend} beats {base_name} significantly{shown} "
            f"(above {rule.threshold:g}×)"
        )
    leader = _leader(strategy, selection, base)
    if leader is None:
        return f"{base_name} kept: no candidate was measured"
    name, interval = leader
    if strategy.confidence is None:
        return (
            f"{base_name} kept by the reference rule (mean, strict >): best candidate {name} "
            f"at {interval.describe()}"
        )
    return (
        f"tie resolved by preference: best candidate {name} at {interval.describe()} is not "
        f"above {rule.threshold:g}×, so the baseline {base_name} is kept"
    )


def _significance(rule: ConfidenceRule, interval: Interval) -> str:
    """For a reference decision: would it also be significant under ``rule``?"""
    if interval.low > rule.threshold:
        return " (significant)"
    return f" (not significant at {rule.confidence * 100:g} %, margin {rule.threshold:g}×)"


def noise_report(strategy: Strategy, selection: Selection) -> tuple[str, ...]:
    """The decision line followed by one statistics line per backend."""
    return (
        decision_line(strategy, selection),
        *(stats_line(strategy, s) for s in backend_stats(strategy, selection)),
    )
