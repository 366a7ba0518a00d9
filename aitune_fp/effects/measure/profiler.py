"""The profiler: times a built runner over a batch-size sweep, driven by the core's stop rules.

Rules:
- inputs are pre-built before timing: by default a rotating pool of distinct batches
  (built from all the user's samples) that together exceed the CPU's last-level cache, so
  no call finds its inputs hot in cache and nothing is copied or allocated in, or right
  before, the timed region (``input_mode="rotating"``); ``"same"`` reuses one batch;
  ``"parallel_op"`` runs a parallel torch op before each (untimed) call, as in-process
  preprocessing would;
- each call is timed with ``time.perf_counter_ns``; on CUDA with CUDA events created on
  the tuned device and recorded on its current stream (the default; with
  ``cuda_events=False`` the device is synchronised before and after the call instead);
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
- what is swept and the rules that stop it travel as one :class:`SweepPlan`;
- stop clear losers early (:mod:`aitune_fp.core.measure.early_stop`): given an
  :class:`EarlyStop` in the plan (the rule and the current best;
  ``ProfileSettings(early_stop=False)`` ignores it), each batch size's first
  ``probe_calls`` timed calls after its warm-up are the probe, which steps the rule: a
  clearly beaten batch size stops there (the probe's samples are its samples, its reason
  the rule's line), any other goes on with the call rule, the probe's samples counting as
  its first; the profile's ``stopped_early`` is the rule's one-line summary (``None`` when
  nothing stopped early); a first batch size stopped early is not re-measured (a known
  loser there: measuring it again would only repeat its warm-up to confirm it);
- the clock is injectable (``Clocks``: the call ``timer`` and the ``clock``), so the loop
  can be driven by a fake clock in tests;
- an out-of-memory error or an exception at a batch size after the first ends the sweep
  with the earlier results kept (the reason is recorded); at the first batch size it is a
  ``BackendFailure`` at stage ``profile``.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch
from returns.io import IOFailure, IOResult, IOSuccess

from aitune_fp.core.measure.early_stop import EarlyStop as EarlyStop
from aitune_fp.core.measure.early_stop import EarlyStopState, Probe
from aitune_fp.core.measure.first_point import differs_beyond_noise
from aitune_fp.core.measure.stop_rules import (
    CallRule,
    Decision,
    SweepPoint,
    SweepRule,
    sweep_point,
)
from aitune_fp.core.records import BackendFailure, MeasuredBatch, Profile
from aitune_fp.effects.inputs.samples import Samples
from aitune_fp.effects.measure.batch_timing import BatchReport as BatchReport
from aitune_fp.effects.measure.batch_timing import Probing, measure_batch_size
from aitune_fp.effects.measure.memory import apart_from_peak
from aitune_fp.effects.measure.timing import Clocks as Clocks
from aitune_fp.effects.measure.timing import ProfileSettings as ProfileSettings
from aitune_fp.effects.measure.timing import Timer as Timer
from aitune_fp.effects.measure.timing import call_timer as call_timer
from aitune_fp.effects.measure.timing import input_pool, is_out_of_memory

# ``BatchReport``, ``Clocks``, ``ProfileSettings``, ``Timer`` and ``call_timer`` (the ``as``
# imports) are re-exported: the shell, effects/isolation and the tests import them from here.


@dataclass(frozen=True, slots=True)
class SweepPlan:
    """What one profile sweeps and the rules that stop it: the batch sizes in order, the
    call rule (when one batch size is done), the sweep rule (when the sweep is done) and
    the early-stop rule with the best so far (``early``; ``None``: every batch size in full).

    >>> from aitune_fp.core.measure.stop_rules import fixed_steps, never_stop
    >>> SweepPlan((1, 2), fixed_steps(), never_stop()).early is None
    True
    """

    batch_sizes: Sequence[int]
    rule: CallRule
    sweep: SweepRule
    early: EarlyStop | None = None


def profile_runner(
    backend: str,
    runner: Callable[..., Any],
    samples: Samples,
    device: torch.device,
    plan: SweepPlan,
    settings: ProfileSettings = ProfileSettings(),
    on_batch: Callable[[BatchReport], None] = lambda _: None,
    clocks: Clocks = Clocks(),
) -> IOResult[Profile, BackendFailure]:
    """Sweep ``plan.batch_sizes`` in order and return every timed sample as a ``Profile``
    (with ``plan.early``, clear losers stop after their probe: see the module's rules)."""
    active = plan.early if plan.early is not None and settings.early_stop else None
    probes = _Probes(active, None if active is None else active.state)
    measure = partial(_measure, runner, samples, device, plan.rule, settings, clocks, probes)
    swept = _sweep(backend, plan.batch_sizes, plan.sweep, measure, on_batch)
    if isinstance(swept, BackendFailure):
        return IOFailure(swept)
    reports, stop = swept
    if not reports:
        return IOFailure(BackendFailure(backend, "profile", "no batch size to profile"))
    first_pass = _remeasure_first(reports, settings, measure, on_batch)
    return IOSuccess(_profile(backend, reports, stop, settings, first_pass, probes.stopped_early()))


def _profile(
    backend: str,
    reports: dict[int, BatchReport],
    stop: str,
    settings: ProfileSettings,
    first_pass: dict[int, tuple[float, ...]],
    stopped_early: str | None,
) -> Profile:
    """The sweep's reports as a profile (warm-ups kept apart, first figures beside)."""
    batches = {
        bs: MeasuredBatch(len(r.warmup_ms), r.warmup_reason, r.warmup_ms, first_pass.get(bs))
        for bs, r in reports.items()
    }
    return Profile(
        backend,
        {bs: r.samples for bs, r in reports.items()},
        sweep_stop=stop,
        input_mode=settings.input_mode,
        batches=batches,
        stopped_early=stopped_early,
    )


@dataclass(slots=True)
class _Probes:
    """The early-stop rule's state over one sweep's probes (``active=None``: no early stop)."""

    active: EarlyStop | None
    state: EarlyStopState | None

    def judge(self, probe: Probe) -> Decision:
        """Step the rule with ``probe``: its decision for the probed batch size."""
        assert self.active is not None and self.state is not None
        self.state, decision = self.active.rule.step(self.state, probe)
        return decision

    def stopped_early(self) -> str | None:
        """The rule's one-line summary (``None`` when nothing stopped early)."""
        return self.active.rule.stopped_early(self.state) if self.active and self.state else None


def _measure(
    runner: Callable[..., Any],
    samples: Samples,
    device: torch.device,
    rule: CallRule,
    settings: ProfileSettings,
    clocks: Clocks,
    probes: _Probes,
    bs: int,
) -> BatchReport:
    """One batch size measured over its input pool (built apart from the memory peak)."""
    pool = apart_from_peak(device, partial(input_pool, samples, bs, device, settings))
    active = probes.active
    probe = None if active is None else Probing(active.rule.probe_calls, probes.judge)
    return measure_batch_size(runner, pool, rule, device, settings, clocks, probe)


def _sweep(
    backend: str,
    batch_sizes: Iterable[int],
    sweep: SweepRule,
    measure: Callable[[int], BatchReport],
    on_batch: Callable[[BatchReport], None],
) -> tuple[dict[int, BatchReport], str] | BackendFailure:
    """Each batch size's report until the sweep rule stops, and why it stopped; a failure
    at the first batch size is the backend's, a later one ends the sweep."""
    reports: dict[int, BatchReport] = {}
    points: tuple[SweepPoint, ...] = ()
    for bs in batch_sizes:
        try:
            report = measure(bs)
        except Exception as error:  # a backend's failure is a value, never a crash
            if not reports:
                return BackendFailure(backend, "profile", _failed_at(bs, error, whole=True))
            return reports, _failed_at(bs, error, whole=False)
        reports[bs] = report
        on_batch(report)
        points, decision = sweep.step(points, sweep_point(bs, report.samples, sweep.statistic))
        if decision.stop:
            return reports, decision.reason
    return reports, "plan exhausted"


def _failed_at(bs: int, error: Exception, *, whole: bool) -> str:
    """Why a batch size failed: out of memory or an error, with the error's whole message
    (``whole``) or its first line cut at 200 characters."""
    what = "out of memory" if is_out_of_memory(error) else "error"
    if whole:
        return (
            f"{what} at batch size {bs}: " + "".join(traceback.format_exception_only(error)).strip()
        )
    return f"{what} at batch size {bs}: {str(error).splitlines()[0][:200]}"


def _remeasure_first(
    reports: dict[int, BatchReport],
    settings: ProfileSettings,
    measure: Callable[[int], BatchReport],
    on_batch: Callable[[BatchReport], None],
) -> dict[int, tuple[float, ...]]:
    """Measure the sweep's first batch size again (in ``reports``, see the module rules);
    its first figure, by batch size, when the two differ beyond noise."""
    first = next(iter(reports))
    if not settings.remeasure_first or len(reports) < 2 or reports[first].stopped_early:
        return {}
    try:
        again = measure(first)
    except Exception:  # keep the first figure: the sweep itself succeeded
        return {}
    first_pass: dict[int, tuple[float, ...]] = {}
    if differs_beyond_noise(reports[first].samples, again.samples):
        first_pass[first] = reports[first].samples
    reports[first] = again
    on_batch(again)
    return first_pass
