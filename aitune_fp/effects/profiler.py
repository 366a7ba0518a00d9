"""The profiler: times a built runner over a batch-size sweep, driven by the core's stop rules.

Rules:
- inputs are pre-built before timing: by default a rotating pool of distinct batches
  (built from all the user's samples) that together exceed the CPU's last-level cache, so
  no call finds its inputs hot in cache and nothing is copied or allocated in, or right
  before, the timed region (``input_mode="rotating"``); ``"same"`` reuses one batch;
  ``"parallel_op"`` runs a parallel torch op before each (untimed) call, as in-process
  preprocessing would;
- each call is timed with ``time.perf_counter_ns``; on CUDA the device is synchronised
  before and after the call, or CUDA events are used (``cuda_events=True``), created on
  the tuned device and recorded on its current stream;
- every new batch size first gets one untimed priming call, so a JIT backend's
  recompilation never lands in the timed samples, then a warm-up to steady state driven by
  the core's warm-up rule (:mod:`aitune_fp.core.measure.warmup`; at least the call rule's
  own warm-up count of calls; ``ProfileSettings(warmup=None)`` keeps the fixed count);
  the warm-up samples, the number of warm-up calls and why the warm-up stopped are kept in
  the profile, marked as warm-up, and never used for a metric;
- the call rule decides when a batch size is done, the sweep rule when the sweep is done;
  every timed sample is kept in the returned :class:`~aitune_fp.core.records.Profile`;
- no order penalty: once the sweep has measured two batch sizes or more, its first batch
  size is measured again (warm-up included) and the re-measured figure counts; the first
  figure is kept beside it (``MeasuredBatch.first_pass_ms``) when the two differ beyond noise
  (:func:`aitune_fp.core.measure.first_point.differs_beyond_noise`); a failure while
  re-measuring keeps the first figure;
- stop clear losers early (:mod:`aitune_fp.core.measure.early_stop`): given an
  :class:`EarlyStop` (the rule and the current best; ``ProfileSettings(early_stop=False)``
  ignores it), each batch size's first ``probe_calls`` timed calls after its warm-up are
  the probe, which steps the rule: a clearly beaten batch size stops there (the probe's
  samples are its samples, its reason the rule's line), any other goes on with the call
  rule, the probe's samples counting as its first; the profile's ``stopped_early`` is the
  rule's one-line summary (``None`` when nothing stopped early); a first batch size
  stopped early is not re-measured (a known loser there: measuring it again would only
  repeat its warm-up to confirm it);
- the clock is injectable (``timer``, ``clock``), so the loop can be driven by a fake
  clock in tests;
- an out-of-memory error or an exception at a batch size after the first ends the sweep
  with the earlier results kept (the reason is recorded); at the first batch size it is a
  ``BackendFailure`` at stage ``profile``.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import torch
from returns.io import IOFailure, IOResult, IOSuccess

from aitune_fp.core.measure.early_stop import EarlyStopRule, EarlyStopState, Probe
from aitune_fp.core.measure.first_point import differs_beyond_noise
from aitune_fp.core.measure.stop_rules import (
    CallRule,
    Decision,
    SweepPoint,
    SweepRule,
    sweep_point,
)
from aitune_fp.core.measure.warmup import WarmupCall, WarmupRule, fixed_warmup
from aitune_fp.core.records import BackendFailure, MeasuredBatch, Profile
from aitune_fp.effects.inputs import Batch, Samples
from aitune_fp.effects.machine import synchronize
from aitune_fp.effects.memory import apart_from_peak
from aitune_fp.effects.timing import (
    Clock,
    Timer,
    call_timer,
    call_with,
    input_pool,
    is_out_of_memory,
    parallel_op,
)
from aitune_fp.effects.timing import ProfileSettings as ProfileSettings  # shell imports it here

Judge = Callable[[Probe], Decision]


@dataclass(frozen=True, slots=True)
class EarlyStop:
    """The early-stop rule and the state a backend's sweep starts it from (the current best
    it is judged against; see :mod:`aitune_fp.core.measure.early_stop`)."""

    rule: EarlyStopRule
    state: EarlyStopState


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
    judge: Judge | None = None,
) -> BatchReport:
    """Prime once, warm up, then call ``runner`` over the pool until ``rule`` stops; raises
    on error. With ``judge``, the first ``probe_calls`` timed samples are the probe: a
    ``judge`` that stops ends the batch size there."""
    time_call = call_timer(device, settings) if timer is None else timer
    before = parallel_op(device) if settings.input_mode == "parallel_op" else None
    calls = [partial(call_with, runner, b.args, dict(b.kwargs)) for b in pool]
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


def profile_runner(
    backend: str,
    runner: Callable[..., Any],
    samples: Samples,
    device: torch.device,
    batch_sizes: Iterable[int],
    rule: CallRule,
    sweep: SweepRule,
    settings: ProfileSettings = ProfileSettings(),
    on_batch: Callable[[BatchReport], None] = lambda _: None,
    timer: Timer | None = None,
    clock: Clock = time.monotonic,
    early: EarlyStop | None = None,
) -> IOResult[Profile, BackendFailure]:
    """Sweep ``batch_sizes`` in order and return every timed sample as a ``Profile``
    (with ``early``, clear losers stop after their probe: see the module's rules)."""
    reports: dict[int, BatchReport] = {}
    points: tuple[SweepPoint, ...] = ()
    stop = "plan exhausted"
    active = early if early is not None and settings.early_stop else None
    judged = None if active is None else active.state

    def judge(probe: Probe) -> Decision:
        nonlocal judged
        assert active is not None and judged is not None
        judged, decision = active.rule.step(judged, probe)
        return decision

    def measure(bs: int) -> BatchReport:
        pool = apart_from_peak(device, partial(input_pool, samples, bs, device, settings))
        if active is None:
            return measure_batch_size(runner, pool, rule, device, settings, timer, clock)
        calls = active.rule.probe_calls
        return measure_batch_size(runner, pool, rule, device, settings, timer, clock, calls, judge)

    for bs in batch_sizes:
        try:
            report = measure(bs)
        except Exception as error:  # a backend's failure is a value, never a crash
            what = "out of memory" if is_out_of_memory(error) else "error"
            if not reports:
                detail = "".join(traceback.format_exception_only(error)).strip()
                return IOFailure(
                    BackendFailure(backend, "profile", f"{what} at batch size {bs}: {detail}")
                )
            stop = f"{what} at batch size {bs}: {str(error).splitlines()[0][:200]}"
            break
        reports[bs] = report
        on_batch(report)
        points, decision = sweep.step(points, sweep_point(bs, report.samples, sweep.statistic))
        if decision.stop:
            stop = decision.reason
            break
    if not reports:
        return IOFailure(BackendFailure(backend, "profile", "no batch size to profile"))
    first_pass: dict[int, tuple[float, ...]] = {}
    first = next(iter(reports))
    if settings.remeasure_first and len(reports) >= 2 and not reports[first].stopped_early:
        try:
            again = measure(first)
        except Exception:  # keep the first figure: the sweep itself succeeded
            again = None
        if again is not None:
            if differs_beyond_noise(reports[first].samples, again.samples):
                first_pass[first] = reports[first].samples
            reports[first] = again
            on_batch(again)
    return IOSuccess(
        Profile(
            backend,
            {bs: r.samples for bs, r in reports.items()},
            sweep_stop=stop,
            input_mode=settings.input_mode,
            batches={
                bs: MeasuredBatch(
                    len(r.warmup_ms), r.warmup_reason, r.warmup_ms, first_pass.get(bs)
                )
                for bs, r in reports.items()
            },
            stopped_early=active.rule.stopped_early(judged) if active and judged else None,
        )
    )
