"""Warm-up to steady state: a pure rule that says when a backend has stopped warming up.

A freshly built backend is often slower for its first calls (allocator growth, thread pools
spinning up, lazy kernels, caches filling): a fresh ONNX Runtime session runs its first ~30
calls ~40 % slower, with outliers, and settles after 30–60 calls. A fixed count of warm-up
calls times that phase whenever it lasts longer than the count. This rule keeps calling
until the recent calls are stable, stepped like the stop rules
(``rule.step(state, call) -> (state, Decision)``), per backend and batch size.

Rules:
- *stable* means: the medians of the last ``windows`` non-overlapping windows of
  ``window`` calls each lie within ``tolerance`` of each other (``max / min - 1 <=
  tolerance``); medians ignore the outliers a warm-up phase (or a busy machine) throws, and
  a level that is still falling by more than ``tolerance`` per window is never stable;
- the rule never stops before ``min_calls`` calls and ``min_seconds`` of warm-up, unless a
  cap stops it: it always stops at ``max_calls`` calls, and once ``min_calls`` calls are
  done, at ``max_seconds``; stability is checked first, so a stop at a cap means the
  stream was not stable;
- ``windows`` is at least 2 (one window always agrees with itself); ``windows=0`` asks
  for no stability test: a fixed warm-up of ``max_calls`` calls (the
  old behaviour, :func:`fixed_warmup`);
- time is data: each call carries the seconds of warm-up so far (``WarmupCall.elapsed_s``,
  read by the effect layer); the rule reads no clock, and its decision is a function of the
  calls so far;
- every stop says why in one line (the run record's ``warmup_reason``).

False-stop rate on the synthetic noise model (``python benchmarks/warmup_rule.py``: 2000
streams per pattern, seed 1; a *false stop* leaves the warm-up while the backend is still
more than 2 % slower than its steady state), the default rule against the old fixed 10
calls: ONNX Runtime pattern 30 % (8.8 % at 0.1–0.5 ms per call, the measured case)
against 100 %; a fast exponential (JIT-like) decay 7.0 % against 79 %; a clock ramp (decay
in seconds) 29 % against 70 %. Its price: 45 warm-up calls on a stream with no warm-up
phase (p95 75) against 10, and at most ``max_seconds`` (0.5 s) per batch size; a 1 s cap
lowers the first two to 18 % and 1.2 % (slow calls reach the cap). A plateau longer than
the windows (4 × 10 calls) cannot be told from a steady state by any rule that sees only
the calls so far; the profiler's re-measured first batch size covers that case (see
``docs/decision-quality.md``).

>>> rule = WarmupRule(min_calls=4, window=2, windows=2, tolerance=0.05, max_calls=50)
>>> state, t = rule.start(), 0.0
>>> for ms in (3.0, 2.0, 1.5, 1.2, 1.0, 1.01, 0.99, 1.0):
...     t += ms / 1000
...     state, decision = rule.step(state, WarmupCall(ms, t))
...     if decision.stop:
...         break
>>> len(state.samples), decision.reason
(8, 'stable: medians of the last 2 windows of 2 calls within 1.0% (<= 5%) after 8 calls')
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aitune_fp.core.measure.stop_rules import CONTINUE, Decision
from aitune_fp.core.stats.statistics import percentile


@dataclass(frozen=True, slots=True)
class WarmupCall:
    """One warm-up call: its latency in ms and the seconds of warm-up so far, it included."""

    latency_ms: float
    elapsed_s: float


@dataclass(frozen=True, slots=True)
class WarmupState:
    """Every warm-up latency so far (ms, in call order) and the seconds they took."""

    samples: tuple[float, ...] = ()
    elapsed_s: float = 0.0


@dataclass(frozen=True, slots=True)
class WarmupRule:
    """When a backend's warm-up at one batch size is over (see the module rule).

    >>> WarmupRule(min_calls=0)
    Traceback (most recent call last):
    ...
    ValueError: need 1 <= min_calls <= max_calls, got min_calls=0, max_calls=300
    """

    min_calls: int = 10
    max_calls: int = 300
    window: int = 10
    windows: int = 4
    tolerance: float = 0.05
    min_seconds: float = 0.0
    max_seconds: float = 0.5

    def __post_init__(self) -> None:
        if not 1 <= self.min_calls <= self.max_calls:
            raise ValueError(
                "need 1 <= min_calls <= max_calls, got "
                f"min_calls={self.min_calls}, max_calls={self.max_calls}"
            )
        if self.window < 1 or self.windows < 0 or self.windows == 1:
            raise ValueError(
                f"need window >= 1 and windows 0 or >= 2, got window={self.window}, "
                f"windows={self.windows}"
            )
        if not 0.0 <= self.tolerance < math.inf:
            raise ValueError(f"tolerance must be finite and >= 0, got {self.tolerance!r}")
        if not 0.0 <= self.min_seconds <= self.max_seconds or math.isinf(self.min_seconds):
            raise ValueError(
                "need 0 <= min_seconds <= max_seconds, min_seconds finite, got "
                f"min_seconds={self.min_seconds!r}, max_seconds={self.max_seconds!r}"
            )

    @property
    def stable_after(self) -> int | None:
        """The fewest calls a stability test needs (``None``: no test, a fixed warm-up)."""
        return self.window * self.windows if self.windows else None

    def start(self) -> WarmupState:
        """The state before the first warm-up call."""
        return WarmupState()

    def spread(self, samples: tuple[float, ...]) -> float | None:
        """``max / min - 1`` of the last windows' medians; ``None`` with too few calls.

        >>> WarmupRule(window=2, windows=2).spread((9.0, 2.0, 2.0, 1.0, 1.0))
        1.0
        """
        need = self.stable_after
        if need is None or len(samples) < need:
            return None
        tail = samples[len(samples) - need :]
        medians = [
            percentile(tail[i * self.window : (i + 1) * self.window], 50.0)
            for i in range(self.windows)
        ]
        return max(medians) / min(medians) - 1.0

    def step(self, state: WarmupState, call: WarmupCall) -> tuple[WarmupState, Decision]:
        """Account for one warm-up call and decide whether the warm-up is over."""
        samples = (*state.samples, call.latency_ms)
        new = WarmupState(samples, call.elapsed_s)
        n, elapsed = len(samples), call.elapsed_s
        floor_done = n >= self.min_calls
        spread = self.spread(samples)
        ready = floor_done and elapsed >= self.min_seconds
        if ready and spread is not None and spread <= self.tolerance:
            return new, Decision(True, self._stable_reason(spread, n))
        if n >= self.max_calls:
            return new, Decision(True, self._max_reason(spread, n))
        if floor_done and elapsed >= self.max_seconds:
            return new, Decision(
                True,
                f"time cap: {elapsed:.3g} s >= {self.max_seconds:g} s of warm-up after "
                f"{n} calls, not stable",
            )
        return new, CONTINUE

    def _stable_reason(self, spread: float, n: int) -> str:
        return (
            f"stable: medians of the last {self.windows} windows of {self.window} calls "
            f"within {spread:.1%} (<= {self.tolerance:.0%}) after {n} calls"
        )

    def _max_reason(self, spread: float | None, n: int) -> str:
        if self.windows == 0:
            return f"fixed: {n} warm-up calls"
        last = "" if spread is None else f" (last spread {spread:.1%})"
        return f"max calls: {n} warm-up calls, not stable{last}"


def fixed_warmup(calls: int) -> WarmupRule:
    """Exactly ``calls`` warm-up calls, no stability test (the old fixed warm-up).

    >>> rule = fixed_warmup(2)
    >>> s, d = rule.step(rule.start(), WarmupCall(5.0, 0.005))
    >>> s, d = rule.step(s, WarmupCall(1.0, 0.006))
    >>> d
    Decision(stop=True, reason='fixed: 2 warm-up calls')
    """
    return WarmupRule(
        min_calls=calls, max_calls=calls, windows=0, min_seconds=0.0, max_seconds=math.inf
    )
