"""Stop rules as pure functions of the measurements so far.

Two kinds of rule drive profiling, both stepped as ``rule.step(state, x) -> (state, Decision)``
with immutable states, so the effect layer owns the loop and the core owns the decision:

- a :class:`CallRule` decides, per batch size, how many warm-up calls to discard and when
  the timed calls are enough (``fixed_steps``, ``stable_window``, ``all_samples``);
- a :class:`SweepRule` decides, over ascending batch sizes, when to stop the sweep
  (``throughput_saturation``, ``latency_budget_sweep``, ``never_stop``, ``any_of``).

Rules:
- a call rule never stops before ``min_samples`` timed samples and always stops at
  ``max_samples``; warm-up calls are never recorded;
- a rule that gives up (e.g. never became stable) stops with a reason, it never raises.

Longer than 260 lines: the stop rules are one small family chosen by name; one file lists
them side by side.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from aitune_fp.core.bound import bind
from aitune_fp.core.stats.statistics import coefficient_of_variation, statistic_value


@dataclass(frozen=True, slots=True)
class Decision:
    """Whether to stop, and a human reason when stopping."""

    stop: bool
    reason: str = ""


CONTINUE = Decision(False)


# --------------------------------------------------------------------------- per call
@dataclass(frozen=True, slots=True)
class CallState:
    """Calls made so far at one batch size and the timed (post warm-up) samples in ms."""

    calls: int = 0
    samples: tuple[float, ...] = ()


@dataclass(frozen=True, slots=True)
class CallRule:
    """When to stop timing calls at one batch size.

    ``judge`` sees the timed samples once there are at least ``min_samples`` of them and
    fewer than ``max_samples``; at ``max_samples`` the rule stops with ``exhausted_reason``.

    >>> rule = fixed_steps(warmup=1, steps=2)
    >>> s, d = rule.step(rule.start(), 9.0)   # warm-up: discarded
    >>> s, d = rule.step(s, 1.0)
    >>> s, d = rule.step(s, 2.0)
    >>> s.samples, d.stop, d.reason
    ((1.0, 2.0), True, 'fixed steps done (2 timed calls)')
    """

    name: str
    warmup: int
    min_samples: int
    max_samples: int
    judge: Callable[[tuple[float, ...]], Decision]
    exhausted_reason: str

    def __post_init__(self) -> None:
        if self.warmup < 0:
            raise ValueError(f"warmup must be >= 0, got {self.warmup}")
        if not 1 <= self.min_samples <= self.max_samples:
            raise ValueError(
                "need 1 <= min_samples <= max_samples, got "
                f"min_samples={self.min_samples}, max_samples={self.max_samples}"
            )

    def start(self) -> CallState:
        """The state before the first call."""
        return CallState()

    def step(self, state: CallState, latency_ms: float) -> tuple[CallState, Decision]:
        """Account for one call's latency and decide whether to stop."""
        calls = state.calls + 1
        if calls <= self.warmup:
            return CallState(calls, state.samples), CONTINUE
        samples = (*state.samples, latency_ms)
        new = CallState(calls, samples)
        if len(samples) >= self.max_samples:
            return new, Decision(True, self.exhausted_reason.format(n=len(samples)))
        if len(samples) < self.min_samples:
            return new, CONTINUE
        return new, self.judge(samples)

    @property
    def max_calls(self) -> int:
        """The most calls this rule can ask for, warm-up included."""
        return self.warmup + self.max_samples


def _never(_: tuple[float, ...]) -> Decision:
    return CONTINUE


def fixed_steps(*, warmup: int = 10, steps: int = 20) -> CallRule:
    """Discard ``warmup`` calls, then time exactly ``steps`` calls (the reference: 10 + 20)."""
    return CallRule(
        "fixed_steps", warmup, steps, steps, _never, "fixed steps done ({n} timed calls)"
    )


def all_samples(count: int, *, warmup: int = 0) -> CallRule:
    """Time exactly one call per sample, ``count`` in all (e.g. every user sample once)."""
    return CallRule("all_samples", warmup, count, count, _never, "all {n} samples timed")


def stable_window(
    *, warmup: int = 10, window: int = 20, max_cv: float = 0.10, max_samples: int = 100
) -> CallRule:
    """Stop once the last ``window`` samples have a CV <= ``max_cv``; give up at ``max_samples``.

    >>> rule = stable_window(warmup=0, window=3, max_cv=0.1, max_samples=5)
    >>> s = rule.start()
    >>> for x in (1.0, 1.0, 1.0):
    ...     s, d = rule.step(s, x)
    >>> d
    Decision(stop=True, reason='stable: cv 0.0% <= 10.0% over the last 3 calls')
    """
    if not 0.0 < max_cv < math.inf:
        raise ValueError(f"max_cv must be > 0 and finite, got {max_cv!r}")

    return CallRule(
        "stable_window",
        warmup,
        window,
        max_samples,
        bind(_stable, window, max_cv),
        f"gave up: not stable (cv > {max_cv:.0%}) after {{n}} timed calls",
    )


def _stable(window: int, max_cv: float, samples: tuple[float, ...]) -> Decision:
    """Stop once the last ``window`` samples have a CV <= ``max_cv``."""
    cv = coefficient_of_variation(samples[-window:])
    if cv <= max_cv:
        return Decision(True, f"stable: cv {cv:.1%} <= {max_cv:.1%} over the last {window} calls")
    return CONTINUE


# --------------------------------------------------------------------------- per sweep
@dataclass(frozen=True, slots=True)
class SweepPoint:
    """One measured batch size: its latency (ms) by the sweep's statistic (the mean unless
    the sweep rule names another) and the throughput that implies (samples/s)."""

    batch_size: int
    latency_ms: float

    @property
    def throughput(self) -> float:
        """Samples per second at this batch size: ``batch_size * 1000 / latency_ms``."""
        return self.batch_size * 1000.0 / self.latency_ms


def sweep_point(batch_size: int, samples: tuple[float, ...], statistic: str = "mean") -> SweepPoint:
    """The sweep point of a batch size's timed samples (warm-up already excluded), its
    latency by ``statistic`` (a name :func:`~aitune_fp.core.stats.statistics.statistic_value`
    knows: ``mean``, ``trimmed``, ``median``, ``pNN``).

    >>> sweep_point(2, (1.0, 1.0, 1.0, 1.0, 9.0)).latency_ms
    2.6
    >>> sweep_point(2, (1.0, 1.0, 1.0, 1.0, 9.0), "median").latency_ms
    1.0
    """
    return SweepPoint(batch_size, statistic_value(statistic, samples))


@dataclass(frozen=True, slots=True)
class SweepRule:
    """When to stop sweeping batch sizes; ``judge`` sees every point so far, in order.

    >>> rule = throughput_saturation(ratio=0.05, backoff=0)
    >>> s, d = rule.step((), SweepPoint(1, 1.0))
    >>> s, d = rule.step(s, SweepPoint(2, 4.0))    # 500/s < 1000/s: no progress
    >>> d.stop
    True
    """

    name: str
    judge: Callable[[tuple[SweepPoint, ...]], Decision]
    statistic: str = "mean"
    """How the profiler makes each point's latency from its samples (:func:`sweep_point`);
    the reference rules keep the mean, a ``confident`` strategy's sweep uses its own
    statistic, so one stalled call cannot stop a sweep or end it early."""

    def step(
        self, state: tuple[SweepPoint, ...], point: SweepPoint
    ) -> tuple[tuple[SweepPoint, ...], Decision]:
        """Add ``point`` to the state and decide whether to stop the sweep."""
        points = (*state, point)
        return points, self.judge(points)


def no_progress_run(points: tuple[SweepPoint, ...], ratio: float) -> int:
    """How many trailing points made no progress: ``new * (1 - ratio) < best so far``.

    >>> no_progress_run((SweepPoint(1, 1.0), SweepPoint(2, 2.5), SweepPoint(4, 5.0)), 0.05)
    2
    """
    if not points:
        return 0
    best = points[0].throughput
    run = 0
    for p in points[1:]:
        tp = p.throughput
        run = run + 1 if tp * (1.0 - ratio) < best else 0
        best = max(best, tp)
    return run


def throughput_saturation(*, ratio: float = 0.05, backoff: int = 2) -> SweepRule:
    """Stop once more than ``backoff`` batch sizes in a row made no progress (3 by default)."""
    if not 0.0 <= ratio < 1.0:
        raise ValueError(f"ratio must be in [0, 1), got {ratio!r}")
    if backoff < 0:
        raise ValueError(f"backoff must be >= 0, got {backoff}")

    return SweepRule("throughput_saturation", bind(_saturated, ratio, backoff))


def _saturated(ratio: float, backoff: int, points: tuple[SweepPoint, ...]) -> Decision:
    """Stop once more than ``backoff`` points in a row made no progress."""
    run = no_progress_run(points, ratio)
    if run > backoff:
        return Decision(True, f"saturated: {run} batch sizes in a row without progress")
    return CONTINUE


def latency_budget_sweep(budget_ms: float) -> SweepRule:
    """Stop at the first batch size whose latency is over ``budget_ms`` (inclusive ok)."""
    return SweepRule("latency_budget", bind(_over_budget, budget_ms))


def _over_budget(budget_ms: float, points: tuple[SweepPoint, ...]) -> Decision:
    """Stop when the last point's latency is over ``budget_ms``."""
    last = points[-1]
    if last.latency_ms > budget_ms:
        return Decision(
            True,
            f"over budget: batch size {last.batch_size} took {last.latency_ms:.3f} ms "
            f"> {budget_ms:g} ms",
        )
    return CONTINUE


def _go_on(_: tuple[SweepPoint, ...]) -> Decision:
    return CONTINUE


def never_stop() -> SweepRule:
    """Sweep every planned batch size."""
    return SweepRule("never", _go_on)


def any_of(*rules: SweepRule) -> SweepRule:
    """Stop as soon as one of ``rules`` stops, with its reason (first listed wins)."""
    return SweepRule("any_of(" + ", ".join(r.name for r in rules) + ")", bind(_first_stop, rules))


def _first_stop(rules: tuple[SweepRule, ...], points: tuple[SweepPoint, ...]) -> Decision:
    """The first of ``rules`` that stops, else go on."""
    for rule in rules:
        decision = rule.judge(points)
        if decision.stop:
            return decision
    return CONTINUE
