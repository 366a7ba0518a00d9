"""One batch size of the profiler's sweep: prime, warm up, then time until the call rule stops.

Rules (of :mod:`aitune_fp.effects.measure.profiler`): every batch size first gets one untimed
priming call (a JIT backend's recompilation never lands in the timed samples), then a
warm-up to steady state driven by the core's warm-up rule (at least the call rule's own
warm-up count; ``ProfileSettings(warmup=None)`` keeps the fixed count); the call rule then
decides when the batch size is done; with a judge, the first ``probe_calls`` timed samples
are the probe, and a judge that stops ends the batch size there; past
``max_seconds_per_batch`` (after the rule's minimum) the batch size ends on the time limit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
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
    Timer,
    call_timer,
    parallel_op,
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
    calls: Sequence[Callable[[], Any]],
    rule: WarmupRule | None,
    timer: Timer,
    clock: Clock,
    before: Callable[[], None] | None,
) -> tuple[tuple[float, ...], str]:
    """Call round the pool until the warm-up rule stops: the warm-up samples and why."""
    if rule is None:
        return (), "no warm-up"
    state, began, i = rule.start(), clock(), 0
    while True:
        if before is not None:
            before()
        ms = timer(calls[i % len(calls)])
        i += 1
        state, decision = rule.step(state, WarmupCall(ms, clock() - began))
        if decision.stop:
            return state.samples, decision.reason


def measure_batch_size(
    runner: Callable[..., Any],
    pool: tuple[Batch, ...],
    rule: CallRule,
    device: torch.device,
    settings: ProfileSettings,
    timer: Timer | None = None,
    clock: Clock = time.monotonic,
    probe_calls: int = 0,
    judge: ProbeJudge | None = None,
) -> BatchReport:
    """Prime once, warm up, then call ``runner`` over the pool until ``rule`` stops; raises
    on error. With ``judge``, the first ``probe_calls`` timed samples are the probe: a
    ``judge`` that stops ends the batch size there."""
    time_call = call_timer(device, settings) if timer is None else timer
    before = parallel_op(device) if settings.input_mode == "parallel_op" else None
    calls = [b.bound(runner) for b in pool]
    timed_rule = replace(rule, warmup=0)
    with torch.inference_mode():
        calls[0]()  # priming: absorbs compilation for this shape
        synchronize(device)
        deadline = clock() + settings.max_seconds_per_batch
        warm, why = warm_up(calls, warmup_rule(rule, settings), time_call, clock, before)
        state, i = timed_rule.start(), len(warm)
        while True:
            if before is not None:
                before()
            state, decision = timed_rule.step(state, time_call(calls[i % len(calls)]))
            i += 1
            reason = decision.reason if decision.stop else ""
            stopped = ""
            if not reason and judge is not None and len(state.samples) == probe_calls:
                verdict = judge(Probe(pool[0].size, state.samples))
                reason = stopped = verdict.reason if verdict.stop else ""
            if not reason and len(state.samples) >= rule.min_samples and clock() > deadline:
                reason = f"time limit {settings.max_seconds_per_batch:g} s reached"
            if reason:
                return BatchReport(pool[0].size, state.samples, reason, i + 1, warm, why, stopped)
