"""One batch size of the profiler's sweep: prime, warm up, then time until the call rule stops.

Rules (of :mod:`aitune_fp.effects.measure.profiler`): every batch size first gets one untimed
priming call (a JIT backend's recompilation never lands in the timed samples), then a
warm-up to steady state driven by the core's warm-up rule (at least the call rule's own
warm-up count; ``ProfileSettings(warmup=None)`` keeps the fixed count); the call rule then
decides when the batch size is done; with a probe, its first ``calls`` timed samples
are the probe, and a judge that stops ends the batch size there; past
``max_seconds_per_batch`` (after the rule's minimum) the batch size ends on the time limit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch

from aitune_fp.core.measure.early_stop import Probe
from aitune_fp.core.measure.stop_rules import (
    CallRule,
    Decision,
)
from aitune_fp.core.measure.warmup import WarmupCall, WarmupRule, fixed_warmup
from aitune_fp.effects.inputs.samples import Batch
from aitune_fp.effects.machine.facts import synchronize
from aitune_fp.effects.measure.timing import (
    Clock,
    Clocks,
    TimedCalls,
    before_each,
    call_timer,
)
from aitune_fp.effects.measure.timing import (
    ProfileSettings as ProfileSettings,  # shell imports it here
)

ProbeJudge = Callable[[Probe], Decision]


@dataclass(frozen=True, slots=True)
class BatchReport:
    """What happened at one batch size: timed samples, why they stopped, calls made (the
    priming call included), the warm-up samples and why the warm-up stopped;
    ``stopped_early`` is the early-stop rule's reason when it stopped after the probe."""

    batch_size: int
    samples: tuple[float, ...]
    reason: str
    calls: int
    warmup_ms: tuple[float, ...] = ()
    warmup_reason: str = ""
    stopped_early: str = ""


def warmup_rule(rule: CallRule, settings: ProfileSettings) -> WarmupRule | None:
    """The warm-up rule for ``rule``: the settings' rule with at least ``rule.warmup`` calls,
    or exactly ``rule.warmup`` calls without one (``None``: no warm-up at all).

    >>> from aitune_fp.core.measure.stop_rules import fixed_steps
    >>> warmup_rule(fixed_steps(warmup=12), ProfileSettings()).min_calls
    12
    >>> warmup_rule(fixed_steps(warmup=0), ProfileSettings(warmup=None)) is None
    True
    """
    chosen = settings.warmup
    if chosen is None:
        return fixed_warmup(rule.warmup) if rule.warmup > 0 else None
    floor = max(chosen.min_calls, rule.warmup)
    return replace(chosen, min_calls=floor, max_calls=max(chosen.max_calls, floor))


def warm_up(
    timed: TimedCalls, rule: WarmupRule | None, clock: Clock
) -> tuple[tuple[float, ...], str]:
    """Call round the pool until the warm-up rule stops: the warm-up samples and why.

    >>> from aitune_fp.core.measure.warmup import fixed_warmup
    >>> warm_up(TimedCalls((lambda: None,), lambda _: 2.0), fixed_warmup(3), lambda: 0.0)
    ((2.0, 2.0, 2.0), 'fixed: 3 warm-up calls')
    """
    if rule is None:
        return (), "no warm-up"
    state, began, i = rule.start(), clock(), 0
    while True:
        ms = timed.time(i)
        i += 1
        state, decision = rule.step(state, WarmupCall(ms, clock() - began))
        if decision.stop:
            return state.samples, decision.reason


@dataclass(frozen=True, slots=True)
class Probing:
    """The early-stop probe of one batch size: once its first ``calls`` timed samples are
    in, ``judge`` says whether the batch size stops there."""

    calls: int
    judge: ProbeJudge


@dataclass(frozen=True, slots=True)
class _Limits:
    """What ends a batch size: its call rule, then the early-stop ``probe`` and, once the
    rule's ``min_samples`` are in, the time limit (``seconds`` past ``began``)."""

    probe: Probing | None
    batch_size: int
    min_samples: int
    seconds: float
    began: float
    clock: Clock

    def reason(self, rule: Decision, samples: tuple[float, ...]) -> tuple[str, str]:
        """Why the batch size ends after ``samples`` (``""``: it goes on): the call rule's
        reason first; and the probe's reason when the probe ended it."""
        if rule.stop and rule.reason:
            return rule.reason, ""
        if self.probe is not None and len(samples) == self.probe.calls:
            verdict = self.probe.judge(Probe(self.batch_size, samples))
            if verdict.stop:
                return verdict.reason, verdict.reason
        if len(samples) >= self.min_samples and self.clock() > self.began + self.seconds:
            return f"time limit {self.seconds:g} s reached", ""
        return "", ""


def measure_batch_size(
    runner: Callable[..., Any],
    pool: tuple[Batch, ...],
    rule: CallRule,
    device: torch.device,
    settings: ProfileSettings,
    clocks: Clocks = Clocks(),
    probe: Probing | None = None,
) -> BatchReport:
    """Prime once, warm up, then call ``runner`` over the pool until ``rule`` stops; raises
    on error. With ``probe``, the first ``probe.calls`` timed samples are the probe: a
    judge that stops ends the batch size there."""
    timer = call_timer(device, settings) if clocks.timer is None else clocks.timer
    timed = TimedCalls([b.bound(runner) for b in pool], timer, before_each(device, settings))
    with torch.inference_mode():
        timed.calls[0]()  # priming: absorbs compilation for this shape
        synchronize(device)
        limits = _Limits(
            probe,
            pool[0].size,
            rule.min_samples,
            settings.max_seconds_per_batch,
            clocks.clock(),
            clocks.clock,
        )
        warm = warm_up(timed, warmup_rule(rule, settings), clocks.clock)
        return _until_stopped(timed, replace(rule, warmup=0), limits, warm)


def _until_stopped(
    timed: TimedCalls, rule: CallRule, limits: _Limits, warm: tuple[tuple[float, ...], str]
) -> BatchReport:
    """Timed calls after the ``warm`` warm-up (its samples and why it stopped) until the
    call ``rule`` or the ``limits`` end the batch size (the calls count the priming one)."""
    state, i = rule.start(), len(warm[0])
    while True:
        state, decision = rule.step(state, timed.time(i))
        i += 1
        reason, stopped = limits.reason(decision, state.samples)
        if reason:
            size = limits.batch_size
            return BatchReport(size, state.samples, reason, i + 1, warm[0], warm[1], stopped)
